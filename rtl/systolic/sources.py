"""Tiles + operands to replay on the systolic RTL (``archsim rtl cosim --source``).

Items are ``(SystolicTile, operands)``:

- ``"random"``: random shapes within the array limits, every dataflow the
  build executes, random accumulate / hidden-preload flags;
- ``"resnet50"``: the first folds of ResNet-50 conv1 as an im2col GEMM
  (M = 112*112 = 12544, K = 7*7*3 = 147, N = 64), streamed length capped;
- ``"gpt2"``: the first folds of GPT-2's c_attn projection (M = 1 token in
  decode, K = 768, N = 2304);
- ``"program"``: the first Compute commands of ``mappers.compile`` of one
  layer (``layer=``, default the first with MACs) of a zoo workload
  (``workload=``).

Operands are random integers in the tile's precisions, drawn with numpy's
seeded generator.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.errors import WorkloadError
from archsim.templates.systolic.params import PRECISION_BITS

#: published GEMM shapes (M, K, N) used as co-simulation sources
REAL_GEMMS = {
    "resnet50": ("ResNet-50 conv1 (im2col)", 12544, 147, 64),
    "gpt2": ("GPT-2 block c_attn (decode, 1 token)", 1, 768, 2304),
    "gpt2-prefill": ("GPT-2 block c_attn (prefill, 1024 tokens)", 1024, 768, 2304),
}


def _rand(rng, shape, precision):
    bits = PRECISION_BITS[precision]
    return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=shape, dtype=np.int64)


def operands_for(tile, params, rng) -> dict[str, np.ndarray]:
    ops = {
        "input": _rand(rng, (tile.m, tile.k), params.input_precision),
        "weight": _rand(rng, (tile.k, tile.n), params.weight_precision),
    }
    if tile.accumulate:
        ops["psum"] = _rand(rng, (tile.m, tile.n), params.acc_precision)
    return ops


def _dataflows(params) -> list[str]:
    return ["ws", "os", "is"] if params.dataflow == "auto" else [params.dataflow]


def random_tiles(params, count: int, rng, max_stream: int = 12) -> list:
    from archsim.templates.systolic.tile import SystolicTile

    R, C = params.rows, params.cols
    flows = _dataflows(params)
    hide_ok = params.preload == "double_buffered"
    tiles, prev = [], None
    for i in range(count):
        df = flows[i % len(flows)]
        s = int(rng.integers(1, max_stream + 1))
        if df == "ws":
            m, k, n = s, int(rng.integers(1, R + 1)), int(rng.integers(1, C + 1))
        elif df == "is":
            m, k, n = int(rng.integers(1, C + 1)), int(rng.integers(1, R + 1)), s
        else:
            m, k, n = int(rng.integers(1, R + 1)), s, int(rng.integers(1, C + 1))
        if i % 4 == 0:  # full tiles now and then
            m, k, n = {"ws": (m, R, C), "is": (C, R, n), "os": (R, k, C)}[df]
        hidden = hide_ok and df != "os" and prev is not None and prev != "os" and bool(rng.integers(0, 4))
        tiles.append(SystolicTile(df, m, k, n, accumulate=bool(rng.integers(0, 2)), preload_hidden=hidden))
        prev = df
    return tiles


def gemm_tiles_capped(params, M: int, K: int, N: int, count: int, max_stream: int) -> list:
    """The first ``count`` folds of a GEMM in SCALE-Sim order, streamed length capped."""
    from archsim.templates.systolic.fast import gemm_tiles

    df = params.dataflow if params.dataflow != "auto" else "ws"
    cap = {"ws": (min(M, max_stream), K, N), "is": (M, K, min(N, max_stream)),
           "os": (M, min(K, max_stream), N)}[df]
    out = []
    for tile, _ in gemm_tiles(*cap, params, df):
        out.append(tile)
        if len(out) >= count:
            break
    return out


def program_tiles(params, arch, workload: str, count: int, max_stream: int, layer: str | None = None) -> list:
    """The first Compute tiles of ``mappers.compile`` of one layer of a zoo workload
    (:func:`rtl.api.compile_layer`), streamed length capped at ``max_stream``."""
    import dataclasses

    from rtl.api import compile_layer

    out = []
    for cmd in compile_layer(arch, workload, layer):
        t = cmd.tile
        cap = {"ws": "m", "is": "n", "os": "k"}[t.dataflow]
        if getattr(t, cap) > max_stream:
            t = dataclasses.replace(t, **{cap: max_stream})
        out.append(t)
        if len(out) >= count:
            break
    return out


def cosim_items(params, source: str = "random", tiles: int = 8, seed: int = 0, max_stream: int = 16,
                arch: Any = None, workload: str | None = None, layer: str | None = None) -> list:
    rng = np.random.default_rng(seed)
    if source == "random":
        tile_list = random_tiles(params, tiles, rng, max_stream=max_stream)
    elif source in REAL_GEMMS:
        _, M, K, N = REAL_GEMMS[source]
        tile_list = gemm_tiles_capped(params, M, K, N, tiles, max_stream)
    elif source == "program":
        if arch is None or workload is None:
            raise WorkloadError("source 'program' needs an arch and a workload name")
        tile_list = program_tiles(params, arch, workload, tiles, max_stream, layer)
    else:
        raise WorkloadError(
            f"systolic cosim source {source!r}: expected random, program or one of {', '.join(REAL_GEMMS)}")
    items = []
    model = None
    for t in tile_list:
        ops = operands_for(t, params, rng)
        prev = items[-1] if items else None
        if (source != "random" and t.accumulate and prev is not None and prev[0].dataflow == t.dataflow
                and (prev[0].m, prev[0].n) == (t.m, t.n)):
            # a K-fold chain: accumulate onto the previous tile's results in the output buffer
            from archsim.spec import arch_from_params
            from archsim.templates.systolic.fast import SystolicModel

            model = model or SystolicModel(arch_from_params(params))
            ops["psum"] = model.tile_values(prev[0], prev[1]).astype(np.int64)
            ops["chain"] = True
        items.append((t, ops))
    return items
