"""The simd template's entry in the RTL registry: ports, buffer layout of a tile, checks."""
from __future__ import annotations

from typing import Any

from amaranth.lib import wiring

import numpy as np

from archsim.errors import SpecError
from rtl.design import Port, RtlDesign, TileModels
from rtl.lib.host import HOST_PORT_DOCS, payload_shape
from rtl.simd.design import DIM_BITS, SimdConfig, SimdRtlOptions
from rtl.simd.buffers import host_addr_bits, read_addr_bits
from rtl.simd.host import array_verilog
from rtl.simd.host import SimdEngine, command_layout, engine_members
from rtl.design import pack_lanes

PORT_DOCS = {
    **HOST_PORT_DOCS,
    "cmd__payload": "tile command, from bit 0: mode (index of the (weights, activations) pair in the manifest's "
                    "params.modes), m, n, k, g (16 bits each; g: group size along K, 0 = no group scale, ignored "
                    "by dequant builds), accumulate (1: out = existing output entry (+) A.W), bank (1 bit: the buffer "
                    "bank the tile reads and writes)",
    "wr__payload": "buf (2 bits: 0 = operands, entry round*steps + step; 1 = scales, entry round*groups + group; "
                   "2 = outputs, entry round), addr, data: operands: the round's distinct activation rows from slot "
                   "0 up and weight columns (dequant: with per-lane fp32 scales) from the last slot down, slots of "
                   "operand slot bits, then each PE's (row, column) select (rtl.simd.broadcast); scales and "
                   "outputs: PE p's part at bits [p*E, (p+1)*E), E = 32 (scales), out_bits (outputs); the top "
                   "address bit is the buffer bank: a write into the bank of the running tile waits until it is "
                   "done, the other bank's are taken while it runs",
    "rd_addr__payload": "output buffer entry (round), the bank on top (a read of the running tile's bank waits)",
    "rd_data__payload": "PE p's output at bits [p*out_bits, (p+1)*out_bits): int64, or fp32 bits in the low 32",
    "error": "sticky: a command with a mode this build lacks was refused",
    "tile_start": "debug: high in tile cycle 0 (the cycle after the command is taken: the first step's issue)",
    "tile_cycles": "cycles of the last finished tile (tile_start .. done inclusive), hardware counter; "
                   "updated the cycle after done",
}


_pack = pack_lanes  # one word of lanes (rtl.design)


def _f32_bits(x) -> np.ndarray:
    return np.asarray(x, np.float32).reshape(-1).view(np.uint32).astype(np.int64)


class SimdDesign(RtlDesign):
    """RTL of :class:`~archsim.templates.simd.params.SimdParams`: the whole PE array with its buffers."""

    template = "simd"
    toplevel = "archsim_simd"
    driver = "rtl.simd.driver:run_job"
    depth_options = ("op_depth", "scale_depth", "out_depth")

    def __init__(self, params: Any, options: SimdRtlOptions | dict | None = None):
        if isinstance(options, dict):
            options = SimdRtlOptions(**options)
        super().__init__(params, options or SimdRtlOptions())
        if params.pe == "bitmod":
            raise SpecError("simd RTL: SimdDesign builds the lane array; pe: bitmod params build "
                            "rtl.simd.bitmod_design.BitmodDesign (the template's entry rtl.simd.entry picks it)")
        try:
            self.cfg = SimdConfig.from_params(params, self.options)
        except ValueError as err:
            raise SpecError(f"simd RTL: {err}") from None
        self._mode_index = {(md.weight.name, md.activation.name): md.index for md in self.cfg.modes}

    host_interface = True

    @staticmethod
    def target_options(params: Any, target: str) -> dict[str, Any]:
        """ECP5: the pipelined PE's DSP significand products as MULT18X18D blocks with their own registers on
        the cut points (``multiplier: ecp5_dsp``; same latency and bits, docs/simd_rtl.md)."""
        if target == "ecp5" and params.pe == "lanes" and params.accumulators > 1 and params.rtl_multiplier == "dsp":
            return {"multiplier": "ecp5_dsp"}
        return {}

    def sim_sources(self) -> dict[str, str]:
        if self.options.multiplier == "ecp5_dsp":  # (BitmodDesign shares this hook; its target asks for none)
            from rtl.lib.ecp5 import mult18x18d_sim_model

            return {"MULT18X18D_model.v": mult18x18d_sim_model()}
        return {}

    def component(self) -> SimdEngine:
        """The whole design as one Amaranth hierarchy (the PEs as submodules, for Amaranth's simulator)."""
        return SimdEngine(self.cfg, pe_instances=False)

    def convert_verilog(self) -> str:
        """The top module with the PEs as instances of ``archsim_simd_pe``, then that module (converted
        once, whatever ``pes``); the base class caches it on disk by configuration and source hash."""
        return array_verilog(self.cfg, self.toplevel)

    def config_dict(self) -> dict[str, Any]:
        out = self.cfg.as_dict()
        out["formats"] = list(self.params.formats)
        out["weight_format"] = self.params.weight_format
        out["activation_format"] = self.params.activation_format
        return out

    def ports(self) -> list[Port]:
        return self.ports_of(engine_members(self.cfg), PORT_DOCS)

    def description(self) -> str:
        c = self.cfg
        return (f"archsim simd PE array ({c.pes} PEs x {c.lane_bits}-bit lanes, {c.multiplier}, "
                f"{len(c.modes)} precision modes)")

    # ---------------------------------------------------------------- co-simulation
    def cosim_items(self, source: str = "random", **kwargs) -> list:
        from rtl.simd.sources import cosim_items

        return cosim_items(self.params, source, **kwargs)

    @staticmethod
    def label(tile) -> str:
        g = f" g={tile.group_size}" if tile.group_size else ""
        return (f"{tile.weight_format}x{tile.activation_format} m={tile.m} k={tile.k} n={tile.n}{g}"
                + (" acc" if tile.accumulate else ""))

    def _mode_of(self, tile) -> tuple[str, str]:
        """The tile's (weight, activation) mode; ValueError if this build lacks it or a dimension
        does not fit the command's fields."""
        key = (tile.weight_format, tile.activation_format)
        if key not in self._mode_index:
            raise ValueError(f"{key[0]} x {key[1]} is not a mode of this build")
        for dim in ("m", "n", "k", "group_size"):
            if getattr(tile, dim) >= 1 << DIM_BITS:
                raise ValueError(f"tile {dim}={getattr(tile, dim)} does not fit the {DIM_BITS}-bit command field")
        return key

    def layout(self, tile, ops) -> dict[str, Any]:
        """The job entry of one tile: buffer entries (address, word), the command, read-back size."""
        from archsim.numerics import get_format
        from archsim.templates.simd.tile import exact_integer_output, tile_cycles

        cfg, p = self.cfg, self.params
        key = self._mode_of(tile)
        P, L = cfg.pes, p.lanes(*key)
        wb, ab = get_format(tile.weight_format).bits, get_format(tile.activation_format).bits
        WW, OW = cfg.weight_word_bits, cfg.out_bits
        groups = tile.groups(p.dequant)
        steps = [(g0, s * L, min(L, glen - s * L)) for g0, glen in groups for s in range(-(-glen // L))]
        M, N, K = tile.m, tile.n, tile.k
        R = -(-(M * N) // P)
        opt = cfg.options
        if R * len(steps) > opt.op_depth or R > opt.out_depth or (
                tile.group_size and not p.dequant and R * len(groups) > opt.scale_depth):
            raise ValueError(f"tile {self.label(tile)} does not fit the RTL buffers (op_depth={opt.op_depth}, "
                             f"scale_depth={opt.scale_depth}, out_depth={opt.out_depth}; set --depth)")
        A = np.asarray(ops["input"], np.int64)
        W = np.asarray(ops["weight"], np.int64)
        G = tile.group_size
        scale = np.asarray(ops["scale"], np.float32) if G else None
        one = int(np.float32(1.0).view(np.uint32))
        op_entries, sc_entries, out_entries = [], [], []
        bcast = cfg.operand_layout  # each distinct row / column of a round once (rtl.simd.broadcast)
        for r in range(R):
            outs = [(o // N, o % N) if o < M * N else None for o in range(r * P, r * P + P)]
            rows, cols, sels = bcast.round_operands(outs)
            for s, (g0, off, cnt) in enumerate(steps):
                ks = range(g0 + off, g0 + off + cnt)
                row_words = [_pack(A[mi, ks.start:ks.stop], ab) for mi in rows]
                col_words = []
                for ni in cols:
                    part = _pack(W[ks.start:ks.stop, ni], wb)
                    if p.dequant:
                        sc = [int(_f32_bits(scale[k // G, ni])[0]) if G else one for k in ks]
                        part |= _pack(sc, 32) << WW
                    col_words.append(part)
                op_entries.append([r * len(steps) + s, bcast.pack(row_words, col_words, sels)])
            if G and not p.dequant:
                for gi in range(len(groups)):
                    word = 0
                    for pe, mn in enumerate(outs):
                        if mn is not None:
                            word |= int(_f32_bits(scale[gi, mn[1]])[0]) << (32 * pe)
                    sc_entries.append([r * len(groups) + gi, word])
            if tile.accumulate:
                ps = np.asarray(ops["psum"])
                vals = []
                for mn in outs:
                    if mn is None:
                        vals.append(0)
                    elif exact_integer_output(tile, p):
                        vals.append(int(np.int64(ps[mn])))
                    else:
                        vals.append(int(_f32_bits(ps[mn])[0]))
                out_entries.append([r, _pack(vals, OW)])
        return {"mode": self._mode_index[key], "m": M, "n": N, "k": K, "g": G, "accumulate": bool(tile.accumulate),
                "ops": op_entries, "scales": sc_entries, "psum": out_entries, "rounds": R,
                "budget": 2 * tile_cycles(tile, p) + 16}

    def make_job(self, items) -> dict[str, Any]:
        try:
            tiles = [self.layout(tile, ops) for tile, ops in items]
        except ValueError as err:
            raise SpecError(f"simd RTL co-simulation: {err}") from None
        fields = [(name, f.offset, f.width) for name, f in command_layout(self.cfg)]
        wr = payload_shape(wiring.Signature(engine_members(self.cfg)).members["wr"])
        return {"driver": self.driver, "config": {"pes": self.cfg.pes, "out_bits": self.cfg.out_bits},
                "command_layout": fields, "write_layout": [(name, f.offset, f.width) for name, f in wr],
                "addr_bits": host_addr_bits(self.cfg), "rd_addr_bits": read_addr_bits(self.cfg), "tiles": tiles}

    def rtl_values(self, tile, words: list[int]) -> np.ndarray:
        """The tile's outputs from the output buffer entries read back (int64, or fp32)."""
        from archsim.templates.simd.tile import exact_integer_output

        P, OW = self.cfg.pes, self.cfg.out_bits
        MN = tile.m * tile.n
        raw = [(w >> (OW * pe)) & ((1 << OW) - 1) for w in words for pe in range(P)][:MN]
        if exact_integer_output(tile, self.params):
            return np.array([v - (1 << 64) if v >> 63 else v for v in raw], np.int64).reshape(tile.m, tile.n)
        return np.array([v & 0xFFFFFFFF for v in raw], np.uint32).view(np.float32).reshape(tile.m, tile.n)

    def tile_models(self, tile, ops):
        return TileModels(*self.models(tile, ops))

    def rtl_tile_values(self, tile, g):
        return self.rtl_values(tile, g["words"])

    def comparable(self, tile, values, rtl=False):
        return _comparable(values, canonical=not rtl)

    def tile_extra(self, tile, ops, g):
        return {**super().tile_extra(tile, ops, g), "take_to_start": g.get("take_to_start")}

    def locate(self, tile, ops, at, extra):
        o = at[0] * tile.n + at[1]
        return f"PE {o % self.cfg.pes} round {o // self.cfg.pes}"

    def models(self, tile, ops):
        """(fast values, fast cycles, detailed values, detailed cycles) of archsim's models."""
        from archsim.spec import arch_from_params
        from archsim.templates.simd.model import SimdModel

        model = getattr(self, "_model", None)
        if model is None:
            model = self._model = SimdModel(arch_from_params(self.params))
        fast_vals = np.asarray(model.tile_values(tile, ops))
        det_vals, det_cycles = model.detailed_tile(tile, ops)
        return fast_vals, model.tile_cycles(tile), np.asarray(det_vals), det_cycles

def _comparable(values: np.ndarray, canonical: bool = True) -> np.ndarray:
    """Bit patterns (fp32: -0 != +0; ``canonical``: any NaN as the canonical one, which is what the
    RTL must produce, so its own values are compared as they are) or the integers themselves."""
    v = np.asarray(values)
    if v.dtype == np.float32:
        bits = v.view(np.uint32).astype(np.int64)
        return np.where(np.isnan(v), 0x7FC00000, bits) if canonical else bits
    return v.astype(np.int64)
