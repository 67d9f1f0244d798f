"""cocotb driver of the PIM bank unit (runs inside the simulator, via rtl.cosim.tb).

``drive(dut, job)``: preloads the bank memory, then replays the timed
command stream one cycle at a time (inputs change after each falling edge,
the design samples them at the next rising edge = the command's cycle) and
samples the outputs of every cycle. Returns the accumulator columns read
out, the cycle of each, the first cycle after the last PRE in which the
bank reports ``ready``, and the ``error`` flag.
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge

ROW = {"ACT": 1, "PRE": 2, "REF": 3}
COL = {"MAC": 1, "GBWR": 2, "RDACC": 3}


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


async def drive(dut, job) -> dict:
    for s in ("row_valid", "col_valid", "ld_en", "row_cmd", "col_cmd", "row_addr", "col_addr", "col_acc",
              "col_in", "col_wdata"):
        getattr(dut, s).value = 0
    for addr, word in job["load"]:
        await FallingEdge(dut.clk)
        dut.ld_en.value, dut.ld_addr.value, dut.ld_data.value = 1, addr, word
    await FallingEdge(dut.clk)
    dut.ld_en.value = 0
    for s in ("row_valid", "col_valid"):
        getattr(dut, s).value = 0
    await RisingEdge(dut.clk)
    by_cycle: dict[int, list] = {}
    for c in job["commands"]:
        by_cycle.setdefault(c[0], []).append(c)
    last = max(by_cycle) if by_cycle else 0
    last_pre = max([c[0] for c in job["commands"] if c[1] == "PRE"] + [0])
    outputs, ready_at, trace = [], None, []
    for cycle in range(last + job["tail"] + 1):
        await FallingEdge(dut.clk)
        # outputs of this cycle (registered at the previous rising edge)
        if _u(dut.out_valid):
            outputs.append([cycle, _u(dut.out_data)])
        if ready_at is None and cycle > last_pre and _u(dut.ready):
            ready_at = cycle
        dut.row_valid.value = 0
        dut.col_valid.value = 0
        for _t, cmd, addr, acc, inp, wdata in by_cycle.get(cycle, ()):
            if cmd in ROW:
                dut.row_valid.value, dut.row_cmd.value, dut.row_addr.value = 1, ROW[cmd], addr
            else:
                dut.col_valid.value, dut.col_cmd.value, dut.col_addr.value = 1, COL[cmd], addr
                dut.col_acc.value, dut.col_in.value, dut.col_wdata.value = acc, inp, wdata
            trace.append(f"{cycle:>6} {cmd:<5} addr={addr} acc={acc} in={inp}")
    return {"outputs": outputs, "ready_at": ready_at, "error": _u(dut.error), "trace": trace[-40:]}
