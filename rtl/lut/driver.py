"""cocotb driver of the LUT engine (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` replays ``job["tiles"]`` through the host signature
(:mod:`rtl.lut.host`), directly on its streams or, with ``job["host"] ==
"axi"``, through the AXI wrapper's bus functional models. Tile i reads operand
bank ``i % 2``: its operand entries (activations, weight planes, precomputed
tables, scales; :meth:`rtl.lut.rtl_design.LutDesign.encode`) are written into
that bank while tile i - 1 runs (tile 0's before it), its initial partial sums
into the output buffer once tile i - 1's results are read; then the command is
issued and, when the engine is idle, the output entries are read back.

A tile's cycles are the engine's hardware counter ``tile_cycles``; on the
direct host a monitor also measures them on the ports (``tile_start`` ..
``done``), and the check requires both to agree.
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge

from rtl.cosim.progress import tile_done
from rtl.lib.payload import pack_command


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


class _Monitor:
    """Per finished tile: its start / done cycles on the ports and the counter the cycle after done."""

    def __init__(self, dut):
        self.dut = dut
        self.cycle = 0
        self.starts: list[int] = []
        self.dones: list[int] = []
        self.hw_cycles: list[int] = []

    async def run(self):
        pending = False
        while True:
            await FallingEdge(self.dut.clk)
            if pending:
                self.hw_cycles.append(_u(self.dut.tile_cycles))
                pending = False
            if _u(self.dut.tile_start):
                self.starts.append(self.cycle)
            if _u(self.dut.done):
                self.dones.append(self.cycle)
                pending = True
            self.cycle += 1


async def _beat(dut, name: str, payload: int):
    """One beat on the ``name`` stream (waits for its ``ready``)."""
    getattr(dut, f"{name}__payload").value = payload
    getattr(dut, f"{name}__valid").value = 1
    while True:
        await FallingEdge(dut.clk)
        if _u(getattr(dut, f"{name}__ready")):
            break
    await RisingEdge(dut.clk)
    getattr(dut, f"{name}__valid").value = 0


class DirectHost:
    """Drives the host signature's streams."""

    def __init__(self, dut, job: dict):
        self.dut, self.job = dut, job
        self.mon = _Monitor(dut)

    async def start(self) -> str:
        import cocotb

        dut = self.dut
        for name in ("cmd__valid", "wr__valid", "rd_addr__valid"):
            getattr(dut, name).value = 0
        dut.rd_data__ready.value = 1
        await RisingEdge(dut.clk)
        cocotb.start_soon(self.mon.run())
        return ""

    async def write(self, entries: list, bank: int, addr_bits: int):
        for buf, addr, word in entries:
            fields = {"buf": buf, "addr": addr | (bank << addr_bits), "data": word}
            await _beat(self.dut, "wr", pack_command(self.job["write_layout"], fields))

    async def issue(self, fields: dict):
        await _beat(self.dut, "cmd", pack_command(self.job["command_layout"], fields))

    async def wait_idle(self, limit: int) -> bool:
        for _ in range(limit):
            await FallingEdge(self.dut.clk)
            if not _u(self.dut.busy):
                await FallingEdge(self.dut.clk)  # the monitor records the counter the cycle after done
                return True
        return False

    async def read(self, count: int) -> list[int]:
        dut, out = self.dut, []
        for a in range(count):
            await _beat(dut, "rd_addr", a)
            while True:
                await FallingEdge(dut.clk)
                if _u(dut.rd_data__valid):
                    out.append(_u(dut.rd_data__payload))
                    await RisingEdge(dut.clk)  # rd_data__ready is held high: taken at this edge
                    break
        return out

    async def timing(self, i: int) -> dict:
        mon = self.mon
        start = mon.starts[i] if i < len(mon.starts) else None
        done = mon.dones[i] if i < len(mon.dones) else None
        return {"cycles": mon.hw_cycles[i] if i < len(mon.hw_cycles) else None,
                "port_cycles": (done - start + 1) if start is not None and done is not None else None}

    async def finish(self) -> dict:
        return {"error_flag": _u(self.dut.error)}


def _axi_host(dut, job):
    """The AXI wrapper's host (:class:`rtl.lib.axi_host.AxiHost`) with the LUT's buffer codes."""
    from rtl.lib.axi import REGS
    from rtl.lib.axi_host import AxiHost

    class LutAxiHost(AxiHost):
        async def start(self) -> str:
            return await super().start(job["rd_bits"])

        async def write(self, entries: list, bank: int, addr_bits: int):
            from cocotbext.axi import AxiStreamFrame

            runs: list[list] = []  # consecutive addresses of one buffer go as one frame
            for buf, addr, word in entries:
                if runs and runs[-1][0] == buf and runs[-1][1] + len(runs[-1][2]) == addr:
                    runs[-1][2].append(word)
                else:
                    runs.append([buf, addr, [word]])
            for buf, base, words in runs:
                await self.set_reg(REGS["WR_BUF"], buf)
                await self.set_reg(REGS["WR_ADDR"], base | (bank << addr_bits))
                data = b"".join(int(w).to_bytes(self.in_bytes, "little") for w in words)
                await self.source.send(AxiStreamFrame(data))
                await self.source.wait()

        async def read(self, count: int) -> list[int]:
            return await self.read_rows(0, count)

        async def timing(self, i: int) -> dict:
            t = (await self.batch_timing(1))[0]
            return {"cycles": t["cycles"], "port_cycles": None}  # the counter alone (no port view)

    return LutAxiHost(dut, job)


async def run_job(dut, job: dict) -> dict:
    host = _axi_host(dut, job) if job.get("host") == "axi" else DirectHost(dut, job)
    problem = await host.start()
    if problem:
        return {"error": problem, "tiles": []}
    tiles, out_buf, ab = job["tiles"], job["out_buf"], job["addr_bits"]
    results = []

    def operands(tile):
        return [w for w in tile["writes"] if w[0] != out_buf]

    if tiles:
        await host.write(operands(tiles[0]), tiles[0]["cmd"]["bank"], ab)
    for i, tile in enumerate(tiles):
        await host.write([w for w in tile["writes"] if w[0] == out_buf], 0, ab)
        await host.issue(tile["cmd"])
        if i + 1 < len(tiles):  # the next tile's operands, into the other bank while this one runs
            await host.write(operands(tiles[i + 1]), tiles[i + 1]["cmd"]["bank"], ab)
        if not await host.wait_idle(100000):
            return {"error": f"design still busy after tile {i}'s command", "tiles": results}
        timing = await host.timing(i)
        words = await host.read(tile["out_entries"])
        results.append({"out": words, **timing})
        if job.get("host") != "axi":
            tile_done(len(results), len(tiles))
    return {"tiles": results, **(await host.finish())}
