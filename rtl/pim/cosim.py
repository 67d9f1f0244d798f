"""Co-simulate one bank's command stream on the RTL against the detailed model.

:func:`cosim_tile` schedules a single-bank dot-mode GEMV tile with the
detailed model (:func:`archsim.templates.pim.schedule`), places the weights
where its RD-MACs read them, replays the same timed stream on the Amaranth
bank unit under cocotb (the shared harness :mod:`rtl.cosim.harness`) and
returns both sides' values and cycles. The RTL's cycles are
``max(last accumulator column out, first cycle the bank is ready after the
last PRE)``; the model's are its tile cycles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.templates.pim import PimTile, schedule
from archsim.templates.pim.commands import place, run_detailed
from rtl.pim.design import bank_verilog


@dataclass
class BankCosim:
    rtl_values: np.ndarray
    model_values: np.ndarray
    rtl_cycles: int
    model_cycles: int
    error: int
    trace: list[str]

    @property
    def ok(self) -> bool:
        return (not self.error and self.rtl_cycles == self.model_cycles
                and np.array_equal(self.rtl_values, self.model_values))


def _pack(values, bits: int) -> int:
    word = 0
    for lane, v in enumerate(values):
        word |= (int(v) & ((1 << bits) - 1)) << (lane * bits)
    return word


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


def cosim_tile(tile: PimTile, p, weights: np.ndarray, x: np.ndarray, *, sim: str = "icarus") -> BankCosim:
    from rtl.cosim.harness import run_job

    if tile.banks != 1 or tile.mode != "dot" or tile.kind != "gemv":
        raise ValueError("cosim_tile: a single-bank dot-mode GEMV tile is expected")
    E = p.column_elements
    cmds, model_cycles = schedule(tile, p)
    model_values, _c, _cmds = run_detailed(tile, p, weights, x)
    mem = place(tile, p, weights)  # [1, dram rows, row elements]
    if mem.shape[1] > p.rows_per_bank:
        raise ValueError(f"cosim_tile: the tile needs {mem.shape[1]} DRAM rows, the bank has {p.rows_per_bank}")
    load = []
    for r in range(mem.shape[1]):
        for c in range(p.row_columns):
            word = _pack(mem[0, r, c * E:(c + 1) * E], 8)
            if word:
                load.append([r * p.row_columns + c, word])
    xp = np.zeros(len(x) + 2 * p.input_buffer_bytes, np.int64)
    xp[:len(x)] = x
    from archsim.templates.pim.commands import program

    prog = program(tile, p)
    it = iter(prog)
    job_cmds = []
    for c in cmds:
        src = None if c.cmd == "REF" else next(it)[6]
        if c.cmd in ("ACT", "PRE", "REF"):
            job_cmds.append([c.time, c.cmd, c.row, 0, 0, 0])
        elif c.cmd == "MAC":
            job_cmds.append([c.time, c.cmd, c.col, c.acc, c.in_off // E, 0])
        elif c.cmd == "GBWR":
            job_cmds.append([c.time, c.cmd, c.col, 0, 0, _pack(xp[src:src + E], 8)])
        else:  # RDACC
            job_cmds.append([c.time, c.cmd, c.col, 0, 0, 0])
    job = {"driver": "rtl.pim.driver:drive", "load": load, "commands": job_cmds, "tail": p.tCL + p.tRP + p.tRFC + 4}
    run = run_job(bank_verilog(p), "pim_bank", job, sim=sim)
    res = run.result
    lanes = p.column_bytes // 4
    words = []
    for _cycle, word in res["outputs"]:
        words.extend(_signed((word >> (32 * i)) & 0xFFFFFFFF, 32) for i in range(lanes))
    # RDACC columns of each group, in order: (g0, rg) from the program
    groups = []
    for c in prog:
        if c[0] == "RDACC" and (not groups or groups[-1][0] != c[6]):
            groups.append([c[6], 0])
        if c[0] == "RDACC":
            groups[-1][1] += 1
    rtl = np.zeros((1, tile.rows), np.int64)
    pos = 0
    for (g0, rg), ncols in groups:
        vals = words[pos:pos + ncols * lanes]
        rtl[0, g0:g0 + rg] = vals[:rg]
        pos += ncols * lanes
    last_out = max([o[0] for o in res["outputs"]] + [0])
    rtl_cycles = max(last_out, res["ready_at"] or 0)
    return BankCosim(rtl, model_values, rtl_cycles, model_cycles, res["error"], res["trace"])
