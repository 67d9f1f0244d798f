"""cocotb side of the AXI wrapper (runs inside the simulator): a template driver's host that
talks to :class:`rtl.lib.axi.AxiHostWrapper` only through cocotbext-axi's bus functional
models — an ``AxiLiteMaster`` on ``s_axil_*`` for the registers, an ``AxiStreamSource`` on
``s_axis_*`` for operand writes and an ``AxiStreamSink`` on ``m_axis_*`` for results.

Tile cycles come from the wrapper's CYCLES register (a queue of the engine's ``tile_cycles``
counts, one per finished tile), so a batch holds at most the queue's depth of tiles. The
methods match :class:`rtl.cosim.direct_host.DirectHost`, and like it the host is template-neutral:
a driver passes its ``wr`` buffer names (``buffers``: name -> the wrapper's WR_BUF code).
"""
from __future__ import annotations

from cocotb.triggers import RisingEdge

from rtl.cosim.progress import tile_done
from rtl.lib.axi import ID_VALUE, REGS, CMD_BASE


class AxiHost:
    """The template's engine behind :class:`rtl.lib.axi.AxiHostWrapper`, through the bus models."""

    def __init__(self, dut, job: dict, buffers: dict[str, int]):
        self.dut = dut
        self.job = job
        self.buffers = buffers
        self.cmd_layout = job["command_layout"]
        self.max_batch = None
        self.done_tiles = 0
        self.total = len(job["tiles"])

    async def start(self, rd_bits: int) -> str:
        import logging

        from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamSink, AxiStreamSource

        dut = self.dut
        for name in ("cocotb.axil", "cocotb.axis"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self.lite = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        for bfm in (self.lite.write_if, self.lite.read_if, self.source, self.sink):
            bfm.log.setLevel(logging.WARNING)
        if self.job.get("axi_backpressure"):  # stall both streams now and then (tests)
            import itertools

            self.source.set_pause_generator(itertools.cycle([1, 0, 0]))
            self.sink.set_pause_generator(itertools.cycle([1, 1, 0]))
        for _ in range(2):
            await RisingEdge(dut.clk)
        ident = await self.reg("ID")
        if ident != ID_VALUE:
            return f"AXI wrapper ID register reads {ident:#x}, expected {ID_VALUE:#x}"
        params = await self.reg("PARAMS")
        self.max_batch = params & 0xFF
        self.cmd_words = (params >> 8) & 0xFF
        self.in_bytes = (params >> 16) & 0xFF
        self.out_bytes = (params >> 24) & 0xFF
        if self.out_bytes * 8 < rd_bits:
            return f"AXI wrapper m_axis is {self.out_bytes} bytes wide, results need {rd_bits} bits"
        return ""

    async def reg(self, name: str) -> int:
        data = await self.lite.read_dword(REGS[name])
        return int(data)

    async def set_reg(self, addr: int, value: int):
        await self.lite.write_dword(addr, value & 0xFFFFFFFF)

    async def write_rows(self, buf: str, base: int, words: list[int]):
        """``words`` into buffer ``buf`` (one of ``buffers``) from address ``base`` on, as one frame."""
        if not words:
            return
        from cocotbext.axi import AxiStreamFrame

        await self.set_reg(REGS["WR_BUF"], self.buffers[buf])
        await self.set_reg(REGS["WR_ADDR"], base)
        data = b"".join(int(w).to_bytes(self.in_bytes, "little") for w in words)
        await self.source.send(AxiStreamFrame(data))
        await self.source.wait()

    def begin_batch(self):
        pass

    async def issue(self, fields: dict[str, int]):
        from rtl.lib.payload import pack_command

        word = pack_command(self.cmd_layout, fields)
        for i in range(self.cmd_words):
            await self.set_reg(CMD_BASE + 4 * i, word >> (32 * i))
        await self.set_reg(REGS["CMD_PUSH"], 1)

    async def wait_idle(self, limit: int) -> bool:
        for _ in range(limit):
            status = await self.reg("STATUS")
            if not status & 0b101:  # not busy, no command pending
                return True
        return False

    async def read_rows(self, base: int, count: int) -> list[int]:
        if not count:
            return []
        await self.set_reg(REGS["RD_ADDR"], base)
        await self.set_reg(REGS["RD_COUNT"], count)
        frame = await self.sink.recv()
        data = bytes(frame.tdata)
        n = self.out_bytes
        if len(data) != count * n:
            raise RuntimeError(f"m_axis frame of {len(data)} bytes, expected {count} entries of {n} bytes")
        return [int.from_bytes(data[i * n:(i + 1) * n], "little") for i in range(count)]

    async def batch_timing(self, count: int) -> list[dict]:
        out = []
        for _ in range(count):
            status = await self.reg("STATUS")
            cycles = await self.reg("CYCLES") if status & 0b1000 else None
            out.append({"cycles": cycles})
            self.done_tiles += 1
        if (await self.reg("STATUS")) & 0b100000:
            raise RuntimeError("the AXI wrapper lost a tile cycle count (CYCLES queue overflow)")
        tile_done(self.done_tiles, self.total)
        return out

    async def finish(self) -> dict:
        status = await self.reg("STATUS")
        return {"error_flag": (status >> 1) & 1}
