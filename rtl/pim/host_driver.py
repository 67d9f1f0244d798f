"""cocotb driver of the PIM host engine (:mod:`rtl.pim.host_engine`, runs inside the simulator).

Per tile: write the input staging memory (``wr`` buffer 0) and the DRAM array (buffer 1), queue
the tile's timed command entries and its ``end`` entry, wait until the engine is idle, read the
RDACC columns out of the output buffer, and take the tile's cycles from the hardware counter
(``tile_cycles`` after ``done``). Directly on the host ports (where ``run`` .. ``done`` also times
the tile), or through the AXI wrapper's bus functional models (``job["host"] == "axi"``); the host
is :func:`rtl.cosim.direct_host.host_for`'s.
"""
from __future__ import annotations

from rtl.cosim.direct_host import TileStart, host_for, unsigned

#: the ``wr`` stream's buffers (``buf`` codes)
BUFFERS = {"staging": 0, "array": 1}
#: ``run`` (a debug port beyond the host signature) rises the cycle before the tile's cycle 0; the
#: counter counts from cycle 1 through ``done``
RUN_START = TileStart("run", rising=True, lead_cycles=2)


async def run_job(dut, job: dict) -> dict:
    host = host_for(dut, job, BUFFERS, RUN_START)
    problem = await host.start(job["rd_bits"])
    if problem:
        return {"error": problem, "streams": []}
    empty = {name: 0 for name, _o, _w in job["command_layout"]}
    results = []
    for n, tile in enumerate(job["tiles"]):
        await host.write_rows("staging", 0, tile["staging"])
        await host.write_rows("array", 0, tile["array"])
        host.begin_batch()
        for entry in tile["entries"]:
            await host.issue({**empty, **entry})
        await host.issue({**empty, "end": 1})
        if not await host.wait_idle(tile["limit"]):
            return {"error": f"tile {n}: the engine did not finish within {tile['limit']} cycles",
                    "streams": results}
        words = await host.read_rows(0, tile["rdaccs"])
        (timing,) = await host.batch_timing(1)
        results.append({"outputs": [[None, w] for w in words], "cycles": timing["cycles"],
                        "port_cycles": timing.get("port_cycles"), "done_ns": timing.get("done_ns"),
                        "error": unsigned(dut.error) if hasattr(dut, "error") else 0,
                        "error_before": 0, "trace": []})
    fin = await host.finish()
    if results and fin.get("error_flag"):
        results[-1]["error"] = 1
    return {"streams": results}
