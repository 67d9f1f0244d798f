"""PIM ``accumulator_interleave`` P: the fast model and the command-level replay follow the
interleaved fp32 summation order of an independent scalar reference (column c of a row into
partial c mod P, partials summed (p0 + p1) + (p2 + p3)), P = 1 is the plain sequential order,
and the order is observable (a planted sequential order is told apart)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from archsim.errors import ArchsimError
from archsim.templates.pim import PimParams, PimTile, run_detailed
from archsim.templates.pim.values import gemv_dot, to_bf16

BASE = PimParams(row_bytes=256, column_bytes=16, acc_registers=8, input_buffer_bytes=512, tREFI=1500, tRFC=100)
F = np.float32


def pairwise(vals: list) -> np.float32:
    """Pairwise fp32 sum, padded with zeros to a power of two: ((v0+v1)+(v2+v3))..."""
    vals = [F(v) for v in vals]
    while len(vals) & (len(vals) - 1):
        vals.append(F(0))
    while len(vals) > 1:
        vals = [F(vals[i] + vals[i + 1]) for i in range(0, len(vals), 2)]
    return vals[0]


def reference_row(w_row: np.ndarray, x: np.ndarray, ce: int, P: int, sequential_reduce: bool = False) -> np.float32:
    """One output row, scalar fp32 ops: column sums (pairwise over the column's ce products),
    partial c mod P, then the partials' pairwise sum (or, planted deviation, left to right)."""
    k = len(x)
    partial = [F(0)] * P
    for c in range(-(-k // ce)):
        prods = [F(w_row[e]) * F(x[e]) if e < k else F(0) for e in range(c * ce, c * ce + ce)]
        partial[c % P] = F(partial[c % P] + pairwise(prods))
    if sequential_reduce:
        total = F(0)
        for v in partial:
            total = F(total + v)
        return total
    return pairwise(partial)


def bf16_operands(seed: int, banks: int, rows: int, k: int):
    rng = np.random.default_rng(seed)
    # wide magnitudes so that the summation order changes the rounding
    w = to_bf16((rng.standard_normal((banks, rows, k)) * np.exp2(rng.integers(-8, 9, (banks, rows, k)))).astype(F))
    x = to_bf16(rng.standard_normal(k).astype(F))
    return w, x


@pytest.mark.parametrize("P", [1, 2, 4, 8, 16])
def test_fast_and_detailed_follow_the_interleaved_order(P):
    p = dataclasses.replace(BASE, accumulator_interleave=P, tCL=26)
    banks, rows, k = 2, 5, 190  # 24 columns of 8: every partial gets several, k not a multiple
    w, x = bf16_operands(P, banks, rows, k)
    ref = np.array([[reference_row(w[b, r], x, p.column_elements, P) for r in range(rows)] for b in range(banks)], F)
    fast = gemv_dot(w, x, p.column_elements, "bf16", P)
    tile = PimTile("gemv", rows=rows, k=k, banks=banks, ref_due=1400)
    detailed, _cycles, _cmds = run_detailed(tile, p, w, x)
    if P > 1:  # the operands tell this order from the sequential one
        seq = np.array([[reference_row(w[b, r], x, p.column_elements, 1) for r in range(rows)]
                        for b in range(banks)], F)
        assert ref.view(np.uint32).tolist() != seq.view(np.uint32).tolist()
    assert fast.view(np.uint32).tolist() == ref.view(np.uint32).tolist()
    assert detailed.view(np.uint32).tolist() == ref.view(np.uint32).tolist()


def test_interleave_changes_bits_and_a_planted_order_is_caught():
    p = dataclasses.replace(BASE, accumulator_interleave=4)
    w, x = bf16_operands(7, 1, 8, 250)
    ce = p.column_elements
    fast = gemv_dot(w, x, ce, "bf16", 4)
    seq = gemv_dot(w, x, ce, "bf16", 1)
    planted = np.array([[reference_row(w[0, r], x, ce, 4, sequential_reduce=True) for r in range(8)]], F)
    # the orders are observable on these operands: interleaving is not the sequential order, and
    # a left-to-right reduction of the partials differs from the pairwise one
    assert fast.view(np.uint32).tolist() != seq.view(np.uint32).tolist()
    assert fast.view(np.uint32).tolist() != planted.view(np.uint32).tolist()
    # and all are the same dot product up to fp32 rounding
    exact = w[0].astype(np.float64) @ x.astype(np.float64)
    assert np.allclose(fast[0], exact, rtol=1e-4, atol=1e-2)


def test_int8_partials_wrap_like_int32():
    p = dataclasses.replace(BASE, mac_precision="int8", accumulator_interleave=4)
    k = 70000
    w = np.full((1, 1, k), 127, np.int64)
    x = np.full(k, -127, np.int64)
    exact = -k * 127 * 127
    assert gemv_dot(w, x, p.column_elements, "int8", 4)[0, 0] == (exact + (1 << 31)) % (1 << 32) - (1 << 31)


def test_an_interleave_not_a_power_of_two_is_refused():
    from archsim.spec import load_arch

    # (P = 8 on a tCL 14 preset is accepted: the models charge its longer reduction,
    # tests/test_pim_rdacc_latency.py)
    with pytest.raises(ArchsimError, match="accumulator_interleave: expected one of 1, 2, 4, 8, 16"):
        load_arch("pim-gpt-gddr6", ["accumulator_interleave=3"])
