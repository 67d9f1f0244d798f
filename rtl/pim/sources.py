"""Tiles + operands to replay on the PIM bank unit (``archsim rtl cosim --source``).

Every item is ``(PimTile, {"weight": [banks, rows, k], "input": [k]})``: a
dot-mode GEMV on ``banks`` banks (1 for the bank unit, N for a channel) (the RTL is one bank's unit; the RD-MAC stream of a
channel is the same for every bank in all-bank lockstep, only the gather is
the one bank's). Operands are random int8, or bf16 (rounded standard
normals), drawn with numpy's seeded generator.

- ``"random"``: random rows (1 .. ``max_stream``) and k (up to three DRAM
  rows' worth, so rows are packed, single or chunked, and the input is
  broadcast once or chunk by chunk), refresh due at a random point; with
  ``fits`` (the host engine's capacity check) a tile that does not fit has
  its rows, then its k, halved until it does (tiles that fit are unchanged);
- ``"gpt2"``: GPT-2's c_attn in decode (2304 x 768) split over every bank
  of the arch: ``ceil(2304 / banks)`` rows of k = 768 per bank, refresh phase
  ``tREFI // 2`` (the mapper's);
- ``"program"``: the dot-mode GEMV tiles of ``mappers.compile`` of one layer
  of a zoo workload (``workload=``, ``layer=``; default the first layer with
  MACs), one bank each, rows capped at ``max_stream``.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from archsim.errors import WorkloadError

SOURCES = ("random", "gpt2", "program")
#: GPT-2 block c_attn in decode: (rows of W, k)
GPT2_C_ATTN = (2304, 768)


def operands_for(tile, p, rng) -> dict[str, np.ndarray]:
    shape = (tile.banks, tile.rows, tile.k)
    if p.mac_precision == "int8":
        return {"weight": rng.integers(-128, 128, shape), "input": rng.integers(-128, 128, tile.k)}
    from archsim.templates.pim.values import to_bf16

    return {"weight": to_bf16(rng.standard_normal(shape)), "input": to_bf16(rng.standard_normal(tile.k))}


def random_tiles(p, count: int, rng, max_stream: int, banks: int = 1, fits=None) -> list:
    from archsim.templates.pim import PimTile
    from archsim.templates.pim.fast import tile_cycles

    row_elements = p.row_bytes // p.element_bytes
    out = []
    for _ in range(count):
        rows = int(rng.integers(1, max(1, max_stream) + 1))
        k = int(rng.integers(1, 3 * row_elements + 1))
        tile = PimTile("gemv", rows=rows, k=k, banks=banks)
        while fits is not None and not fits(tile):
            if tile.rows == 1 and tile.k == 1:
                raise WorkloadError("pim cosim: the engine holds no tile of one row of one element")
            tile = dataclasses.replace(tile, rows=max(1, tile.rows // 2)) if tile.rows > 1 else \
                dataclasses.replace(tile, k=max(1, tile.k // 2))
        due = int(rng.integers(0, tile_cycles(tile, p) + 1)) if rng.integers(0, 2) else tile.ref_due
        tile = dataclasses.replace(tile, ref_due=due)
        while fits is not None and not fits(tile):  # its refreshes' commands, too, must fit
            tile = dataclasses.replace(tile, rows=max(1, tile.rows // 2)) if tile.rows > 1 else \
                dataclasses.replace(tile, k=max(1, tile.k // 2))
        out.append(tile)
    return out


def program_tiles(p, arch, workload: str, count: int, max_stream: int, layer: str | None = None,
                  banks: int = 1) -> list:
    from rtl.api import compile_layer

    out = []
    for cmd in compile_layer(arch, workload, layer):
        t = cmd.tile
        if getattr(t, "kind", None) != "gemv" or t.mode != "dot":
            continue
        t = dataclasses.replace(t, banks=banks, rows=min(t.rows, max_stream))
        if t not in out:  # the channels of a layer get the same tile
            out.append(t)
            if len(out) >= count:
                break
    return out


def cosim_items(p, source: str = "random", tiles: int = 8, seed: int = 0, max_stream: int = 16,
                arch: Any = None, workload: str | None = None, layer: str | None = None, banks: int = 1,
                fits=None) -> list:
    """``fits(tile) -> bool``: the capacity of the engine driven (random tiles are shrunk to it)."""
    from archsim.templates.pim import PimTile

    rng = np.random.default_rng(seed)
    if source == "random":
        tile_list = random_tiles(p, tiles, rng, max_stream, banks, fits)
    elif source == "gpt2":
        rows, k = GPT2_C_ATTN
        tile_list = [PimTile("gemv", rows=min(-(-rows // p.banks), max_stream), k=k, banks=banks,
                             ref_due=p.tREFI // 2)] * tiles
    elif source == "program":
        if arch is None or workload is None:
            raise WorkloadError("source 'program' needs an arch and a workload name")
        tile_list = program_tiles(p, arch, workload, tiles, max_stream, layer, banks)
    else:
        raise WorkloadError(f"pim cosim source {source!r}: expected one of {', '.join(SOURCES)}")
    return [(t, operands_for(t, p, rng)) for t in tile_list]
