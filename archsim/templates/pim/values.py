"""Numeric semantics of the PIM MAC unit, shared by the fast and detailed models.

- ``int8``: products of int8 x int8 summed exactly and wrapped to int32
  (two's complement), like the RTL.
- ``bf16``: operands are bf16 (held in float32 arrays whose low 16 bits are
  zero); each product is exact in fp32; the products of one column are summed
  by a pairwise adder tree in fp32 (``tree_sum``), and the column sum is added
  to the fp32 accumulator. Axpy mode accumulates each lane's product directly.
- ``accumulator_interleave`` ``P`` (dot mode; default 1): each output row has ``P``
  partial accumulators; column ``c`` (the ``c``-th column sum of that row in the
  group) goes into partial ``c mod P`` (one rounding per column, as above), and
  an RDACC reads the pairwise adder-tree sum of the ``P`` partials
  (``reduce_partials``: ``(p0 + p1) + (p2 + p3)`` for ``P = 4``). ``P = 1`` is
  the plain sequential accumulate. The RTL pipelines its fp32 accumulate adder
  ``P`` deep this way (:mod:`rtl.pim.accumulators`).
"""
from __future__ import annotations

import numpy as np


def to_bf16(x) -> np.ndarray:
    """Round to bf16 (round to nearest even), returned as float32."""
    a = np.asarray(x, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def wrap32(x) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int64)


def tree_sum(products: np.ndarray, precision: str) -> np.ndarray:
    """Sum the last axis with a pairwise adder tree (fp32 for bf16, exact for int)."""
    if precision == "int8":
        return products.astype(np.int64).sum(axis=-1)
    v = products.astype(np.float32)
    n = v.shape[-1]
    width = 1 << max(0, (n - 1).bit_length())
    if width != n:
        pad = np.zeros(v.shape[:-1] + (width - n,), np.float32)
        v = np.concatenate([v, pad], axis=-1)
    while v.shape[-1] > 1:
        v = (v[..., 0::2] + v[..., 1::2]).astype(np.float32)
    return v[..., 0]


def accumulate(acc: np.ndarray, x: np.ndarray, precision: str) -> np.ndarray:
    if precision == "int8":
        return wrap32(acc + x)
    return (acc.astype(np.float32) + x.astype(np.float32)).astype(np.float32)


def zeros(shape, precision: str) -> np.ndarray:
    return np.zeros(shape, np.int64 if precision == "int8" else np.float32)


def products(w: np.ndarray, x: np.ndarray, precision: str) -> np.ndarray:
    if precision == "int8":
        return w.astype(np.int64) * x.astype(np.int64)
    return w.astype(np.float32) * x.astype(np.float32)


def reduce_partials(partials: np.ndarray, precision: str) -> np.ndarray:
    """An RDACC's value from a row's ``P`` partial accumulators (last axis): the pairwise adder
    tree (fp32) or the int32-wrapped exact sum; ``P = 1`` returns the accumulator itself."""
    if partials.shape[-1] == 1:
        return partials[..., 0]
    if precision == "int8":
        return wrap32(partials.astype(np.int64).sum(axis=-1))
    return tree_sum(partials, precision)


def gemv_dot(weights: np.ndarray, x: np.ndarray, column_elements: int, precision: str,
             interleave: int = 1) -> np.ndarray:
    """Fast model of dot mode: ``weights[..., rows, k] . x[k]`` column by column, column ``c``
    into partial accumulator ``c mod interleave``, the partials reduced at the end."""
    k = weights.shape[-1]
    kc = -(-k // column_elements)
    pad = kc * column_elements - k
    w = np.concatenate([weights, np.zeros(weights.shape[:-1] + (pad,), weights.dtype)], axis=-1) if pad else weights
    xp = np.concatenate([x, np.zeros(pad, x.dtype)]) if pad else x
    prods = products(w, xp, precision).reshape(w.shape[:-1] + (kc, column_elements))
    sums = tree_sum(prods, precision)  # [..., rows, kc]
    acc = zeros(weights.shape[:-1] + (interleave,), precision)
    for c in range(kc):
        acc[..., c % interleave] = accumulate(acc[..., c % interleave], sums[..., c], precision)
    return reduce_partials(acc, precision)


def gemv_axpy(weights: np.ndarray, scalars: np.ndarray, precision: str) -> np.ndarray:
    """Fast model of axpy mode: per bank ``sum_t scalars[b, t] * weights[b, t, :]``
    (sequential over t), then the ASIC adds the banks' partials in bank order."""
    banks, rows, k = weights.shape
    acc = zeros((banks, k), precision)
    for t in range(rows):
        acc = accumulate(acc, products(weights[:, t, :], scalars[:, t:t + 1], precision), precision)
    out = zeros((k,), precision)
    for b in range(banks):
        out = accumulate(out, acc[b], precision)
    return out
