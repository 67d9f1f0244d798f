"""FP16 activations on BitMoD's bit-serial PE (``pe: bitmod``, archsim/templates/simd/bitmod_fp16.py):
fast == detailed == an independent scalar reference written here from the contract (Python ints, the
paper's value sets), hand-worked tiles (exact alignment; a product truncated below the guard bits),
cycles equal to int16 activations', inf / NaN refused, the error against the exact dot product bounded."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.spec import arch_from_params
from archsim.templates.simd import bitserial
from archsim.templates.simd.bitmod_fp16_reference import reference
from archsim.templates.simd.model import SimdModel
from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import SimdTile

FORMATS = ["fp4_er_pos", "fp4_er_neg", "fp4_ea_pos", "fp4_ea_neg", "fp3_er_pos", "fp3_ea_neg", "int4", "int8",
           "int16", "fp16"]


def _model(**kw) -> SimdModel:
    base = dict(pes=3, lane_bits=64, pe="bitmod", formats=FORMATS, weight_format="fp4_er_pos",
                activation_format="fp16", group_size=16, pipeline_cycles=2)
    return SimdModel(arch_from_params(SimdParams(**{**base, **kw})))


def _bits(v) -> np.ndarray:
    return np.asarray(v, np.float32).view(np.uint32)


# ----------------------------------------------------------------------------- tests

def _agree(count: int, seed: int) -> int:
    """fp16 tiles among ``count`` sampled ones, each checked fast == detailed == reference, bit for bit."""
    model = _model()
    rng = np.random.default_rng(seed)
    fp16_tiles = 0
    for tile, ops in bitserial.sample_tiles(rng, model.params, count):
        if tile.activation_format != "fp16":
            continue
        fp16_tiles += 1
        fast = model.tile_values(tile, ops)
        detailed, cycles = model.detailed_tile(tile, ops)
        want = reference(tile, ops, 4)
        assert np.array_equal(_bits(fast), _bits(want)), tile
        assert np.array_equal(_bits(detailed), _bits(want)), tile
        assert cycles == model.tile_cycles(tile) == bitserial.tile_cycles(tile, model.params)
    return fp16_tiles


def test_fast_detailed_and_reference_agree_on_random_tiles():
    assert _agree(80, seed=5) >= 15


@pytest.mark.slow
def test_fast_detailed_and_reference_agree_on_many_tiles():
    assert _agree(2000, seed=7) >= 500


def _one(a_codes, w_codes, wf="fp4_er_pos", g=0):
    tile = SimdTile(1, len(a_codes), 1, wf, "fp16", group_size=g)
    ops = {"input": np.array([a_codes], np.uint32), "weight": np.array([[c] for c in w_codes], np.uint32)}
    if g:
        ops["scale"] = np.ones((tile.scale_groups(), 1), np.uint8)
    return tile, ops


def test_hand_worked_alignment():
    # a = [1.0, 2**-12], w = [1.5, 1] (fp4 codes 0b0011, 0b0010): terms (2, 1) and (2, 0) in units of 1/2.
    # cycle 1: v = -10 + 1, -22 + 1 -> V = -9; S = 8192 + (8192 >> 12) = 8194 at 2**-13 (= 1 + 2**-12)
    # cycle 2: lane 0 only, v = -10: S = 8192 at 2**-14; Z = -13: M = 8194 + 4096 = 12290 -> 1.5 + 2**-12
    model = _model()
    tile, ops = _one([0x3C00, 0x0C00], [0b0011, 0b0010])
    assert float(model.tile_values(tile, ops)[0, 0]) == 12290 * 2.0 ** -13 == 1.5 + 2.0 ** -12


def test_a_product_below_the_guard_bits_is_truncated():
    # a = [1.0, 1025 * 2**-24] (0x0401), w = [1, 1]: lane 1 is 14 bits below lane 0 and (1025 << 3) >> 14 = 0:
    # the block-float sum is exactly 1.0, where the exact 1 + 1025 * 2**-24 rounds to fp32 1 + 2**-14
    model = _model()
    tile, ops = _one([0x3C00, 0x0401], [0b0010, 0b0010])
    assert float(model.tile_values(tile, ops)[0, 0]) == 1.0
    assert float(np.float32(1 + 1025 * 2.0 ** -24)) == 1 + 2.0 ** -14


def test_cycles_are_those_of_int16_activations():
    model = _model()
    for k, g in ((1, 1), (13, 5), (64, 16), (40, 0)):
        for wf in ("fp4_ea_neg", "fp3_er_pos", "int8"):
            fp16 = SimdTile(2, k, 4, wf, "fp16", group_size=g)
            int16 = SimdTile(2, k, 4, wf, "int16", group_size=g)
            assert model.tile_cycles(fp16) == model.tile_cycles(int16) == model.detailed_tile_cycles(fp16)


def test_inf_and_nan_activations_are_refused():
    model = _model()
    for code in (0x7C00, 0xFE00):
        tile, ops = _one([0x3C00, code], [0b0010, 0b0010])
        with pytest.raises(ValueError, match="finite fp16 activations"):
            model.tile_values(tile, ops)


def test_error_against_the_exact_dot_product_is_small():
    """Truncation only: per output the block-float result is within 2**-9 of sum |a * w| of the exact value."""
    model = _model()
    rng = np.random.default_rng(6)
    worst = 0.0
    for _ in range(20):
        k = int(rng.integers(8, 129))
        tile = SimdTile(2, k, 3, "fp4_ea_pos", "fp16", group_size=0)
        ops = bitserial.make_operands(tile, model.params, rng)
        ops["input"] = np.asarray(np.float16(rng.standard_normal((2, k))).view(np.uint16), np.uint32)
        a = np.float16(np.asarray(ops["input"], np.uint16).view(np.float16)).astype(np.float64)
        w = bitserial.weights_x2(tile, ops) / 2
        exact, size = a @ w, np.abs(a) @ np.abs(w)
        got = model.tile_values(tile, ops).astype(np.float64)
        worst = max(worst, float(np.max(np.abs(got - exact) / size)))
    assert 0 < worst < 2.0 ** -9
