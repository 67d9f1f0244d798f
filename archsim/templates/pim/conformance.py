"""Conformance hook of the PIM template (see :class:`archsim.templates.base.Conformance`).

The shared harness ``tests/test_template_levels.py`` loads each configuration
below on top of :data:`base_arch`, draws tiles with :func:`sample_tiles`, and
checks that the fast model (closed-form cycles, numpy values) and the detailed
model (DRAM command schedule replayed on bank memory) agree, and that the
values equal its own numpy GEMV. This module only generates cases.

Configurations: the shipped HBM2 preset as is; a small-row layout (several
weight rows per DRAM row, rows spanning DRAM rows, more rows than
accumulators, an input larger than the buffer) in int8 and bf16; a
MAC-bound unit (``mac_lanes`` < ``column_elements``, so RD-MACs are spaced by
the MAC unit, not ``tCCD_L``) with 4 banks in 2 groups and odd timings; a
frequently refreshing bf16 channel.

Tiles: dot-mode GEMVs (1x1, exactly one DRAM row, partial columns, several
accumulator groups, per-chunk input broadcast), axpy GEMVs, and cycles-only
tiles (``operands=None``): KV-cache writes and a dot GEMV with an explicit
``in_elements``. ``ref_due`` is random, so refreshes fall inside tiles.
Tiles whose row bursts need more DRAM rows than ``rows_per_bank`` are left out.
Operands: int8 over the full range; bf16 as normal samples rounded to bf16.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.templates.pim.commands import program
from archsim.templates.pim.params import PimParams
from archsim.templates.pim.tile import PimTile, check_tile
from archsim.templates.pim.values import to_bf16

#: the preset the configurations override
base_arch = "pim-hbm2"

_SMALL_ROWS = {"row_bytes": 256, "column_bytes": 16, "acc_registers": 8, "input_buffer_bytes": 512,
               "tREFI": 1500, "tRFC": 100}

#: co-simulated when the template entry names an RTL design: the bank-unit RTL replays one bank's
#: dot-mode GEMVs (int8, mac_pipeline_cycles = 1); with one bank per channel and fewer accumulators
#: than column elements every sampled GEMV is one (as in tests/test_pim_rtl.py)
rtl_arch: dict[str, Any] = {"channels": 1, "banks_per_channel": 1, "bank_groups": 1, "rows_per_bank": 64,
                            "row_bytes": 64, "column_bytes": 16, "mac_lanes": 16, "mac_precision": "int8",
                            "acc_registers": 8, "input_buffer_bytes": 64, "tRCD": 3, "tRP": 3, "tRAS": 7,
                            "tRTP": 2, "tWR": 4, "tCCD_S": 1, "tCCD_L": 2, "tRRD": 1, "tFAW": 6, "tREFI": 200,
                            "tRFC": 20, "tCL": 3}


def conformance_archs() -> list[dict[str, Any]]:
    return [
        {},
        {**_SMALL_ROWS, "mac_precision": "int8"},
        {**_SMALL_ROWS, "mac_precision": "bf16"},
        {**_SMALL_ROWS, "mac_precision": "bf16", "accumulator_interleave": 4},  # tCL 14 >= its 10-cycle reduction
        {**_SMALL_ROWS, "mac_precision": "bf16", "accumulator_interleave": 8},  # 26-cycle reduction: 12 charged
        {"channels": 1, "banks_per_channel": 4, "bank_groups": 2, "row_bytes": 512, "column_bytes": 32,
         "mac_lanes": 4, "mac_precision": "int8", "mac_pipeline_cycles": 3, "acc_registers": 64,
         "input_buffer_bytes": 512, "tRCD": 9, "tRP": 7, "tRAS": 20, "tRTP": 6, "tWR": 11, "tCCD_S": 1,
         "tCCD_L": 3, "tRRD": 2, "tFAW": 16, "tREFI": 900, "tRFC": 60, "tCL": 5},
        {"channels": 2, "banks_per_channel": 8, "bank_groups": 1, "row_bytes": 256, "mac_precision": "bf16",
         "mac_pipeline_cycles": 0, "acc_registers": 16, "tREFI": 400, "tRFC": 50,
         "max_postponed_refreshes": 1},
    ]


def _values(rng: np.random.Generator, shape, p: PimParams) -> np.ndarray:
    if p.mac_precision == "int8":
        return rng.integers(-128, 127, size=shape, dtype=np.int64, endpoint=True)
    return to_bf16(rng.standard_normal(shape).astype(np.float32))


def _operands(rng, tile: PimTile, p: PimParams) -> dict[str, np.ndarray]:
    w = _values(rng, (tile.banks, tile.rows, tile.k), p)
    n = tile.k if tile.mode == "dot" else tile.banks * tile.rows
    return {"weight": w, "input": _values(rng, (n,), p)}


def _axpy(rng, p: PimParams, banks: int, rows: int | None = None, k: int | None = None) -> PimTile | None:
    """A legal axpy tile (rows of at most ``acc_registers`` lanes, one DRAM row, the
    scalars in the input buffer), or None if ``p`` cannot run one on ``banks`` banks."""
    ce = p.column_elements
    kmax = min(p.acc_registers // ce * ce, p.row_columns * ce)
    rmax = p.input_buffer_bytes // p.element_bytes // banks
    if kmax < 1 or rmax < 1:
        return None
    k = min(k, kmax) if k else int(rng.integers(1, kmax + 1))
    rows = min(rows, rmax) if rows else int(rng.integers(1, min(rmax, 24) + 1))
    return PimTile("gemv", rows=rows, k=k, banks=banks, mode="axpy", ref_due=int(rng.integers(0, p.tREFI)))


def _dram_rows(tile: PimTile, p: PimParams) -> int:
    return sum(1 for c in program(tile, p) if c[0] == "ACT")


def sample_tiles(rng: np.random.Generator, params: PimParams, count: int
                 ) -> list[tuple[PimTile, dict[str, np.ndarray] | None]]:
    p = params
    bpc, ce = p.banks_per_channel, p.column_elements
    row_elems = p.row_columns * ce
    buf_elems = p.input_buffer_bytes // p.element_bytes

    def due() -> int:
        return int(rng.integers(0, p.tREFI))

    def banks() -> int:
        return int(rng.integers(1, bpc + 1))

    edge: list[PimTile | None] = [
        PimTile("gemv", rows=1, k=1, banks=1, ref_due=due()),                          # smallest
        PimTile("gemv", rows=1, k=row_elems, banks=bpc, ref_due=due()),                # exactly one DRAM row
        PimTile("gemv", rows=p.acc_registers + 1, k=row_elems + 1, banks=banks(),      # two groups, two chunks,
                ref_due=due()),                                                        # a partial column
        PimTile("gemv", rows=3, k=buf_elems + ce + 3, banks=banks(), ref_due=due()),   # input > buffer
        PimTile("gemv", rows=2 * (row_elems // ce) + 1, k=ce - 1 if ce > 1 else 1,     # rows sharing a DRAM
                banks=banks(), ref_due=0),                                             # row; REF at once
        _axpy(rng, p, banks=min(4, bpc), rows=11, k=40),
        PimTile("write", rows=int(rng.integers(1, 12)), k=int(rng.integers(1, p.row_bytes // p.element_bytes + 1)),
                banks=banks(), ref_due=due()),
        PimTile("gemv", rows=4, k=2 * ce, banks=bpc, in_elements=6 * ce, ref_due=due()),
        # shapes of tests/test_pim_values.py's dot GEMVs (banks capped to the channel)
        *(PimTile("gemv", rows=r, k=k, banks=min(b, bpc), ref_due=50)
          for r, k, b in ((1, 5, 1), (7, 100, 3), (20, 300, 4), (9, 8, 16), (13, 129, 2))),
    ]
    tiles = [t for t in edge if t is not None]
    while len(tiles) < count:
        u = rng.random()
        if u < 0.1:
            t = PimTile("write", rows=int(rng.integers(1, 20)),
                        k=int(rng.integers(1, p.row_bytes // p.element_bytes + 1)), banks=banks(), ref_due=due())
        elif u < 0.3:
            t = _axpy(rng, p, banks())
        else:
            t = PimTile("gemv", rows=int(rng.integers(1, 2 * p.acc_registers + 4)),
                        k=int(rng.integers(1, 2 * row_elems + 6)), banks=banks(), ref_due=due())
        if t is not None:
            tiles.append(t)
    # a legal tile also fits the bank: its row bursts use at most rows_per_bank DRAM rows
    tiles = [t for t in tiles if t.kind == "write" or _dram_rows(t, p) <= p.rows_per_bank]
    while len(tiles) < count:  # refill with small dot GEMVs
        t = PimTile("gemv", rows=int(rng.integers(1, 4)), k=int(rng.integers(1, row_elems + 1)), banks=banks(),
                    ref_due=due())
        if _dram_rows(t, p) <= p.rows_per_bank:
            tiles.append(t)
    items = []
    for t in tiles[:count]:
        check_tile(t, p)
        cycles_only = t.kind == "write" or t.in_elements
        items.append((t, None if cycles_only else _operands(rng, t, p)))
    return items


__all__ = ["base_arch", "conformance_archs", "rtl_arch", "sample_tiles"]
