"""cocotb driver of the PIM bank unit (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` replays each stream of ``job["streams"]`` after the
previous one has finished: the timed commands one cycle at a time (inputs
change after each falling edge; the design samples them at the next rising
edge = the command's cycle), while playing the DRAM array: a column asked
for on ``dram_rd`` is presented on ``dram_rdata`` ``tCL - 1`` cycles later,
from the stream's array contents. Per stream it returns the accumulator
columns read out (cycle, word), the first cycle after the last PRE in which
the bank reports ``ready``, the ``error`` flag and a short command trace.
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge
from rtl.cosim.progress import tile_done

ROW = {"ACT": 1, "PRE": 2, "REF": 3}
COL = {"MAC": 1, "GBWR": 2, "RDACC": 3}


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


async def run_job(dut, job) -> dict:
    for s in ("row_valid", "col_valid", "row_cmd", "col_cmd", "row_addr", "col_addr", "col_acc", "col_in",
              "col_wdata", "dram_rdata"):
        getattr(dut, s).value = 0
    latency = job["array_latency"]
    results = []
    for stream in job["streams"]:
        array = {(r, c): word for r, c, word in stream["array"]}
        by_cycle: dict[int, list] = {}
        for c in stream["commands"]:
            by_cycle.setdefault(c[0], []).append(c)
        last = max(by_cycle) if by_cycle else 0
        last_pre = max([c[0] for c in stream["commands"] if c[1] == "PRE"] + [0])
        outputs, ready_at, trace, pending = [], None, [], {}
        err_before = _u(dut.error)
        driven = False  # a command was driven last cycle (inputs are only written when they change)
        for cycle in range(last + stream["tail"] + 1):
            await FallingEdge(dut.clk)
            # outputs of this cycle (registered at the previous rising edge)
            if _u(dut.out_valid):
                outputs.append([cycle, _u(dut.out_data)])
            if ready_at is None and cycle > last_pre and _u(dut.ready):
                ready_at = cycle
            if _u(dut.dram_rd):  # the array answers a column read `latency` cycles after it sees it
                pending[cycle + latency] = array.get((_u(dut.dram_row), _u(dut.dram_col)), 0)
            if cycle in pending:  # otherwise dram_rdata holds its last value (unused)
                dut.dram_rdata.value = pending.pop(cycle)
            cmds = by_cycle.get(cycle, ())
            if driven:
                dut.row_valid.value = 0
                dut.col_valid.value = 0
            driven = bool(cmds)
            for _t, cmd, addr, acc, inp, wdata in cmds:
                if cmd in ROW:
                    dut.row_valid.value, dut.row_cmd.value, dut.row_addr.value = 1, ROW[cmd], addr
                else:
                    dut.col_valid.value, dut.col_cmd.value, dut.col_addr.value = 1, COL[cmd], addr
                    dut.col_acc.value, dut.col_in.value, dut.col_wdata.value = acc, inp, wdata
                trace.append(f"{cycle:>6} {cmd:<5} addr={addr} acc={acc} in={inp}")
        results.append({"outputs": outputs, "ready_at": ready_at, "error": _u(dut.error),
                        "error_before": err_before, "trace": trace[-40:]})
        tile_done(len(results), len(job["streams"]))
    return {"streams": results}
