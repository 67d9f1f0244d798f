"""The systolic template's entry in the RTL registry: ports, job encoding, checks."""
from __future__ import annotations

from typing import Any

import numpy as np

from rtl.design import IN_PLACE, Port, RtlDesign, TileModels
from rtl.lib.host import HOST_PORT_DOCS, payload_shape
from rtl.systolic.design import (
    SystolicAccelerator,
    SystolicConfig,
    SystolicRtlOptions,
    command_layout,
    systolic_signature,
)

PORT_DOCS = {
    **HOST_PORT_DOCS,
    "cmd__payload": "the tile command, fields from bit 0 up: dataflow (2 bits: 0 = ws, 1 = os, 2 = is), "
                    "m, k, n (dw bits each: out[m x n] (+)= A[m x k] . W[k x n]), accumulate (1: out += A.W, "
                    "read-modify-write of the output buffer), preload_hidden (1: the stationary operand was "
                    "loaded into the shadow bank behind the previous tile; double_buffered builds, ws/is), "
                    "left_base, top_base, out_base (aw bits each: the tile's first buffer addresses)",
    "wr__ready": "always high: a write takes one cycle",
    "wr__payload": "buf (2 bits: 0 = left buffer, one lane per array row; 1 = top buffer, one lane per array "
                   "column; 2 = output buffer, one lane per column, only while busy is low), addr (aw bits), "
                   "data (lane i at bits [i*W, (i+1)*W), W = lane width for left/top, accumulator width for "
                   "out; two's complement)",
    "rd_addr__payload": "output buffer address (read only while busy is low)",
    "rd_data__payload": "all output lanes of the entry read, lane c at bits [c*acc, (c+1)*acc)",
    "done": "high in the cycle the tile's last output is presented at the bottom of the array",
    "tile_cycles": "cycles of the last finished tile (tile_start .. done inclusive), hardware counter; "
                   "updated the cycle after done",
    "error": "sticky: a command had an unsupported dataflow, a zero dimension or an impossible preload_hidden",
    "tile_start": "debug, not part of the host interface: high in tile-local cycle 0 (first preload shift, "
                  "or first streaming cycle if hidden)",
}


class SystolicDesign(RtlDesign):
    """RTL of :class:`~archsim.templates.systolic.params.SystolicParams`."""

    template = "systolic"
    toplevel = "archsim_systolic"
    driver = "rtl.systolic.driver:run_job"
    #: the driver uses only the host signature (rtl.lib.host): user Verilog can be co-simulated with it
    host_interface = True
    depth_options = ("left_depth", "top_depth", "out_depth")

    @staticmethod
    def target_options(params: Any, target: str) -> dict[str, Any]:
        """ECP5: DSP-primitive PEs where the operands fit a MULT18X18D (WS, IS, OS), distributed output RAM."""
        if target != "ecp5":
            return {}
        bits = {"int8": 8, "int16": 16}
        if params.pe_style != "standard":  # carry-save PEs: no complete product for a DSP
            return {"out_ram": "distributed"}
        if params.dataflow in ("ws", "is", "os") and max(bits.get(params.input_precision, 99),
                                                    bits.get(params.weight_precision, 99)) <= 18:
            return {"multiplier": "ecp5_dsp", "out_ram": "distributed"}
        return {"out_ram": "distributed"}

    def __init__(self, params: Any, options: SystolicRtlOptions | dict | None = None):
        if isinstance(options, dict):
            options = SystolicRtlOptions(**options)
        super().__init__(params, options or SystolicRtlOptions())
        params.validate()
        self.cfg = SystolicConfig.from_params(params, self.options)

    def component(self) -> SystolicAccelerator:
        return SystolicAccelerator(self.cfg)

    def sim_sources(self) -> dict[str, str]:
        if self.cfg.multiplier == "ecp5_dsp":
            from rtl.lib.ecp5 import mult18x18d_sim_model

            return {"MULT18X18D_model.v": mult18x18d_sim_model()}
        return {}

    def config_dict(self) -> dict[str, Any]:
        out = self.cfg.as_dict()
        out["dataflows"] = list(self.cfg.dataflows)
        out["preload"] = self.params.preload
        out["input_precision"] = self.params.input_precision
        out["weight_precision"] = self.params.weight_precision
        out["acc_precision"] = self.params.acc_precision
        return out

    def ports(self) -> list[Port]:
        return self.ports_of(systolic_signature(self.cfg), PORT_DOCS)

    def description(self) -> str:
        return f"archsim systolic accelerator ({self.cfg.rows}x{self.cfg.cols}, {self.params.dataflow})"

    # ---------------------------------------------------------------- co-simulation
    def cosim_items(self, source: str = "random", **kwargs) -> list:
        from rtl.systolic.sources import cosim_items

        return cosim_items(self.params, source, **kwargs)

    def make_job(self, items):
        tiles = []
        for tile, ops in items:
            entry = {
                "dataflow": tile.dataflow, "m": tile.m, "k": tile.k, "n": tile.n,
                "accumulate": bool(tile.accumulate), "preload_hidden": bool(tile.preload_hidden),
                "input": np.asarray(ops["input"], dtype=np.int64).tolist(),
                "weight": np.asarray(ops["weight"], dtype=np.int64).tolist(),
            }
            if tile.accumulate:
                entry["psum"] = np.asarray(ops["psum"], dtype=np.int64).tolist()
                # "chain": the partial sums are the previous tile's results, already in the output buffer
                entry["chain"] = bool(ops.get("chain", False))
            tiles.append(entry)
        layout = command_layout(self.cfg)
        fields = [(name, field.offset, field.width) for name, field in layout]
        wr = payload_shape(systolic_signature(self.cfg).members["wr"])
        wr_fields = [(name, field.offset, field.width) for name, field in wr]
        return {"driver": self.driver, "config": self.cfg.as_dict(), "command_layout": fields,
                "write_layout": wr_fields, "tiles": tiles}

    @staticmethod
    def label(tile) -> str:
        return (f"{tile.dataflow} m={tile.m} k={tile.k} n={tile.n}"
                + (" acc" if tile.accumulate else "") + (" hidden" if tile.preload_hidden else ""))

    def model_results(self, items):
        from archsim.templates.systolic.detailed import detailed_sequence
        from archsim.spec import arch_from_params
        from archsim.templates.systolic.fast import SystolicModel

        fast = SystolicModel(arch_from_params(self.params))
        for (tile, ops), (det_vals, det_cycles) in zip(items, detailed_sequence(self.params, items)):
            yield TileModels(fast.tile_values(tile, ops).astype(np.int64), fast.tile_cycles(tile),
                             np.asarray(det_vals, dtype=np.int64), det_cycles)

    def rtl_tile_values(self, tile, g):
        return IN_PLACE if g.get("out") is None else np.asarray(g["out"], dtype=np.int64)

    # the driver reads each tile's cycles off the hardware counter (``cycles``, the host interface's
    # tile_cycles) and, where it sees the debug tile_start port, also from the ports (``port_cycles``)
    def tile_extra(self, tile, ops, g):
        return {**super().tile_extra(tile, ops, g), "start_cycle": g.get("start_cycle"),
                "gap_before": g.get("gap_before")}

    def locate(self, tile, ops, at, extra):
        i, j = at
        r, c, cyc = self.output_origin(tile, i, j)
        trace = self.model_trace(tile, ops, cyc)
        if trace:
            extra["model_trace"] = trace
        return f"presented by PE({r},{c}) in tile cycle {cyc}"

    def output_origin(self, tile, i: int, j: int) -> tuple[int, int, int]:
        """(PE row, PE col, tile cycle) where ``out[i, j]`` is presented, per the timing contract."""
        R, P = self.cfg.rows, self.cfg.mult_pipeline_stages + self.cfg.drain_cycles
        L = 0 if (tile.dataflow == "os" or tile.preload_hidden) else R
        if tile.dataflow == "ws":
            return R - 1, j, L + i + R - 1 + j + P
        if tile.dataflow == "is":
            return R - 1, i, L + j + R - 1 + i + P
        return i, j, i + j + tile.k - 1 + P

    def model_trace(self, tile, ops, cycle: int, context: int = 3) -> list[str]:
        """The detailed model's line trace (one line per cycle) around tile cycle ``cycle``:
        what the array should present, to read next to the RTL's waveform."""
        from archsim.templates.systolic.detailed import SystolicArrayDetailed

        lines: list[str] = []
        try:
            SystolicArrayDetailed(self.params).run_tile(tile, ops, trace=lines.append)
        except Exception:  # noqa: BLE001 - a trace is a courtesy, never a second failure
            return []
        return lines[max(0, cycle - context):cycle + context + 1]

