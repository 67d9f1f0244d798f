"""cocotb driver of the attention array (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` runs each tile of ``job["tiles"]`` in turn through the host interface
(:mod:`rtl.lib.host`): writes its Q, K and V entries on the ``wr`` stream, issues its command on
``cmd``, waits for ``busy`` to fall (the contract's tile, then the final normalisation) and reads
the result rows on ``rd_addr`` / ``rd_data``. One tile at a time: the operand buffers hold one
tile. The tile's cycles are the hardware's ``tile_cycles`` counter; on the bare engine the
monitor also times ``tile_start`` .. ``done`` on the ports (``port_cycles``). With
``job["host"] == "axi"`` the same steps go through the AXI wrapper's bus functional models.

The host is :func:`rtl.cosim.direct_host.host_for`'s (on the ports or through the AXI wrapper).
"""
from __future__ import annotations

from rtl.cosim.direct_host import UnresolvedRead, host_for

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
    out = []
    for t in job["tiles"]:
        for buf, base, words in t["writes"]:
            await host.write_rows(BUF_NAMES[buf], base, words)
        host.begin_batch()
        await host.issue(t["cmd"])
        if not await host.wait_idle(MAX_CYCLES):
            return {"error": f"design still busy {MAX_CYCLES} cycles after the command of tile {len(out)}",
                    "tiles": out}
        timing = (await host.batch_timing(1))[0]
        rows = []
        try:
            for base, count in t["reads"]:
                for word in await host.read_rows(base, count):
                    rows.append([(word >> (32 * e)) & 0xFFFFFFFF for e in range(D)])
        except UnresolvedRead as err:  # never a value: the report names the tile
            return {"error": f"tile {len(out)} ({t.get('label', '?')}): X/Z read back: {err}", "tiles": out}
        status = await host.finish()
        out.append({**timing, "rows": rows, "error_flag": status["error_flag"]})
    return {"tiles": out, **await host.finish()}
