"""The attention array behind the shared host interface (:mod:`rtl.lib.host`).

:class:`AttentionEngine` is the top module: the host signature's streams and
status ports around :class:`rtl.attention.design.AttentionArray` (the array,
its operand buffers, the online-softmax state and the controller), so that
``archsim rtl generate --wrapper axi`` and the shared drivers work for it.

- ``cmd``: payload :func:`command_layout` (the fields of a tile command); taken
  while the array is idle. ``q_set`` / ``kv_set``: the operand sets the tile reads Q / K and V from.
- ``wr``: ``buf`` 0 = Q, 1 = K, 2 = V; ``addr`` = ``set << (bank_bits + entry_bits)
  | bank << entry_bits | entry`` (Q: bank = array row i, entry = pass; K, V: bank =
  key index mod cols, entry = key index div cols; set: one of the two operand sets,
  :mod:`rtl.attention.buffers`); ``data`` one head-dim vector of bf16 codes, element
  e at bits [16e, 16e+16). While a tile runs, a Q write into the set other than its
  ``q_set`` and a K or V write into the set other than its ``kv_set`` are taken (the
  next tile's operands load during this one's compute, as the mapper's slots assume:
  issue 23 item 8); a write into a set the running tile reads waits until it is done
  (a write never changes the operands of a running tile).
- ``rd_addr`` / ``rd_data``: result row ``pass * rows + query row``, fp32,
  element e at bits [32e, 32e+32); one result per request, in order, held
  until the host takes it.
- ``done`` is the contract's last tile cycle; the final divide by the row sum
  (the companion 1D tile of the contract) follows while ``busy`` stays high, so
  results are readable when ``busy`` falls. ``tile_cycles`` is the hardware
  counter (first tile cycle .. ``done``), updated the cycle after ``done``.
- ``tile_start`` (a debug port, not part of the host interface): high in tile cycle 0.
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from rtl.attention.design import AttentionArray, AttentionRtlConfig, _bits
from rtl.lib.host import host_members, serve_result_reads

#: operand buffers of the ``wr`` stream's ``buf`` field
BUF_CODES = {"q": 0, "k": 1, "v": 2}


def command_layout(c: AttentionRtlConfig) -> data.StructLayout:
    """Fields of a tile command, least significant first (names as in the co-simulation job)."""
    return data.StructLayout({
        "flat": 1,
        "q_rows": _bits(c.rows + 1),
        "kv_len": _bits(c.key_blocks_max * c.cols + 1),
        "head_dim": _bits(c.head_dim_max + 1),
        "passes": _bits(c.passes_max + 1),
        "drain": 1,
        "q_set": 1,
        "kv_set": 1,
    })


def entry_bits(c: AttentionRtlConfig) -> int:
    """Width of an operand buffer's entry address (the low part of ``wr.addr``)."""
    return _bits(max(c.passes_max, c.key_blocks_max))


def bank_bits(c: AttentionRtlConfig) -> int:
    return _bits(max(c.rows, c.cols))


def attention_host_signature(c: AttentionRtlConfig) -> wiring.Signature:
    """The host signature (command payload :func:`command_layout`) plus the ``tile_start`` debug port."""
    members = host_members(command_layout(c), buf_bits=2, addr_bits=entry_bits(c) + bank_bits(c) + 1,
                           wr_data_bits=16 * c.head_dim_max, rd_data_bits=32 * c.head_dim_max,
                           rd_addr_bits=_bits(c.passes_max * c.rows))
    members["tile_start"] = Out(1)
    return wiring.Signature(members)


class AttentionEngine(wiring.Component):
    """The attention array with the host interface (see the module docstring)."""

    def __init__(self, config: AttentionRtlConfig):
        self.c = config
        super().__init__(attention_host_signature(config))

    def elaborate(self, platform):
        c = self.c
        m = Module()
        m.submodules.array = core = AttentionArray(c)
        cmd = self.cmd.payload
        m.d.comb += [
            core.cmd_valid.eq(self.cmd.valid), self.cmd.ready.eq(core.cmd_ready),
            core.cmd_flat.eq(cmd.flat), core.cmd_q_rows.eq(cmd.q_rows), core.cmd_kv_len.eq(cmd.kv_len),
            core.cmd_head_dim.eq(cmd.head_dim), core.cmd_passes.eq(cmd.passes), core.cmd_drain.eq(cmd.drain),
        ]
        # the running tile's operand sets: the command's from the cycle it is taken
        take = Signal(name="take")
        m.d.comb += take.eq(self.cmd.valid & core.cmd_ready)
        sets = {}
        for name in ("q_set", "kv_set"):
            held = Signal(name=f"run_{name}")
            with m.If(take):
                m.d.sync += held.eq(getattr(cmd, name))
            sets[name] = Mux(take, getattr(cmd, name), held)
            m.d.comb += getattr(core, name).eq(sets[name])
        eb, bb = entry_bits(c), bank_bits(c)
        wr = self.wr.payload
        wr_set = wr.addr[eb + bb]
        read_set = Mux(wr.buf == BUF_CODES["q"], sets["q_set"], sets["kv_set"])
        ready = ~((core.busy | take) & (wr_set == read_set))  # not into a set the running tile reads
        m.d.comb += [
            self.wr.ready.eq(ready),
            core.wr_en.eq(self.wr.valid & ready), core.wr_buf.eq(wr.buf),
            core.wr_addr.eq(wr.addr[:eb]), core.wr_bank.eq(wr.addr[eb:eb + bb]), core.wr_set.eq(wr_set),
            core.wr_data.eq(wr.data),
        ]
        # result reads: the array answers one cycle after the request
        serve_result_reads(m, self.rd_addr, self.rd_data, en=core.rd_en, addr=core.rd_addr, fresh=core.rd_valid,
                           data=core.rd_data)
        m.d.comb += [
            self.busy.eq(core.busy), self.done.eq(core.tile_done), self.tile_start.eq(core.tile_start),
            self.tile_cycles.eq(core.tile_cycles), self.tiles_done.eq(core.tiles_done), self.error.eq(core.error),
        ]
        return m
