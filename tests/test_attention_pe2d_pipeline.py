"""The 2D PE's pipelined adders, ``rint`` and ``ldexp`` (``latency2d_add`` / ``_rint`` / ``_ldexp``):
both models' cycles worked out by hand, the closed form equal to the cycle-stepping model, values
unchanged, refusals; ``rtl``: the pipelined PE co-simulated against the models (Icarus)."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.errors import SpecError
from archsim.templates.attention import AttentionTile
from attention_ops import small_arch as _arch, bf16_ops as _ops
from rtl import design_for

PIPED = {"latency2d": 2, "latency2d_add": 3, "latency2d_rint": 2, "latency2d_ldexp": 1}

#: one query, two keys: the first key's score depends on the summation order (worked by hand below)
_ORDER_OPS = {"q": np.array([[2.0 ** 12, 1, 1, -2.0 ** 12, 1]], np.float32),
              "k": np.array([[2.0 ** 12, 1, 1, 2.0 ** 12, 1], [0, 0, 0, 0, 0]], np.float32),
              "v": np.array([[1, 2, 3, 4, 5], [0, 0, 0, 0, 1]], np.float32)}


def test_pipelined_pe_in_both_models_worked_by_hand():
    """S = latency2d 2, A = latency2d_add 3, Rn = latency2d_rint 2, Lx = latency2d_ldexp 1 on the 3x2
    array (2 lanes, E = 4), fusemax q=3, L=3, d=2 (nb = 2, 5 slots). QK keeps A + 1 = 4 partial sums
    in flight: max(d, 4) = 4 steps, then a pairwise tree of K = 2 levels, (1 + 4) + (2 + 4) cycles,
    and 1 to the ring: 16; Q and K enter as a wavefront (PE (i, j) i + j cycles late), so the last
    row's max is R - 1 = 2 cycles after the first's, at the end of the registered row max chain (C + 1):
    qk_max = 16 + S + 1 + (R - 1) + (C + 1) = 16 + 2 + 1 + 2 + 3 = 24;
    exp_sum_av = (S + 2A + Rn + 1) + (E - 1)(S + A + 1) + Lx + 1 + d + S + C A
               = 11 + 18 + 1 + 1 + 2 + 2 + 6 = 41;
    1D: stat = 2 + 2 + 2 = 6, update = 2 + 2 + 3 + 3 = 10;
    slots 24, max(24, 6), max(41, 6), max(41, 10), 10 -> 140; no drain at the tile's end (the wave
    drained in each QK phase) -> 140, with or without the drain flag.
    With L = 4, d = 8: QK's sum is 8 + 2 * 4 + 4 = 20 (12 less than step by step, d (A + 1) = 32),
    qk_max = 20 + 2 + 1 + 2 + 3 = 28, exp_sum_av = 41 + 6 = 47 (d 8), update = 2 + 2 + 12 + 12 = 28;
    slots 28, 28, 47, 47, 28 -> 178. Both models' values agree (each sums in its own code)."""
    model = _arch(**PIPED).model()
    rng = np.random.default_rng(6)
    for tile, cycles in ((AttentionTile("fusemax", 3, 3, 2), 140), (AttentionTile("fusemax", 3, 3, 2, drain=False), 140),
                         (AttentionTile("fusemax", 3, 4, 8), 178)):
        ops = _ops(rng, 3, tile.kv_len, tile.head_dim)
        vals, det = model.detailed_tile(tile, ops)
        assert model.tile_cycles(tile) == det == cycles
        assert np.array_equal(vals, model.tile_values(tile, ops))


def test_interleaved_scores_in_the_order_worked_by_hand():
    """Products x = (2**24, 1, 1, -2**24, 1) (bf16 q * k) where the order decides the fp32 sum.
    In order from +0.0: 2**24 + 1 rounds to 2**24, + 1 again, - 2**24 -> 0, + 1 -> 1.
    Four partials (A = 3): p0 = x0 + x4 = 2**24, p1 = 1, p2 = 1, p3 = -2**24; they leave from
    partial max(5, 4) % 4 = 1: (p1 + p2) + (p3 + p0) = 2 + 0 = 2.
    Three partials (A = 2): p0 = x0 + x3 = 0, p1 = 2, p2 = 1; from 5 % 3 = 2: (p2 + p0) + p1 = 3."""
    from archsim.templates.attention.values import dot_rows

    q = np.array([[2.0 ** 12, 1, 1, -2.0 ** 12, 1]], np.float32)
    k = np.array([[2.0 ** 12, 1, 1, 2.0 ** 12, 1]], np.float32)
    assert [float(dot_rows(q, k, n)[0, 0]) for n in (1, 4, 3)] == [1.0, 2.0, 3.0]
    # the cycle-stepping model sums its own way: same scores, hence the same row max (m) and outputs
    for add in (2, 3):
        model = _arch(latency2d_add=add).model()
        tile = AttentionTile("fusemax", 1, 2, 5)
        ops = _ORDER_OPS
        assert np.array_equal(model.detailed_tile(tile, ops)[0], model.tile_values(tile, ops))


def test_qk_sum_cycles_worked_by_hand():
    """``max(d, A + 1) + K (A + 1) + 2**K``, K = ceil(log2(A + 1)); one-cycle adder: d."""
    from archsim.templates.attention.tile import qk_sum_cycles

    assert qk_sum_cycles(8, 0) == 8
    assert qk_sum_cycles(8, 1) == 8 + 1 * 2 + 2  # 2 partials, one level
    assert qk_sum_cycles(2, 3) == 4 + 2 * 4 + 4
    assert qk_sum_cycles(64, 12) == 64 + 4 * 13 + 16  # 132, against 64 * 13 = 832 step by step
    assert qk_sum_cycles(2, 12) == 13 + 4 * 13 + 16


@pytest.mark.parametrize("over", [PIPED, {"latency2d_add": 1}, {"latency2d_rint": 4, "latency2d_ldexp": 3},
                                  {"latency2d": 11, "latency2d_add": 11, "latency2d_rint": 11,
                                   "latency2d_ldexp": 8}])
def test_fast_equals_detailed_on_fusemax_tiles(over):
    """The closed form and the cycle-stepping model agree on the conformance hook's fusemax tiles
    (whole, chunked, multi-pass, rescale companions); a latency never shortens a tile."""
    from archsim.templates.attention import conformance

    plain, piped = _arch().model(), _arch(**over).model()
    items = [(t, o) for t, o in conformance.sample_tiles(np.random.default_rng(10), plain.params, 32)
             if t.mapping == "fusemax"]
    assert len(items) >= 8
    for tile, _ops_ in items:
        fast = piped.tile_cycles(tile)
        assert fast == piped.detailed_tile_cycles(tile), tile
        assert fast >= plain.tile_cycles(tile), tile
    assert any(piped.tile_cycles(t) > plain.tile_cycles(t) for t, _ in items if t.phase != "rescale")


def test_flat_with_a_pipelined_adder_is_refused():
    model = _arch(latency2d_add=2).model()
    with pytest.raises(ValueError, match=r"flat tiles are modelled with an unpipelined 2D adder only "
                                         r"\(latency2d_add = 0\), got latency2d_add = 2"):
        model.tile_cycles(AttentionTile("flat", 3, 3, 2))


def test_pipelined_adder_needs_exp_on_the_2d_array():
    with pytest.raises((ValueError, SpecError), match=r"latency2d_add: a pipelined 2D adder is modelled with "
                                                      r"exp_on = array2d only"):
        _arch(latency2d_add=1, exp_on="array1d", pe1d=1).model()


def test_too_many_stages_are_one_line_errors():
    with pytest.raises(SpecError, match=r"^attention RTL: latency2d_add: the 2D PEs' Fp32AddFinite has at most 12 "
                                        r"pipeline stages, got 13$"):
        design_for(_arch(latency2d_add=13))
    with pytest.raises(SpecError, match=r"^attention RTL: latency2d_ldexp: the 2D PEs' Ldexp has at most 8 "
                                        r"pipeline stages, got 9$"):
        design_for(_arch(latency2d_ldexp=9))


@pytest.mark.rtl
def test_rtl_with_a_pipelined_pe_follows_the_models():
    """latency2d 2, latency2d_add 3, latency2d_rint 2, latency2d_ldexp 1: the PEs' adders, rint and
    ldexp pipelined, the row chains skewed by registers; values bit-exact with both models, cycles the
    hand-worked 140 and 178 above; multi-pass, partial-block, unskipped and one-row tiles too, and the
    order-sensitive scores worked by hand above."""
    from rtl import run_cosim
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)
    rng = np.random.default_rng(14)
    items = [(AttentionTile("fusemax", 3, 3, 2), _ops(rng, 3, 3, 2)),
             (AttentionTile("fusemax", 2, 5, 3, drain=False, passes=2), _ops(rng, 4, 5, 3)),
             (AttentionTile("fusemax", 3, 4, 8), _ops(rng, 3, 4, 8)),
             (AttentionTile("fusemax", 1, 1, 1), _ops(rng, 1, 1, 1)),
             (AttentionTile("fusemax", 1, 2, 5), _ORDER_OPS)]
    report = run_cosim(_arch(**PIPED), items, sim="icarus")
    assert report.ok, "\n" + report.summary()
    assert [report.tiles[i].rtl_cycles for i in (0, 2)] == [140, 178]


@pytest.mark.rtl
@pytest.mark.parametrize("over", [{"latency2d_add": 1}, {"latency2d": 1, "latency2d_add": 2}])
def test_rtl_interleaved_qk_with_one_tree_level_and_an_odd_partial(over):
    """A = 1: two partials, a one-level tree (its tap index has no bits); A = 2: three partials, the
    tree's odd last one passes as x + -0.0. Bit- and cycle-exact with both models (Icarus)."""
    from rtl import run_cosim
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)
    items = [(AttentionTile("fusemax", 3, 4, 8), _ops(np.random.default_rng(16), 3, 4, 8)),
             (AttentionTile("fusemax", 1, 2, 5), _ORDER_OPS)]
    report = run_cosim(_arch(**over), items, sim="icarus")
    assert report.ok, "\n" + report.summary()


#: the 2D PE measured at >= 150 MHz alone (docs/attention.md): every unit at its deepest, the
#: multiplier's and adders' operands registered, the multiplier on registered ECP5 DSP blocks
DEEPEST = {"rows": 2, "cols": 2, "pe1d": 1, "latency2d": 12, "latency2d_add": 12, "latency2d_rint": 11,
           "latency2d_ldexp": 8}


def test_deepest_pe_worked_by_hand():
    """DEEPEST (S 12, A 12, Rn 11, Lx 8) on a 2x2 array with 1 lane, E = 4, fusemax q=2, L=2, d=2
    (nb = 1, 4 slots): QK 13 partials, max(2, 13) + 4 * 13 + 2**4 = 81; qk_max = 81 + 12 + 1 + (R - 1)
    + (C + 1) = 98; exp_sum_av = (12 + 24 + 11 + 1) + 3 * 25 + 8 + 1 + 2 + 12 + 2 * 12 = 170;
    stat = 2 + 2 + 2 = 6, update = 2 + 2 + 4 + 4 = 12 (one lane); slots 98, 6, 170, 12 -> 286, no drain."""
    model = _arch(**DEEPEST).model()
    tile = AttentionTile("fusemax", 2, 2, 2)
    _vals, det = model.detailed_tile(tile, _ops(np.random.default_rng(3), 2, 2, 2))
    assert model.tile_cycles(tile) == det == 286


def test_registered_dsp_multiplier_needs_a_pipelined_multiplier():
    with pytest.raises(SpecError, match=r"^attention RTL: multiplier ecp5_dsp: the registered DSP blocks need a "
                                        r"pipelined multiplier \(latency2d >= 1 for the 2D PEs, latency1d.mul >= 1 "
                                        r"for the 1D lanes\), got latency2d 0 and latency1d.mul 0$"):
        design_for(_arch(), {"multiplier": "ecp5_dsp"})


@pytest.mark.rtl
def test_rtl_of_the_deepest_pe_with_registered_dsp_blocks_follows_the_models():
    """DEEPEST with ``multiplier ecp5_dsp`` (the MULT18X18D simulation model), bf16 and fp16
    operands: bit-exact with both models and on their cycles (286 worked by hand above)."""
    from rtl import run_cosim
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)
    rng = np.random.default_rng(15)
    items = [(AttentionTile("fusemax", 2, 2, 2), _ops(rng, 2, 2, 2)),
             (AttentionTile("fusemax", 1, 3, 5, passes=2), _ops(rng, 2, 3, 5))]
    report = run_cosim(_arch(**DEEPEST), items, sim="icarus", options={"multiplier": "ecp5_dsp"})
    assert report.ok, "\n" + report.summary()
    assert report.tiles[0].rtl_cycles == 286
    arch = _arch(**DEEPEST, precision="fp16")
    items = design_for(arch).cosim_items("random", tiles=3, seed=2)
    report = run_cosim(arch, items, sim="icarus", options={"multiplier": "ecp5_dsp"})
    assert report.ok, "\n" + report.summary()


@pytest.mark.verilog
def test_deepest_pe_is_lint_clean():
    """The pipelined PE's units do not reuse a signal's name for their instance (Verilator VARHIDDEN):
    the deepest setting with registered DSP blocks lints clean with the shipped waivers."""
    from rtl.lint import lint_design

    result = lint_design(design_for(_arch(**DEEPEST), {"multiplier": "ecp5_dsp"}))
    assert result.count == 0, result.per_rule()
