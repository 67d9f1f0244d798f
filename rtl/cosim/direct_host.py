"""The port-level host of the shared host signature (:mod:`rtl.lib.host`) for cocotb drivers:
:class:`DirectHost` drives ``cmd`` / ``wr`` / ``rd_addr`` / ``rd_data`` directly and times each tile
by ``done`` and the hardware's ``tile_cycles`` counter (and by ``tile_start`` where the design has
that debug port). Its methods match :class:`rtl.lib.axi_host.AxiHost`, so a template driver runs
the same steps on the bare engine or behind the AXI wrapper.

The one copy: the systolic and attention drivers use it. Buffer names are the systolic ones
("left", "top", "out" for the ``wr`` stream's buf codes 0, 1, 2).
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge
from cocotb.utils import get_sim_time
from rtl.cosim.progress import tile_done
from rtl.lib.payload import pack_command

BUF = {"left": 0, "top": 1, "out": 2}


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


class UnresolvedRead(ValueError):
    """A word read from the design holds X or Z bits (an uninitialised or undriven value): the
    co-simulation stops with this rather than read it as a number."""


def resolved(sig, what: str) -> int:
    """``sig``'s value as an unsigned integer; :class:`UnresolvedRead` naming ``what`` if any bit is X/Z."""
    v = sig.value
    if getattr(v, "is_resolvable", True):
        return _u(sig)
    bad = sum(ch not in "01" for ch in str(v))
    raise UnresolvedRead(f"{what} holds {bad} X/Z bit(s) of {len(v)} (an uninitialised or undriven value)")


class _Monitor:
    def __init__(self, dut, tiles: int = 0):
        self.dut = dut
        self.has_start = hasattr(dut, "tile_start")
        self.tiles = tiles
        self.cycle = 0
        self.starts: list[int] = []
        self.dones: list[int] = []
        self.hw_cycles: list[int] = []
        self.done_ns: list[float] = []

    async def run(self):
        dut = self.dut
        pending_hw = False
        while True:
            await FallingEdge(dut.clk)
            if pending_hw:
                self.hw_cycles.append(_u(dut.tile_cycles))
                pending_hw = False
            if self.has_start and _u(dut.tile_start):
                self.starts.append(self.cycle)
            if _u(dut.done):
                self.dones.append(self.cycle)
                self.done_ns.append(get_sim_time(unit="ns"))
                tile_done(len(self.dones), self.tiles)  # progress per tile, as the array finishes it
                pending_hw = True
            self.cycle += 1


async def _write(dut, layout: list, buf: str, addr: int, word: int):
    """One beat on the ``wr`` stream (waits for ``wr__ready``)."""
    dut.wr__payload.value = pack_command(layout, {"buf": BUF[buf], "addr": addr, "data": word})
    dut.wr__valid.value = 1
    while True:
        await FallingEdge(dut.clk)
        if _u(dut.wr__ready):
            break
    await RisingEdge(dut.clk)
    dut.wr__valid.value = 0


async def _read(dut, addr: int, limit: int = 1000) -> int:
    """One request on ``rd_addr`` and its answer on ``rd_data``."""
    dut.rd_addr__payload.value = addr
    dut.rd_addr__valid.value = 1
    for _ in range(limit):
        await FallingEdge(dut.clk)
        if _u(dut.rd_addr__ready):
            break
    await RisingEdge(dut.clk)
    dut.rd_addr__valid.value = 0
    for _ in range(limit):
        await FallingEdge(dut.clk)
        if _u(dut.rd_data__valid):
            word = resolved(dut.rd_data__payload, f"rd_data of result address {addr}")
            await RisingEdge(dut.clk)  # rd_data__ready is held high: the word is taken at this edge
            return word
    raise TimeoutError(f"no rd_data within {limit} cycles of reading address {addr}")


async def _issue(dut, payload: int):
    dut.cmd__payload.value = payload
    dut.cmd__valid.value = 1
    while True:
        await FallingEdge(dut.clk)
        if _u(dut.cmd__ready):
            break
    await RisingEdge(dut.clk)
    dut.cmd__valid.value = 0


async def _wait_idle(dut, limit: int) -> bool:
    for _ in range(limit):
        await FallingEdge(dut.clk)
        if not _u(dut.busy):
            return True
    return False


def port_problem(dut, cmd_layout: list, wr_layout: list, rd_bits: int) -> str:
    """Why the top module cannot be driven (a missing host port or a payload of the wrong width), or ""."""
    from rtl.lib.host import HOST_PORTS

    missing = [p for p in HOST_PORTS if not hasattr(dut, p)]
    if missing:
        return (f"the top module lacks host port(s) {', '.join(missing)} "
                "(docs/rtl_host_interface.md lists the ports)")
    want = {"cmd__payload": sum(f[2] for f in cmd_layout), "wr__payload": sum(f[2] for f in wr_layout),
            "rd_data__payload": rd_bits}
    for name, bits in want.items():
        got = len(getattr(dut, name))
        if got != bits:
            return f"port {name} is {got} bits wide, this arch needs {bits} (docs/rtl_host_interface.md)"
    return ""


class DirectHost:
    """Drives the host signature's ports directly; tile cycles from ``done`` and ``tile_cycles``."""

    max_batch = None  # no limit beyond the buffers

    def __init__(self, dut, job: dict):
        self.dut = dut
        self.job = job
        self.cmd_layout = job["command_layout"]
        self.wr_layout = [tuple(f) for f in job["write_layout"]]
        self.mon = _Monitor(dut, len(job["tiles"]))
        self.first_done = 0

    async def start(self, rd_bits: int) -> str:
        import cocotb

        dut = self.dut
        problem = port_problem(dut, self.cmd_layout, self.wr_layout, rd_bits)
        if problem:
            return problem
        for name in ("cmd__valid", "wr__valid", "rd_addr__valid"):
            getattr(dut, name).value = 0
        dut.rd_data__ready.value = 1
        await RisingEdge(dut.clk)
        cocotb.start_soon(self.mon.run())
        return ""

    async def write_rows(self, buf: str, base: int, words: list[int]):
        for a, word in enumerate(words):
            await _write(self.dut, self.wr_layout, buf, base + a, word)

    async def issue(self, fields: dict[str, int]):
        await _issue(self.dut, pack_command(self.cmd_layout, fields))

    def begin_batch(self):
        self.first_done = len(self.mon.dones)

    async def wait_idle(self, limit: int) -> bool:
        ok = await _wait_idle(self.dut, limit)
        await FallingEdge(self.dut.clk)  # let the monitor record the last tile_cycles
        return ok

    async def read_rows(self, base: int, count: int) -> list[int]:
        return [await _read(self.dut, base + a) for a in range(count)]

    async def batch_timing(self, count: int) -> list[dict]:
        mon, out = self.mon, []
        for idx in range(count):
            k = self.first_done + idx
            start = mon.starts[k] if k < len(mon.starts) else None
            done = mon.dones[k] if k < len(mon.dones) else None
            out.append({
                "start_cycle": start,
                "done_cycle": done,
                "cycles": mon.hw_cycles[k] if k < len(mon.hw_cycles) else None,  # the hardware's counter
                "port_cycles": (done - start + 1) if start is not None and done is not None else None,
                "gap_before": (start - mon.dones[k - 1] - 1) if k > 0 and start is not None else None,
                "done_ns": mon.done_ns[k] if k < len(mon.done_ns) else None,
            })
        return out

    async def finish(self) -> dict:
        return {"error_flag": _u(self.dut.error), "cycles_total": self.mon.cycle}
