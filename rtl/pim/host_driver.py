"""cocotb driver of the PIM host engine (:mod:`rtl.pim.host_engine`, runs inside the simulator).

Per tile: write the input staging memory (``wr`` buffer 0) and the DRAM array (buffer 1), queue
the tile's timed command entries and its ``end`` entry, wait until the engine is idle, read the
RDACC columns out of the output buffer, and take the tile's cycles from the hardware counter
(``tile_cycles`` after ``done``). Directly on the host ports, or through the AXI wrapper's bus
functional models (``job["host"] == "axi"``: :class:`rtl.lib.axi_host.AxiHost`, whose buffer
names "left" / "top" are buffers 0 / 1).
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge

from rtl.cosim.progress import tile_done
from rtl.lib.payload import pack_command

BUF = {"left": 0, "top": 1}


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


class _Monitor:
    """Cycles of ``run`` rising, ``done`` and the ``tile_cycles`` reading after each done."""

    def __init__(self, dut):
        self.dut, self.cycle = dut, 0
        self.runs: list[int] = []
        self.dones: list[int] = []
        self.hw: list[int] = []

    async def run(self):
        dut, was_running, pending = self.dut, 0, False
        while True:
            await FallingEdge(dut.clk)
            if pending:
                self.hw.append(_u(dut.tile_cycles))
                pending = False
            running = _u(dut.run)
            if running and not was_running:
                self.runs.append(self.cycle)
            was_running = running
            if _u(dut.done):
                self.dones.append(self.cycle)
                pending = True
            self.cycle += 1


class DirectHost:
    """Drives the host ports directly (one beat per handshake)."""

    def __init__(self, dut, job: dict):
        self.dut, self.job = dut, job
        self.cmd_layout = job["command_layout"]
        self.wr_layout = job["write_layout"]
        self.mon = _Monitor(dut)
        self.first = 0

    async def start(self, rd_bits: int) -> str:
        import cocotb

        dut = self.dut
        for name in ("cmd__valid", "wr__valid", "rd_addr__valid"):
            getattr(dut, name).value = 0
        dut.rd_data__ready.value = 1
        await RisingEdge(dut.clk)
        cocotb.start_soon(self.mon.run())
        return ""

    async def _beat(self, name: str, payload: int):
        dut = self.dut
        getattr(dut, f"{name}__payload").value = payload
        getattr(dut, f"{name}__valid").value = 1
        while True:
            await FallingEdge(dut.clk)
            if _u(getattr(dut, f"{name}__ready")):
                break
        await RisingEdge(dut.clk)
        getattr(dut, f"{name}__valid").value = 0

    async def write_rows(self, buf: str, base: int, words: list[int]):
        for a, word in enumerate(words):
            await self._beat("wr", pack_command(self.wr_layout, {"buf": BUF[buf], "addr": base + a, "data": word}))

    def begin_batch(self):
        self.first = len(self.mon.dones)

    async def issue(self, fields: dict[str, int]):
        await self._beat("cmd", pack_command(self.cmd_layout, fields))

    async def wait_idle(self, limit: int) -> bool:
        for _ in range(limit):
            await FallingEdge(self.dut.clk)
            if not _u(self.dut.busy):
                await FallingEdge(self.dut.clk)  # the monitor records tile_cycles
                return True
        return False

    async def read_rows(self, base: int, count: int) -> list[int]:
        out = []
        for a in range(count):
            await self._beat("rd_addr", base + a)
            while True:
                await FallingEdge(self.dut.clk)
                if _u(self.dut.rd_data__valid):
                    out.append(_u(self.dut.rd_data__payload))
                    await RisingEdge(self.dut.clk)
                    break
        return out

    async def batch_timing(self, count: int) -> list[dict]:
        mon, out = self.mon, []
        for k in range(self.first, self.first + count):
            run = mon.runs[k] if k < len(mon.runs) else None
            done = mon.dones[k] if k < len(mon.dones) else None
            out.append({"cycles": mon.hw[k] if k < len(mon.hw) else None,
                        # run rises one cycle before the tile's cycle 0
                        "port_cycles": done - run - 1 if run is not None and done is not None else None})
        return out

    async def finish(self) -> dict:
        return {"error_flag": _u(self.dut.error)}


async def run_job(dut, job: dict) -> dict:
    if job.get("host") == "axi":
        from rtl.lib.axi_host import AxiHost

        host = AxiHost(dut, job)
    else:
        host = DirectHost(dut, job)
    problem = await host.start(job["rd_bits"])
    if problem:
        return {"error": problem, "streams": []}
    empty = {name: 0 for name, _o, _w in job["command_layout"]}
    results = []
    for n, tile in enumerate(job["tiles"]):
        await host.write_rows("left", 0, tile["staging"])
        await host.write_rows("top", 0, tile["array"])
        host.begin_batch()
        for entry in tile["entries"]:
            await host.issue({**empty, **entry})
        await host.issue({**empty, "end": 1})
        if not await host.wait_idle(tile["limit"]):
            return {"error": f"tile {n}: the engine did not finish within {tile['limit']} cycles",
                    "streams": results}
        words = await host.read_rows(0, tile["rdaccs"])
        (timing,) = await host.batch_timing(1)
        results.append({"outputs": [[None, w] for w in words], "hw_cycles": timing["cycles"],
                        "port_cycles": timing.get("port_cycles"),
                        "error": _u(dut.error) if hasattr(dut, "error") else 0,
                        "error_before": 0, "trace": []})
        tile_done(n + 1, len(job["tiles"]))
    fin = await host.finish()
    if results and fin.get("error_flag"):
        results[-1]["error"] = 1
    return {"streams": results}
