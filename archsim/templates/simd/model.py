"""Fast model of the SIMD PE template (closed-form cycles, numpy values, actions) and the model protocol.

Units: ``array`` (the PE array, compute), ``vector`` (the vector unit for
elementwise / norm / softmax work), ``dma``. Energy actions are named after
the technology table ``simd-45nm`` (:func:`mult_action` and :meth:`SimdModel.tile_actions`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.numerics import bits_of, get_format
from archsim.templates.simd import bitserial
from archsim.templates.simd.detailed import SimdArrayDetailed
from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import (SimdTile, check_tile, cycles_per_step, exact_integer_output, integer_path,
                                         lanes, output_steps, rounds, tile_cycles)
from archsim.templates.simd.values import tile_values
from archsim.templates.base import TemplateModel


def lane_mode(weights: str, activations: str, params: SimdParams) -> str:
    """The datapath mode a pair runs in: ``int<b>``, ``fp<b>`` or ``posit<b>`` with ``b`` the lane width."""
    if params.dequant:
        return "fp16"
    wf, af = get_format(weights), get_format(activations)
    b = max(wf.bits, af.bits)
    if wf.kind == "int" and af.kind == "int":
        return f"int{b}"
    if "posit" in (wf.kind, af.kind):
        return f"posit{b}"
    return f"fp{b}"


def partial_add_action(activation_format: str) -> str:
    """The add a shift-add / bit-serial multiplier makes per weight bit: an integer add of the
    activation's width (``simd.partial_add.<ab>b``) for integer activations, a float add of
    that width (``simd.partial_add.fp<ab>``) otherwise: a float activation shifted by a weight
    bit is an exponent increment, and the partial sums are float adds (MixPE's W4A16 order)."""
    b = bits_of(activation_format)
    return f"simd.partial_add.{b}b" if get_format(activation_format).kind == "int" else f"simd.partial_add.fp{b}"


def mult_action(tile: SimdTile, params: SimdParams) -> tuple[str, int]:
    """(action name, count) of the tile's multiplies: an array multiplier per lane product
    (``simd.mult.<mode>``), or, for integer weights on a shift-add / bit-serial
    multiplier, one activation-width add per weight bit (:func:`partial_add_action`)."""
    macs = tile.m * tile.k * tile.n
    if params.multiplier != "array" and not params.dequant and get_format(tile.weight_format).kind == "int":
        return partial_add_action(tile.activation_format), macs * bits_of(tile.weight_format)
    return f"simd.mult.{lane_mode(tile.weight_format, tile.activation_format, params)}", macs


def round_operand_counts(tile: SimdTile, pes: int) -> tuple[int, int]:
    """(sum over rounds of the distinct A rows, of the distinct W columns) the round's PEs read."""
    total = tile.outputs
    first = np.arange(0, total, pes, dtype=np.int64)
    last = np.minimum(first + pes, total) - 1
    rows = last // tile.n - first // tile.n + 1
    cols = np.minimum(last - first + 1, tile.n)
    return int(rows.sum()), int(cols.sum())


class SimdModel(TemplateModel):
    """``SimdModel(arch)``: fast model + protocol of one SIMD PE array instance."""

    units = {"array": "compute", "vector": "vector", "dma": "dma"}

    def __init__(self, arch: Any):
        super().__init__(arch)
        self.params: SimdParams = arch.params
        self.params.validate()
        self.detailed = SimdArrayDetailed(self.params)

    # -- precision --------------------------------------------------------------
    def compute_formats(self, weights: str, activations: str) -> tuple[str, str]:
        """The pair a layer of these formats computes in: its own if the datapath runs it, else the arch's."""
        p = self.params
        if weights and activations and not p.pair_problem(weights, activations):
            return weights, activations
        return p.weight_format, p.activation_format

    def scale_group_size(self) -> int:
        return int(self.params.group_size or 0)

    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> float:
        p = self.params
        w, a = (precision or p.weight_format), p.activation_format
        if p.pair_problem(w, a):
            w = p.weight_format
        if bitserial.is_bitmod(p):
            return bitserial.peak_macs_per_cycle(p, w, a)
        lane_count = p.lanes(w, a)
        serial = bits_of(w) if p.multiplier == "bit_serial" else 1
        return p.pes * lane_count / serial

    # -- tiles ------------------------------------------------------------------
    def check_tile(self, tile) -> None:
        if not isinstance(tile, SimdTile):
            raise ValueError(f"tile: expected a SimdTile, got {type(tile).__name__}")
        check_tile(tile, self.params)
        if bitserial.is_bitmod(self.params):
            bitserial.check_tile(tile, self.params)

    def tile_cycles(self, tile: SimdTile) -> int:
        if bitserial.is_bitmod(self.params):
            return bitserial.tile_cycles(tile, self.params)
        return tile_cycles(tile, self.params)

    def tile_values(self, tile: SimdTile, operands: dict) -> np.ndarray:
        self.check_tile(tile)
        if bitserial.is_bitmod(self.params):
            return bitserial.tile_values(tile, operands, self.params)
        return tile_values(tile, operands, self.params)

    def detailed_tile(self, tile: SimdTile, operands: dict):
        self.check_tile(tile)
        if bitserial.is_bitmod(self.params):
            return bitserial.detailed_tile(tile, operands, self.params)
        return self.detailed.run_tile(tile, operands)

    def detailed_tile_cycles(self, tile: SimdTile) -> int:
        if bitserial.is_bitmod(self.params):
            return bitserial.detailed_tile_cycles(tile, self.params)
        return self.detailed.tile_cycles(tile)

    def tile_pe_fraction(self, tile: SimdTile) -> float:
        """Useful lane products over lane slots: ``M*N*K / (rounds * P * steps * L)``."""
        p = self.params
        if bitserial.is_bitmod(p):
            return tile.m * tile.n * tile.k * bitserial.terms_per_weight(tile.weight_format) / (
                rounds(tile, p) * p.pes * bitserial.lanes(p, tile.activation_format)
                * bitserial.output_cycles(tile, p))
        slots = rounds(tile, p) * p.pes * (output_steps(tile, p) // cycles_per_step(tile, p)) * lanes(tile, p)
        return tile.m * tile.n * tile.k / slots

    def tile_actions(self, tile: SimdTile) -> dict[str, int]:
        """Multiplies (per lane mode), fp32 / int32 adds (lane tree + accumulators), group
        scalings, dequantizations, PE register bits read, and SRAM bytes."""
        p = self.params
        if bitserial.is_bitmod(p):
            return bitserial.tile_actions(tile, p, *round_operand_counts(tile, p.pes))
        M, K, N = tile.m, tile.k, tile.n
        outputs = tile.outputs
        L = lanes(tile, p)
        groups = tile.groups(p.dequant)
        steps = sum(-(-length // L) for _s, length in groups)
        name, count = mult_action(tile, p)
        out: dict[str, int] = {name: count}
        lane_adds = outputs * steps * L  # (L - 1) tree adds + 1 accumulate per step
        if exact_integer_output(tile, p):
            out["simd.add.int32"] = lane_adds
        elif integer_path(tile, p):
            out["simd.add.int32"] = lane_adds
            out["simd.int_to_fp32"] = outputs * len(groups)
            out["simd.add.fp32"] = outputs * len(groups)
        else:
            out["simd.add.fp32"] = lane_adds + outputs * len(groups)
        if tile.group_size and not p.dequant:
            out["simd.scale.fp32"] = outputs * len(groups)
        if p.dequant:
            out["simd.dequant"] = K * N
        wb, ab = bits_of(tile.weight_format), bits_of(tile.activation_format)
        out_bits = 64 if exact_integer_output(tile, p) else 32
        out["simd.reg_bit"] = M * N * K * (wb + ab) + outputs * out_bits
        rows, cols = round_operand_counts(tile, p.pes)
        out["sram_read_bytes.input"] = -(-rows * K * ab // 8)
        w_bytes = -(-cols * K * wb // 8)
        if tile.group_size:
            w_bytes += cols * tile.scale_groups() * 4
        out["sram_read_bytes.weight"] = w_bytes
        out["sram_write_bytes.output"] = outputs * out_bits // 8
        if tile.accumulate:
            out["sram_read_bytes.output"] = outputs * out_bits // 8
        return out

    # -- area and reports -----------------------------------------------------------
    def area_inputs(self):
        """``pes`` PEs, each priced from synthesis of the RTL PE by its format set and multiplier
        (:mod:`archsim.templates.simd.area`; the cells include the PE's registers); ``pe_style`` is not
        priced (``unpriced``: the standard PE's area, said with the reason)."""
        from archsim.area import AreaInputs
        from archsim.templates.simd.area import pe_um2, unpriced

        unit, source = (bitserial.pe_um2(self.params) if bitserial.is_bitmod(self.params) else pe_um2(self.params))
        return AreaInputs(units={"simd_pe": (self.params.pes, unit, source)}, unpriced=unpriced(self.params))

    def report_extras(self, result) -> dict:
        p = self.params
        return {"simd_pes": p.pes, "simd_lane_bits": p.lane_bits, "simd_multiplier": p.multiplier,
                "simd_group_size": p.group_size, "simd_dequant": p.dequant, "simd_pe": p.pe}
