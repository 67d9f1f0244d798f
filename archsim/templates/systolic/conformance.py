"""Conformance hook of the systolic template (see :class:`archsim.templates.base.Conformance`).

The shared harness ``tests/test_template_levels.py`` loads each configuration
below on top of :data:`base_arch`, draws tiles with :func:`sample_tiles`, and
checks fast model == detailed model == its own numpy GEMM, and (on
:data:`rtl_arch`) the RTL. This module only generates cases; it computes no
expected value.

Configurations: every dataflow x preload mode x multiplier pipeline on six
small array shapes (1x1, 1xC, Rx1 and non-square ones), plus ``auto``
builds (tiles of all three dataflows back to back, hidden preloads across
dataflows) and operand / accumulator precision variants (an int16
accumulator that wraps, int16 operands, a 64-bit accumulator), and carry-save
(``pe_style="tpe"``) builds. Each tile
takes well under a millisecond in the detailed model, so all of them are cheap.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.templates.systolic.params import PRECISION_BITS, SystolicParams
from archsim.templates.systolic.tile import SystolicTile

#: the preset the configurations override
base_arch = "systolic-32x32-ws"

#: co-simulated on the RTL: every dataflow (auto build), hidden preloads, P = 1, non-square
rtl_arch: dict[str, Any] = {"rows": 3, "cols": 4, "dataflow": "auto", "preload": "double_buffered",
                            "mult_pipeline_stages": 1}

_SHAPES = ((1, 1), (1, 5), (4, 1), (3, 5), (6, 4), (8, 8))
_MAX_STREAM = 9


def conformance_archs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for df in ("ws", "os", "is"):
        for preload in ("serial", "double_buffered"):
            for pipe in (0, 1):
                for rows, cols in _SHAPES:
                    out.append({"rows": rows, "cols": cols, "dataflow": df, "preload": preload,
                                "mult_pipeline_stages": pipe})
    out += [
        {"rows": 3, "cols": 4, "dataflow": "auto", "preload": "double_buffered", "mult_pipeline_stages": 1},
        {"rows": 2, "cols": 3, "dataflow": "auto", "preload": "serial", "mult_pipeline_stages": 0},
        # int8 x int8 into an int16 accumulator: sums wrap
        {"rows": 4, "cols": 3, "dataflow": "auto", "preload": "double_buffered", "acc_precision": "int16"},
        # int16 x int8 into int32
        {"rows": 5, "cols": 2, "dataflow": "auto", "preload": "serial", "mult_pipeline_stages": 1,
         "input_precision": "int16", "acc_precision": "int32"},
        # int16 x int16 into int64
        {"rows": 3, "cols": 2, "dataflow": "auto", "preload": "double_buffered",
         "input_precision": "int16", "weight_precision": "int16", "acc_precision": "int64"},
        # carry-save (TPE) PEs: every dataflow, a wrapping int16 accumulator, int16 operands
        {"rows": 3, "cols": 4, "dataflow": "auto", "preload": "double_buffered", "pe_style": "tpe"},
        {"rows": 4, "cols": 3, "dataflow": "auto", "preload": "serial", "pe_style": "tpe",
         "acc_precision": "int16"},
        {"rows": 2, "cols": 3, "dataflow": "auto", "preload": "double_buffered", "pe_style": "tpe",
         "input_precision": "int16", "weight_precision": "int16", "acc_precision": "int64"},
        {"rows": 3, "cols": 4, "dataflow": "auto", "preload": "double_buffered", "pe_style": "tpe_pipelined"},
        {"rows": 1, "cols": 1, "dataflow": "auto", "preload": "serial", "pe_style": "tpe_pipelined"},
    ]
    return out


def _range(precision: str) -> tuple[int, int]:
    bits = PRECISION_BITS[precision]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _operands(rng: np.random.Generator, tile: SystolicTile, p: SystolicParams, extreme: bool
              ) -> dict[str, np.ndarray]:
    def draw(shape, precision):
        lo, hi = _range(precision)
        if extreme:  # the most negative value everywhere: the largest products, sums wrap
            return np.full(shape, lo, dtype=np.int64)
        return rng.integers(lo, hi, size=shape, dtype=np.int64, endpoint=True)

    ops = {"input": draw((tile.m, tile.k), p.input_precision),
           "weight": draw((tile.k, tile.n), p.weight_precision)}
    if tile.accumulate:
        lo, hi = _range(p.acc_precision)
        ops["psum"] = (np.full((tile.m, tile.n), hi, dtype=np.int64) if extreme
                       else rng.integers(lo, hi, size=(tile.m, tile.n), dtype=np.int64, endpoint=True))
    return ops


def _shape(rng, df: str, R: int, C: int, kind: str) -> tuple[int, int, int]:
    """(m, k, n) of a ``kind`` tile: "full", "one" (1x1x1), "m1" (m = 1) or "random"."""
    s = int(rng.integers(1, _MAX_STREAM + 1))
    if kind == "one":
        return 1, 1, 1
    if kind == "full":
        return {"ws": (s, R, C), "is": (C, R, s), "os": (R, s, C)}[df]
    if kind == "m1":
        return {"ws": (1, R, C), "is": (1, R, s), "os": (1, s, C)}[df]
    r, c = int(rng.integers(1, R + 1)), int(rng.integers(1, C + 1))
    return {"ws": (s, r, c), "is": (c, r, s), "os": (r, s, c)}[df]


def sample_tiles(rng: np.random.Generator, params: SystolicParams, count: int
                 ) -> list[tuple[SystolicTile, dict[str, np.ndarray]]]:
    """Edge cases first (per allowed dataflow, round robin: a full tile, the 1x1x1 tile
    accumulating, an m = 1 tile, a partial accumulating tile), then random tiles; the second
    and every fourth after it have extreme operands. Hidden preloads only where legal in sequence
    (double-buffered build, not first, not after an OS tile)."""
    R, C = params.rows, params.cols
    flows = ["ws", "os", "is"] if params.dataflow == "auto" else [params.dataflow]
    plan = [(df, kind, acc) for kind, acc in (("full", False), ("one", True), ("m1", False), ("random", True))
            for df in flows]
    items: list[tuple[SystolicTile, dict[str, np.ndarray]]] = []
    prev = None
    i = 0
    while len(items) < count:
        if i < len(plan):
            df, kind, acc = plan[i]
            extreme = False
        else:
            df, kind = flows[int(rng.integers(0, len(flows)))], "random"
            acc = bool(rng.integers(0, 2))
            extreme = (i - len(plan)) % 4 == 1
        i += 1
        m, k, n = _shape(rng, df, R, C, kind)
        can_hide = params.preload == "double_buffered" and df != "os" and prev not in (None, "os")
        hidden = can_hide and bool(rng.integers(0, 3))
        tile = SystolicTile(df, m, k, n, accumulate=acc, preload_hidden=hidden)
        tile.check(R, C, params.preload)
        items.append((tile, _operands(rng, tile, params, extreme)))
        prev = df
    return items


__all__ = ["base_arch", "conformance_archs", "rtl_arch", "sample_tiles"]
