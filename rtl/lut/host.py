"""The LUT core behind the shared host signature (:mod:`rtl.lib.host`): what ``archsim rtl generate``
emits for an LUT build with internal buffers, and what ``--wrapper axi`` wraps.

- ``cmd``: one tile command a beat (payload :func:`command_layout`), taken while no tile runs;
- ``wr``: one buffer entry a beat: ``buf`` (0 activations, 1 weight planes, 2 output, 3 tables,
  4 scales), ``addr`` (its top bit is the operand bank), ``data``. Operand writes into the bank the
  running tile does not read flow at one a cycle; a write into its bank or into the output buffer
  waits (``wr.ready`` low) until the tile is done; the output buffer has two banks too (the
  command's ``bank``): psum writes into the other bank are taken while a tile runs;
- ``rd_addr`` / ``rd_data``: output-buffer reads (the bank is the address's top bit), answered the
  next cycle (a result the host does not take waits in a holding register); a read of the running
  tile's output bank waits until it is done, the other bank's are taken while it runs;
- ``done`` / ``tile_cycles`` / ``tiles_done`` / ``busy`` / ``error``: the core's own (``tile_cycles``
  is the core's hardware counter, read back by co-simulation).
"""
from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from rtl.lib.host import host_members, serve_result_reads
from rtl.lut.design import DIM_BITS, LutConfig, LutCore, _bits

#: command fields (payload bit order: first lowest) and widths
COMMAND_FIELDS = (("row_blocks", DIM_BITS), ("groups", DIM_BITS), ("col_blocks", DIM_BITS), ("wfmt", 3),
                  ("afmt", 2), ("accumulate", 1), ("precomputed", 1), ("bank", 1))


def command_layout(c: LutConfig) -> data.StructLayout:
    """The ``cmd`` payload (the core's ``cmd_*`` ports, ``bank`` = ``cmd_bank``)."""
    return data.StructLayout(dict(COMMAND_FIELDS))


def engine_signature(c: LutConfig) -> wiring.Signature:
    """Host signature (``wr.addr``: the core's address plus the bank bit on top) plus ``tile_start``."""
    members = host_members(command_layout(c), buf_bits=3 if c.scale != "none" else 2, addr_bits=c.addr_bits + 1,
                           wr_data_bits=c.data_bits, rd_data_bits=c.out_word, rd_addr_bits=_bits(c.out_depth) + 1)
    members["tile_start"] = Out(1)
    return wiring.Signature(members)


class LutEngine(wiring.Component):
    """:class:`~rtl.lut.design.LutCore` (internal buffers) with the host signature."""

    def __init__(self, cfg: LutConfig):
        if cfg.external_buffers:
            raise ValueError("the host interface needs the core's own buffers (external_buffers: false)")
        self.cfg = cfg
        super().__init__(engine_signature(cfg))

    def elaborate(self, platform):
        c = self.cfg
        m = Module()
        m.submodules.core = core = LutCore(c)
        cmd, wr = self.cmd.payload, self.wr.payload
        m.d.comb += [core.cmd_valid.eq(self.cmd.valid), self.cmd.ready.eq(core.cmd_ready)]
        m.d.comb += [getattr(core, f"cmd_{name}").eq(getattr(cmd, name)) for name, _ in COMMAND_FIELDS]
        m.d.comb += [
            self.wr.ready.eq(core.wr_ready),
            core.wr_en.eq(self.wr.valid & core.wr_ready), core.wr_buf.eq(wr.buf),
            core.wr_addr.eq(wr.addr[:c.addr_bits]), core.wr_bank.eq(wr.addr[c.addr_bits]),
            core.wr_data.eq(wr.data),
        ]
        # result reads (the output bank on top of the address): the core answers the cycle after a
        # request; a read of the running tile's output bank waits until it is done
        fresh = Signal()
        m.d.sync += fresh.eq(core.rd_en)
        ob = _bits(c.out_depth)
        serve_result_reads(m, self.rd_addr, self.rd_data, en=core.rd_en, addr=Cat(core.rd_addr[:ob], core.rd_bank),
                           fresh=fresh, data=core.rd_data, blocked=~core.rd_ready)
        m.d.comb += [
            self.busy.eq(core.busy), self.done.eq(core.tile_done), self.tile_start.eq(core.tile_start),
            self.tile_cycles.eq(core.tile_cycles), self.tiles_done.eq(core.tiles_done), self.error.eq(core.error),
        ]
        return m
