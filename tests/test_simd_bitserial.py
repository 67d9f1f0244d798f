"""BitMoD's bit-serial PE on the simd template (``pe: bitmod``): cycles by hand, values against an
independent reference, fast == detailed, and the Amaranth PE co-simulated bit- and cycle-exactly."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.spec import arch_from_params
from archsim.templates.simd import bitserial
from archsim.templates.simd.model import SimdModel
from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import SimdTile

FORMATS = ["fp4_er_pos", "fp4_er_neg", "fp4_ea_pos", "fp4_ea_neg", "fp3_er_pos", "fp3_er_neg", "fp3_ea_pos",
           "fp3_ea_neg", "int2", "int4", "int8", "int16"]


def _params(**kw) -> SimdParams:
    base = dict(pes=3, lane_bits=16, pe="bitmod", formats=FORMATS, weight_format="fp4_er_pos",
                activation_format="int8", group_size=128, pipeline_cycles=2)
    base.update(kw)
    return SimdParams(**base)


def _model(**kw) -> SimdModel:
    return SimdModel(arch_from_params(_params(**kw)))


# ----------------------------------------------------------------------------- cycles by hand

@pytest.mark.parametrize("k, g, lane_bits, act, per_output", [
    # one group of 128 int8 activations on 2 lanes: 64 steps x 2 term cycles, then the 8-cycle drain
    (128, 128, 16, "int8", 64 * 2 + 8),
    # two groups: the first group's dequantization hides under the second's 128 term cycles
    (256, 128, 16, "int8", 128 + 128 + 8),
    # the paper's 4 lanes (64-bit word of int16): 128 / 4 = 32 steps x 2 = 64 per group
    (256, 128, 64, "int16", 64 + 64 + 8),
    # groups of 2 on 2 lanes: 2 term cycles each, so each later group waits for the 8-cycle dequantization
    (8, 2, 16, "int8", 2 + 3 * 8 + 8),
    # a partial last group: 13 = 5 + 5 + 3 on 2 lanes: 6, max(6, 8), max(4, 8), drain 8
    (13, 5, 16, "int8", 6 + 8 + 8 + 8),
])
def test_cycles_closed_form_by_hand(k, g, lane_bits, act, per_output):
    model = _model(lane_bits=lane_bits)
    tile = SimdTile(2, k, 4, "fp4_ea_neg", act, group_size=g)  # 8 outputs on 3 PEs: 3 rounds
    assert model.tile_cycles(tile) == 3 * per_output + 2
    assert model.detailed_tile_cycles(tile) == 3 * per_output + 2


@pytest.mark.parametrize("wf, terms", [("int2", 1), ("int4", 2), ("int8", 4), ("int16", 8)])
def test_integer_weights_take_one_cycle_per_booth_digit(wf, terms):
    # radix-4 Booth: ceil(wb / 2) digits, one per cycle (the authors' INT8 reader: 4 stages)
    model = _model()
    tile = SimdTile(1, 256, 3, wf, "int8", group_size=128)  # 3 outputs, 1 round; 2 lanes: 64 steps a group
    assert model.tile_cycles(tile) == (64 * terms) + max(64 * terms, 8) + 8 + 2


def test_no_group_scale_bypasses_the_dequantization():
    # G = 0 (attention: activations as weights): one group of K, no scale, no drain
    model = _model()
    tile = SimdTile(2, 40, 3, "int8", "int8", group_size=0)  # 6 outputs, 2 rounds, 20 steps x 4 digits
    assert model.tile_cycles(tile) == 2 * 20 * 4 + 2
    rng = np.random.default_rng(5)
    ops = {"input": rng.integers(0, 256, size=(2, 40)).astype(np.uint32),
           "weight": rng.integers(0, 256, size=(40, 3)).astype(np.uint32)}
    a = ops["input"].astype(np.int64)
    w = ops["weight"].astype(np.int64)
    a, w = np.where(a > 127, a - 256, a), np.where(w > 127, w - 256, w)
    want = 2 * (a @ w)  # one fraction bit: units of 1/2
    assert np.array_equal(model.tile_values(tile, ops), want)
    assert np.array_equal(model.detailed_tile(tile, ops)[0], want)


def test_3_and_4_bit_weights_take_the_same_cycles():
    """Every 3- and 4-bit BitMoD value x2 has at most two set bits: 2 cycles per weight either way."""
    model = _model()
    for w3, w4 in (("fp3_er_pos", "fp4_er_pos"), ("fp3_ea_neg", "fp4_ea_neg")):
        assert (model.tile_cycles(SimdTile(1, 4096, 64, w3, "int8", group_size=128))
                == model.tile_cycles(SimdTile(1, 4096, 64, w4, "int8", group_size=128)))


def test_unified_representation_terms():
    # magnitudes x2 of the paper's types, by hand: FP4 1,2,3,4,6,8,12 (+10, 16), FP3 2,4,8 (+6, 12)
    for mag, terms in {1: (1, 0), 3: (2, 1), 6: (4, 2), 10: (8, 2), 12: (8, 4), 16: (16, 0), 0: (0, 0)}.items():
        hi, lo = bitserial.term_split(np.array([mag, -mag]))
        assert (hi[0], lo[0]) == terms and (hi[1], lo[1]) == (-terms[0], -terms[1])
    with pytest.raises(ValueError):
        bitserial.term_split(np.array([7]))
    for bits in (3, 4):
        table = bitserial.w2_table(bits)
        hi, lo = bitserial.term_split(table)
        assert np.array_equal(hi + lo, table)


# ----------------------------------------------------------------------------- values

def test_fast_detailed_and_reference_agree_on_random_tiles():
    params = _params()
    model = SimdModel(arch_from_params(params))
    items = bitserial.sample_tiles(np.random.default_rng(7), params, 120)
    assert {t.weight_format for t, _ in items} >= set(FORMATS[:8])
    for tile, ops in items:
        fast = model.tile_values(tile, ops)
        det, cycles = model.detailed_tile(tile, ops)
        assert fast.dtype == det.dtype == np.int64
        assert np.array_equal(fast, det), tile
        assert np.array_equal(fast, bitserial.reference_values(tile, ops)), tile
        assert cycles == model.tile_cycles(tile), tile


def test_a_hand_worked_tile():
    # fp4_ea_neg: code 8 (-0) is -8 -> x2 = -16; code 3 = 1.5 -> 3; code 13 = -3 -> -6
    # fp4_er_pos (selector 0): code 8 is +5 -> 10
    tile = SimdTile(1, 4, 1, "fp4_ea_neg", "int8", group_size=2)
    ops = {"input": np.array([[2, 0xFF, 3, 1]], np.uint32),  # 2, -1, 3, 1
           "weight": np.array([[8], [3], [13], [8]], np.uint32),
           "dtype": np.array([[3], [0]], np.uint8),  # group 0: fp4_ea_neg, group 1: fp4_er_pos
           "scale": np.array([[5], [7]], np.uint8)}
    # group 0: 2*-16 + -1*3 = -35, x5 = -175; group 1: 3*-6 + 1*10 = -8, x7 = -56  -> -231 (= -115.5 real)
    model = _model()
    assert model.tile_values(tile, ops).tolist() == [[-231]]
    assert model.detailed_tile(tile, ops)[0].tolist() == [[-231]]


def test_refusals():
    with pytest.raises(ValueError, match="BitMoD or integer weight type"):
        _params(formats=FORMATS + ["fp8_e4m3"], weight_format="fp8_e4m3").validate()
    _params(formats=FORMATS + ["fp16"], activation_format="fp16").validate()  # tests/test_bitmod_fp16.py
    with pytest.raises(ValueError, match="integer or fp16 activations"):
        _params(formats=FORMATS + ["bf16"], activation_format="bf16").validate()
    with pytest.raises(ValueError, match="group_size > 0"):
        _params(group_size=0).validate()
    with pytest.raises(ValueError, match="pe: expected"):
        _params(pe="booth").validate()
    model = _model()
    tile = SimdTile(1, 4, 1, "fp4_er_pos", "int8", group_size=2)
    ops = {"input": np.zeros((1, 4), np.uint32), "weight": np.zeros((4, 1), np.uint32),
           "scale": np.array([[0.5], [1.0]], np.float32)}
    with pytest.raises(ValueError, match="8-bit unsigned integer codes"):
        model.tile_values(tile, ops)


# ----------------------------------------------------------------------------- RTL (amaranth.sim)

def _cosim(count: int, seed: int, bug: str | None = None) -> tuple[int, int, int]:
    """(tiles, value mismatches, cycle mismatches) of the RTL PE against the fast model."""
    from rtl.simd.bitserial import run_outputs

    params = _params(pes=2)
    model = SimdModel(arch_from_params(params))
    bad_values = bad_cycles = 0
    items = bitserial.sample_tiles(np.random.default_rng(seed), params, count)
    for tile, ops in items:
        values, cycles = run_outputs(tile, ops, params, bug=bug)
        bad_values += int(not np.array_equal(values, model.tile_values(tile, ops)))
        per_output = bitserial.output_cycles(tile, params)
        rounds = -(-tile.outputs // params.pes)
        tile_ok = (set(cycles) == {per_output}
                   and rounds * per_output + params.pipeline_cycles == model.tile_cycles(tile))
        bad_cycles += int(not tile_ok)
    return len(items), bad_values, bad_cycles


@pytest.mark.rtl
def test_rtl_pe_matches_the_models_on_50_tiles():
    tiles, bad_values, bad_cycles = _cosim(50, seed=1)
    assert (tiles, bad_values, bad_cycles) == (50, 0, 0)
    kinds = {(t.weight_format[:3], bool(t.group_size)) for t, _ in bitserial.sample_tiles(
        np.random.default_rng(1), _params(pes=2), 50)}
    assert kinds == {("fp3", True), ("fp4", True), ("int", True), ("fp3", False), ("fp4", False), ("int", False)}


@pytest.mark.rtl
@pytest.mark.parametrize("bug", ["special_sign", "dequant_lsb_first", "no_wait", "booth_minus_two"])
def test_rtl_planted_bug_is_caught(bug):
    _tiles, bad_values, bad_cycles = _cosim(12, seed=2, bug=bug)
    assert bad_values + bad_cycles > 0


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.long  # suite time: the 50-tile run and the bit-serial array's 20 tiles stay in the default suite
def test_rtl_pe_matches_the_models_on_1000_tiles():
    tiles, bad_values, bad_cycles = _cosim(1000, seed=3)
    assert (tiles, bad_values, bad_cycles) == (1000, 0, 0)


def test_the_array_rtl_generator_builds_the_bit_serial_array():
    from archsim.errors import SpecError
    from rtl.simd.bitmod_design import BitmodDesign
    from rtl.simd.entry import SimdDesignEntry
    from rtl.simd.rtl_design import SimdDesign

    assert type(SimdDesignEntry(_params())) is BitmodDesign  # co-simulated in tests/test_simd_bitmod_array.py
    assert type(SimdDesignEntry(_params(pe="lanes", formats=["int8"], weight_format="int8", group_size=0,
                                   pipeline_cycles=4))) is SimdDesign
    with pytest.raises(SpecError, match="pe: bitmod params build"):
        SimdDesign(_params())
