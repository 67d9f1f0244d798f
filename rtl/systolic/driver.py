"""cocotb driver of the systolic design (runs inside the simulator).

``run_job(dut, job)`` replays ``job["tiles"]`` on the top module: it packs
as many tiles as fit into the local buffers (a *batch*), writes their
operands through the write port, issues their commands back to back (so a
``preload_hidden`` tile's shadow load overlaps the previous tile, as on the
real array), waits for ``busy`` to fall, and reads the results back. It uses
only the host signature (:mod:`rtl.lib.host`), so it drives any RTL that
implements it (``archsim rtl cosim --verilog``). A monitor samples ``done``
every cycle and reads the hardware's ``tile_cycles`` counter the cycle after:
that count is the tile's measured cycles. A design that also has a
``tile_start`` port (archsim's own) is timed from its ports too
(``port_cycles``), and the checker asks the two to agree.

Buffer layout per tile (lane = array row for "left", array column for
"top" and "out"; ``a`` = address offset from the tile's base)::

    dataflow  left lane r, addr a   top lane c, addr a   out lane c, addr a
    ws        A[a, r]               W[a, c]              out[a, c]
    is        W[r, a]               A[c, a]              out[c, a]
    os        A[r, a]               W[a, c]              out[a, c]
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge
from cocotb.utils import get_sim_time
from rtl.cosim.progress import tile_done
from rtl.design import pack_lanes
from rtl.lib.payload import pack_command

DATAFLOW_CODES = {"ws": 0, "os": 1, "is": 2}
BUF = {"left": 0, "top": 1, "out": 2}


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


_pack = pack_lanes  # one word of lanes (rtl.design)


def _unpack(word: int, lanes: int, bits: int) -> list[int]:
    out = []
    for lane in range(lanes):
        v = (word >> (lane * bits)) & ((1 << bits) - 1)
        out.append(v - (1 << bits) if v >> (bits - 1) else v)
    return out


def tile_layout(tile: dict) -> dict[str, list[list[int]]]:
    """Rows (one per address) to write into the left/top buffers, and the out rows to read."""
    df, A, W = tile["dataflow"], tile["input"], tile["weight"]
    m, k, n = tile["m"], tile["k"], tile["n"]
    if df == "ws":
        left = [A[i][:k] for i in range(m)]
        top = [W[r][:n] for r in range(k)]
        out_rows = m
    elif df == "is":
        left = [[W[r][j] for r in range(k)] for j in range(n)]
        top = [[A[c][r] for c in range(m)] for r in range(k)]
        out_rows = n
    else:
        left = [[A[i][t] for i in range(m)] for t in range(k)]
        top = [W[t][:n] for t in range(k)]
        out_rows = m
    return {"left": left, "top": top, "out_rows": out_rows}


def out_rows_to_tile(tile: dict, rows: list[list[int]]) -> list[list[int]]:
    """Output buffer rows -> out[m x n]."""
    m, n = tile["m"], tile["n"]
    if tile["dataflow"] == "is":  # lane c = out row c, address = out column
        return [[rows[j][i] for j in range(n)] for i in range(m)]
    return [row[:n] for row in rows[:m]]


def psum_rows(tile: dict) -> list[list[int]]:
    P = tile["psum"]
    if tile["dataflow"] == "is":
        return [[P[i][j] for i in range(tile["m"])] for j in range(tile["n"])]
    return [list(r) for r in P]


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
            word = _u(dut.rd_data__payload)
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


async def run_job(dut, job: dict) -> dict:
    cfg = job["config"]
    R, C = cfg["rows"], cfg["cols"]
    lw = max(cfg["input_bits"], cfg["weight_bits"])
    ab = cfg["acc_bits"]
    P = cfg["mult_pipeline_stages"]
    depth = {"left": cfg["left_depth"], "top": cfg["top_depth"], "out": cfg["out_depth"]}
    tiles = job["tiles"]

    if job.get("host") == "axi":  # through the AXI wrapper (rtl.lib.axi)
        from rtl.lib.axi_host import AxiHost

        host = AxiHost(dut, job)
    else:
        host = DirectHost(dut, job)
    problem = await host.start(C * ab)
    if problem:
        return {"error": problem, "tiles": []}

    results: list[dict] = []
    i = 0
    while i < len(tiles):
        # ---- plan a batch that fits the buffers ----
        batch, used = [], {"left": 0, "top": 0, "out": 0}
        for j in range(i, len(tiles)):
            lay = tile_layout(tiles[j])
            chained = bool(tiles[j].get("chain")) and bool(batch)
            need = {"left": len(lay["left"]), "top": R if tiles[j]["dataflow"] != "os" else len(lay["top"]),
                    "out": 0 if chained else lay["out_rows"]}
            if any(used[b] + need[b] > depth[b] for b in used) or len(batch) == (host.max_batch or -1):
                break
            base = dict(used)
            if chained:  # accumulate in place onto the previous tile's results
                base["out"] = batch[-1][2]["out"]
            lay["chained"] = chained
            for b in used:
                used[b] += need[b]
            batch.append((j, lay, base))
        if not batch:
            return {"error": f"tile {i} does not fit the RTL buffers ({depth})", "tiles": results}

        # ---- load operands (and initial partial sums) ----
        for j, lay, base in batch:
            await host.write_rows("left", base["left"], [_pack(row, lw) for row in lay["left"]])
            await host.write_rows("top", base["top"], [_pack(row, lw) for row in lay["top"]])
            if tiles[j]["accumulate"] and not lay["chained"]:
                await host.write_rows("out", base["out"], [_pack(row, ab) for row in psum_rows(tiles[j])])

        # ---- run the batch back to back ----
        host.begin_batch()
        budget = 1000
        for j, lay, base in batch:
            t = tiles[j]
            budget += 4 * (R + t["m"] + t["k"] + t["n"] + R + C + P)
            await host.issue({
                "dataflow": DATAFLOW_CODES[t["dataflow"]],
                "m": t["m"], "k": t["k"], "n": t["n"],
                "accumulate": int(t["accumulate"]),
                "preload_hidden": int(t.get("preload_hidden", False)),
                "left_base": base["left"], "top_base": base["top"], "out_base": base["out"],
            })
        if not await host.wait_idle(budget):
            return {"error": f"design still busy {budget} cycles after the commands of tiles {i}..{batch[-1][0]}",
                    "tiles": results}
        timing = await host.batch_timing(len(batch))

        # ---- read back (a tile whose results the next tile accumulated onto is gone: skip it) ----
        for idx, (j, lay, base) in enumerate(batch):
            overwritten = idx + 1 < len(batch) and batch[idx + 1][1]["chained"]
            words = await host.read_rows(base["out"], 0 if overwritten else lay["out_rows"])
            rows = [_unpack(w, C, ab) for w in words]
            results.append({"out": None if overwritten else out_rows_to_tile(tiles[j], rows), **timing[idx]})
        i = batch[-1][0] + 1
    return {"tiles": results, **await host.finish()}
