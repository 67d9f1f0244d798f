"""The LUT template's entry in the RTL registry: ports, job encoding, comparison with the
LUT models (fast: :mod:`archsim.templates.lut.values` / :mod:`~archsim.templates.lut.tile`;
detailed: :class:`archsim.templates.lut.detailed.LutArrayDetailed`)."""
from __future__ import annotations

from math import ceil
from typing import Any

import numpy as np

from archsim.errors import SpecError
from rtl.design import Port, RtlDesign, TileModels
from rtl.lib.host import HOST_PORT_DOCS, payload_shape
from rtl.lut.design import ACC_BITS, AFMT, BUFS, WFMT, LutConfig, LutCore, _bits, lut_signature
from rtl.lut.host import LutEngine, command_layout, engine_signature
from rtl.design import pack_lanes

PORT_DOCS = {
    "clk": "clock (rising edge)",
    "rst": "synchronous reset, active high",
    "cmd_valid": "command handshake: a tile command is taken when cmd_valid and cmd_ready are high at a rising edge",
    "cmd_ready": "high while no tile runs",
    "cmd_row_blocks": "ceil(M / tile_m): row blocks of the tile",
    "cmd_groups": "K / group_k: activation groups of the tile",
    "cmd_col_blocks": "ceil(N / tile_n): column blocks of the tile",
    "cmd_wfmt": "weight format: 0 int1, 1 ternary, 2 int2, 3 int3, 4 int4 (bit planes: 1, 2, 2, 3, 4)",
    "cmd_afmt": "activation format: 0 int8, 1 fp16, 2 bf16",
    "cmd_accumulate": "1: out += A.W onto the output buffer's contents; 0: out = A.W",
    "cmd_precomputed": "1: the tables come from the table buffer (fused precompute, no table-build cycles)",
    "cmd_bank": "operand bank the tile reads (activations, weight planes, tables, scales: two banks each)",
    "bank": "external_buffers: the operand bank the running tile reads (cmd_bank, taken with the command): the "
            "external operand buffers' read bank",
    "wr_en": "write one entry of the buffer selected by wr_buf; while a tile runs only into the banks it does not "
             "use (a write into its bank, or into the output buffer while the datapath writes it, is dropped and "
             "sets error)",
    "wr_bank": "bank of the write (operand buffers and the output buffer have two each)",
    "wr_ready": "a write now would be taken (low while a tile runs and wr_bank names its bank, or wr_buf the "
                "output buffer in a cycle the datapath writes it)",
    "rd_bank": "output bank of the read",
    "rd_ready": "a read now would be taken (low while a tile runs and rd_bank names its output bank)",
    "wr_buf": "0 activations, 1 weight planes, 2 output, 3 precomputed tables, 4 scales (scale builds)",
    "wr_addr": "buffer address",
    "wr_data": "the entry (layouts in docs/lut_rtl.md), low bits first",
    "rd_en": "read one output buffer entry",
    "rd_addr": "output buffer address (row block mb, column block nb at mb * col_blocks + nb)",
    "rd_data": "tile_m x tile_n accumulators, (r, c) at bits [(r*tile_n + c)*32, +32): int32 or fp32 bits; "
               "the entry asked for in the previous cycle",
    "act_raddr": "external_buffers: activation buffer address (asynchronous read: act_rdata in the same cycle)",
    "act_rdata": "external_buffers: the activation entry at act_raddr",
    "weight_raddr": "external_buffers: weight-plane buffer address (weight_rdata the next cycle)",
    "weight_rdata": "external_buffers: the weight-plane entry asked for in the previous cycle",
    "table_raddr": "external_buffers: table buffer address (table_rdata the next cycle)",
    "table_rdata": "external_buffers: the table entry asked for in the previous cycle",
    "out_raddr": "external_buffers: output buffer read address (out_rdata the next cycle, old data on a same-cycle write)",
    "out_rdata": "external_buffers: the output entry asked for in the previous cycle",
    "out_waddr": "external_buffers: output buffer write address",
    "out_wdata": "external_buffers: the output entry written",
    "out_we": "external_buffers: write out_wdata at out_waddr",
    "scale_raddr": "external_buffers, scale builds: scale buffer address (scale_rdata the next cycle)",
    "scale_rdata": "external_buffers, scale builds: the scale entry asked for in the previous cycle",
    "busy": "a tile runs",
    "tile_start": "high in tile-local cycle 0",
    "tile_done": "high in the tile's last cycle (pipeline_cycles after its last lookup)",
    "tile_cycles": "cycles of the last finished tile (hardware counter)",
    "tiles_done": "tiles finished since reset",
    "error": "sticky: a command named a format the build lacks or a zero dimension, or a write was refused",
}


#: the host-signature engine's ports (rtl.lut.host): the shared ones plus the LUT's payloads
ENGINE_PORT_DOCS = {
    **HOST_PORT_DOCS,
    "cmd__payload": "tile command, lowest bits first: row_blocks (16), groups (16), col_blocks (16), wfmt (3), "
                    "afmt (2), accumulate, precomputed, bank (as the core's cmd_* ports: docs/lut_rtl.md)",
    "wr__payload": "buf (0 activations, 1 weight planes, 2 output, 3 tables, 4 scales), addr (its top bit: the "
                   "operand bank), data (one entry, layouts in docs/lut_rtl.md); while a tile runs, a write into "
                   "its bank or into the output buffer waits",
    "rd_addr__ready": "high when no result waits and the address's bank (its top bit) is not the running tile's",
    "tile_start": "high in tile-local cycle 0 (debug; the host interface does not need it)",
}

_pack = pack_lanes  # one word of lanes (rtl.design)


def activation_codes(a: np.ndarray, fmt: str) -> np.ndarray:
    """Bit patterns of activations: int8 two's complement, fp16 / bf16 16-bit patterns."""
    if fmt == "int8":
        return np.asarray(a, np.int64) & 0xFF
    if fmt == "fp16":
        return np.asarray(a, np.float32).astype(np.float16).view(np.uint16).astype(np.int64)
    return (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.int64)


def value_bits(values: np.ndarray, integer: bool) -> np.ndarray:
    """Comparable bit patterns (fp32 bit for bit: -0 != +0)."""
    if integer:
        return np.asarray(values, np.int64)
    return np.asarray(values, np.float32).view(np.uint32).astype(np.int64)


class LutDesign(RtlDesign):
    """RTL of :class:`~archsim.templates.lut.params.LutParams`: :class:`rtl.lut.design.LutCore`."""

    template = "lut"
    toplevel = "archsim_lut"
    driver = "rtl.lut.driver:run_job"
    depth_options = ("act_depth", "weight_depth", "out_depth", "table_depth", "scale_depth")
    host_interface = True  # rtl.lut.driver goes through rtl.cosim.direct_host.host_for only

    def __init__(self, params: Any, options: dict | None = None):
        super().__init__(params, dict(options or {}))
        try:
            self.cfg = LutConfig.from_params(params, self.options)
        except ValueError as err:
            raise SpecError(f"lut RTL: {err}") from None

    def component(self) -> LutCore | LutEngine:
        """The engine with the host signature; with ``external_buffers`` the bare core (its buffer ports)."""
        return LutCore(self.cfg) if self.cfg.external_buffers else LutEngine(self.cfg)

    def config_dict(self) -> dict[str, Any]:
        return self.cfg.as_dict()

    def host_interface_problem(self) -> str:
        if self.cfg.external_buffers:
            return ("the lut RTL with external_buffers is the bare core (its buffer ports), not the host interface; "
                    "the host engine has the core's own buffers (external_buffers: false)")
        return super().host_interface_problem()

    def ports(self) -> list[Port]:
        if self.cfg.external_buffers:
            return self.ports_of(lut_signature(self.cfg), PORT_DOCS)
        return self.ports_of(engine_signature(self.cfg), ENGINE_PORT_DOCS)

    def description(self) -> str:
        c = self.cfg
        return (f"archsim lut tensor core (M{c.tile_m} N{c.tile_n} K{c.group_k}, "
                f"{'/'.join(c.weight_formats)} x {'/'.join(c.activation_formats)})")

    # ---------------------------------------------------------------- co-simulation
    def cosim_items(self, source: str = "random", tiles: int = 8, seed: int = 0, **_kwargs) -> list:
        if source != "random":
            raise SpecError(f"lut RTL co-simulation sources: random, got {source!r}")
        from archsim.templates.lut import conformance

        items = conformance.sample_tiles(np.random.default_rng(seed), self.params, tiles)
        return [(t, o) for t, o in items if self.fits(t)]

    def blocks(self, tile) -> tuple[int, int, int, int]:
        """(row blocks, groups, column blocks, planes) of a tile."""
        c = self.cfg
        return ceil(tile.m / c.tile_m), tile.k // c.group_k, ceil(tile.n / c.tile_n), tile.planes

    def fits(self, tile) -> bool:
        mb, g, nb, b = self.blocks(tile)
        c = self.cfg
        scales = {"none": 0, "per_channel": nb, "per_group": nb * g * c.group_k // max(1, c.scale_group)}[c.scale]
        return (mb * g <= min(c.act_depth, c.table_depth) and g * nb * b <= c.weight_depth
                and mb * nb <= c.out_depth and scales <= c.scale_depth)

    def encode(self, tile, ops) -> dict[str, Any]:
        """Buffer writes, command fields and output entries of one tile (layouts: docs/lut_rtl.md)."""
        from archsim.templates.lut.tile import weight_planes
        from archsim.templates.lut.values import activations, build_tables, is_int

        c = self.cfg
        tile.check(self.params)
        if not self.fits(tile):
            raise SpecError(f"lut RTL: tile m={tile.m} k={tile.k} n={tile.n} does not fit the RTL buffers "
                            f"(act/table {c.act_depth}, weight {c.weight_depth}, out {c.out_depth}"
                            + (f", scale {c.scale_depth}" if c.scale != "none" else "") + " entries)")
        tm, tn, K, E = c.tile_m, c.tile_n, c.group_k, c.entries
        MB, G, NB, b = self.blocks(tile)
        integer = is_int(tile.activation_format)
        a = np.zeros((MB * tm, tile.k), np.int64 if integer else np.float32)
        a[:tile.m] = activations(ops["input"], tile.activation_format)
        codes = activation_codes(a, tile.activation_format)
        planes = np.zeros((b, tile.k, NB * tn), np.int64)
        planes[:, :, :tile.n] = weight_planes(ops["weight"], tile.weight_format)
        writes = []
        for mb in range(MB):
            for g in range(G):
                lanes = codes[mb * tm:(mb + 1) * tm, g * K:(g + 1) * K].reshape(-1)
                writes.append([BUFS["act"], mb * G + g, _pack(lanes, c.act_bits)])
        for g in range(G):
            for nb in range(NB):
                for q in range(b):
                    bits = planes[b - 1 - q, g * K:(g + 1) * K, nb * tn:(nb + 1) * tn]  # (K, tn)
                    cols = (bits << np.arange(K)[:, None]).sum(axis=0)
                    writes.append([BUFS["weight"], (g * NB + nb) * b + q, _pack(cols, K)])
        if tile.precomputed:  # the producer's tables (stored entries, row-major)
            stored = np.arange(E, 2 * E) if c.symmetric else np.arange(E)
            for mb in range(MB):
                for g in range(G):
                    t = build_tables(a[mb * tm:(mb + 1) * tm, g * K:(g + 1) * K], K, integer, stored)
                    writes.append([BUFS["table"], mb * G + g,
                                   _pack(value_bits(t, integer).reshape(-1), c.entry_bits)])
        int_out = integer and c.scale == "none"  # with scales the outputs (and psums) are fp32
        if c.scale != "none":  # scale entries: per_channel nb; per_group sg * NB + nb; column c at lane c
            sc = np.asarray(ops["scale"], np.float32).reshape(-1, tile.n)
            padded = np.zeros((sc.shape[0], NB * tn), np.float32)
            padded[:, :tile.n] = sc
            bits = value_bits(padded, False)
            for sg in range(sc.shape[0]):
                for nb in range(NB):
                    writes.append([BUFS["scale"], sg * NB + nb, _pack(bits[sg, nb * tn:(nb + 1) * tn], 32)])
        if tile.accumulate:
            psum = np.zeros((MB * tm, NB * tn), np.int64 if int_out else np.float32)
            psum[:tile.m, :tile.n] = np.asarray(ops["psum"])
            bits = value_bits(psum, int_out)
            for mb in range(MB):
                for nb in range(NB):
                    lanes = bits[mb * tm:(mb + 1) * tm, nb * tn:(nb + 1) * tn].reshape(-1)
                    writes.append([BUFS["out"], mb * NB + nb, _pack(lanes, ACC_BITS)])
        cmd = {"cmd_row_blocks": MB, "cmd_groups": G, "cmd_col_blocks": NB, "cmd_wfmt": WFMT[tile.weight_format],
               "cmd_afmt": AFMT[tile.activation_format], "cmd_accumulate": int(tile.accumulate),
               "cmd_precomputed": int(tile.precomputed)}
        return {"writes": writes, "cmd": cmd, "out_entries": MB * NB}

    def make_job(self, items) -> dict[str, Any]:
        """Tile i reads operand bank i % 2 (its operands are written while tile i - 1 runs)."""
        c = self.cfg
        if c.external_buffers:
            raise SpecError("lut RTL: co-simulation needs the core's own buffers (external_buffers: false)")
        tiles = [self.encode(t, o) for t, o in items]
        for i, tile in enumerate(tiles):  # the host's command fields: the core's cmd_* ports, and the bank
            tile["cmd"] = {**{k.removeprefix("cmd_"): v for k, v in tile["cmd"].items()}, "bank": i % 2}
        sig = engine_signature(c)
        layouts = {name: [(f, field.offset, field.width) for f, field in payload_shape(sig.members[name])]
                   for name in ("cmd", "wr")}
        return {"driver": self.driver, "tiles": tiles, "out_buf": BUFS["out"], "addr_bits": c.addr_bits,
                "out_addr_bits": _bits(c.out_depth),
                "rd_bits": c.out_word, "command_layout": layouts["cmd"], "write_layout": layouts["wr"]}

    # cycles: the hardware counter, checked against the ports where the host sees them
    def model_results(self, items):
        from archsim.templates.lut.detailed import LutArrayDetailed
        from archsim.templates.lut.tile import tile_cycles
        from archsim.templates.lut.values import tile_values

        detailed = LutArrayDetailed(self.params)
        for tile, ops in items:
            det_vals, det_cycles = detailed.run_tile(tile, ops)
            yield TileModels(tile_values(tile, ops, self.params), tile_cycles(tile, self.params), det_vals, det_cycles)

    def rtl_tile_values(self, tile, g):
        return self.rtl_values(tile, g["out"])

    def comparable(self, tile, values, rtl=False):
        return value_bits(values, self.int_output(tile))

    def rtl_values(self, tile, words: list[int]) -> np.ndarray:
        """The tile's outputs from the output buffer entries read back."""
        c = self.cfg
        tm, tn = c.tile_m, c.tile_n
        MB, _G, NB, _b = self.blocks(tile)
        raw = np.zeros((MB * tm, NB * tn), np.int64)
        for e, word in enumerate(words):
            mb, nb = divmod(e, NB)
            for r in range(tm):
                for col in range(tn):
                    raw[mb * tm + r, nb * tn + col] = (word >> ((r * tn + col) * ACC_BITS)) & 0xFFFFFFFF
        raw = raw[:tile.m, :tile.n]
        if self.int_output(tile):
            return np.where(raw >> 31, raw - (1 << 32), raw)
        return raw.astype(np.uint32).view(np.float32)

    def int_output(self, tile) -> bool:
        """Integer outputs: int8 activations without scales (else fp32)."""
        from archsim.templates.lut.values import is_int

        return is_int(tile.activation_format) and self.cfg.scale == "none"

    @staticmethod
    def label(tile) -> str:
        return (f"{tile.weight_format}x{tile.activation_format} m={tile.m} k={tile.k} n={tile.n}"
                + (" acc" if tile.accumulate else "") + (" pre" if tile.precomputed else ""))

