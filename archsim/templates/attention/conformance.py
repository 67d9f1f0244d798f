"""Conformance hook of the attention template (:class:`archsim.templates.base.Conformance`).

Configurations: small arrays (1x1 to 8x8), 1D arrays narrower than the rows,
slow 1D exps, exp on the 1D array, FLAT's scale on the 2D array's edge, and 3 to 8 MACs per exp. Tiles: edge cases
first (a growing running max over a partial last block, one query row, one
key, every phase without values), then random ones. Operands are bf16 (or fp16: the params' ``precision``) values
in fp32 arrays. With a top-k engine (``topk_parallelism``) top-k tiles follow the edge cases
(ties at the threshold, keep one, keep all: the bypass, a partial last row), then SpAtten's pruning
steps (:class:`~archsim.templates.attention.pruning.PruneTile`: two heads with a partial last
probability pass, one query row with one pass), then random top-k tiles, pruning steps and attention
tiles in turn; top-k scores are 16-bit unsigned integers (the RTL's width), pruning steps' operands
are per head, at most 8 keys (small enough for their RTL's default ``flat_keys_max`` at 2 columns;
random ones: one head, at most 6 keys, to keep their co-simulation short).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.templates.attention.pruning import PruneTile
from archsim.templates.attention.tile import AttentionTile
from archsim.templates.attention.topk import TopkTile

base_arch = "fusemax-edge"
rtl_arch: dict[str, Any] = {"rows": 2, "cols": 3, "pe1d": 2}  # small: Icarus runs the 4x4 at ~15 cycles/s


def conformance_archs() -> list[dict[str, Any]]:
    return [
        {"rows": 4, "cols": 4, "pe1d": 4},
        {"rows": 1, "cols": 1, "pe1d": 1},
        {"rows": 3, "cols": 5, "pe1d": 2, "exp_macs": 3},
        {"rows": 8, "cols": 8, "pe1d": 8, "exp_macs": 8},
        {"rows": 6, "cols": 4, "pe1d": 3, "ops1d_per_cycle": {"exp": 0.25, "div": 0.5, "recip": 0.5}},
        {"rows": 4, "cols": 6, "pe1d": 4, "exp_on": "array1d"},
        {"rows": 4, "cols": 3, "pe1d": 3, "flat_scale_on": "array2d"},
        {"rows": 5, "cols": 3, "pe1d": 1, "exp_on": "array1d", "ops1d_per_cycle": {"exp": 0.5, "add": 2}},
        {"rows": 3, "cols": 4, "pe1d": 2, "topk_parallelism": 4},  # SpAtten's top-k engine: top-k tiles too
    ]


def _bf16(x: np.ndarray) -> np.ndarray:
    """Round-toward-zero to bf16, kept in fp32."""
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def _fp16(x: np.ndarray) -> np.ndarray:
    """Round to nearest fp16, kept in fp32."""
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


#: the operand rounding of each ``precision`` (values stay fp32)
_ROUND = {"bf16": _bf16, "fp16": _fp16}


def _operands(rng, q_rows, kv, d, growing=False, precision="bf16") -> dict:
    rnd = _ROUND[precision]
    q = rnd(rng.uniform(-2, 2, (q_rows, d)))
    k = rng.uniform(-2, 2, (kv, d))
    if growing:  # scores grow along the keys: the running max changes in every block
        k = k + np.linspace(0, 6, kv)[:, None] * np.sign(q.sum(axis=0) + 1e-3)[None, :]
    return {"q": q, "k": rnd(k), "v": rnd(rng.uniform(-2, 2, (kv, d)))}


def _scores(rng, n: int, few_values: bool) -> np.ndarray:
    """``n`` 16-bit unsigned scores; ``few_values``: from 6 values (many ties)."""
    return rng.integers(0, 6 if few_values else 1 << 16, n).astype(np.int64)


def _prune_operands(rng, tile: PruneTile, precision: str, growing: bool = False) -> dict:
    """Per-head operands ``q`` (heads, q_rows, d), ``k`` and ``v`` (heads, kv_len, d) of a pruning step."""
    heads = [_operands(rng, tile.q_rows, tile.kv_len, tile.head_dim, growing, precision) for _ in range(tile.heads)]
    return {n: np.stack([h[n] for h in heads]) for n in ("q", "k", "v")}


def sample_tiles(rng: np.random.Generator, params, count: int) -> list:
    R, C = params.rows, params.cols
    items = [
        (AttentionTile("fusemax", R, 3 * C + 1, 4), None),
        (AttentionTile("flat", 1, 1, 1), None),
        (AttentionTile("fusemax", 1, C, 8, drain=False), None),
        (AttentionTile("flat", R, 2 * C + max(1, C // 2), 3), None),
        (AttentionTile("fusemax", R, C + 1, 3, passes=3), None),
    ]
    items = [(t, _operands(rng, t.q_rows * t.passes, t.kv_len, t.head_dim, growing=(i == 0),
                                    precision=params.precision))
             for i, (t, _) in enumerate(items)]
    items += [
        (AttentionTile("fusemax", R, 2 * C + 1, 5, "rescale", first=False, last=True, passes=2), None),
        (AttentionTile("fusemax", max(1, R - 1), 3 * C, 2, "all", first=True, last=False, drain=False), None),
        (AttentionTile("flat", R, 3 * C - 1, 4, "qk", drain=False), None),
        (AttentionTile("flat", R, 3 * C - 1, 4, "softmax"), None),
        (AttentionTile("flat", R, 3 * C - 1, 4, "av"), None),
    ]
    P = params.topk_parallelism
    if P:
        items += [(t, {"scores": _scores(rng, t.n, few)}) for t, few in (
            (TopkTile(3 * P + 1, P + 1, 7), True), (TopkTile(2 * P, 1, 1), False),
            (TopkTile(P + 1, P + 1, 3), False), (TopkTile(5 * P - 1, 2 * P, 0xACE1), False))]
        items += [(t, _prune_operands(rng, t, params.precision, growing)) for t, growing in (
            (PruneTile(R, min(2 * C + 1, 8), 3, 2, 1, 5), True), (PruneTile(1, 3, 4, 1, 2, 0xACE1), False))]
    while len(items) < count:
        if P and len(items) % 3 == 2:
            kv = int(rng.integers(2, 7))  # one head, at most 3 passes: each step is a few array tiles
            t = PruneTile(int(rng.integers(1, R + 1)), kv, int(rng.integers(2, 5)), 1, int(rng.integers(1, kv)),
                          int(rng.integers(1, 1 << 16)))
            items.append((t, _prune_operands(rng, t, params.precision, bool(rng.integers(0, 2)))))
            continue
        if P and len(items) % 3 == 1:
            n = int(rng.integers(2, 8 * P + 1))
            t = TopkTile(n, int(rng.integers(1, n + 1)), int(rng.integers(1, 1 << 16)))
            items.append((t, {"scores": _scores(rng, n, bool(rng.integers(0, 2)))}))
            continue
        mapping = ("fusemax", "flat")[int(rng.integers(0, 2))]
        t = AttentionTile(mapping, int(rng.integers(1, R + 1)), int(rng.integers(1, 4 * C + 1)),
                          int(rng.integers(1, 9)), drain=bool(rng.integers(0, 2)))
        items.append((t, _operands(rng, t.q_rows, t.kv_len, t.head_dim, precision=params.precision)))
    return items[:count]
