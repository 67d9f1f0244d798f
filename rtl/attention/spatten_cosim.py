"""cocotb driver of SpAtten's pruning step (:mod:`rtl.attention.spatten`; runs inside the simulator).

Per step of a tile (the job of :meth:`rtl.attention.spatten_design.SpattenDesign.make_job`): write the
array's operands on ``wr``, issue the command on ``cmd``, wait for ``busy`` to fall, read the result
rows of an attention command. After the select: the step's cycles (the hardware counter, read after
``done``) and the ``kept`` bits. The host is :func:`rtl.cosim.direct_host.host_for`'s.
"""
from __future__ import annotations

from rtl.cosim.direct_host import UnresolvedRead, host_for, resolved

BUFFERS = {"q": 0, "k": 1, "v": 2}
MAX_CYCLES = 200_000


async def drive(dut, job) -> dict:  # pragma: no cover - runs inside the simulator
    D = job["head_dim_max"]
    host = host_for(dut, job, BUFFERS)
    problem = await host.start(32 * D)
    if problem:
        return {"error": problem, "tiles": []}
    names = ("q", "k", "v")
    out = []
    for t in job["tiles"]:
        host.begin_batch()
        rows = []
        for step in t["steps"]:
            for buf, base, words in step["writes"]:
                await host.write_rows(names[buf], base, words)
            await host.issue(step["cmd"])
            if not await host.wait_idle(MAX_CYCLES):
                return {"error": f"design still busy {MAX_CYCLES} cycles after a command of tile {len(out)}",
                        "tiles": out}
            try:
                for base, count in step["reads"]:
                    for word in await host.read_rows(base, count):
                        rows.append([(word >> (32 * e)) & 0xFFFFFFFF for e in range(D)])
            except UnresolvedRead as err:
                return {"error": f"tile {len(out)} ({t.get('label', '?')}): X/Z read back: {err}", "tiles": out}
        timing = (await host.batch_timing(1))[0]
        status = await host.finish()
        out.append({"cycles": timing["cycles"], "rows": rows, "kept": resolved(dut.kept, "kept"),
                    "sums": resolved(dut.sums, "sums"),
                    "error_flag": status["error_flag"]})
    return {"tiles": out, **await host.finish()}
