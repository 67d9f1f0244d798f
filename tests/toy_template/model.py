"""Params, tile and models of the toy scalar MAC.

A tile is a dot product of ``k`` int8 pairs, accumulated from zero in an
int32 register (two's-complement wrap): one MAC per cycle, and the result is
visible one cycle after the last MAC, so a tile takes ``k + 1`` cycles.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from archsim.templates.base import TemplateModel, TemplateParams


@dataclass
class ToyMacParams(TemplateParams):
    """Attributes
    ----------
    max_k : int
        Longest dot product one tile may have.
    """

    max_k: int = 64

    def validate(self) -> None:
        if isinstance(self.max_k, bool) or not isinstance(self.max_k, int) or self.max_k < 1:
            raise ValueError(f"max_k: expected a positive integer, got {self.max_k!r}")

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        return {"input": self.max_k, "weight": self.max_k, "output": 4}, f"one {self.max_k}-element dot product"


@dataclass(frozen=True, slots=True)
class DotTile:
    k: int


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((v.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


class ToyMacModel(TemplateModel):
    units = {"mac": "compute", "vector": "vector", "dma": "dma"}

    def __init__(self, arch: Any):
        super().__init__(arch)
        self.params = arch.params

    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> int:
        return 1

    def tile_cycles(self, tile: DotTile) -> int:
        return tile.k + 1

    def tile_actions(self, tile: DotTile) -> dict[str, int]:
        return {"mac.int8": tile.k, "sram_read_bytes.input": tile.k, "sram_read_bytes.weight": tile.k}

    def tile_values(self, tile: DotTile, operands: dict) -> np.ndarray:
        a = np.asarray(operands["input"], np.int64)
        w = np.asarray(operands["weight"], np.int64)
        return _wrap32(np.array([a @ w]))

    def detailed_tile(self, tile: DotTile, operands: dict) -> tuple[np.ndarray, int]:
        """Cycle by cycle: one product into the 32-bit register per cycle, then one cycle to read it."""
        acc = 0
        cycles = 0
        for x, y in zip(np.asarray(operands["input"]).tolist(), np.asarray(operands["weight"]).tolist()):
            acc = int(_wrap32(np.array([acc + x * y]))[0])
            cycles += 1
        return np.array([acc], np.int32), cycles + 1

    def detailed_tile_cycles(self, tile: DotTile) -> int:
        zeros = np.zeros(tile.k, np.int64)
        return self.detailed_tile(tile, {"input": zeros, "weight": zeros})[1]

    def tile_pe_fraction(self, tile: DotTile) -> float:
        return 1.0

    def check_tile(self, tile: DotTile) -> None:
        if not 1 <= tile.k <= self.params.max_k:
            raise ValueError(f"k: expected 1..{self.params.max_k}, got {tile.k}")

    def area_inputs(self):
        from archsim.area import AreaInputs

        return AreaInputs(macs={"int8": 1}, register_bits=8 + 8 + 32)
