"""Conformance hook of the LUT template (see :class:`archsim.templates.base.Conformance`).

Configurations vary the timing- and value-relevant parameters: table
symmetry, group size K, array shape, precompute throughput (precompute- and
lookup-bound), pipeline depth and the three scale modes. Every configuration's
16 samples cover every weight x activation mode it builds (5 x 3 = 15 pairs),
with the edge cases first: the smallest tile, a multi-block accumulating tile,
a fused-precompute tile, extreme operands. This module computes no expected value.
"""
from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np

from archsim.numerics import get_format
from archsim.templates.lut.tile import WEIGHT_RANGE, LutTile

#: the preset the configurations override
base_arch = "lut-m2n8k4-ecp5"

#: every activation format the template builds: the preset builds int8 only (to fit its ECP5), the
#: configurations below build all three so that every W x A mode stays checked
ALL_ACTIVATIONS: dict[str, Any] = {"activation_formats": ["int8", "fp16", "bf16"]}

#: co-simulated on the RTL: small enough for icarus, every W x A mode
rtl_arch: dict[str, Any] = {**ALL_ACTIVATIONS, "tile_m": 2, "tile_n": 4, "group_k": 4, "tile_k": 4,
                            "precompute_entries_per_cycle": 4, "pipeline_cycles": 3}


def conformance_archs() -> list[dict[str, Any]]:
    return [{**ALL_ACTIVATIONS, **over} for over in (
        {},
        dict(rtl_arch),
        {"symmetric": False, "tile_m": 1, "tile_n": 3, "precompute_entries_per_cycle": 3},
        {"group_k": 2, "tile_k": 2, "tile_m": 3, "tile_n": 5, "precompute_entries_per_cycle": 1, "pipeline_cycles": 0},
        {"group_k": 1, "tile_k": 1, "symmetric": False, "tile_m": 2, "tile_n": 2},
        {"group_k": 8, "tile_k": 8, "tile_m": 2, "tile_n": 4, "precompute_entries_per_cycle": 32},
        {"scale": "per_channel", "tile_n": 4, "precompute_entries_per_cycle": 2},
        {"scale": "per_group", "scale_group": 8, "tile_n": 4, "pipeline_cycles": 1},
        {"scale": "per_group", "scale_group": 4, "symmetric": False, "tile_m": 3, "tile_n": 2},
    )]


def _activations(rng: np.random.Generator, fmt: str, shape: tuple, extreme: bool) -> np.ndarray:
    if fmt == "int8":
        if extreme:
            return rng.choice(np.array([-128, 127, -128, 0]), size=shape).astype(np.int64)
        return rng.integers(-128, 128, size=shape).astype(np.int64)
    f = get_format(fmt)
    # magnitudes over many binades so the fp32 adds round
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, size=shape))
    if extreme:
        x = np.where(rng.random(shape) < 0.5, 1.0 + 2.0 ** -7, -(2.0 ** 15)) * rng.choice([1.0, 2.0 ** -9], size=shape)
    return f.decode(f.encode(x)).astype(np.float32)


def _weights(rng: np.random.Generator, fmt: str, shape: tuple, extreme: bool) -> np.ndarray:
    lo, hi = WEIGHT_RANGE[fmt]
    if fmt == "int1":
        return rng.choice(np.array([-1, 1]), size=shape).astype(np.int64)
    if extreme:
        return rng.choice(np.array([lo, hi]), size=shape).astype(np.int64)
    return rng.integers(lo, hi + 1, size=shape).astype(np.int64)


def _operands(rng, params, tile: LutTile, extreme: bool) -> dict:
    ops = {"input": _activations(rng, tile.activation_format, (tile.m, tile.k), extreme),
           "weight": _weights(rng, tile.weight_format, (tile.k, tile.n), extreme)}
    if params.scale == "per_channel":
        ops["scale"] = (rng.random(tile.n) * 2 - 1).astype(np.float32)
    elif params.scale == "per_group":
        ops["scale"] = (rng.random((tile.k // params.scale_group, tile.n)) * 2 - 1).astype(np.float32)
    if tile.accumulate:
        if tile.activation_format == "int8" and params.scale == "none":
            ops["psum"] = rng.integers(-(1 << 20), 1 << 20, size=(tile.m, tile.n)).astype(np.int64)
        else:
            ops["psum"] = (rng.standard_normal((tile.m, tile.n)) * 100).astype(np.float32)
    return ops


def sample_tiles(rng: np.random.Generator, params, count: int) -> list[tuple[LutTile, dict]]:
    """``count`` tiles, modes cycling through every W x A pair, edge cases first."""
    modes = list(product(params.weight_formats, params.activation_formats))
    kstep = max(params.group_k, params.scale_group if params.scale == "per_group" else 1)
    tm, tn = params.tile_m, params.tile_n
    items = []
    for i in range(count):
        wf, af = modes[i % len(modes)]
        if i == 0:  # the smallest tile
            m, k, n, accumulate, pre, extreme = 1, kstep, 1, False, False, False
        elif i == 1:  # several row and column blocks (partial ones), accumulating
            m, k, n, accumulate, pre, extreme = 2 * tm + 1, 3 * kstep, 2 * tn + 1, True, False, False
        elif i == 2:  # fused precompute
            m, k, n, accumulate, pre, extreme = tm + 1, 2 * kstep, tn, False, True, False
        elif i == 3:  # extreme operands, exactly full blocks
            m, k, n, accumulate, pre, extreme = 2 * tm, 2 * kstep, 2 * tn, False, False, True
        else:
            m = int(rng.integers(1, 3 * tm + 1))
            n = int(rng.integers(1, 3 * tn + 1))
            k = kstep * int(rng.integers(1, 5))
            accumulate, pre, extreme = bool(rng.random() < 0.4), bool(rng.random() < 0.3), bool(rng.random() < 0.15)
        tile = LutTile(m, k, n, wf, af, accumulate=accumulate, precomputed=pre)
        items.append((tile, _operands(rng, params, tile, extreme)))
    return items
