"""Fast values of a LUT tile, vectorized over rows, groups and columns (contract: :mod:`.tile`).

The full ``2**K``-entry tables are built (``T[~idx] == -T[idx]`` exactly, so
the symmetric storage gives the same values: the detailed model stores half and
negates, and the level harness checks the two agree), every bit plane indexes
them, and the planes are shift-added MSB first.
"""
from __future__ import annotations

import numpy as np

from archsim.templates.lut.tile import PLANES, LutTile, weight_planes

F32 = np.float32


def is_int(activation_format: str) -> bool:
    return activation_format == "int8"


def activations(a: np.ndarray, activation_format: str) -> np.ndarray:
    """Activations in the arithmetic type: int64 for int8, float32 for fp16 / bf16."""
    return np.asarray(a, dtype=np.int64 if is_int(activation_format) else F32)


def sign_matrix(group_k: int) -> np.ndarray:
    """``(2**K, K)`` of +-1: entry idx, term j is +1 iff bit j of idx is set."""
    idx = np.arange(2 ** group_k)[:, None]
    return np.where((idx >> np.arange(group_k)[None, :]) & 1, 1, -1)


def build_tables(a: np.ndarray, group_k: int, integer: bool, entries: np.ndarray | None = None) -> np.ndarray:
    """Tables ``T[..., idx]`` of the groups of ``a`` (shape ``(..., K)``), summed in j order.

    ``entries``: the idx values to build (all ``2**K`` when None). fp: first term
    exact, each later add rounded to fp32 (RNE)."""
    signs = sign_matrix(group_k)
    if entries is not None:
        signs = signs[entries]
    if integer:
        return np.einsum("...j,ej->...e", a.astype(np.int64), signs)
    t = (a[..., None, 0] * F32(1)) * signs[:, 0].astype(F32)
    for j in range(1, group_k):
        t = (t + a[..., None, j] * signs[:, j].astype(F32)).astype(F32)
    return t.astype(F32)


def plane_indices(weight: np.ndarray, weight_format: str, group_k: int) -> np.ndarray:
    """``(b, G, N)`` table indices: plane i of group g, column n (bit j = weight j of the group)."""
    planes = weight_planes(weight, weight_format).astype(np.int64)  # (b, K, N)
    b, k, n = planes.shape
    bits = planes.reshape(b, k // group_k, group_k, n)
    return np.einsum("bgjn,j->bgn", bits, 1 << np.arange(group_k))


def group_results(p: np.ndarray, s: np.ndarray, weight_format: str, integer: bool) -> np.ndarray:
    """``r`` of a group from its shift-added planes ``p`` and its sum ``S``."""
    if weight_format == "int1":
        return p
    if integer:
        return (p - s) >> 1
    return ((p - s).astype(F32) * F32(0.5)).astype(F32)


def tile_values(tile: LutTile, operands: dict, params) -> np.ndarray:
    """Output of one tile (contract in :mod:`.tile`); int64 for int8 without scales, else float32."""
    tile.check(params)
    K, wf = params.group_k, tile.weight_format
    integer = is_int(tile.activation_format)
    a = activations(operands["input"], tile.activation_format)
    w = np.asarray(operands["weight"], np.int64)
    if a.shape != (tile.m, tile.k) or w.shape != (tile.k, tile.n):
        raise ValueError(f"operands: expected input {(tile.m, tile.k)} and weight {(tile.k, tile.n)}, "
                         f"got {a.shape} and {w.shape}")
    groups = tile.k // K
    tables = build_tables(a.reshape(tile.m, groups, K), K, integer)  # (M, G, 2^K)
    idx = plane_indices(w, wf, K)  # (b, G, N)
    g_ix = np.arange(groups)[None, :, None]
    p = None
    for i in range(PLANES[wf] - 1, -1, -1):  # MSB first
        t = tables[:, g_ix[0], idx[i]]  # (M, G, N)
        p = t if p is None else (2 * p + t if integer else (F32(2) * p + t).astype(F32))
    s = tables[:, :, -1][:, :, None]  # (M, G, 1)
    r = group_results(p, s, wf, integer)  # (M, G, N)
    return accumulate(tile, operands, params, r)


def accumulate(tile: LutTile, operands: dict, params, r: np.ndarray) -> np.ndarray:
    """Sum the group results ``r`` (M, G, N) in K order into the output, with the scales."""
    integer = is_int(tile.activation_format)
    scale = params.scale
    psum = operands.get("psum") if tile.accumulate else None
    if scale == "per_group":
        sc = np.asarray(operands["scale"], F32)
        per = params.scale_group // params.group_k
        acc = np.zeros((tile.m, tile.n), F32) if psum is None else np.asarray(psum, F32).copy()
        for g in range(r.shape[1]):
            rg = r[:, g, :].astype(F32) * sc[g // per][None, :]
            acc = (acc + rg.astype(F32)).astype(F32)
        return acc
    if integer and scale == "none":
        acc = np.zeros((tile.m, tile.n), np.int64) if psum is None else np.asarray(psum, np.int64).copy()
        return acc + r.sum(axis=1)
    if integer:
        acc = r.sum(axis=1)
    else:
        acc = np.zeros((tile.m, tile.n), F32)
        if psum is not None and scale == "none":
            acc = np.asarray(psum, F32).copy()
        for g in range(r.shape[1]):
            acc = (acc + r[:, g, :]).astype(F32)
    if scale == "none":
        return acc
    out = (acc.astype(F32) * np.asarray(operands["scale"], F32)[None, :]).astype(F32)
    if psum is not None:
        out = (np.asarray(psum, F32) + out).astype(F32)
    return out
