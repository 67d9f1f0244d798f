"""cocotb driver of the attention array (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` runs each tile of ``job["tiles"]`` in turn: writes its
Q, K and V entries, issues its command, watches ``tile_start`` / ``tile_done``
every cycle (the tile's measured cycles are ``done - start + 1``), waits for
``busy`` to fall (the final normalisation) and reads the result rows. Inputs
change after a falling edge; outputs are sampled at the falling edge (the
values of the cycle that follows the last rising edge).
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge
from rtl.cosim.progress import tile_done

MAX_CYCLES = 200_000


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


async def run_job(dut, job) -> dict:
    for s in ("cmd_valid", "wr_en", "rd_en"):
        getattr(dut, s).value = 0
    D = job["head_dim_max"]
    kick = tuple(job.get("kick", ()))
    if kick:  # evaluate every combinational block once (see rtl_design.make_job)
        dut._discover_all()
        for key in dut._keys():
            if str(key).strip().lstrip("\\") in kick:
                dut._get(key).value = 1
    await FallingEdge(dut.clk)
    out = []
    for t in job["tiles"]:
        await FallingEdge(dut.clk)
        for buf, bank, addr, data in t["writes"]:
            dut.wr_en.value, dut.wr_buf.value, dut.wr_bank.value = 1, buf, bank
            dut.wr_addr.value, dut.wr_data.value = addr, data
            await FallingEdge(dut.clk)
        dut.wr_en.value = 0
        c = t["cmd"]
        dut.cmd_flat.value, dut.cmd_q_rows.value, dut.cmd_kv_len.value = c["flat"], c["q_rows"], c["kv_len"]
        dut.cmd_head_dim.value, dut.cmd_passes.value, dut.cmd_drain.value = c["head_dim"], c["passes"], c["drain"]
        dut.cmd_valid.value = 1
        await FallingEdge(dut.clk)  # taken at the rising edge in between (the array is idle)
        dut.cmd_valid.value = 0
        start = done = None
        cycle = 0
        while cycle < MAX_CYCLES:
            if _u(dut.tile_start):
                start = cycle
            if _u(dut.tile_done):
                done = cycle
            if not _u(dut.busy):
                break
            await FallingEdge(dut.clk)
            cycle += 1
        rows = []
        for addr in t["reads"]:
            dut.rd_en.value, dut.rd_addr.value = 1, addr
            await FallingEdge(dut.clk)
            dut.rd_en.value = 0
            word = _u(dut.rd_data)
            rows.append([(word >> (32 * e)) & 0xFFFFFFFF for e in range(D)])
        cycles = done - start + 1 if start is not None and done is not None else None
        out.append({"cycles": cycles, "hw_cycles": _u(dut.tile_cycles), "rows": rows, "error": _u(dut.error),
                    "busy_cycles": cycle})
        tile_done(len(out), len(job["tiles"]))
    return {"tiles": out}
