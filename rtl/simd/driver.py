"""cocotb driver of the SIMD PE array through the host interface (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` runs ``job["tiles"]`` one after the other: it writes a
tile's operand, scale and (``accumulate``) output buffer entries on the ``wr``
stream, issues its command on ``cmd``, waits until the array is idle, takes the
tile's cycles from the hardware counter ``tile_cycles`` and reads the output
entries back on ``rd_addr`` / ``rd_data``. Directly on the host ports
(:class:`rtl.cosim.direct_host.DirectHost`, which also times ``tile_start`` ..
``done`` on the ports to check the counter) or, with ``job["host"] == "axi"``,
through the AXI wrapper's bus functional models (:class:`rtl.lib.axi_host.AxiHost`).
The layout of the entries is made outside the simulator
(:meth:`rtl.simd.rtl_design.SimdDesign.make_job`).
"""
from __future__ import annotations

from rtl.cosim.direct_host import host_for
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
    results = []
    for tile in job["tiles"]:
        for key, name in TILE_BUFFERS.items():
            base, words = _rows(tile[key])
            await host.write_rows(name, base, words)
        host.begin_batch()
        await host.issue({"mode": tile["mode"], "m": tile["m"], "n": tile["n"], "k": tile["k"], "g": tile["g"],
                          "accumulate": int(tile["accumulate"])})
        if not await host.wait_idle(tile["budget"]):
            return {"tiles": results, "error": f"tile {len(results)}: still busy after {tile['budget']} cycles",
                    **(await host.finish())}
        (timing,) = await host.batch_timing(1)  # port_cycles: on the direct host only
        words = await host.read_rows(0, tile["rounds"])
        results.append({"cycles": timing["cycles"], "port_cycles": timing.get("port_cycles"), "words": words,
                        "done_ns": timing.get("done_ns")})  # where a mismatch is in the waveform (--verilog)
    return {"tiles": results, **(await host.finish())}
