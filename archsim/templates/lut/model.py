"""Fast model of the LUT tensor core (closed form; contract in :mod:`.tile`) and the
:class:`~archsim.templates.base.TemplateModel` protocol around it.

Energy actions of a tile (priced by the arch's tech table; the ``lut-*`` presets
carry them, see ``docs/lut.md``): ``lut_table_add.<int|fp32>`` (``K - 1`` adds
per stored table entry), ``lut_table_write_bit`` / ``lut_read_bit`` (table
register bits written / read by a lookup), ``lut_shift_add.<int|fp32>`` (plane
shift-adds and the ``- S`` correction), ``lut_acc_add.<int|fp32>`` (one
accumulate per group and output), ``mult.fp32`` (scales), and the SRAM bytes of
activations (or, when ``precomputed``, of the tables), bit-plane weights (read once per
row block: every step streams its group's planes of all ``n`` columns) and outputs.
The array holds ``tile_m x tile_n`` accumulators: a tile with ``n <= tile_n`` keeps
its sums in them and writes the output once; a wider tile keeps its partial sums in
the output buffer between K-groups (written every group, read back from the second).
"""
from __future__ import annotations

from math import ceil
from typing import Any

import numpy as np

from archsim.templates.lut.params import LutParams
from archsim.templates.lut.tile import (
    PLANES,
    LutTile,
    table_entry_bits,
    tile_cycles,
    weight_bytes,
)
from archsim.templates.lut.values import is_int, tile_values
from archsim.templates.base import TemplateModel

#: bits of the integer accumulator and output register (int8 activations)
INT_ACC_BITS = 32
#: bytes of one activation element per format
ACT_BYTES = {"int8": 1, "fp16": 2, "bf16": 2}
#: NanGate FreePDK45 MUX2_X1 cell area (um2): the table read mux is built of these
MUX2_UM2 = 1.862


def arith(activation_format: str) -> str:
    """Energy-action suffix of the table / accumulator arithmetic."""
    return "int" if is_int(activation_format) else "fp32"


class LutModel(TemplateModel):
    """Fast + detailed model of one LUT core: ``LutModel(arch)`` (an :class:`archsim.spec.ArchSpec`)."""

    units = {"array": "compute", "vector": "vector", "dma": "dma"}

    def __init__(self, arch: Any):
        super().__init__(arch)
        self.params: LutParams = arch.params
        self.params.validate()

    # -- TemplateModel ---------------------------------------------------------
    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> float:
        """``tile_m * tile_n * group_k / b``: every column reduces K activations per plane per cycle."""
        p = self.params
        wf = precision if precision in PLANES else p.weight_format
        return p.tile_m * p.tile_n * p.group_k / PLANES[wf]

    def tile_cycles(self, tile: LutTile) -> int:
        return tile_cycles(tile, self.params)

    def check_tile(self, tile: LutTile) -> None:
        tile.check(self.params)

    def tile_values(self, tile: LutTile, operands: dict) -> np.ndarray:
        return tile_values(tile, operands, self.params)

    def detailed_tile(self, tile: LutTile, operands: dict) -> tuple[np.ndarray, int]:
        """Cycle by cycle (:mod:`archsim.templates.lut.detailed`)."""
        from archsim.templates.lut.detailed import LutArrayDetailed

        return LutArrayDetailed(self.params).run_tile(tile, operands)

    def detailed_tile_cycles(self, tile: LutTile) -> int:
        """The detailed model's cycles on zero operands (cycles depend on the shape only)."""
        ops = {"input": np.zeros((tile.m, tile.k), np.int64), "weight": self._zero_weight(tile)}
        if self.params.scale == "per_channel":
            ops["scale"] = np.ones(tile.n, np.float32)
        elif self.params.scale == "per_group":
            ops["scale"] = np.ones((tile.k // self.params.scale_group, tile.n), np.float32)
        if tile.accumulate:
            ops["psum"] = np.zeros((tile.m, tile.n))
        return int(self.detailed_tile(tile, ops)[1])

    @staticmethod
    def _zero_weight(tile: LutTile) -> np.ndarray:
        return np.full((tile.k, tile.n), 1 if tile.weight_format == "int1" else 0, np.int64)

    def tile_pe_fraction(self, tile: LutTile) -> float:
        """Rows and columns of the array a tile maps (partial row and column blocks idle)."""
        p = self.params
        rows = tile.m / (ceil(tile.m / p.tile_m) * p.tile_m)
        cols = tile.n / (ceil(tile.n / p.tile_n) * p.tile_n)
        return rows * cols

    def tile_actions(self, tile: LutTile) -> dict[str, int]:
        """Energy actions of one tile (module docstring)."""
        p = self.params
        tile.check(p)
        m, k, n, b = tile.m, tile.k, tile.n, tile.planes
        groups = k // p.group_k
        e, eb = p.table_entries, table_entry_bits(p, tile.activation_format)
        ar = arith(tile.activation_format)
        tables = m * groups
        lookups = m * groups * n * b
        out_bytes = 8 if (is_int(tile.activation_format) and p.scale == "none") else 4
        act = {
            f"lut_table_add.{ar}": 0 if tile.precomputed else tables * e * max(p.group_k - 1, 0),
            "lut_table_write_bit": 0 if tile.precomputed else tables * e * eb,
            "lut_read_bit": lookups * eb,
            f"lut_shift_add.{ar}": m * groups * n * (b - 1 + (b >= 2)),
            f"lut_acc_add.{ar if p.scale != 'per_group' else 'fp32'}": m * groups * n,
            "mult.fp32": m * groups * n if p.scale == "per_group" else (m * n if p.scale == "per_channel" else 0),
            "sram_read_bytes.input": (ceil(tables * e * eb / 8) if tile.precomputed
                                      else m * k * ACT_BYTES[tile.activation_format]),
            "sram_read_bytes.weight": ceil(m / p.tile_m) * weight_bytes(k, n, tile.weight_format),
            **output_sram_bytes(tile, p, out_bytes),
        }
        return {key: v for key, v in act.items() if v}

    def area_inputs(self):
        """The LUT array from gate figures (``fixed_um2``, each with its derivation) and its registers."""
        from archsim.area import AreaInputs

        parts = lut_array_area(self.params, self.arch.tech)
        return AreaInputs(register_bits=lut_register_bits(self.params), fixed_um2=parts)

    def report_extras(self, result) -> dict:
        p = self.params
        return {"lut": {"tile": f"M{p.tile_m} N{p.tile_n} K{p.group_k}", "symmetric": p.symmetric,
                        "weight_format": p.weight_format, "activation_format": p.activation_format,
                        "peak_macs_per_cycle": self.peak_macs_per_cycle()}}


def output_sram_bytes(tile: LutTile, p: LutParams, out_bytes: int) -> dict[str, int]:
    """Output-buffer bytes of a tile: once if its sums fit the array's accumulators, else every K-group."""
    m, n, groups = tile.m, tile.n, tile.k // p.group_k
    if n <= p.tile_n:
        return {"sram_write_bytes.output": m * n * out_bytes,
                "sram_read_bytes.output": m * n * out_bytes if tile.accumulate else 0}
    return {"sram_write_bytes.output": groups * m * n * out_bytes,
            "sram_read_bytes.output": (groups - 1 + tile.accumulate) * m * n * out_bytes}


def _datapaths(p: LutParams) -> list[str]:
    out = []
    if "int8" in p.activation_formats:
        out.append("int8")
    if any(f != "int8" for f in p.activation_formats):
        out.append("fp16")
    return out


def lut_register_bits(p: LutParams) -> int:
    """Two table banks per row, the plane register of each LUT unit and the output accumulators."""
    bits = 0
    for fmt in _datapaths(p):
        eb = table_entry_bits(p, fmt)
        acc = INT_ACC_BITS if fmt == "int8" else 32
        bits += 2 * p.tile_m * p.table_entries * eb + p.tile_m * p.tile_n * (acc + acc)
    return bits


def _tech_um2(tech: Any, key: str, default: float) -> float:
    table = dict(getattr(tech, "area_um2", {}) or {})
    return float(table.get(key, default))


def lut_array_area(p: LutParams, tech: Any) -> dict[str, tuple[float, str]]:
    """Combinational area of the LUT units and the precompute unit, per datapath (int8, fp).

    Per LUT unit (tile_m x tile_n): an ``E:1`` read mux of entry width ((E-1) x bits
    MUX2 cells), the negate (int: an entry-width adder; fp: a sign flip, free),
    the shift-add and the accumulate adder. Precompute unit:
    ``precompute_entries_per_cycle x (K-1)`` adders of entry width."""
    mux2 = _tech_um2(tech, "lut.mux2_bit", MUX2_UM2)
    add32 = _tech_um2(tech, "add.int32", 137.0)
    addfp = _tech_um2(tech, "add.fp32", 4184.0)
    units = p.tile_m * p.tile_n
    out: dict[str, tuple[float, str]] = {}
    for fmt in _datapaths(p):
        eb = table_entry_bits(p, fmt)
        mux = (p.table_entries - 1) * eb * mux2
        if fmt == "int8":
            neg = eb * add32 / 32 if p.symmetric else 0.0
            adders = 2 * add32
            pre = p.precompute_entries_per_cycle * max(p.group_k - 1, 1) * eb * add32 / 32
            label = "int"
        else:
            neg, adders = 0.0, 2 * addfp
            pre = p.precompute_entries_per_cycle * max(p.group_k - 1, 1) * addfp
            label = "fp32"
        out[f"lut_units.{label}"] = (units * (mux + neg + adders),
                                     f"derived: {units} units x ({p.table_entries - 1}x{eb}-bit MUX2 at {mux2} um2 "
                                     f"(NanGate FreePDK45 MUX2_X1) + negate + 2 {label} adders (Horowitz ISSCC 2014 "
                                     f"32b add 137 / fp32 add 4184 um2))")
        out[f"lut_precompute.{label}"] = (pre, f"derived: {p.precompute_entries_per_cycle} entries/cycle x "
                                               f"{max(p.group_k - 1, 1)} {label} adders of {eb} bits")
    return out
