"""AXI wrapper of a tile engine: AXI4-Lite control/status registers and an AXI4-Stream data path
around any component that implements the host signature (:mod:`rtl.lib.host`).

Ports (besides ``clk`` and ``rst``; AMBA names, one ``s_axil_`` / ``s_axis_`` / ``m_axis_``
prefix per interface, as cocotbext-axi's ``from_prefix`` and most IP integrators expect)::

    s_axil_*  AXI4-Lite slave, 32-bit data, 12-bit byte addresses (registers below)
    s_axis_*  AXI4-Stream slave: operand writes, one beat = one buffer entry (tdata: the entry,
              lane 0 lowest, padded to whole bytes); written to buffer WR_BUF at WR_ADDR,
              WR_ADDR advancing by one per beat; tlast is accepted and ignored
    m_axis_*  AXI4-Stream master: results, one beat per output-buffer entry read, tlast on the
              last entry of a read burst

Registers (byte offsets; reads of unlisted offsets return 0, writes to them are ignored)::

    0x000 ID          r   0x41524831 ("ARH1": archsim host interface, version 1)
    0x004 STATUS      r   bit 0 busy, 1 error (sticky), 2 a command is pending (CMD_PUSH not yet
                          taken), 3 CYCLES holds a count, 4 a read burst is running,
                          5 a tile count was lost (the CYCLES queue was full)
    0x008 TILES_DONE  r   tiles finished since reset
    0x00C TILE_CYCLES r   the hardware cycle count of the last finished tile
    0x010 CYCLES      r   pops the oldest unread tile count (queue of CYCLES_DEPTH); 0 when empty
    0x014 WR_BUF      rw  buffer selected for s_axis beats
    0x018 WR_ADDR     rw  buffer address of the next s_axis beat
    0x01C RD_ADDR     rw  first output-buffer address of the next read burst
    0x020 RD_COUNT    w   starts a burst of RD_COUNT entries from RD_ADDR out of m_axis
    0x024 CMD_PUSH    w   pushes CMD0..CMDn as one command into the command stream
    0x028 PARAMS      r   bits 7:0 CYCLES_DEPTH, 15:8 command words, 23:16 s_axis bytes,
                          31:24 m_axis bytes
    0x100 CMD0..      rw  the command payload, 32 bits per register, least significant first

A register write is answered (``bvalid``) in the cycle after it is taken; no write is taken
while a pushed command waits for the engine, so a CMD_PUSH never overwrites a pending command.
Responses are always OKAY.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.host import host_sizes

ID_VALUE = 0x41524831
CYCLES_DEPTH = 16
LITE_ADDR_BITS = 12
CMD_BASE = 0x100
REGS = {"ID": 0x000, "STATUS": 0x004, "TILES_DONE": 0x008, "TILE_CYCLES": 0x00C, "CYCLES": 0x010,
        "WR_BUF": 0x014, "WR_ADDR": 0x018, "RD_ADDR": 0x01C, "RD_COUNT": 0x020, "CMD_PUSH": 0x024,
        "PARAMS": 0x028}


def _bytes(bits: int) -> int:
    return (bits + 7) // 8


def axi_signature(sizes: dict[str, int]) -> wiring.Signature:
    """The wrapper's ports for an engine with host payload ``sizes`` (:func:`rtl.lib.host.host_sizes`)."""
    a, in_bytes, out_bytes = LITE_ADDR_BITS, _bytes(sizes["wr_data_bits"]), _bytes(sizes["rd_data_bits"])
    return wiring.Signature({
        "s_axil_awaddr": In(a), "s_axil_awvalid": In(1), "s_axil_awready": Out(1),
        "s_axil_wdata": In(32), "s_axil_wstrb": In(4), "s_axil_wvalid": In(1), "s_axil_wready": Out(1),
        "s_axil_bresp": Out(2), "s_axil_bvalid": Out(1), "s_axil_bready": In(1),
        "s_axil_araddr": In(a), "s_axil_arvalid": In(1), "s_axil_arready": Out(1),
        "s_axil_rdata": Out(32), "s_axil_rresp": Out(2), "s_axil_rvalid": Out(1), "s_axil_rready": In(1),
        "s_axis_tdata": In(8 * in_bytes), "s_axis_tvalid": In(1), "s_axis_tready": Out(1), "s_axis_tlast": In(1),
        "m_axis_tdata": Out(8 * out_bytes), "m_axis_tvalid": Out(1), "m_axis_tready": In(1),
        "m_axis_tlast": Out(1),
    })


class AxiHostWrapper(wiring.Component):
    """AXI4-Lite registers + AXI4-Stream data path around ``engine`` (see the module docstring)."""

    def __init__(self, engine: wiring.Component):
        self.engine = engine
        self.sizes = host_sizes(engine.signature)  # refuses an engine without the host signature
        self.cmd_words = (self.sizes["cmd_bits"] + 31) // 32
        super().__init__(axi_signature(self.sizes))

    def params_word(self) -> int:
        s = self.sizes
        return CYCLES_DEPTH | (self.cmd_words << 8) | (_bytes(s["wr_data_bits"]) << 16) | (
            _bytes(s["rd_data_bits"]) << 24)

    def elaborate(self, platform):
        m = Module()
        s = self.sizes
        m.submodules.engine = eng = self.engine
        m.submodules.cycles_q = q = fifo.SyncFIFOBuffered(width=32, depth=CYCLES_DEPTH)

        wr_buf, wr_addr = Signal(s["buf_bits"]), Signal(s["addr_bits"])
        rd_addr = Signal(s["rd_addr_bits"])
        rd_left = Signal(32)  # requests still to issue
        out_left = Signal(32)  # results still to send
        cmd = [Signal(32, name=f"cmd{i}") for i in range(self.cmd_words)]
        cmd_pending = Signal()
        lost = Signal()

        # ---- AXI4-Lite writes: one at a time, address and data together ----
        bvalid = Signal()
        take_w = Signal()
        m.d.comb += [
            take_w.eq(self.s_axil_awvalid & self.s_axil_wvalid & ~bvalid & ~cmd_pending),
            self.s_axil_awready.eq(take_w), self.s_axil_wready.eq(take_w),
            self.s_axil_bvalid.eq(bvalid), self.s_axil_bresp.eq(0),
        ]
        with m.If(take_w):
            m.d.sync += bvalid.eq(1)
        with m.Elif(self.s_axil_bready):
            m.d.sync += bvalid.eq(0)
        waddr, wdata = self.s_axil_awaddr, self.s_axil_wdata

        # ---- operand writes from s_axis ----
        m.d.comb += [
            eng.wr.valid.eq(self.s_axis_tvalid),
            eng.wr.payload.buf.eq(wr_buf), eng.wr.payload.addr.eq(wr_addr),
            eng.wr.payload.data.eq(self.s_axis_tdata[:s["wr_data_bits"]]),
            self.s_axis_tready.eq(eng.wr.ready),
        ]
        wr_beat = self.s_axis_tvalid & eng.wr.ready

        # ---- result bursts to m_axis ----
        m.d.comb += [
            eng.rd_addr.valid.eq(rd_left != 0), eng.rd_addr.payload.eq(rd_addr),
            self.m_axis_tvalid.eq(eng.rd_data.valid), self.m_axis_tdata.eq(eng.rd_data.payload),
            self.m_axis_tlast.eq(out_left == 1), eng.rd_data.ready.eq(self.m_axis_tready),
        ]
        req = eng.rd_addr.valid & eng.rd_addr.ready
        beat_out = eng.rd_data.valid & self.m_axis_tready

        # ---- commands ----
        m.d.comb += [eng.cmd.valid.eq(cmd_pending), eng.cmd.payload.eq(Cat(*cmd)[:s["cmd_bits"]])]
        with m.If(eng.cmd.valid & eng.cmd.ready):
            m.d.sync += cmd_pending.eq(0)

        # register writes (a write to WR_ADDR / RD_ADDR wins over the beat that advances it)
        with m.If(wr_beat):
            m.d.sync += wr_addr.eq(wr_addr + 1)
        with m.If(req):
            m.d.sync += [rd_addr.eq(rd_addr + 1), rd_left.eq(rd_left - 1)]
        with m.If(beat_out):
            m.d.sync += out_left.eq(out_left - 1)
        with m.If(take_w):
            with m.Switch(waddr):
                with m.Case(REGS["WR_BUF"]):
                    m.d.sync += wr_buf.eq(wdata)
                with m.Case(REGS["WR_ADDR"]):
                    m.d.sync += wr_addr.eq(wdata)
                with m.Case(REGS["RD_ADDR"]):
                    m.d.sync += rd_addr.eq(wdata)
                with m.Case(REGS["RD_COUNT"]):
                    m.d.sync += [rd_left.eq(wdata), out_left.eq(wdata)]
                with m.Case(REGS["CMD_PUSH"]):
                    m.d.sync += cmd_pending.eq(1)
                for i, word in enumerate(cmd):
                    with m.Case(CMD_BASE + 4 * i):
                        m.d.sync += word.eq(wdata)

        # ---- tile cycle counts: the engine's counter, taken the cycle after each done ----
        done_d = Signal()
        m.d.sync += done_d.eq(eng.done)
        m.d.comb += [q.w_en.eq(done_d), q.w_data.eq(eng.tile_cycles)]
        with m.If(done_d & ~q.w_rdy):
            m.d.sync += lost.eq(1)

        # ---- AXI4-Lite reads ----
        rvalid = Signal()
        rdata = Signal(32)
        take_r = self.s_axil_arvalid & ~rvalid
        m.d.comb += [self.s_axil_arready.eq(~rvalid), self.s_axil_rvalid.eq(rvalid), self.s_axil_rdata.eq(rdata),
                     self.s_axil_rresp.eq(0)]
        with m.If(take_r):
            m.d.sync += rvalid.eq(1)
        with m.Elif(self.s_axil_rready):
            m.d.sync += rvalid.eq(0)
        status = Cat(eng.busy, eng.error, cmd_pending, q.r_rdy, (rd_left != 0) | (out_left != 0), lost)
        raddr = self.s_axil_araddr
        with m.If(take_r):
            with m.Switch(raddr):
                values = {"ID": Const(ID_VALUE, 32), "STATUS": status, "TILES_DONE": eng.tiles_done,
                          "TILE_CYCLES": eng.tile_cycles, "CYCLES": q.r_data, "WR_BUF": wr_buf,
                          "WR_ADDR": wr_addr, "RD_ADDR": rd_addr, "PARAMS": Const(self.params_word(), 32)}
                for name, value in values.items():
                    with m.Case(REGS[name]):
                        m.d.sync += rdata.eq(value)
                for i, word in enumerate(cmd):
                    with m.Case(CMD_BASE + 4 * i):
                        m.d.sync += rdata.eq(word)
                with m.Default():
                    m.d.sync += rdata.eq(0)
        m.d.comb += q.r_en.eq(take_r & (raddr == REGS["CYCLES"]))
        with m.If(take_r & (raddr == REGS["CYCLES"]) & ~q.r_rdy):
            m.d.sync += rdata.eq(0)
        return m
