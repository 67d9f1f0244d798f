"""The port-level host of the shared host signature (:mod:`rtl.lib.host`) for cocotb drivers:
:class:`DirectHost` drives ``cmd`` / ``wr`` / ``rd_addr`` / ``rd_data`` directly and times each tile
by ``done`` and the hardware's ``tile_cycles`` counter (and on the ports from a start signal, by
default the ``tile_start`` debug port, where the design has it). Its methods match
:class:`rtl.lib.axi_host.AxiHost`, so a template driver runs the same steps on the bare engine or
behind the AXI wrapper.

The one copy: every template driver on the host signature uses it (systolic, SIMD, LUT, PIM host
engine, attention). A driver names its ``wr`` buffers (``buffers``: name -> the ``buf`` code) and,
where its tile begins differently on the ports, how (:class:`TileStart`).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import count

from cocotb.triggers import FallingEdge, RisingEdge
from cocotb.utils import get_sim_time
from rtl.cosim.progress import tile_done
from rtl.lib.payload import pack_command


@dataclass(frozen=True)
class TileStart:
    """Where a tile begins on the ports, for ``port_cycles`` (the hardware count measured on the ports).

    ``port``: the start signal; ``rising``: record the cycle it rises (a level held through the tile)
    rather than every cycle it is high (a one-cycle pulse); ``lead_cycles``: cycles from that cycle to
    the first cycle the hardware counter counts (``port_cycles = done - start - lead_cycles + 1``)."""

    port: str = "tile_start"
    rising: bool = False
    lead_cycles: int = 0


def unsigned(sig) -> int:
    """A port's value as an unsigned int (cocotb 2 LogicArray or an int)."""
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


class UnresolvedRead(ValueError):
    """A word read from the design holds X or Z bits (an uninitialised or undriven value): the
    co-simulation stops with this rather than read it as a number."""


def resolved(sig, what: str) -> int:
    """``sig``'s value as an unsigned integer; :class:`UnresolvedRead` naming ``what`` if any bit is X/Z."""
    v = sig.value
    if getattr(v, "is_resolvable", True):
        return unsigned(sig)
    bad = sum(ch not in "01" for ch in str(v))
    raise UnresolvedRead(f"{what} holds {bad} X/Z bit(s) of {len(v)} (an uninitialised or undriven value)")


class _Monitor:
    """Per finished tile: its start cycle (shifted by the lead, see :class:`TileStart`), its ``done``
    cycle, the counter the cycle after ``done`` and the simulation time of ``done``."""

    def __init__(self, dut, tiles: int = 0, tile_start: TileStart | None = TileStart()):
        self.dut = dut
        self.start = tile_start
        self.has_start = tile_start is not None and hasattr(dut, tile_start.port)
        self.tiles = tiles
        self.pending = False  # done seen, its counter not read yet
        self.cycle = 0
        self.starts: list[int] = []
        self.dones: list[int] = []
        self.hw_cycles: list[int] = []
        self.done_ns: list[float] = []

    async def run(self):
        dut, start = self.dut, self.start
        was_high = 0
        while True:
            await FallingEdge(dut.clk)
            if self.pending:
                self.hw_cycles.append(unsigned(dut.tile_cycles))
                self.pending = False
            if self.has_start:
                high = unsigned(getattr(dut, start.port))
                if high and not (start.rising and was_high):
                    self.starts.append(self.cycle + start.lead_cycles)
                was_high = high
            if unsigned(dut.done):
                self.dones.append(self.cycle)
                self.done_ns.append(get_sim_time(unit="ns"))
                tile_done(len(self.dones), self.tiles)  # progress per tile, as the array finishes it
                self.pending = True
            self.cycle += 1


async def _beat(dut, stream: str, payload: int, limit: int | None = None):
    """One beat on ``stream`` (``cmd``, ``wr``, ``rd_addr``): ``valid`` until ``ready`` is seen (or
    ``limit`` cycles have passed), dropped after the next rising edge. ``ready`` is sampled at the
    falling edge of the cycle ``valid`` is raised in, so a beat begins in a clock's high half: called
    in its low half (after a falling edge, e.g. right after :func:`_wait_idle`), the rising edge
    before that sample would take the beat unseen and the edge after it take it again (twice)."""
    if not unsigned(dut.clk):
        await RisingEdge(dut.clk)
    getattr(dut, f"{stream}__payload").value = payload
    valid, ready = getattr(dut, f"{stream}__valid"), getattr(dut, f"{stream}__ready")
    valid.value = 1
    for _ in range(limit) if limit is not None else count():
        await FallingEdge(dut.clk)
        if unsigned(ready):
            break
    await RisingEdge(dut.clk)
    valid.value = 0


async def _read(dut, addr: int, limit: int = 1000) -> int:
    """One request on ``rd_addr`` and its answer on ``rd_data``."""
    await _beat(dut, "rd_addr", addr, limit)
    for _ in range(limit):
        await FallingEdge(dut.clk)
        if unsigned(dut.rd_data__valid):
            word = resolved(dut.rd_data__payload, f"rd_data of result address {addr}")
            await RisingEdge(dut.clk)  # rd_data__ready is held high: the word is taken at this edge
            return word
    raise TimeoutError(f"no rd_data within {limit} cycles of reading address {addr}")


async def _wait_idle(dut, limit: int) -> bool:
    for _ in range(limit):
        await FallingEdge(dut.clk)
        if not unsigned(dut.busy):
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
    """Drives the host signature's ports directly; tile cycles from ``done`` and ``tile_cycles``.

    ``buffers``: the template's ``wr`` buffer names -> ``buf`` codes (what :meth:`write_rows` takes);
    ``tile_start``: how a tile begins on the ports (:class:`TileStart`), not looked for when
    ``job["host_ports_only"]`` (a user's RTL, ``--verilog``: a port beyond the host signature may mean
    something else there, so only ``tile_cycles`` times a tile)."""

    max_batch = None  # no limit beyond the buffers

    def __init__(self, dut, job: dict, buffers: dict[str, int], tile_start: TileStart = TileStart()):
        self.dut = dut
        self.job = job
        self.buffers = buffers
        self.cmd_layout = job["command_layout"]
        self.wr_layout = [tuple(f) for f in job["write_layout"]]
        self.mon = _Monitor(dut, len(job["tiles"]), None if job.get("host_ports_only") else tile_start)
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
        """``words`` into buffer ``buf`` (one of ``buffers``) from address ``base`` on, a beat each."""
        code = self.buffers[buf]
        for a, word in enumerate(words):
            await _beat(self.dut, "wr", pack_command(self.wr_layout, {"buf": code, "addr": base + a, "data": word}))

    async def issue(self, fields: dict[str, int]):
        await _beat(self.dut, "cmd", pack_command(self.cmd_layout, fields))

    def begin_batch(self):
        self.first_done = len(self.mon.dones)

    async def wait_idle(self, limit: int) -> bool:
        ok = await _wait_idle(self.dut, limit)
        await FallingEdge(self.dut.clk)  # let the monitor record the last tile_cycles
        while ok and self.mon.pending:  # a done seen at that edge: its counter is read at the next
            await FallingEdge(self.dut.clk)
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
        return {"error_flag": unsigned(self.dut.error), "cycles_total": self.mon.cycle}


def host_for(dut, job: dict, buffers: dict[str, int], tile_start: TileStart = TileStart()):
    """The driver's host: :class:`rtl.lib.axi_host.AxiHost` when ``job["host"] == "axi"`` (the engine
    behind the AXI wrapper), else :class:`DirectHost` on the host ports."""
    if job.get("host") == "axi":
        from rtl.lib.axi_host import AxiHost

        return AxiHost(dut, job, buffers)
    return DirectHost(dut, job, buffers, tile_start)
