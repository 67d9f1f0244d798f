"""cocotb driver of the SIMD PE array through the host interface (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` replays ``job["tiles"]`` with loads and stores overlapped with compute, as the
models assume (issue 23 item 8; :mod:`rtl.simd.buffers`): tile ``i`` runs on buffer bank ``i % 2``.
Tile 0's operand, scale and (``accumulate``) output entries are written before its command; while
tile ``i`` runs, tile ``i - 1``'s output entries are read back from the other bank, then tile
``i + 1``'s entries are written into it; after the tile is done (``busy`` low) its cycles are the
hardware counter ``tile_cycles``. The last tile's outputs are read at the end. On the bare engine a
tile's result also says whether it was still running when the next tile's entries had all gone in
(``next_loaded_while_busy``: the overlap was exercised, not only allowed). Directly on the host
ports (:class:`rtl.cosim.direct_host.DirectHost`, which also times ``tile_start`` .. ``done`` on the
ports to check the counter) or, with ``job["host"] == "axi"``, through the AXI wrapper's bus
functional models (:class:`rtl.lib.axi_host.AxiHost`). The layout of the entries is made outside the
simulator (:meth:`rtl.simd.rtl_design.SimdDesign.make_job`); the bank is the address's top bit
(``job["addr_bits"]`` / ``job["rd_addr_bits"]`` wide).
"""
from __future__ import annotations

from cocotb.triggers import RisingEdge

from rtl.cosim.direct_host import host_for, unsigned
from rtl.simd.config import BUF_CODES

#: a tile's buffer entries in the job -> the buffer they are written to (rtl.simd.config.BUF_CODES)
TILE_BUFFERS = {"ops": "operands", "scales": "scales", "psum": "outputs"}


def _rows(entries: list) -> tuple[int, list[int]]:
    """(first address, words) of buffer entries at consecutive addresses."""
    if not entries:
        return 0, []
    base = entries[0][0]
    if [a for a, _w in entries] != list(range(base, base + len(entries))):
        raise ValueError("buffer entries are not at consecutive addresses")
    return base, [w for _a, w in entries]


async def run_job(dut, job: dict) -> dict:
    host = host_for(dut, job, BUF_CODES)
    cfg = job["config"]
    problem = await host.start(cfg["pes"] * cfg["out_bits"])
    if problem:
        return {"tiles": [], "error": problem}
    tiles = job["tiles"]
    wr_bank_at, rd_bank_at = job["addr_bits"] - 1, job["rd_addr_bits"] - 1
    timings: list[dict] = []
    results: list[dict] = []
    next_loaded_while_busy: dict[int, bool] = {}  # running tile i -> busy when tile i+1's loads had ended
    busy = (lambda: bool(unsigned(dut.busy))) if hasattr(dut, "busy") else None  # the bare engine only

    async def load(i):  # tile i's entries into bank i % 2
        for key, name in TILE_BUFFERS.items():
            base, words = _rows(tiles[i][key])
            await host.write_rows(name, base | (i % 2) << wr_bank_at, words)

    async def read_back(i):  # tile i's outputs out of bank i % 2
        words = await host.read_rows((i % 2) << rd_bank_at, tiles[i]["rounds"])
        results.append({"cycles": timings[i]["cycles"], "port_cycles": timings[i].get("port_cycles"),
                        "words": words, "next_loaded_while_busy": next_loaded_while_busy.get(i),
                        "done_ns": timings[i].get("done_ns")})  # where a mismatch is in the waveform (--verilog)

    if tiles:
        await load(0)
    for i, tile in enumerate(tiles):
        host.begin_batch()
        await host.issue({"mode": tile["mode"], "m": tile["m"], "n": tile["n"], "k": tile["k"], "g": tile["g"],
                          "accumulate": int(tile["accumulate"]), "bank": i % 2})
        # while tile i runs: tile i - 1's results out of, then tile i + 1's entries into, the other bank
        if i:
            await read_back(i - 1)
        if i + 1 < len(tiles):
            await load(i + 1)
            if busy:
                next_loaded_while_busy[i] = busy()
        if not await host.wait_idle(tile["budget"]):
            return {"tiles": results, "error": f"tile {i}: still busy after {tile['budget']} cycles",
                    **(await host.finish())}
        (timing,) = await host.batch_timing(1)  # port_cycles: on the direct host only
        timings.append(timing)
        await RisingEdge(dut.clk)  # a beat starts after a rising edge (waiting for idle ends at a falling one)
    if tiles:
        await read_back(len(tiles) - 1)
    return {"tiles": results, **(await host.finish())}
