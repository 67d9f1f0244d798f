"""cocotb driver of the SIMD PE array through the host interface (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` runs ``job["tiles"]`` one after the other: it writes a
tile's operand, scale and (``accumulate``) output buffer entries on the ``wr``
stream, issues its command on ``cmd``, waits until the array is idle, takes the
tile's cycles from the hardware counter ``tile_cycles`` and reads the output
entries back on ``rd_addr`` / ``rd_data``. Directly on the host ports
(:class:`DirectHost`, which also times ``tile_start`` .. ``done`` on the ports to
check the counter) or, with ``job["host"] == "axi"``, through the AXI wrapper's
bus functional models (:class:`rtl.lib.axi_host.AxiHost`). The layout of the
entries is made outside the simulator (:meth:`rtl.simd.rtl_design.SimdDesign.make_job`).
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge

from rtl.cosim.progress import tile_done
from rtl.lib.payload import pack_command

#: buffer codes of the wr stream, under the names rtl.lib.axi_host.AxiHost knows them by
BUF_NAMES = {"ops": "left", "scales": "top", "psum": "out"}
BUF_CODES = {"left": 0, "top": 1, "out": 2}


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


class DirectHost:
    """Drives the host ports; a monitor records ``tile_start`` / ``done`` cycles and the counter after ``done``."""

    def __init__(self, dut, job: dict):
        self.dut = dut
        self.cmd_layout = job["command_layout"]
        self.wr_layout = [tuple(f) for f in job["write_layout"]]
        self.cycle = 0
        self.starts: list[int] = []
        self.dones: list[int] = []
        self.counts: list[int] = []

    async def _monitor(self):
        dut, pending = self.dut, False
        while True:
            await FallingEdge(dut.clk)
            if pending:
                self.counts.append(_u(dut.tile_cycles))
                pending = False
            if _u(dut.tile_start):
                self.starts.append(self.cycle)
            if _u(dut.done):
                self.dones.append(self.cycle)
                pending = True
            self.cycle += 1

    async def start(self, rd_bits: int) -> str:
        import cocotb

        from rtl.lib.host import HOST_PORTS

        dut = self.dut
        missing = [p for p in HOST_PORTS if not hasattr(dut, p)]
        if missing:
            return f"the top module lacks host port(s) {', '.join(missing)} (docs/rtl_host_interface.md)"
        if len(dut.rd_data__payload) != rd_bits:
            return f"rd_data__payload is {len(dut.rd_data__payload)} bits wide, this arch needs {rd_bits}"
        for name in ("cmd__valid", "wr__valid", "rd_addr__valid"):
            getattr(dut, name).value = 0
        dut.rd_data__ready.value = 1
        await RisingEdge(dut.clk)
        cocotb.start_soon(self._monitor())
        return ""

    async def _beat(self, stream: str, payload: int):
        dut = self.dut
        getattr(dut, f"{stream}__payload").value = payload
        getattr(dut, f"{stream}__valid").value = 1
        while True:
            await FallingEdge(dut.clk)
            if _u(getattr(dut, f"{stream}__ready")):
                break
        await RisingEdge(dut.clk)
        getattr(dut, f"{stream}__valid").value = 0

    async def write_rows(self, buf: str, base: int, words: list[int]):
        for a, word in enumerate(words):
            await self._beat("wr", pack_command(self.wr_layout, {"buf": BUF_CODES[buf], "addr": base + a, "data": word}))

    async def issue(self, fields: dict[str, int]):
        await self._beat("cmd", pack_command(self.cmd_layout, fields))

    async def wait_idle(self, limit: int) -> bool:
        for _ in range(limit):
            await FallingEdge(self.dut.clk)
            if not _u(self.dut.busy):
                for _ in range(2):  # the monitor records the counter the cycle after done
                    await FallingEdge(self.dut.clk)
                return True
        return False

    async def tile_timing(self) -> dict:
        k = len(self.dones) - 1
        if k < 0 or k >= len(self.counts) or k >= len(self.starts):
            return {"cycles": None, "port_cycles": None}
        return {"cycles": self.counts[k], "port_cycles": self.dones[k] - self.starts[k] + 1}

    async def read_rows(self, base: int, count: int, limit: int = 1000) -> list[int]:
        dut, words = self.dut, []
        for a in range(count):
            await self._beat("rd_addr", base + a)
            for _ in range(limit):
                await FallingEdge(dut.clk)
                if _u(dut.rd_data__valid):
                    words.append(_u(dut.rd_data__payload))
                    await RisingEdge(dut.clk)  # rd_data__ready is high: taken at this edge
                    break
            else:
                raise TimeoutError(f"no rd_data within {limit} cycles of reading entry {base + a}")
        return words

    async def finish(self) -> dict:
        return {"error_flag": _u(self.dut.error)}


class _Axi:
    """:class:`rtl.lib.axi_host.AxiHost` with the per-tile timing call of :class:`DirectHost`."""

    def __init__(self, dut, job):
        from rtl.lib.axi_host import AxiHost

        self.host = AxiHost(dut, job)

    def __getattr__(self, name):
        return getattr(self.host, name)

    async def wait_idle(self, limit: int) -> bool:
        return await self.host.wait_idle(limit)

    async def tile_timing(self) -> dict:
        return {"cycles": (await self.host.batch_timing(1))[0]["cycles"], "port_cycles": None}


def _rows(entries: list) -> tuple[int, list[int]]:
    """(first address, words) of buffer entries at consecutive addresses."""
    if not entries:
        return 0, []
    base = entries[0][0]
    if [a for a, _w in entries] != list(range(base, base + len(entries))):
        raise ValueError("buffer entries are not at consecutive addresses")
    return base, [w for _a, w in entries]


async def run_job(dut, job: dict) -> dict:
    host = _Axi(dut, job) if job.get("host") == "axi" else DirectHost(dut, job)
    cfg = job["config"]
    problem = await host.start(cfg["pes"] * cfg["out_bits"])
    if problem:
        return {"tiles": [], "error": problem}
    results = []
    for tile in job["tiles"]:
        for key, name in BUF_NAMES.items():
            base, words = _rows(tile[key])
            await host.write_rows(name, base, words)
        await host.issue({"mode": tile["mode"], "m": tile["m"], "n": tile["n"], "k": tile["k"], "g": tile["g"],
                          "accumulate": int(tile["accumulate"])})
        if not await host.wait_idle(tile["budget"]):
            return {"tiles": results, "error": f"tile {len(results)}: still busy after {tile['budget']} cycles",
                    **(await host.finish())}
        timing = await host.tile_timing()
        words = await host.read_rows(0, tile["rounds"])
        results.append({**timing, "hw_cycles": timing["cycles"], "words": words})
        tile_done(len(results), len(job["tiles"]))
    return {"tiles": results, **(await host.finish())}
