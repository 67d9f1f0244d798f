"""Independent value reference of the LUT template: a plain dequantized mpGEMM in numpy.

Written from the tile's definition (``out = psum + A @ W`` with the scales),
never from the template's value code. Int8 activations without scales are
exact integers and must match exactly. Every other case is fp32 arithmetic
and must lie within a derived rounding bound of the exact result (computed in
float64, whose own error is ``2**29`` times smaller than the bound):

every output is a tree of at most ``n = (K-1) + (b-1) + 2 + G + 2`` fp32
roundings (table adds, plane shift-adds, ``- S``, the group accumulation over
``G`` groups, a scale multiply and the psum add), and the leaves are the
activations with coefficient at most ``2**(b-1)`` (planes ``2**i / 2``, ``S / 2``)
times the scale, so (Higham, *Accuracy and Stability*, Lemma 3.1 / 3.3)::

    |out - exact| <= gamma_n * (sum_g |s_g| 2**(b-1) sum_{j in g} |a_j| * |s_n| + |psum|),
    gamma_n = n u / (1 - n u),  u = 2**-24.
"""
from __future__ import annotations

import numpy as np

_BITS = {"int1": 1, "ternary": 2, "int2": 2, "int3": 3, "int4": 4}
_RANGES = {"int1": (-1, 1), "ternary": (-1, 1), "int2": (-2, 1), "int3": (-4, 3), "int4": (-8, 7)}


def _exact(tile, operands, params) -> tuple[np.ndarray, np.ndarray]:
    """(exact result in float64 / int, magnitude for the bound)."""
    a = np.asarray(operands["input"], np.float64)
    w = np.asarray(operands["weight"], np.int64)
    lo, hi = _RANGES[tile.weight_format]
    assert w.min() >= lo and w.max() <= hi, "weights outside the format"
    if tile.weight_format == "int1":
        assert not np.any(w == 0), "int1 weights are +-1"
    K, b = params.group_k, _BITS[tile.weight_format]
    G = tile.k // K
    coef = 2.0 ** (b - 1)
    if params.scale == "per_group":
        sg = np.asarray(operands["scale"], np.float64)  # (k // scale_group, n)
        rep = np.repeat(sg, params.scale_group, axis=0)  # (k, n): scale of each weight
        exact = a @ (w * rep)
        mag = np.abs(a) @ (coef * np.abs(rep))
    else:
        exact = a @ w
        mag = np.abs(a) @ np.full(w.shape, coef)
        if params.scale == "per_channel":
            sn = np.asarray(operands["scale"], np.float64)
            exact = exact * sn[None, :]
            mag = mag * np.abs(sn)[None, :]
    psum = operands.get("psum") if tile.accumulate else None
    if psum is not None:
        exact = exact + np.asarray(psum, np.float64)
        mag = mag + np.abs(np.asarray(psum, np.float64))
    n_ops = (K - 1) + (b - 1) + 2 + G + 2
    u = 2.0 ** -24
    return exact, mag * (n_ops * u / (1 - n_ops * u))


def check(tile, operands, params, values) -> None:
    values = np.asarray(values)
    assert values.shape == (tile.m, tile.n), (tile, values.shape)
    integer_out = tile.activation_format == "int8" and params.scale == "none"
    if integer_out:
        assert values.dtype == np.int64, (tile, values.dtype)
        a = np.asarray(operands["input"], np.int64)
        want = a @ np.asarray(operands["weight"], np.int64)
        if tile.accumulate:
            want = want + np.asarray(operands["psum"], np.int64)
        assert np.array_equal(values, want), (tile, values, want)
        return
    assert values.dtype == np.float32, (tile, values.dtype)
    exact, bound = _exact(tile, operands, params)
    err = np.abs(values.astype(np.float64) - exact)
    assert np.all(err <= bound), (tile, float(np.max(err - bound)))


def missing_cases(params, items) -> list[str]:
    tiles = [t for t, _ in items]
    need = {f"mode {w} x {a}": any(t.weight_format == w and t.activation_format == a for t in tiles)
            for w in params.weight_formats for a in params.activation_formats}
    need.update({
        "smallest tile": any(t.m == 1 and t.n == 1 and t.k <= max(params.group_k, params.scale_group) for t in tiles),
        "accumulate": any(t.accumulate for t in tiles),
        "precomputed": any(t.precomputed for t in tiles),
        "table built": any(not t.precomputed for t in tiles),
        "several row and column blocks": any(t.m > params.tile_m and t.n > params.tile_n for t in tiles),
    })
    if params.tile_m > 1:
        need["partial row block"] = any(t.m % params.tile_m for t in tiles)
    if params.tile_n > 1:
        need["partial column block"] = any(t.n % params.tile_n for t in tiles)
    return [name for name, ok in need.items() if not ok]
