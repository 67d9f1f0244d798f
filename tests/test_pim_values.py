"""PIM template values: the fast model (numpy) and the command-level replay
agree bit for bit, and both equal an independent numpy GEMV."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from archsim.templates.pim import PimParams, PimTile, run_detailed
from archsim.templates.pim.values import gemv_axpy, gemv_dot, to_bf16

BASE = PimParams(row_bytes=256, column_bytes=16, acc_registers=8, input_buffer_bytes=512, tREFI=1500, tRFC=100)


def operands(rng, shape, prec):
    if prec == "int8":
        return rng.integers(-128, 128, size=shape).astype(np.int64)
    return to_bf16(rng.standard_normal(shape).astype(np.float32))


# Dot-mode GEMVs (fast == command-level replay == numpy) on this BASE in int8 and bf16, with the
# shapes (1, 5, 1), (7, 100, 3), (20, 300, 4), (9, 8, 16), (13, 129, 2), are run by the shared
# harness: tests/test_template_levels.py (cases from archsim/templates/pim/conformance.py).


def test_int8_accumulator_wraps_like_int32():
    p = dataclasses.replace(BASE, mac_precision="int8")
    k = 70000  # 70000 * 127 * 127 > 2**31
    w = np.full((1, 1, k), 127, np.int64)
    x = np.full(k, 127, np.int64)
    exact = k * 127 * 127
    wrapped = (exact + (1 << 31)) % (1 << 32) - (1 << 31)
    assert gemv_dot(w, x, p.column_elements, "int8")[0, 0] == wrapped


@pytest.mark.parametrize("prec", ["int8", "bf16"])
def test_axpy_values(prec):
    p = dataclasses.replace(BASE, mac_precision=prec, acc_registers=64)
    rng = np.random.default_rng(3)
    banks, rows, k = 4, 11, 40
    v = operands(rng, (banks, rows, k), prec)
    s = operands(rng, (banks * rows,), prec)
    tile = PimTile("gemv", rows=rows, k=k, banks=banks, mode="axpy", ref_due=200)
    detailed, _c, _cmds = run_detailed(tile, p, v, s)
    fast = gemv_axpy(v, s.reshape(banks, rows), prec)
    assert np.array_equal(detailed, fast)
    ref = s.astype(np.float64) @ v.reshape(-1, k).astype(np.float64)
    if prec == "int8":
        assert np.array_equal(fast, ref.astype(np.int64))
    else:
        assert np.allclose(fast, ref, rtol=1e-4, atol=1e-3)


def test_model_values_interface():
    from archsim.spec.load import load_arch

    model = load_arch("pim-hbm2").model()
    rng = np.random.default_rng(0)
    tile = PimTile("gemv", rows=3, k=50, banks=16, ref_due=1950)
    ops = {"weight": operands(rng, (16, 3, 50), "bf16"), "input": operands(rng, (50,), "bf16")}
    values, cycles = model.detailed_tile(tile, ops)
    assert np.array_equal(values, model.tile_values(tile, ops))
    # independent reference: each bank's 3 rows dotted with the input in float64; the model sums
    # bf16 x bf16 products (exact in fp32) in fp32, so it may differ only by fp32 rounding
    ref = ops["weight"].astype(np.float64) @ ops["input"].astype(np.float64)
    assert values.shape == (16, 3)
    assert np.allclose(values, ref, rtol=1e-5, atol=1e-5)
    assert cycles == model.tile_cycles(tile)
