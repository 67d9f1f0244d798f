"""cocotb driver of the SIMD PE array (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` runs ``job["tiles"]`` one after the other: it writes a
tile's operand, scale and (``accumulate``) output buffer entries through the
write port, issues its command, takes the times at which ``tile_start`` and
``tile_done`` rise (so a tile's cycles are measured from the ports, and
compared with the design's own ``tile_cycles`` counter), and reads the output
entries back. The layout of the entries is made outside the simulator
(:meth:`rtl.simd.rtl_design.SimdDesign.make_job`).
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge, SimTimeoutError, with_timeout
from cocotb.utils import get_sim_time
from rtl.cosim.progress import tile_done

CLOCK_NS = 10  # rtl.cosim.tb's clock


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


async def _wait_high(dut, sig, limit: int) -> float | None:
    """Time (ns) of the rising clock edge that starts the first cycle in which ``sig`` is high, looking
    from the current falling edge on for ``limit`` cycles (``None`` if it never is)."""
    for _ in range(limit):
        if _u(sig):
            return get_sim_time("ns") - CLOCK_NS / 2
        await FallingEdge(dut.clk)
    return None


async def run_job(dut, job: dict) -> dict:
    for name in ("cmd_valid", "wr_en", "rd_en"):
        getattr(dut, name).value = 0
    await RisingEdge(dut.clk)
    results = []
    for tile in job["tiles"]:
        await FallingEdge(dut.clk)
        if not _u(dut.cmd_ready):
            return {"tiles": results, "error": "cmd_ready is low while the array should be idle"}
        # ---- buffers (inputs change after a falling edge; sampled at the next rising edge) ----
        dut.wr_en.value = 1
        for buf, entries in (("ops", 0), ("scales", 1), ("psum", 2)):
            dut.wr_buf.value = entries
            for addr, word in tile[buf]:
                dut.wr_addr.value = addr
                dut.wr_data.value = word
                await FallingEdge(dut.clk)
        dut.wr_en.value = 0
        # ---- the command ----
        dut.cmd_mode.value = tile["mode"]
        dut.cmd_m.value, dut.cmd_n.value = tile["m"], tile["n"]
        dut.cmd_k.value, dut.cmd_g.value = tile["k"], tile["g"]
        dut.cmd_accumulate.value = int(tile["accumulate"])
        dut.cmd_valid.value = 1
        await FallingEdge(dut.clk)  # taken at the rising edge in between
        dut.cmd_valid.value = 0
        t0 = get_sim_time("ns") - CLOCK_NS / 2  # the edge that took the command
        start = await _wait_high(dut, dut.tile_start, 4)
        done = None
        if start is not None:  # tile_done is a register: its rising edge is a clock edge
            try:
                await with_timeout(RisingEdge(dut.tile_done), tile["budget"] * CLOCK_NS, "ns")
                done = get_sim_time("ns")
            except SimTimeoutError:
                done = None
        if start is None or done is None:
            return {"tiles": results, "error": f"tile {len(results)}: no tile_{'start' if start is None else 'done'} "
                                              f"(busy={_u(dut.busy)}, tiles_done={_u(dut.tiles_done)})"}
        await FallingEdge(dut.clk)  # in the done cycle
        await FallingEdge(dut.clk)  # the counter and the last output entry are written at its end
        hw_cycles = _u(dut.tile_cycles)
        # ---- read the outputs back (one entry per round; data the cycle after rd_en) ----
        words = []
        dut.rd_en.value = 1
        for r in range(tile["rounds"]):
            dut.rd_addr.value = r
            await FallingEdge(dut.clk)
            words.append(_u(dut.rd_data))
        dut.rd_en.value = 0
        results.append({
            "cycles": int(round((done - start) / CLOCK_NS)) + 1,
            "hw_cycles": hw_cycles,
            "take_to_start": int(round((start - t0) / CLOCK_NS)),
            "words": words,
        })
        tile_done(len(results), len(job["tiles"]))
    return {"tiles": results}
