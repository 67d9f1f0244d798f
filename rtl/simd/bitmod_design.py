"""The simd template's RTL entry for ``pe: bitmod`` params: BitMoD's array (:mod:`rtl.simd.bitmod_array`)
behind the simd host interface, co-simulated with the simd cocotb driver (:mod:`rtl.simd.driver`).

:class:`rtl.simd.rtl_design.SimdDesign` hands ``pe: bitmod`` params to :class:`BitmodDesign`; it keeps
the simd job format (operand, scale and output entries, the command) and differs in the scale entries
(an 8-bit scale code and a 2-bit datatype selector per PE, also for ``G = 0`` tiles) and the outputs
(int64, units of 1/2; fp16-activation modes: fp32 bits in the low half of the 64-bit entry).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.errors import SpecError, WorkloadError
from archsim.numerics import bits_of
from archsim.templates.simd import bitserial
from archsim.templates.simd.bitmod_fp16 import FP16
from rtl.design import RtlDesign, pack_lanes
from rtl.simd.bitmod_array import DEFAULT_OPTIONS, BitmodConfig, BitmodEngine
from rtl.simd.config import SimdRtlOptions
from rtl.simd.rtl_design import PORT_DOCS, SimdDesign

BITMOD_PORT_DOCS = {
    **PORT_DOCS,
    "cmd__payload": "tile command, from bit 0: mode (index of the (weights, activations) pair in the manifest's "
                    "params.modes), m, n, k, g (16 bits each; g: group size along K, 0 = no group scale), "
                    "accumulate (1: out = existing output entry + A.W), bank (1 bit: the buffer bank the tile reads "
                    "and writes)",
    "wr__payload": "buf (2 bits: 0 = operands, entry round*steps + step; 1 = group metadata, entry "
                   "round*groups + group (one group of K when g = 0); 2 = outputs, entry round), addr, data: "
                   "PE p's part at bits [p*E, (p+1)*E): operands E = entry_bits (activation word, weight word), "
                   "metadata E = 32 (8-bit scale code, then the 2-bit datatype selector), outputs E = 64; "
                   "the top address bit is the buffer bank: a write into the running tile's bank waits until "
                   "it is done",
    "rd_data__payload": "PE p's output at bits [64p, 64p + 64): int64 in units of 1/2 (one fraction bit); "
                        "fp16-activation modes: fp32 bits in [64p, 64p + 32)",
}


class BitmodDesign(SimdDesign):
    """RTL of ``pe: bitmod`` :class:`~archsim.templates.simd.params.SimdParams`: the bit-serial PE array."""

    def __init__(self, params: Any, options: SimdRtlOptions | dict | None = None):
        if isinstance(options, dict):
            options = SimdRtlOptions(**{**DEFAULT_OPTIONS, **options})
        RtlDesign.__init__(self, params, options or SimdRtlOptions(**DEFAULT_OPTIONS))
        try:
            self.cfg = BitmodConfig.from_params(params, self.options)
        except ValueError as err:
            raise SpecError(f"simd RTL (pe: bitmod): {err}") from None
        self._mode_index = {(md.weight, md.activation): md.index for md in self.cfg.modes}

    def component(self) -> BitmodEngine:
        return BitmodEngine(self.cfg)

    def convert_verilog(self) -> str:
        return RtlDesign.convert_verilog(self)

    def config_dict(self) -> dict[str, Any]:
        return {**self.cfg.as_dict(), "formats": list(self.params.formats),
                "weight_format": self.params.weight_format, "activation_format": self.params.activation_format}

    def ports(self):
        from rtl.simd.host import engine_members

        return self.ports_of(engine_members(self.cfg), BITMOD_PORT_DOCS)

    def description(self) -> str:
        c = self.cfg
        return (f"archsim simd array of BitMoD bit-serial PEs ({c.pes} PEs x {c.lane_bits}-bit lane words, "
                f"{len(c.modes)} precision modes, {len(c.kinds)} PE kinds)")

    # ---------------------------------------------------------------- co-simulation
    def cosim_items(self, source: str = "random", tiles: int = 8, seed: int = 0, arch: Any = None,
                    workload: str | None = None, layer: str | None = None, **_ignored: Any) -> list:
        """``random``: the conformance hook's tiles (:func:`bitserial.sample_tiles`: edge cases, every pair);
        ``program``: the first Compute commands of a zoo layer, cropped to the buffers, random operands."""
        rng = np.random.default_rng(seed)
        if source == "random":
            return bitserial.sample_tiles(rng, self.params, tiles)
        if source == "program":
            from rtl.api import compile_layer
            from rtl.simd.sources import crop

            if arch is None:
                raise WorkloadError("source 'program' needs the arch spec")
            o = self.cfg.options
            cmds = compile_layer(arch, workload or "resnet50", layer)[:tiles]
            items = []
            for cmd in cmds:
                tile = crop(cmd.tile, self.params, op_depth=o.op_depth, out_depth=o.out_depth)
                items.append((tile, bitserial.make_operands(tile, self.params, rng)))
            if not items:
                raise WorkloadError(f"{workload}: no compute tiles")
            return items
        raise WorkloadError(f"unknown co-simulation source {source!r}; the simd RTL (pe: bitmod) has: random, program")

    def layout(self, tile, ops) -> dict[str, Any]:
        """The job entry of one tile (the simd job format; the module docstring says what differs)."""
        cfg, p = self.cfg, self.params
        key = self._mode_of(tile)
        P, L, EW, AW = cfg.pes, p.lanes(*key), cfg.entry_bits, cfg.act_word_bits
        ab, wb = bits_of(tile.activation_format), bits_of(tile.weight_format)
        groups = tile.groups()
        steps = [(g0, s * L, min(L, glen - s * L)) for g0, glen in groups for s in range(-(-glen // L))]
        M, N = tile.m, tile.n
        R = -(-(M * N) // P)
        o = cfg.options
        if R * len(steps) > o.op_depth or R > o.out_depth or R * len(groups) > o.scale_depth:
            raise ValueError(f"tile {self.label(tile)} does not fit the RTL buffers (op_depth={o.op_depth}, "
                             f"scale_depth={o.scale_depth}, out_depth={o.out_depth}; set --depth)")
        A, W = np.asarray(ops["input"], np.int64), np.asarray(ops["weight"], np.int64)
        sel, scale = bitserial.selectors(tile, ops), bitserial.scale_codes(tile, ops)
        op_entries, sc_entries, out_entries = [], [], []
        for r in range(R):
            outs = [(o_ // N, o_ % N) if o_ < M * N else None for o_ in range(r * P, r * P + P)]
            for s, (g0, off, cnt) in enumerate(steps):
                word = 0
                for pe, mn in enumerate(outs):
                    if mn is not None:
                        k0 = g0 + off
                        part = pack_lanes(A[mn[0], k0:k0 + cnt], ab) | (pack_lanes(W[k0:k0 + cnt, mn[1]], wb) << AW)
                        word |= part << (pe * EW)
                op_entries.append([r * len(steps) + s, word])
            for gi in range(len(groups)):
                word = 0
                for pe, mn in enumerate(outs):
                    if mn is not None:
                        code = 0 if scale is None else int(scale[gi, mn[1]])
                        word |= (code | int(sel[gi, mn[1]]) << bitserial.SCALE_BITS) << (32 * pe)
                sc_entries.append([r * len(groups) + gi, word])
            if tile.accumulate:
                ps = (np.asarray(ops["psum"], np.float32).view(np.uint32).astype(np.int64)
                      if tile.activation_format == FP16 else np.asarray(ops["psum"], np.int64))
                out_entries.append([r, pack_lanes([0 if mn is None else int(ps[mn]) for mn in outs], cfg.out_bits)])
        return {"mode": self._mode_index[key], "m": M, "n": N, "k": tile.k, "g": tile.group_size,
                "accumulate": bool(tile.accumulate), "ops": op_entries, "scales": sc_entries, "psum": out_entries,
                "rounds": R, "budget": 2 * bitserial.tile_cycles(tile, p) + 16}

    def rtl_values(self, tile, words: list[int]) -> np.ndarray:
        """The tile's outputs from the output entries read back: int64 in units of 1/2, or fp32 (the low
        32 bits of each entry) for fp16 activations."""
        P, OW = self.cfg.pes, self.cfg.out_bits
        raw = [(w >> (OW * pe)) & ((1 << OW) - 1) for w in words for pe in range(P)][:tile.m * tile.n]
        if tile.activation_format == FP16:
            return np.array([v & 0xFFFFFFFF for v in raw], np.uint32).view(np.float32).reshape(tile.m, tile.n)
        return np.array([v - (1 << 64) if v >> 63 else v for v in raw], np.int64).reshape(tile.m, tile.n)
