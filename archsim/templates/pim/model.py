"""The PIM template's model: what the engine, the mapper and the tests call.

Units: one per channel, ``"pim.ch0" .. "pim.ch<C-1>"`` (Compute commands
with a :class:`PimTile`), and ``"asic"`` (VectorOps: softmax, layernorm,
gelu, residual adds, cross-bank reductions) timed by the engine with the
arch's ``vector_unit`` at ``clock_mhz``.

Energy actions of a tile (pJ each from the arch's tech table; the shipped
presets carry an inline table citing its figures):

- ``pim.act``: one bank's row activation + precharge (all-bank ACT = banks of them);
- ``pim.col_read_bit``: bits read from a bank's sense amplifiers to its MAC unit;
- ``pim.col_write_bit``: bits written into a bank (KV-cache append);
- ``pim.io_bit``: bits over the channel's I/O (input broadcast, accumulator gather);
- ``pim.mac_<precision>``: one multiply-accumulate in a bank's MAC unit;
- ``pim.ref``: one all-bank refresh of a channel.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.errors import MappingError
from archsim.templates.pim import commands as C
from archsim.templates.pim import values as V
from archsim.templates.pim.fast import steps_cycles
from archsim.templates.pim.tile import PimTile, plan_steps, step_counts
from archsim.templates.base import TemplateModel


class PimModel(TemplateModel):
    def __init__(self, arch: Any):
        super().__init__(arch)
        self.p = arch.params
        #: the channels' near-bank MAC units compute; the ASIC is the vector unit
        self.units: dict[str, str] = {**{f"pim.ch{i}": "compute" for i in range(self.p.n_channels)},
                                      "asic": "vector", "dma": "dma"}
        self._plan: dict[PimTile, tuple] = {}

    # -- fast model -------------------------------------------------------------------
    def plan(self, tile: PimTile) -> tuple:
        s = self._plan.get(tile)
        if s is None:
            try:
                s = plan_steps(tile, self.p)
            except ValueError as err:
                raise MappingError(str(err)) from None
            self._plan[tile] = s
        return s

    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> int:
        """Multipliers of every bank, at one column per ``column_spacing`` cycles
        (the banks run their ``mac_precision`` whatever the layer's format)."""
        p = self.p
        return max(1, p.banks * p.column_elements // p.column_spacing)

    def compute_formats(self, weights: str, activations: str) -> tuple[str, str]:
        """The banks store and multiply in ``mac_precision`` and the ASIC runs the same
        format, whatever the graph says."""
        mac = self.p.mac_precision
        return (mac if weights else ""), (mac if activations else "")

    def tile_pe_fraction(self, tile: PimTile) -> float:
        """Banks of a channel the tile's all-bank commands drive."""
        return tile.banks / self.p.banks_per_channel

    def check_tile(self, tile: PimTile) -> None:
        plan_steps(tile, self.p)

    def area_inputs(self):
        """A MAC unit of ``mac_lanes`` multipliers at ``mac_precision`` per bank; its
        accumulator registers; each channel's input (global) buffer, built of flip-flops."""
        from archsim.area import AreaInputs

        p = self.p
        acc_bits = p.banks * p.acc_registers * p.acc_bytes * 8
        return AreaInputs(macs={p.mac_precision: p.macs},
                          register_bits=acc_bits + p.n_channels * p.input_buffer_bytes * 8)

    def tile_cycles(self, tile: PimTile) -> int:
        return steps_cycles(self.plan(tile), self.p, tile.ref_due)["cycles"]

    def tile_refreshes(self, tile: PimTile) -> int:
        return steps_cycles(self.plan(tile), self.p, tile.ref_due)["refreshes"]

    def tile_actions(self, tile: PimTile) -> dict[str, int]:
        p = self.p
        n = step_counts(self.plan(tile))
        col_bits = p.column_bytes * 8
        return {
            "pim.act": n["ACTAB"] * tile.banks + n["ACT"],
            "pim.col_read_bit": n["MACAB"] * tile.banks * col_bits,
            "pim.col_write_bit": n["WR"] * col_bits,
            "pim.io_bit": (n["GBWR"] + n["RDACC"] + n["WR"]) * col_bits,
            f"pim.mac_{p.mac_precision}": n["MACAB"] * tile.banks * p.column_elements,
            "pim.ref": self.tile_refreshes(tile),
        }

    def tile_values(self, tile: PimTile, operands: dict[str, np.ndarray]) -> np.ndarray:
        """dot: ``weight[banks, rows, k] . input[k]`` -> ``[banks, rows]``;
        axpy: ``sum_b sum_t input[b, t] * weight[b, t, :]`` -> ``[k]``."""
        p = self.p
        w = np.asarray(operands["weight"])
        x = np.asarray(operands["input"])
        if tile.mode == "dot":
            return V.gemv_dot(w, x, p.column_elements, p.mac_precision, p.accumulator_interleave)
        return V.gemv_axpy(w, x.reshape(tile.banks, tile.rows), p.mac_precision)

    # -- detailed model ------------------------------------------------------------------
    def detailed_tile(self, tile: PimTile, operands: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        w = np.asarray(operands["weight"])
        x = np.asarray(operands["input"]).reshape(-1)
        values, cycles, _cmds = C.run_detailed(tile, self.p, w, x)
        return values, cycles

    def detailed_tile_cycles(self, tile: PimTile) -> int:
        return C.schedule(tile, self.p)[1]

    # -- reports -----------------------------------------------------------------------
    def report_extras(self, result) -> dict:
        from archsim.templates.pim.report import pim_extras

        return pim_extras(self, result)
