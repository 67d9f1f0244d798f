"""cocotb driver of the attention array (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` runs the tiles of ``job["tiles"]`` through the host interface
(:mod:`rtl.lib.host`) with the next tile's loads overlapped with compute, as the models assume
(issue 23 item 8; :mod:`rtl.attention.buffers`): tile ``i`` reads its Q, K and V from operand set
``i % 2`` (its command's ``q_set`` and ``kv_set``). Tile 0's entries are written before its
command; while tile ``i`` runs, tile ``i + 1``'s entries are written into the other set on the
``wr`` stream; then the driver waits for ``busy`` to fall (the contract's tile, then the final
normalisation) and reads tile ``i``'s result rows on ``rd_addr`` / ``rd_data`` before the next
command (the array has one result buffer: those reads are not overlapped). The tile's cycles are
the hardware's ``tile_cycles`` counter; on the bare engine the monitor also times ``tile_start`` ..
``done`` on the ports (``port_cycles``), and a tile says whether it was still running when the next
tile's entries had all gone in (``next_loaded_while_busy``: the overlap was exercised). With
``job["host"] == "axi"`` the same steps go through the AXI wrapper's bus functional models.

The host is :func:`rtl.cosim.direct_host.host_for`'s (on the ports or through the AXI wrapper).
"""
from __future__ import annotations

from cocotb.triggers import RisingEdge

from rtl.cosim.direct_host import UnresolvedRead, host_for, unsigned

#: the ``wr`` stream's buffers, in ``buf`` code order (0 Q, 1 K, 2 V)
BUF_NAMES = ("q", "k", "v")
BUFFERS = {name: code for code, name in enumerate(BUF_NAMES)}
MAX_CYCLES = 200_000


async def run_job(dut, job) -> dict:
    D = job["head_dim_max"]
    host = host_for(dut, job, BUFFERS)
    problem = await host.start(32 * D)
    if problem:
        return {"error": problem, "tiles": []}
    tiles, set_shift = job["tiles"], job["set_shift"]
    busy = (lambda: bool(unsigned(dut.busy))) if hasattr(dut, "busy") else None  # the bare engine only

    async def load(i):  # tile i's entries into operand set i % 2
        for buf, base, words in tiles[i]["writes"]:
            await host.write_rows(BUF_NAMES[buf], base | (i % 2) << set_shift, words)

    out = []
    if tiles:
        await load(0)
    for i, t in enumerate(tiles):
        host.begin_batch()
        await host.issue({**t["cmd"], "q_set": i % 2, "kv_set": i % 2})
        overlapped = None
        if i + 1 < len(tiles):  # while tile i runs: tile i + 1's operands into the other set
            await load(i + 1)
            overlapped = busy() if busy else None
        if not await host.wait_idle(MAX_CYCLES):
            return {"error": f"design still busy {MAX_CYCLES} cycles after the command of tile {len(out)}",
                    "tiles": out}
        timing = (await host.batch_timing(1))[0]
        await RisingEdge(dut.clk)  # a beat starts after a rising edge (waiting for idle ends at a falling one)
        rows = []
        try:
            for base, count in t["reads"]:
                for word in await host.read_rows(base, count):
                    rows.append([(word >> (32 * e)) & 0xFFFFFFFF for e in range(D)])
        except UnresolvedRead as err:  # never a value: the report names the tile
            return {"error": f"tile {len(out)} ({t.get('label', '?')}): X/Z read back: {err}", "tiles": out}
        status = await host.finish()
        out.append({**timing, "rows": rows, "error_flag": status["error_flag"], "next_loaded_while_busy": overlapped})
    return {"tiles": out, **await host.finish()}
