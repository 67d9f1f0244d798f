"""The PIM bank unit behind the shared host signature (:mod:`rtl.lib.host`): :class:`PimHostEngine`
replays a tile's timed command schedule from a command queue, holds the DRAM array's contents and
the input vector in memories the host writes, collects the RDACC columns in an output buffer, and
counts the tile's cycles in hardware.

Command stream (``cmd``, layout :func:`command_layout`): one entry per cycle that has commands,
``at`` = the cycle within the tile (increasing), a row command (``row_cmd``: 0 none, 1 ACT, 2 PRE,
3 REF; ``row_addr``) and a column command (``col_cmd``: 0 none, 1 MAC, 2 GBWR, 3 RDACC;
``col_addr``, ``col_acc``, ``col_src``: MAC input-buffer column / GBWR staging column), or ``end``
(the tile's last entry). A tile starts once its ``end`` entry is queued (so every entry is on time)
and at least :func:`tile_gap` cycles after the previous tile's ``done``; each entry reaches the
bank unit in cycle ``at`` of the tile (cycle 0 = the first).

Writes (``wr``): ``buf`` 0 = the input staging memory (one column of ``column_elements`` lanes per
address; a GBWR copies column ``col_src`` into the unit's input buffer), ``buf`` 1 = the DRAM
array (address ``row * 2**col_bits + col``). Reads (``rd_addr`` / ``rd_data``): the output buffer,
entry ``i`` = the tile's ``i``-th RDACC column.

``done`` is high in cycle ``D`` of the tile, ``D = max(cycle of the last RDACC column out, first
cycle after the last PRE in which the bank is ready)`` -- the models' tile cycles; ``tile_cycles``
then holds ``D`` (the tile's cycles counted from cycle 1 through ``done``, since cycle 0 only
delivers the first commands). ``run`` (a debug port beyond the host signature) is high from the
cycle before cycle 0 of a tile through its ``done``.
"""
from __future__ import annotations

from amaranth import Cat, Module, Mux, Shape, Signal
from amaranth.lib import data, fifo, memory, wiring
from amaranth.lib.wiring import Out

from rtl.lib.host import COUNTER_BITS, host_members
from rtl.pim.controller import PRE, RDACC, bits_for
from rtl.pim.design import LANE_BITS, PimBankUnit, array_latency, default_stages, delay, pim_signature

#: width of a command's ``at`` field (cycles of one tile)
AT_BITS = 24


def tile_gap(p) -> int:
    """Idle cycles between two tiles (the bank's timing state settles: rdacc_latency + tRP + tRFC + 4)."""
    return p.rdacc_latency + p.tRP + p.tRFC + 4


def command_layout(p, staging_cols: int) -> data.StructLayout:
    sig = pim_signature(p)
    src_bits = max(Shape.cast(sig["col_in"].shape).width, bits_for(staging_cols))
    return data.StructLayout({
        "at": AT_BITS, "row_cmd": 2, "row_addr": sig["row_addr"].shape, "col_cmd": 2,
        "col_addr": sig["col_addr"].shape, "col_acc": sig["col_acc"].shape, "col_src": src_bits,
        "end": 1,
    })


class PimHostEngine(wiring.Component):
    """See the module docstring. ``cmd_depth``: entries of the command queue (a whole tile);
    ``array_rows``: DRAM rows held; ``staging_cols``: input columns held; ``out_depth``: RDACC
    columns per tile."""

    def __init__(self, params, mul_stages: int | None = None, add_stages: int | None = None, *, mul: str = "dsp",
                 buffer: str = "inferred", cmd_depth: int = 1024, array_rows: int = 64, staging_cols: int | None = None,
                 out_depth: int = 64):
        p = self.p = params
        ms, ad = default_stages(p)
        self.mul_stages = ms if mul_stages is None else mul_stages
        self.add_stages = ad if add_stages is None else add_stages
        self.mul = mul
        self.buffer = buffer
        self.latency = array_latency(p, self.mul_stages, self.add_stages)
        if self.latency < 1:
            raise ValueError(f"mul_stages/add_stages: the host engine's DRAM array memory needs >= 1 cycle of "
                             f"array latency (tCL + mac_pipeline_cycles - 2 - the MAC latency), got {self.latency}")
        self.col_bits = bits_for(p.row_columns)
        self.cmd_depth, self.array_rows, self.out_depth = cmd_depth, array_rows, out_depth
        self.staging_cols = staging_cols or 4 * p.row_columns
        self.layout = command_layout(p, self.staging_cols)
        self.W = LANE_BITS[p.mac_precision] * p.column_elements
        self.out_bits = 32 * (p.column_bytes // 4)
        members = host_members(self.layout, buf_bits=1,
                               addr_bits=max(bits_for(array_rows) + self.col_bits, bits_for(self.staging_cols)),
                               wr_data_bits=self.W, rd_data_bits=self.out_bits, rd_addr_bits=bits_for(out_depth))
        members["run"] = Out(1)
        super().__init__(members)

    def elaborate(self, platform):
        p = self.p
        m = Module()
        unit = m.submodules.unit = PimBankUnit(p, False, self.mul_stages, self.add_stages, self.mul,
                                                  self.buffer)
        self._memories(m, unit)
        q = m.submodules.cmdq = fifo.SyncFIFOBuffered(width=self.layout.size, depth=self.cmd_depth)
        m.d.comb += [q.w_data.eq(self.cmd.payload.as_value()), q.w_en.eq(self.cmd.valid),
                     self.cmd.ready.eq(q.w_rdy)]
        head = data.View(self.layout, q.r_data)
        queued = Signal(range(self.cmd_depth + 1))  # tiles whose end entry is queued
        started = Signal()
        end_in = self.cmd.valid & self.cmd.ready & self.cmd.payload.end
        # ---------------------------------------------------------------- replay
        running, draining = Signal(), Signal()
        gap = Signal(range(tile_gap(p) + 1))
        u = Signal(AT_BITS + 1)  # cycles since the tile's first replay cycle (the unit sees entry `at` at u = at + 1)
        issue = Signal(self.layout)  # the entry the unit sees this cycle
        staged = Signal(self.W)
        pop = running & ~draining & q.r_rdy & ~head.end & (head.at == u)
        m.d.comb += q.r_en.eq(pop | (running & ~draining & q.r_rdy & head.end))
        m.d.sync += issue.eq(Mux(pop, head.as_value(), 0))
        m.d.comb += started.eq(~running & (gap == 0) & (queued != 0))
        m.d.sync += queued.eq(queued + end_in - started)
        with m.If(gap != 0):
            m.d.sync += gap.eq(gap - 1)
        with m.If(started):
            m.d.sync += [running.eq(1), draining.eq(0), u.eq(0)]
        with m.If(running):
            m.d.sync += u.eq(u + 1)
            with m.If(q.r_rdy & head.end & ~draining):
                m.d.sync += draining.eq(1)
        m.d.comb += [unit.row_valid.eq(issue.row_cmd != 0), unit.row_cmd.eq(issue.row_cmd),
                     unit.row_addr.eq(issue.row_addr), unit.col_valid.eq(issue.col_cmd != 0),
                     unit.col_cmd.eq(issue.col_cmd), unit.col_addr.eq(issue.col_addr),
                     unit.col_acc.eq(issue.col_acc), unit.col_in.eq(issue.col_src[:len(unit.col_in)]),
                     unit.col_wdata.eq(staged)]
        # ---------------------------------------------------------------- end of the tile and its cycle count
        inflight = Signal(range(self.out_depth + 2))  # RDACC columns popped, not yet out
        pop_rdacc = pop & (head.col_cmd == RDACC)
        m.d.sync += inflight.eq(inflight + pop_rdacc - unit.out_valid)
        pre_now = issue.row_cmd == PRE
        ready_seen = Signal()
        with m.If(running & pre_now):
            m.d.sync += ready_seen.eq(0)
        with m.Elif(running & unit.ready):
            m.d.sync += ready_seen.eq(1)
        done = running & draining & (inflight - unit.out_valid == 0) & (ready_seen | (unit.ready & ~pre_now))
        cycles, tiles = Signal(COUNTER_BITS), Signal(COUNTER_BITS)
        with m.If(done):
            m.d.sync += [running.eq(0), gap.eq(tile_gap(p)), cycles.eq(u - 1), tiles.eq(tiles + 1),
                         ready_seen.eq(0)]
        m.d.comb += [self.done.eq(done), self.tile_cycles.eq(cycles), self.tiles_done.eq(tiles),
                     self.busy.eq(running | (queued != 0)), self.error.eq(unit.error), self.run.eq(running)]
        self._output(m, unit, started)
        m.d.comb += staged.eq(self._staged)
        return m

    def _memories(self, m, unit):
        """The input staging memory and the DRAM array (host writes; the unit's GBWR / column reads)."""
        p = self.p
        wr = self.wr.payload
        m.d.comb += self.wr.ready.eq(1)
        stage = m.submodules.staging = memory.Memory(shape=self.W, depth=self.staging_cols, init=[])
        sw, sr = stage.write_port(), stage.read_port()
        array = m.submodules.array = memory.Memory(shape=self.W, depth=self.array_rows << self.col_bits, init=[])
        aw, ar = array.write_port(), array.read_port()
        m.d.comb += [sw.en.eq(self.wr.valid & (wr.buf == 0)), sw.addr.eq(wr.addr), sw.data.eq(wr.data),
                     aw.en.eq(self.wr.valid & (wr.buf == 1)), aw.addr.eq(wr.addr), aw.data.eq(wr.data)]
        self._stage_read, self._staged = sr, sr.data  # addressed by the queue's head (:meth:`_output`)
        # the array answers `latency` cycles after dram_rd: one for the memory read, the rest registers
        row_bits = bits_for(self.array_rows)
        m.d.comb += [ar.en.eq(1), ar.addr.eq(Cat(unit.dram_col, unit.dram_row[:row_bits]))]
        m.d.comb += unit.dram_rdata.eq(delay(m, ar.data, self.latency - 1, "array_d"))

    def _output(self, m, unit, started):
        """RDACC columns into the output buffer (from entry 0 each tile); the host reads it."""
        # GBWR: the staging column is read the cycle before the unit sees the command (the queue's head)
        q_head = data.View(self.layout, m.submodules.cmdq.r_data)
        m.d.comb += [self._stage_read.en.eq(1), self._stage_read.addr.eq(q_head.col_src)]
        out = m.submodules.out = memory.Memory(shape=self.out_bits, depth=self.out_depth, init=[])
        ow, orp = out.write_port(), out.read_port()
        wptr = Signal(range(self.out_depth + 1))
        with m.If(started):
            m.d.sync += wptr.eq(0)
        with m.Elif(unit.out_valid):
            m.d.sync += wptr.eq(wptr + 1)
        m.d.comb += [ow.en.eq(unit.out_valid), ow.addr.eq(wptr), ow.data.eq(unit.out_data)]
        # reads: one request per cycle when the result slot is free
        rd_v = Signal()
        take = self.rd_addr.valid & (~rd_v | self.rd_data.ready)
        m.d.comb += [self.rd_addr.ready.eq(~rd_v | self.rd_data.ready), orp.addr.eq(self.rd_addr.payload),
                     orp.en.eq(take), self.rd_data.payload.eq(orp.data), self.rd_data.valid.eq(rd_v)]
        with m.If(take):
            m.d.sync += rd_v.eq(1)
        with m.Elif(self.rd_data.ready):
            m.d.sync += rd_v.eq(0)
