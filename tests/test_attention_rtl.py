"""Attention RTL (Amaranth -> Verilog -> Icarus under cocotb) against the attention models.

Unmarked: the design's parameter checks and errors, the job encoding (operand
layout checked by hand), and the checker's sensitivity (a flipped bit or a
wrong cycle count fails). ``verilog``: the fp32 units against numpy float32.
``rtl``: fusemax and flat tiles on a 3x2 array with 2 lanes -- values bit-exact
with the models and within the derived bound of the float64 reference, cycles
equal to the contract worked out by hand below, and the CLI.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from archsim.errors import SpecError
from archsim.templates.attention import AttentionTile
from archsim.templates.attention.reference import error_bound, reference_attention
from attention_ops import SMALL, small_arch as _arch, bf16_ops as _ops
from rtl import design_for
from sim_skip import require_icarus



# ----------------------------------------------------------------------------- parameters and encoding


@pytest.mark.parametrize("over, message", [
    ({"exp_on": "array1d"}, r"^attention RTL: exp_on: the RTL evaluates the exps on the 2D array \(array2d\), "
                            r"got array1d$"),
    ({"ops1d_per_cycle": {"exp": 0.5}}, r"^attention RTL: ops1d_per_cycle: the RTL's 1D lanes run one op of each "
                                        r"function per cycle, got \{'exp': 0.5\}$"),
    ({"flat_scale_on": "array2d"}, r"^attention RTL: flat_scale_on: the RTL scales FLAT's scores on the 1D lanes "
                                   r"\(array1d\), got array2d$"),
    ({"rows": 32, "cols": 32}, r"^attention RTL: rows x cols, pe1d: the RTL is generated for up to 256 PEs and "
                               r"32 1D lanes \(every PE has its own fp32 units\), got 32x32 and 2; "
                               r"e.g. --set rows=4 --set cols=4 --set pe1d=4$"),
])
def test_unsupported_params_are_one_line_errors(over, message):
    with pytest.raises(SpecError, match=message):
        design_for(_arch(**over))


def test_operands_are_encoded_in_the_precision_and_inexact_ones_refused():
    """bf16 codes are the top half of the fp32 bits, fp16 codes IEEE half (codes by hand: 1.5 = 0x3FC0 in
    bf16, 0x3E00 in fp16; -2 = 0xC000 in both; 2**-24 = 0x0001, fp16's smallest subnormal); a value the
    format cannot hold is refused, naming the operand, never truncated."""
    tile = AttentionTile("fusemax", 1, 1, 3)
    ops = {"q": np.float32([[1.5, -2.0, 0.0]]), "k": np.float32([[1.0, 1.0, 1.0]]),
           "v": np.float32([[2.0 ** -24, 0, 0]])}
    words = {w[0]: w[2][0] for w in design_for(_arch()).encode(tile, ops)["writes"]}
    assert words[0] == 0x3FC0 | 0xC000 << 16 and words[2] == 0x3380  # Q; V: 2**-24 = 0x3380 in bf16
    words = {w[0]: w[2][0] for w in design_for(_arch(precision="fp16")).encode(tile, ops)["writes"]}
    assert words[0] == 0x3E00 | 0xC000 << 16 and words[2] == 0x0001
    with pytest.raises(SpecError, match=r"^attention RTL: operand v holds 5.96\d*e-08, not a bf16 value"):
        design_for(_arch()).encode(tile, {**ops, "v": np.float32([[2.0 ** -24 * 1.0000001, 0, 0]])})
    with pytest.raises(SpecError, match=r"^attention RTL: operand q holds 1.0009765625, not a bf16 value"):
        design_for(_arch()).encode(tile, {**ops, "q": np.float32([[1 + 2.0 ** -10, 0, 0]])})
    with pytest.raises(SpecError, match=r"^attention RTL: operand k holds 9.3\d*e-10, not a fp16 value"):
        design_for(_arch(precision="fp16")).encode(tile, {**ops, "k": np.float32([[2.0 ** -30, 0, 0]])})


def test_unknown_rtl_option_is_an_error():
    with pytest.raises(SpecError, match=r"^rtl options: depth: not an option of the attention RTL \(it has "
                                        r"head_dim_max, passes_max, key_blocks_max, flat_keys_max, multiplier\)$"):
        design_for(_arch(), {"depth": 4})
    with pytest.raises(SpecError, match=r"^rtl options: passes_max: expected a positive integer, got 0$"):
        design_for(_arch(), {"passes_max": 0})


def test_tiles_the_rtl_does_not_run_are_named():
    design = design_for(_arch())
    ops = _ops(np.random.default_rng(0), 3, 4, 2)
    assert design.runs(AttentionTile("fusemax", 3, 4, 2), ops) == ""
    assert design.runs(AttentionTile("fusemax", 3, 4, 2, "rescale"), None).startswith("no operands")
    assert design.runs(AttentionTile("fusemax", 3, 4, 9), ops) == "head_dim 9 > head_dim_max 8"
    assert design.runs(AttentionTile("flat", 3, 9, 2), ops) == "flat kv_len 9 > flat_keys_max 8"
    assert design.runs(AttentionTile("fusemax", 3, 40, 2), ops) == "kv_len 40 > key_blocks_max*cols 32"
    with pytest.raises(SpecError, match=r"^attention RTL cannot run .*: head_dim 9 > head_dim_max 8$"):
        design.encode(AttentionTile("fusemax", 3, 4, 9), ops)


def test_operand_layout():
    """Q row (pass p, row i) -> bank i, entry p; key j -> bank j mod cols, entry j div cols; the
    write address is bank << entry_bits | entry (entry_bits = 4 for 16 key blocks); a head-dim
    vector of bf16 codes, element e at bits [16e, 16e+16); one write per bank, entries from 0."""
    design = design_for(_arch())
    q = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0], [-1.0, 0.25]], np.float32)  # 2 passes x 2 rows
    k = np.array([[1.0, 2.0], [4.0, 8.0], [-0.5, 1.5]], np.float32)
    ops = {"q": q, "k": k, "v": -k}
    job = design.encode(AttentionTile("fusemax", 2, 3, 2, passes=2), ops)
    assert job["cmd"] == {"flat": 0, "q_rows": 2, "kv_len": 3, "head_dim": 2, "passes": 2, "drain": 1,
                          "q_set": 0, "kv_set": 0}
    qw = [w for w in job["writes"] if w[0] == 0]
    # bf16 codes by hand: 1.0 = 0x3F80, -2.0 = 0xC000, 3.0 = 0x4040, 1.0 = 0x3F80
    assert qw[0] == [0, 0, [0x3F80 | 0xC000 << 16, 0x4040 | 0x3F80 << 16]]  # row 0: passes 0, 1
    assert qw[1][:2] == [0, 1 << 4]
    kw = [(w[1], len(w[2])) for w in job["writes"] if w[0] == 1]
    assert kw == [(0, 2), (1 << 4, 1)]  # bank 0: keys 0, 2; bank 1: key 1
    vw = [w for w in job["writes"] if w[0] == 2]
    assert vw[0][2][1] == 0x3F00 | 0xBFC0 << 16  # key 2, v = -k: 0.5, -1.5
    assert job["reads"] == [[0, 2], [3, 2]]  # pass * rows + row: two rows from 0 and from 3


def test_exp_latency_in_both_models_worked_by_hand():
    """latency1d.exp = 3 (the 1D lanes' pipelined exp2): every 1D exp op takes 3 more cycles.
    3x2 array, 2 lanes, E = 4, q=3, L=3, d=2 (nb=2), as in the co-simulation test below:
    fusemax stat = 2 + 2 + (2 + 3) = 9; slots 3, max(3, 9), max(7, 9), max(7, 10), 10 -> 41, + drain 3 -> 44;
    flat softmax = 5 + 2 + 5 + (5 + 3) + 5 + 2 + 5 = 32, + qk 7 + av 7 -> 46."""
    model = _arch(latency1d={"exp": 3}).model()
    rng = np.random.default_rng(4)
    for tile, want in ((AttentionTile("fusemax", 3, 3, 2), 44), (AttentionTile("flat", 3, 3, 2), 46)):
        ops = _ops(rng, 3, 3, 2)
        _vals, det = model.detailed_tile(tile, ops)
        assert model.tile_cycles(tile) == det == want


def test_recip_latency_in_both_models_worked_by_hand():
    """latency1d.recip = 4 (the 1D lanes' pipelined reciprocal): FLAT's one reciprocal op takes 4 more
    cycles; a fusemax tile has no reciprocal op (its final divide is timed on the rescale companion).
    3x2 array, 2 lanes, E = 4, q=3, L=3, d=2 (nb=2): flat softmax = 5 + 2 + 5 + 5 + 5 + (2 + 4) + 5 = 33,
    + qk 7 + av 7 -> 47 (43 without); fusemax 39 as without; the rescale companion's final divide
    fin = (2 + 4) + ceil(6 / 2) = 9 (5 without)."""
    plain, model = _arch().model(), _arch(latency1d={"recip": 4}).model()
    rng = np.random.default_rng(5)
    for tile, want in ((AttentionTile("fusemax", 3, 3, 2), 39), (AttentionTile("flat", 3, 3, 2), 47)):
        _vals, det = model.detailed_tile(tile, _ops(rng, 3, 3, 2))
        assert model.tile_cycles(tile) == det == want
    resc = AttentionTile("fusemax", 3, 3, 2, phase="rescale")
    assert model.tile_cycles(resc) - plain.tile_cycles(resc) == 9 - 5
    assert model.tile_cycles(resc) == model.detailed_tile_cycles(resc)


def _assert_both_models_take(over, seed, fusemax, flat):
    """The closed form and the detailed model take the hand-worked cycles on the 3x3x2 fusemax and flat
    tiles at the latency override ``over``, with the values of the design without it."""
    plain, model = _arch().model(), _arch(**over).model()
    rng = np.random.default_rng(seed)
    for tile, want in ((AttentionTile("fusemax", 3, 3, 2), fusemax), (AttentionTile("flat", 3, 3, 2), flat)):
        ops = _ops(rng, 3, 3, 2)
        vals, det = model.detailed_tile(tile, ops)
        assert model.tile_cycles(tile) == det == want
        assert np.array_equal(vals, plain.detailed_tile(tile, ops)[0])


def test_mul_add_latency_in_both_models_worked_by_hand():
    """latency1d mul 2, add 3, exp 5 (the exp op: the adder's 3, then exp2's 2): 3x2 array, 2 lanes,
    E = 4, q=3, L=3, d=2 (nb=2). fusemax: stat = 2 + (2 + 2) + (2 + 5) = 13, update = (2 + 2) + (2 + 3)
    + (3 + 2) + (3 + 3) = 20; slots 3, max(3, 13), max(7, 13), max(7, 20), 20 -> 69, + drain 3 -> 72.
    flat softmax: max 5, m*c 2 + 2, s*c - m*c 5 + 2 + 3 (product then sum), exp 5 + 5, row sum 11
    (lane 0 sums rows 0 and 2 interleaved, lane 1 row 1: issues at cycles 0, 1, 3, 4, 6, 7, the last
    sum 3 later), recip 2, normalise 5 + 2 -> 49, + qk 7 + av 7 -> 63. Values are those without."""
    _assert_both_models_take({"latency1d": {"mul": 2, "add": 3, "exp": 5}}, 7, fusemax=72, flat=63)


def test_deepest_lane_adder_in_both_models_worked_by_hand():
    """latency1d mul 2, add 12 (the lane adder's 11 cut points and its operands registered), exp 14 (the
    adder's 12, then exp2's 2): the case above with the adder 9 deeper. fusemax: stat = 2 + (2 + 2) + (2 + 14)
    = 22, update = (2 + 2) + (2 + 12) + (3 + 2) + (3 + 12) = 38; slots 3, max(3, 22), max(7, 22), max(7, 38),
    38 -> 123, + drain 3 -> 126. flat softmax: max 5, m*c 2 + 2, s*c - m*c 5 + 2 + 12, exp 5 + 14, row sum
    38 (lane 0 sums rows 0 and 2 interleaved: issues at 0, 1, 12, 13, 24, 25, the last sum 12 later), recip
    2, normalise 5 + 2 -> 94, + qk 7 + av 7 -> 108. Values are those without."""
    _assert_both_models_take({"latency1d": {"mul": 2, "add": 12, "exp": 14}}, 9, fusemax=126, flat=108)


def test_max_latency_in_both_models_worked_by_hand():
    """latency1d.max 2 on top of the case above (mul 2, add 3, exp 5; 3x2 array, 2 lanes, E = 4, q=3, L=3,
    d=2, nb=2). fusemax: the running max op is c1(3, max) = 2 + 2, so stat = 4 + (2 + 2) + (2 + 5) = 15:
    slots 3, max(3, 15), max(7, 15), max(7, 20), 20 -> 73, + drain 3 -> 76. flat: the row max is not a
    chain but each lane's own rows: lane 0 compares rows 0 and 2 interleaved at cycles 0-5 (r0, r2, r0,
    r2, r0, r2), the last result 2 later -> 8 cycles, not ceil(9 / 2) = 5: 63 + 3 -> 66. Values are
    those without."""
    _assert_both_models_take({"latency1d": {"mul": 2, "add": 3, "exp": 5, "max": 2}}, 8, fusemax=76, flat=66)


@pytest.mark.parametrize("q, n, pe1d, add, want", [
    (3, 3, 2, 0, 5),  # a chain through the lanes: ceil(9 / 2)
    (3, 3, 2, 1, 7),  # lane 0: row 0 at cycles 0-2, row 2 at 3-5, its sum at 6 -> 7
    (3, 3, 2, 3, 11),  # rows 0 / 2 interleaved at 0, 1, 3, 4, 6, 7 (slot 2 idle), the sum 3 later
    (5, 2, 1, 2, 13),  # rows 0-1 at 0-3, rows 2-3 at 4-7, row 4 at 8 and 10, the sum 2 later
])
def test_row_sum_cycles_by_hand(q, n, pe1d, add, want):
    from archsim.templates.attention.tile import row_reduce_cycles

    assert row_reduce_cycles(_arch(pe1d=pe1d, latency1d={"add": add}).params, q, n, "add") == want
    # the row max on a compare of the same latency is scheduled alike; the adder's latency is not its
    assert row_reduce_cycles(_arch(pe1d=pe1d, latency1d={"max": add}).params, q, n, "max") == want
    assert row_reduce_cycles(_arch(pe1d=pe1d, latency1d={"add": add}).params, q, n, "max") == -(-q * n // pe1d)


def test_pipelined_compare_at_a_fractional_max_rate_is_refused():
    with pytest.raises(SpecError, match=r"params.latency1d.max: row maxima on a pipelined compare are modelled at "
                                        r"one max per lane per cycle \(ops1d_per_cycle.max 1\), got "
                                        r"ops1d_per_cycle.max 2"):
        _arch(latency1d={"max": 1}, ops1d_per_cycle={"max": 2}).model()


def test_pipelined_adder_at_a_fractional_add_rate_is_refused():
    with pytest.raises(SpecError, match=r"params.latency1d.add: row sums on a pipelined adder are modelled at one add "
                                        r"per lane per cycle \(ops1d_per_cycle.add 1\), got ops1d_per_cycle.add 0.5"):
        _arch(latency1d={"add": 2}, ops1d_per_cycle={"add": 0.5}).model()


def test_mul2d_latency_in_both_models_worked_by_hand():
    """latency2d = 2 (the 2D PEs' multiplier pipelined): 3x2 array, 2 lanes, E = 4, q=3, L=3, d=2 (nb=2).
    fusemax: qk_max = 2 + 2 + 1 = 5, exp_sum_av = 4 (2 + 1) + 1 + 2 + 2 = 17, stat 6, update 10: slots
    5, max(5, 6), max(17, 6), max(17, 10), 10 -> 55, + drain 3 -> 58; flat: qk = av = 3 + 2 * 2 + 2 = 9,
    softmax 29 -> 47. Values are those without the latency."""
    _assert_both_models_take({"latency2d": 2}, 6, fusemax=58, flat=47)


@pytest.mark.parametrize("over", [{"latency2d": 3}, {"latency2d": 2, "exp_on": "array1d", "pe1d": 1},
                                  {"latency2d": 1, "latency1d": {"exp": 2, "recip": 3}}])
def test_latency2d_fast_equals_detailed_on_every_kind_of_tile(over):
    """The closed form and the cycle-stepping model agree with a pipelined 2D multiplier on the
    conformance hook's tiles (whole, chunked, multi-pass, rescale companions, FLAT phases); the
    latency never shortens a tile and lengthens some."""
    from archsim.templates.attention import conformance

    plain, piped = _arch(**{k: v for k, v in over.items() if k != "latency2d"}).model(), _arch(**over).model()
    items = conformance.sample_tiles(np.random.default_rng(10), piped.params, 24)
    for tile, _ops_ in items:
        fast = piped.tile_cycles(tile)
        assert fast == piped.detailed_tile_cycles(tile), tile
        assert fast >= plain.tile_cycles(tile), tile
    assert any(piped.tile_cycles(t) > plain.tile_cycles(t) for t, _ in items)


@pytest.mark.parametrize("lat, message", [
    ({"div": 1}, r"^attention RTL: latency1d: the RTL pipelines only the 1D lanes' exp, reciprocal, multiplier, "
                 r"adder and compare \(latency1d.exp, .recip, .mul, .add, .max\), got \{'div': 1\}$"),
    ({"max": 4}, r"^attention RTL: latency1d.max: the 1D lanes' compare has at most 3 pipeline stages, got 4$"),
    ({"add": 3, "exp": 2}, r"^attention RTL: latency1d.exp: the 1D lanes' exp op subtracts on the adder "
                           r"\(latency1d.add 3\) before exp2, so it takes at least 3 cycles, got 2$"),
    ({"add": 2, "exp": 5000}, r"^attention RTL: latency1d.exp: the 1D lanes' exp2 has at most 96 pipeline stages at "
                              r"exp_macs 4 \(latency1d.exp at most 98: the adder's 2 first\), got 5000$"),
    ({"mul": 12}, r"^attention RTL: latency1d.mul: the 1D lanes' multiplier has at most 11 pipeline stages, "
                  r"got 12$"),
    ({"add": 13, "exp": 13}, r"^attention RTL: latency1d.add: the 1D lanes' adder has at most 12 pipeline stages, "
                             r"got 13$"),
    ({"exp": 5000}, r"^attention RTL: latency1d.exp: the 1D lanes' exp2 has at most \d+ pipeline stages at "
                  r"exp_macs 4, got 5000$"),
    ({"recip": 34}, r"^attention RTL: latency1d.recip: the 1D lanes' reciprocal has at most 33 pipeline stages, "
                    r"got 34$"),
])
def test_unsupported_latencies_are_one_line_errors(lat, message):
    with pytest.raises(SpecError, match=message):
        design_for(_arch(latency1d=lat))


def _fake_result(design, items):
    """What a correct RTL would report: the models' values and cycles."""
    model = _arch().model()
    tiles = []
    for tile, ops in items:
        vals = np.asarray(model.tile_values(tile, ops), np.float32).view(np.uint32)
        rows = [list(map(int, r)) + [0] * (8 - tile.head_dim) for r in vals]
        tiles.append({"cycles": model.tile_cycles(tile), "port_cycles": model.tile_cycles(tile), "rows": rows,
                      "error_flag": 0})
    return {"tiles": tiles}


def test_the_checker_catches_a_wrong_value_and_a_wrong_cycle_count():
    design = design_for(_arch())
    items = [(AttentionTile("fusemax", 3, 5, 2), _ops(np.random.default_rng(1), 3, 5, 2))]
    good = _fake_result(design, items)
    assert design.check(items, good).ok
    bad = _fake_result(design, items)
    bad["tiles"][0]["rows"][1][0] ^= 1  # one ulp
    report = design.check(items, bad)
    assert not report.ok and not report.tiles[0].values_ok
    assert "out[1,0]" in report.tiles[0].mismatch and "1 of 6 values differ" in report.tiles[0].mismatch
    late = _fake_result(design, items)
    late["tiles"][0]["cycles"] += 1
    late["tiles"][0]["port_cycles"] += 1
    report = design.check(items, late)
    assert report.tiles[0].values_ok and not report.tiles[0].cycles_ok


# ----------------------------------------------------------------------------- fp32 units


@pytest.mark.verilog
def test_fp32_max_and_rint_are_bit_exact_with_numpy():
    """The lanes' max and round-half-to-even against numpy (ties, subnormals, both signs). The lanes'
    other fp32 units are checked on their own where they live: add and mul in test_rtl_lib.py
    (test_fp32_finite_units, 400 pairs at several depths), exp in test_exp2_matches_the_attention_model,
    the reciprocal in test_reciprocal_divider_is_exact below."""
    from amaranth import Module, Signal
    from amaranth.sim import Simulator

    from rtl.lib import fp

    m = Module()
    a, b = Signal(32), Signal(32)
    mx = fp.fp32_max(m, a, b, "mx")
    n_fp, n_int = fp.rint(m, a, "rint")
    rng = np.random.default_rng(3)
    A = (rng.uniform(0.5, 3, 40) * 2.0 ** rng.integers(-8, 6, 40) * rng.choice([-1, 1], 40)).astype(np.float32)
    B = (rng.uniform(0.5, 3, 40) * 2.0 ** rng.integers(-8, 6, 40) * rng.choice([-1, 1], 40)).astype(np.float32)
    A[:4] = [0.5, 1.5, 2.5, -3.5]  # rint ties to even
    B[:2] = [np.float32(3e-39), np.float32(-1e-39)]  # subnormal operands
    A[4] = np.float32(2.0 ** -70)
    B[4] = np.float32(2.0 ** -70)
    bits = lambda x: int(np.float32(x).view(np.uint32))  # noqa: E731
    fails = []

    async def bench(ctx):
        for x, y in zip(A, B):
            ctx.set(a, bits(x))
            ctx.set(b, bits(y))
            await ctx.delay(1e-9)
            want = {"max": np.maximum(x, y), "rint": np.rint(x)}
            got = {"max": ctx.get(mx), "rint": ctx.get(n_fp)}
            for k, w in want.items():
                if bits(w) != got[k]:
                    fails.append((k, x, y))
            if ctx.get(n_int) != int(np.rint(x)):
                fails.append(("rint int", x, ctx.get(n_int)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not fails, fails[:5]


def test_reciprocal_divider_is_exact():
    """The lane's restoring divider: quotient and remainder of 2**49 / m equal Python's integer
    ``//`` and ``%`` on the extreme significands and 1500 random ones, and the reciprocal built on it
    is numpy's correctly rounded ``1 / x`` over the whole normal range (subnormal results included)."""
    from amaranth import Cat, Const, Module, Signal
    from amaranth.sim import Simulator

    from rtl.lib.recip import recip_pipelined, recip_rows

    m = Module()
    mant, a = Signal(24), Signal(32)
    _, _, q, r = recip_rows(m, Cat(mant[:23], Const(127, 8), Const(0, 1)), "rd")  # 1.f with mant's fraction
    rc = recip_pipelined(m, a, "rc")
    rng = np.random.default_rng(23)
    mants = [1 << 23, (1 << 23) + 1, (1 << 24) - 1, 0xAAAAAA, 0xC00000]
    mants += [int(x) for x in rng.integers(1 << 23, 1 << 24, 1500)]
    xs = np.concatenate([np.float32([1.0, 3.0, 2.0 ** 126, 1.5 * 2.0 ** 127, 2.0 ** -126, 0.7 * 2.0 ** -125]),
                         (rng.uniform(1, 2, 400) * 2.0 ** rng.integers(-126, 128, 400)).astype(np.float32)])
    fails = []

    async def bench(ctx):
        for v in mants:
            ctx.set(mant, v)
            await ctx.delay(1e-9)
            if (ctx.get(q), ctx.get(r)) != ((1 << 49) // v, (1 << 49) % v):
                fails.append(("divide", v))
        for x in xs:
            ctx.set(a, int(x.view(np.uint32)))
            await ctx.delay(1e-9)
            with np.errstate(over="ignore", under="ignore"):
                want = int((np.float32(1) / x).view(np.uint32))
            if ctx.get(rc) != want:
                fails.append(("recip", float(x)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not fails, fails[:5]


# ----------------------------------------------------------------------------- co-simulation


@pytest.fixture(scope="module")
def small_run():
    from rtl import run_cosim
    require_icarus()
    rng = np.random.default_rng(11)
    items = [
        (AttentionTile("fusemax", 3, 3, 2), _ops(rng, 3, 3, 2)),
        (AttentionTile("flat", 3, 3, 2), _ops(rng, 3, 3, 2)),
        (AttentionTile("fusemax", 2, 5, 3, drain=False, passes=2), _ops(rng, 4, 5, 3)),
        (AttentionTile("flat", 1, 5, 8, drain=False), _ops(rng, 1, 5, 8)),
    ]
    return items, run_cosim(_arch(), items, sim="icarus")


@pytest.mark.rtl
def test_rtl_values_are_the_models_and_within_the_bound(small_run):
    items, report = small_run
    assert report.ok, "\n" + report.summary()
    for check, (tile, ops) in zip(report.tiles, items):
        ref = reference_attention(ops["q"], ops["k"], ops["v"])
        bound = error_bound(ops["q"], ops["k"], ops["v"], SMALL["cols"], SMALL["exp_macs"])
        assert check.extra["max_abs_error"] <= bound.max()
        assert check.extra["error_over_bound"] <= 1.0
        assert ref.shape[0] == tile.q_rows * tile.passes


@pytest.mark.rtl
def test_rtl_cycles_follow_the_contract_worked_by_hand(small_run):
    """3x2 array, 2 lanes, 4 MACs per exp, q=3, L=3, d=2 (nb=2):

    fusemax: phases qk_max 3, exp_sum_av 4+1+2 = 7, stat 2+2+2 = 6, update 2+2+3+3 = 10; slots
    max(3,-)=3, max(3,6)=6, max(7,6)=7, max(7,10)=10, max(-,10)=10 -> 36, + drain 3+2-2 = 3 -> 39.
    flat: qk 2*2 + 3 = 7, softmax ceil(9/2)*5 + ceil(3/2)*2 = 29, av 7 -> 43.
    """
    items, report = small_run
    assert [t.rtl_cycles for t in report.tiles[:2]] == [39, 43]
    assert all(t.rtl_cycles == t.fast_cycles == t.detailed_cycles for t in report.tiles)
    assert all(t.extra["hw_cycles"] == t.rtl_cycles for t in report.tiles)


@pytest.mark.rtl
def test_cli_cosim(capsys):
    from archsim.cli import main

    sets = [x for k, v in SMALL.items() for x in ("--set", f"{k}={v}")]
    rc = main(["rtl", "cosim", "--arch", "fusemax-edge", *sets, "--tiles", "3", "--seed", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS: 3/3 tiles match archsim on icarus" in out


#: the smallest tile that read X back before the fix (issue 23), as the first tile of a run: one
#: query row, so lane 0's row index stays 0 and its l_state[row] read is never re-evaluated
FIRST_TILE_X = AttentionTile("fusemax", 1, 1, 1)


@pytest.mark.rtl
def test_a_first_tile_whose_lane_inputs_never_change_reads_no_x():
    """Issue 23: yosys gives every module an initialised ``$auto$verilog_backend`` reg that Icarus
    must see change before an ``always @*`` block runs; the driver wrote only the top module's, so a
    sub-module block whose inputs kept their initial values (lane 0's ``l_state[0]`` mux: row index
    0, ``l`` first written 0) stayed X and the X reached the result. Now every block is woken once:
    the tile (first of its run) is bit-exact with the models and on both models' cycles."""
    from rtl import run_cosim

    require_icarus()
    items = [(FIRST_TILE_X, _ops(np.random.default_rng(21), 1, 1, 1))]
    report = run_cosim(_arch(), items, sim="icarus")
    assert report.ok, "\n" + report.summary()
    model = _arch().model()
    assert report.tiles[0].rtl_cycles == model.tile_cycles(FIRST_TILE_X) == report.tiles[0].detailed_cycles


@pytest.mark.rtl
def test_x_read_back_fails_loudly_naming_the_tile():
    """Without the harness's wake of every ``always @*`` block (the old bug, planted with
    ``wake_combinational=False``) the result word holds X bits: the run fails with the tile named, and
    no value is compared."""
    from rtl.cosim import run_job

    require_icarus()
    design = design_for(_arch())
    items = [(FIRST_TILE_X, _ops(np.random.default_rng(21), 1, 1, 1))]
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim="icarus", wake_combinational=False)
    report = design.check(items, run.result)
    assert not report.ok
    assert report.error.startswith("tile 0 (fusemax q=1 L=1 d=1): X/Z read back: rd_data of result address 0 "
                                   "holds "), report.error
    assert report.tiles[0].mismatch == "no result from the RTL"


@pytest.mark.rtl
def test_axi_wrapped_attention_is_exact_against_the_models(tmp_path):
    """``--wrapper axi``: the array driven only through cocotbext-axi's bus models (both streams
    stalling now and then); values bit-exact with the models, cycles from the wrapper's CYCLES
    register (the hardware counter) = the contract worked by hand (39 and 43, see above)."""
    pytest.importorskip("cocotbext.axi")
    from rtl.cosim import run_job
    from rtl.lib.axi_design import axi_wrapped

    require_icarus()
    design = axi_wrapped(design_for(_arch()))
    rng = np.random.default_rng(11)
    items = [(AttentionTile("fusemax", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("flat", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("fusemax", 2, 5, 3, drain=False, passes=2), _ops(rng, 4, 5, 3))]
    job = {**design.make_job(items), "axi_backpressure": True}
    run = run_job(design.verilog(), design.toplevel, job, sim="icarus", build_dir=tmp_path)
    report = design.check(items, run.result)
    assert report.ok, "\n" + report.summary()
    assert [t.rtl_cycles for t in report.tiles[:2]] == [39, 43]
    assert all(t.extra["port_cycles"] is None for t in report.tiles)  # behind the bus: the counter alone
    bad = json.loads(json.dumps(run.result))
    bad["tiles"][2]["cycles"] += 1
    assert not design.check(items, bad).tiles[2].cycles_ok


#: (latency override, seed, a last tile of its own, the hand-worked cycles of the first fusemax and flat tiles)
PIPELINED_UNITS = {
    # latency1d.exp = 3: the lanes' exp2 is the library's pipelined unit (3 registers); cycles the
    # hand-worked 44 (fusemax) and 46 (flat) above
    "exp": ({"latency1d": {"exp": 3}}, 12, None, [44, 46]),
    # latency1d.recip = 4 (and exp = 2): the lanes' reciprocal is the library's pipelined divider; FLAT's
    # 1/l is written as it leaves the pipeline and the final divide after a fusemax tile waits for it.
    # Cycles worked by hand: fusemax has no reciprocal op in the tile, its stat phase 2 + 2 + (2 + 2) = 8:
    # slots 3 + 8 + 8 + 10 + 10, + drain 3 -> 42; flat the 47 above with its exp op 2 cycles longer -> 49
    "recip": ({"latency1d": {"recip": 4, "exp": 2}}, 13, AttentionTile("flat", 3, 8, 1), [42, 49]),
    # latency2d = 2: each PE's multiplier is the library's pipelined unit and the adder's decode is the
    # multiplier's 2 cycles later; cycles the hand-worked 58 (fusemax) and 47 (flat) above
    "mul2d": ({"latency2d": 2}, 14, AttentionTile("fusemax", 1, 1, 1), [58, 47]),
    # latency1d mul 2, add 3, exp 5: the lanes' multiplier and adder are the library's pipelined units,
    # results written from delay lines, FLAT's row sum fed back through the adder, the final divide's
    # products written 2 cycles late; cycles the hand-worked 72 (fusemax) and 63 (flat) above
    "muladd1d": ({"latency1d": {"mul": 2, "add": 3, "exp": 5}}, 14, AttentionTile("flat", 3, 8, 1), [72, 63]),
    # and latency1d.max 2: the lanes' compare is the library's pipelined unit, the running max written
    # from a delay line, FLAT's row max fed back through the compare (2 rows interleaved per lane, the
    # row sum 3); cycles the hand-worked 76 (fusemax) and 66 (flat) above
    "max1d": ({"latency1d": {"mul": 2, "add": 3, "exp": 5, "max": 2}}, 15, AttentionTile("flat", 3, 8, 1), [76, 66]),
    # latency1d.max 1 alone: the 39 / 43 above with fusemax's stat 7 (c1(3, max) = 2 + 1): slots 3 + 7 + 7 +
    # 10 + 10, + drain 3 -> 40; flat's row max 2 groups of one row on lane 0 (row 0 at cycles 0-2, row 2 at
    # 3-5, its max at 6): 7 cycles, not 5 -> 45
    "max1d_1": ({"latency1d": {"max": 1}}, 16, AttentionTile("flat", 3, 7, 2), [40, 45]),
    # latency1d add 12: the lanes' adder at its deepest, its operands (the fmulx select) registered in front
    # of its 11 cut points; cycles the hand-worked 126 (fusemax) and 108 (flat) above
    "add1d_deepest": ({"latency1d": {"mul": 2, "add": 12, "exp": 14}}, 18, AttentionTile("flat", 3, 8, 1),
                      [126, 108]),
}


@pytest.mark.rtl
@pytest.mark.parametrize("unit", list(PIPELINED_UNITS))
def test_rtl_with_a_pipelined_unit_follows_the_models(unit):
    """A pipelined library unit in the lanes or the PEs: values bit-exact with both models, the first
    two tiles' cycles worked by hand (PIPELINED_UNITS); multi-pass, partial-block and one-row tiles too."""
    from rtl import run_cosim

    require_icarus()
    over, seed, last, cycles = PIPELINED_UNITS[unit]
    rng = np.random.default_rng(seed)
    items = [(AttentionTile("fusemax", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("flat", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("fusemax", 2, 5, 3, drain=False, passes=2), _ops(rng, 4, 5, 3)),
             (AttentionTile("flat", 1, 5, 8, drain=False), _ops(rng, 1, 5, 8))]
    if last is not None:
        items.append((last, _ops(rng, last.q_rows, last.kv_len, last.head_dim)))
    report = run_cosim(_arch(**over), items, sim="icarus")
    assert report.ok, "\n" + report.summary()
    assert [t.rtl_cycles for t in report.tiles[:2]] == cycles


@pytest.mark.rtl
def test_lanes_on_registered_dsp_blocks_follow_the_models():
    """``multiplier ecp5_dsp`` with the lanes' multiplier pipelined (latency1d mul 2, add 3, exp 5, max 2;
    the 2D multiplier not: it stays inferred): the lanes' multiplier and exp2's Horner products are
    MULT18X18D blocks -- per lane 4 for a 24 x 24 significand product in 17-bit pieces and 4 for each of
    exp2's E - 1 = 3 products, 2 x 16 = 32 in all -- simulated by the shipped model, bit-exact with both
    models and on the hand-worked 76 / 66 cycles."""
    import re

    from rtl import run_cosim

    require_icarus()
    arch = _arch(latency1d={"mul": 2, "add": 3, "exp": 5, "max": 2})
    design = design_for(arch, {"multiplier": "ecp5_dsp"})
    assert (design.cfg.mul1d, design.cfg.mul2d) == ("dsp_reg", "dsp")
    assert len(re.findall(r"^\s*MULT18X18D\b", design.verilog(), re.M)) == 32
    rng = np.random.default_rng(17)
    items = [(AttentionTile("fusemax", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("flat", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("fusemax", 2, 5, 3, drain=False, passes=2), _ops(rng, 4, 5, 3))]
    report = run_cosim(arch, items, sim="icarus", options={"multiplier": "ecp5_dsp"})
    assert report.ok, "\n" + report.summary()
    assert [t.rtl_cycles for t in report.tiles[:2]] == [76, 66]


@pytest.mark.rtl
def test_fp16_operands_are_exact_against_the_models():
    """``precision: fp16``: the buffers hold fp16 codes and the PEs widen them (subnormals normalized)
    to fp32; the conformance hook's tiles (fp16 operands) and a tile whose Q and K hold fp16
    subnormals (2**-24 .. 2**-15) are bit-exact with both models and on their cycles."""
    from rtl import run_cosim
    require_icarus()
    arch = _arch(rows=2, cols=2, pe1d=1, precision="fp16")
    rng = np.random.default_rng(16)
    sub = (rng.integers(1, 1024, (2, 3)) * 2.0 ** -24 * rng.choice([-1, 1], (2, 3))).astype(np.float32)
    v = rng.uniform(-2, 2, (2, 3)).astype(np.float16).astype(np.float32)
    ops = {"q": sub, "k": sub[::-1] * np.float32(2.0 ** 10), "v": v}
    items = [(AttentionTile("fusemax", 2, 2, 3), ops)] + design_for(arch).cosim_items("random", tiles=5, seed=4)
    report = run_cosim(arch, items, sim="icarus")
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 6


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.long
def test_thousand_random_tiles_on_verilator():
    """The fixed configuration (3x2, 2 lanes, E = 4) on 1000 tiles of the conformance hook (edge
    cases first, then random fusemax and flat tiles), Verilator: every tile bit-exact with both
    models and on their cycles. The same run as ``archsim rtl cosim --arch fusemax-edge --set
    rows=3 --set cols=2 --set pe1d=2 --set exp_macs=4 --tiles 1000 --seed 7 --sim verilator``
    (~17 min to build and ~20 min to run on a loaded 2-core machine)."""
    from rtl import run_cosim
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("verilator")
    if reason:
        pytest.skip(reason)
    arch = _arch()
    items = design_for(arch).cosim_items("random", tiles=1000, seed=7)
    report = run_cosim(arch, items, sim="verilator")
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 1000


@pytest.mark.parametrize("over", [{"latency1d": {"exp": 2, "recip": 5, "max": 1, "add": 3, "mul": 4}},
                                  {"latency1d": {"exp": 7}, "exp_on": "array1d", "pe1d": 1},
                                  {"latency1d": {"exp": 4, "add": 2, "mul": 1}, "exp_on": "array1d", "pe1d": 1}])
def test_latency1d_fast_equals_detailed_on_every_kind_of_tile(over):
    """The closed form and the cycle-stepping model agree with 1D latencies on every function, on the
    conformance hook's tiles (whole, chunked, multi-pass, rescale companions, FLAT phases), and a
    latency never makes a tile shorter; values are unchanged (latency is time, not arithmetic)."""
    from archsim.templates.attention import conformance

    plain, piped = _arch(**{k: v for k, v in over.items() if k != "latency1d"}).model(), _arch(**over).model()
    items = conformance.sample_tiles(np.random.default_rng(9), piped.params, 24)
    for tile, ops in items:
        fast = piped.tile_cycles(tile)
        assert fast == piped.detailed_tile_cycles(tile), tile
        assert fast >= plain.tile_cycles(tile), tile
        if ops is not None and tile.phase == "all" and tile.first and tile.last:
            assert np.array_equal(piped.tile_values(tile, ops), plain.tile_values(tile, ops))
    assert any(piped.tile_cycles(t) > plain.tile_cycles(t) for t, _ in items)


@pytest.mark.rtl
def test_bring_your_own_rtl_drives_the_attention_host_interface(tmp_path):
    """``archsim rtl cosim --verilog``: the attention driver needs only the host signature, so a
    Verilog file that implements it is checked like archsim's own (here archsim's Verilog given
    as a user file; the harness's planted-bug tests are tests/test_rtl_byo.py's)."""
    from rtl.cosim.byo import run_user_verilog
    require_icarus()
    arch = _arch()
    text = design_for(arch).verilog()
    good = tmp_path / "mine.v"
    good.write_text(text)
    rng = np.random.default_rng(13)
    items = [(AttentionTile("fusemax", 3, 3, 2), _ops(rng, 3, 3, 2))]
    user = run_user_verilog(arch, [str(good)], "archsim_attention", items, waves=False,
                            build_dir=tmp_path / "good")
    assert user.report.ok, "\n" + user.report.summary()
    assert user.report.tiles[0].rtl_cycles == 39  # the contract worked by hand above


@pytest.mark.synth
def test_no_share_generic_flow_reports_logic_levels(tmp_path):
    """``python -m rtl.attention.synth --target generic`` reports the longest path in 4-LUT levels (yosys
    ``ltp -noff``): an unpipelined multiplier is deeper than the same unit with 4 registers."""
    from amaranth.back import verilog

    from rtl.attention.synth import synthesize_no_share
    from rtl.lib.units import FpMul

    levels = {}
    for stages in (1, 4):
        text = verilog.convert(FpMul("fp8_e4m3", stages), name="m", emit_src=False)
        levels[stages] = synthesize_no_share(text, "m", "generic", workdir=str(tmp_path / str(stages)))["logic_levels"]
    assert 2 <= levels[4] < levels[1]
