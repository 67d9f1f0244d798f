"""The SIMD PE array behind the shared host signature (:mod:`rtl.lib.host`).

:class:`SimdEngine` is the generated top: the command, operand-write and
result-read streams of the host interface around :class:`rtl.simd.design.SimdArray`
(whose ports stay the plain ones of the datapath), so ``archsim rtl generate
--wrapper axi`` and ``archsim rtl cosim --verilog`` drive the SIMD design like
any other tile engine. ``tile_cycles`` is the array's hardware counter.

- ``cmd``: payload :func:`command_layout` (``mode``, ``m``, ``n``, ``k``, ``g``,
  ``accumulate``, ``bank``, from bit 0 up); taken while the array is idle. A ``mode``
  beyond the build's modes is taken, dropped, and sets the sticky ``error``. The tile
  reads its operands and scales from, and accumulates into, buffer bank ``bank``.
- ``wr``: ``buf`` (0 operands, 1 scales, 2 outputs), ``addr`` (an entry, the bank on
  top: :func:`rtl.simd.buffers.host_addr_bits`), ``data`` (all PEs' parts, PE 0
  lowest). While a tile runs, writes into the other bank are taken (the next tile's
  loads overlap this one's compute, as the models assume: issue 23 item 8); a write
  into the running tile's bank waits until it is done, and an output write also
  waits out a cycle in which the datapath writes its results.
- ``rd_addr`` / ``rd_data``: an output entry, the bank on top; one request at a time;
  the entry is offered from the second cycle after the request and held until taken.
  A read of the running tile's bank waits until it is done; the other bank's (the
  previous tile's results) are taken while it runs.
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from rtl.lib.host import host_members
from rtl.simd.buffers import host_addr_bits, read_addr_bits
from rtl.simd.config import DIM_BITS, SimdConfig, _bits
from rtl.simd.design import SimdArray
from rtl.simd.pe import pe_verilog

BUF_BITS = 2


def command_layout(cfg: SimdConfig) -> data.StructLayout:
    """The ``cmd`` payload, fields from bit 0 up."""
    return data.StructLayout({"mode": _bits(len(cfg.modes)), "m": DIM_BITS, "n": DIM_BITS, "k": DIM_BITS,
                              "g": DIM_BITS, "accumulate": 1, "bank": 1})


def engine_members(cfg: SimdConfig) -> dict:
    return host_members(command_layout(cfg), buf_bits=BUF_BITS, addr_bits=host_addr_bits(cfg),
                        wr_data_bits=cfg.data_bits, rd_data_bits=cfg.pes * cfg.out_bits,
                        rd_addr_bits=read_addr_bits(cfg)) | {"tile_start": Out(1)}


class SimdEngine(wiring.Component):
    """The host-interface top of the SIMD design (see the module docstring)."""

    def __init__(self, cfg: SimdConfig, pe_instances: bool = True):
        self.cfg = cfg
        self.pe_instances = pe_instances
        super().__init__(engine_members(cfg))

    def make_array(self) -> wiring.Component:
        """The array behind the host interface (:class:`rtl.simd.bitmod_array.BitmodEngine` puts BitMoD's)."""
        return SimdArray(self.cfg, self.pe_instances)

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        arr = m.submodules.array = self.make_array()
        cmd = self.cmd.payload
        # ---- commands: a mode this build lacks is refused (taken, dropped, error set)
        bad = Signal(name="bad_mode")
        m.d.comb += bad.eq(cmd.mode >= len(cfg.modes))
        m.d.comb += [self.cmd.ready.eq(bad | arr.cmd_ready), arr.cmd_valid.eq(self.cmd.valid & ~bad),
                     arr.cmd_mode.eq(cmd.mode), arr.cmd_m.eq(cmd.m), arr.cmd_n.eq(cmd.n), arr.cmd_k.eq(cmd.k),
                     arr.cmd_g.eq(cmd.g), arr.cmd_accumulate.eq(cmd.accumulate)]
        with m.If(self.cmd.valid & bad):
            m.d.sync += self.error.eq(1)
        # ---- the running tile's buffer bank: the command's from the cycle it is taken
        take, bank = Signal(name="take"), Signal(name="bank")
        m.d.comb += [take.eq(self.cmd.valid & ~bad & arr.cmd_ready), arr.bank.eq(Mux(take, cmd.bank, bank))]
        with m.If(take):
            m.d.sync += bank.eq(cmd.bank)
        # ---- operand writes: into the bank the running tile does not use (the buffers' wr_ready)
        wr = self.wr.payload
        m.d.comb += [self.wr.ready.eq(arr.wr_ready), arr.wr_en.eq(self.wr.valid & arr.wr_ready),
                     arr.wr_buf.eq(wr.buf), arr.wr_addr.eq(wr.addr), arr.wr_data.eq(wr.data)]
        # ---- result reads: one request in flight, the answer held until taken; not the running bank
        held = Signal(name="rd_held")
        m.d.comb += [self.rd_addr.ready.eq(~arr.rd_valid & ~held & arr.rd_ready),
                     arr.rd_en.eq(self.rd_addr.valid & self.rd_addr.ready), arr.rd_addr.eq(self.rd_addr.payload),
                     self.rd_data.valid.eq(held)]
        with m.If(arr.rd_valid):
            m.d.sync += [self.rd_data.payload.eq(arr.rd_data), held.eq(1)]
        with m.Elif(self.rd_data.ready):
            m.d.sync += held.eq(0)
        # ---- status and the hardware counter
        m.d.comb += [self.busy.eq(arr.busy), self.done.eq(arr.tile_done), self.tile_cycles.eq(arr.tile_cycles),
                     self.tiles_done.eq(arr.tiles_done), self.tile_start.eq(arr.tile_start)]
        return m


def array_verilog(cfg: SimdConfig, top: str) -> str:
    """Verilog of the whole design: the host-interface top (:class:`rtl.simd.host.SimdEngine`, the PEs as
    instances) followed by the PE module."""
    from amaranth.back import verilog

    return verilog.convert(SimdEngine(cfg), name=top, emit_src=False) + "\n" + pe_verilog(cfg)
