"""rtl.attention.grid.PeGrid on its own (amaranth's simulator): the scores and the row max chain of
a 1 x 2 grid against numpy fp32, and the wavefront of a 2 x 3 grid with pipelined adders (PE (i, j)
sees Q and K exactly i + j cycles late: the skew is registers)."""
from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator

from rtl.attention.grid import PeGrid

F32 = np.float32


def _bits(x) -> int:
    return int(np.array([x], F32).view(np.uint32)[0])


def _bf16(x) -> int:
    return _bits(x) >> 16


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_scores_and_row_max_of_one_row():
    """QK over d = 2 steps: q broadcast along the row, k down each column; the row's block max out of
    the last column. Values exact in bf16; the fp32 sums worked step by step in numpy."""
    grid = PeGrid(rows=1, cols=2, exp_macs=3)
    q = [1.5, -0.75]
    k = [[0.5, 2.0], [1.25, -0.5]]  # k[j][t]
    got = {}

    async def bench(ctx):
        for j in range(2):
            ctx.set(grid.colvalid[j], 1)
        for t in range(2):
            ctx.set(grid.qk_mac, 1)
            ctx.set(grid.qk_first, t == 0)
            ctx.set(grid.q[0], _bf16(q[t]))
            for j in range(2):
                ctx.set(grid.k[j], _bf16(k[j][t]))
            # a PE's score is its adder's output: the final sum in the last step (what FLAT stores)
            got["scores"] = [ctx.get(grid.score[0][j]) for j in range(2)]
            await ctx.tick()
        ctx.set(grid.qk_mac, 0)
        got["rmax"] = ctx.get(grid.rmax[0])

    _run(grid, bench)
    want = []
    for j in range(2):
        s = F32(0)
        for t in range(2):
            s = F32(s + F32(F32(q[t]) * F32(k[j][t])))
        want.append(s)
    assert got["scores"] == [_bits(w) for w in want]  # -0.75 * 1.25 + 0.75 = -0.1875; 3.0 + 0.375
    assert got["rmax"] == _bits(max(want))


def test_wavefront_skew_is_registers():
    """A one-cycle pulse on row i's q and column j's k reaches PE (i, j) exactly i + j cycles later."""
    R, C = 2, 3
    grid = PeGrid(rows=R, cols=C, exp_macs=3, add_stages=2)
    seen_q, seen_k = {}, {}

    async def bench(ctx):
        for i in range(R):
            ctx.set(grid.q[i], 0x100 + i)
        for j in range(C):
            ctx.set(grid.k[j], 0x200 + j)
        for cycle in range(R + C + 1):
            for (i, j), pe in grid.pes.items():
                if ctx.get(pe.q) == 0x100 + i:
                    seen_q.setdefault((i, j), cycle)
                if ctx.get(pe.k) == 0x200 + j:
                    seen_k.setdefault((i, j), cycle)
            await ctx.tick()
            for i in range(R):
                ctx.set(grid.q[i], 0)
            for j in range(C):
                ctx.set(grid.k[j], 0)

    _run(grid, bench)
    want = {(i, j): i + j for i in range(R) for j in range(C)}
    assert seen_q == want and seen_k == want
