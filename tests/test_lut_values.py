"""LUT template values: bit planes, tables and fp rounding worked by hand; the reference is not vacuous."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.spec import arch_from_params
from archsim.templates import get_template
from archsim.templates.lut import LutModel, LutParams, LutTile, weight_planes
from archsim.templates.lut.detailed import LutArrayDetailed

F32 = np.float32


def test_bit_planes_by_hand():
    # ternary -1, 0, +1 -> offset binary u = w + 2 = 1, 2, 3 -> plane 0 = 1,0,1; plane 1 = 0,1,1
    assert weight_planes(np.array([[-1, 0, 1]]), "ternary").tolist() == [[[1, 0, 1]], [[0, 1, 1]]]
    # int4 -8 and 7 -> u = 0 and 15
    assert weight_planes(np.array([[-8, 7]]), "int4")[:, 0].T.tolist() == [[0, 0, 0, 0], [1, 1, 1, 1]]
    # int1: the bit is 1 for +1
    assert weight_planes(np.array([[-1, 1]]), "int1").tolist() == [[[0, 1]]]
    with pytest.raises(ValueError, match="values outside int1"):
        weight_planes(np.array([[0]]), "int1")


def test_int_group_by_hand():
    """A = [1, 2, 3, 4], W = [1, -1, 0, 1] (ternary): 1 - 2 + 0 + 4 = 3, on both models."""
    p = LutParams(tile_m=1, tile_n=1)
    tile = LutTile(1, 4, 1, "ternary", "int8")
    ops = {"input": np.array([[1, 2, 3, 4]]), "weight": np.array([[1], [-1], [0], [1]])}
    fast = LutModel(arch_from_params(p)).tile_values(tile, ops)
    det, _ = LutArrayDetailed(p).run_tile(tile, ops)
    assert fast.tolist() == det.tolist() == [[3]] and fast.dtype == np.int64


def test_fp_rounding_follows_the_contract():
    """bf16 activations [2**24, 1, 1, 0], int1 weights all +1: the table entry is summed in j order
    in fp32 with RNE: 2**24 + 1 is a tie and rounds to 2**24 (even), and again for the next 1, so the
    result is 2**24, not the exact 2**24 + 2."""
    p = LutParams(tile_m=1, tile_n=1)
    tile = LutTile(1, 4, 1, "int1", "bf16")
    ops = {"input": np.array([[2.0 ** 24, 1, 1, 0]], F32), "weight": np.ones((4, 1), np.int64)}
    assert LutModel(arch_from_params(p)).tile_values(tile, ops).tolist() == [[2.0 ** 24]]
    assert LutArrayDetailed(p).run_tile(tile, ops)[0].tolist() == [[2.0 ** 24]]
    # int4 weights 7: bit-serial shift-adds of tables of [32768, 2, 2, 0]: every step exact (< 2**24)
    ops = {"input": np.array([[2.0 ** 15, 2, 2, 0]], F32), "weight": np.array([[7], [7], [7], [0]])}
    tile = LutTile(1, 4, 1, "int4", "fp16")
    assert LutModel(arch_from_params(p)).tile_values(tile, ops).tolist() == [[7.0 * (32768 + 4)]]


def test_symmetric_and_full_tables_agree_bit_for_bit():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 16)) * 1000).astype(np.float16).astype(F32)
    w = rng.integers(-8, 8, size=(16, 5))
    tile = LutTile(3, 16, 5, "int4", "fp16", )
    sym, _ = LutArrayDetailed(LutParams(tile_m=2, tile_n=2)).run_tile(tile, {"input": a, "weight": w})
    full, _ = LutArrayDetailed(LutParams(tile_m=2, tile_n=2, symmetric=False)).run_tile(tile, {"input": a, "weight": w})
    assert np.array_equal(sym, full)


def test_scales_by_hand():
    p = LutParams(tile_m=1, tile_n=2, scale="per_channel")
    tile = LutTile(1, 4, 2, "int2", "int8")
    ops = {"input": np.array([[1, 1, 1, 1]]), "weight": np.array([[1, -2], [1, -2], [1, -2], [1, -2]]),
           "scale": np.array([0.5, 0.25], F32)}
    assert LutModel(arch_from_params(p)).tile_values(tile, ops).tolist() == [[2.0, -2.0]]
    p = LutParams(tile_m=1, tile_n=1, scale="per_group", scale_group=4)
    tile = LutTile(1, 8, 1, "int2", "int8")
    ops = {"input": np.ones((1, 8), np.int64), "weight": np.ones((8, 1), np.int64),
           "scale": np.array([[0.5], [2.0]], F32)}
    assert LutModel(arch_from_params(p)).tile_values(tile, ops).tolist() == [[4 * 0.5 + 4 * 2.0]]


def test_reference_catches_a_wrong_value():
    entry = get_template("lut")
    hook = entry.conformance_module
    from archsim.spec.load import load_arch

    for overrides in ({}, {"scale": "per_group", "scale_group": 8, "tile_n": 4}):
        arch = load_arch(hook.base_arch, overrides)
        model = arch.model()
        for tile, ops in hook.sample_tiles(np.random.default_rng(0), arch.params, 16)[1:4]:
            good = model.tile_values(tile, ops)
            entry.reference_fn(tile, ops, arch.params, good)
            bad = good.copy()
            bad.flat[0] += 1 if bad.dtype == np.int64 else 0.01 * (abs(bad.flat[0]) + 1)
            with pytest.raises(AssertionError):
                entry.reference_fn(tile, ops, arch.params, bad)


def test_samples_cover_every_mode():
    from archsim.spec.load import load_arch

    hook = get_template("lut").conformance_module
    arch = load_arch(hook.base_arch, hook.rtl_arch)
    items = hook.sample_tiles(np.random.default_rng(5), arch.params, 12)
    modes = {(t.weight_format, t.activation_format) for t, _ in items}
    assert len(modes) == 12  # 12 RTL samples: 12 of the 15 W x A modes; 16 cover all (missing_cases)
    items = hook.sample_tiles(np.random.default_rng(5), arch.params, 16)
    assert len({(t.weight_format, t.activation_format) for t, _ in items}) == 15
