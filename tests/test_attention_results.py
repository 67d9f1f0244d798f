"""rtl.attention.results.ResultStore on its own (amaranth's simulator): capture of a pass, FLAT's
capture into pass 0, the final divide's element read and write-back, the host's row read one cycle
later. Words are arbitrary bit patterns chosen by hand (the store only moves them)."""
from __future__ import annotations

from amaranth.sim import Simulator

from rtl.attention.results import ResultStore

R, D, QP = 2, 3, 2


def _words(values, width=32):
    return sum(v << (width * k) for k, v in enumerate(values))


def _row(word, n=D):
    return [(word >> (32 * e)) & 0xFFFF_FFFF for e in range(n)]


def test_capture_divide_write_back_and_host_read():
    dut = ResultStore(R, D, QP)
    got = {}
    l_pass1 = [0x1000, 0x2000]
    o_pass1 = [0x1100 + k for k in range(R * D)]  # (row i, column e) at i * D + e
    o_flat = [0x7700 + k for k in range(R * D)]

    async def bench(ctx):
        # pass 1 captured (cap with cap_pass 1); pass 0 stays 0
        ctx.set(dut.l_in, _words(l_pass1))
        ctx.set(dut.o_in, _words(o_pass1))
        ctx.set(dut.cap, 1)
        ctx.set(dut.cap_pass, 1)
        await ctx.tick()
        ctx.set(dut.cap, 0)
        # the final divide reads pass 1, row 1: l at 1 * R + 1, O column 2 at (1 * R + 1) * D + 2
        ctx.set(dut.fin_l_addr, 1 * R + 1)
        ctx.set(dut.fin_o_addr, (1 * R + 1) * D + 2)
        got["fin"] = (ctx.get(dut.fin_l), ctx.get(dut.fin_o))
        # ... and writes O * 1/l back there (the host read of that row the same cycle sees the old word)
        ctx.set(dut.fin_we, 1)
        ctx.set(dut.fin_addr, (1 * R + 1) * D + 2)
        ctx.set(dut.fin_data, 0xABCD)
        ctx.set(dut.rd_en, 1)
        ctx.set(dut.rd_addr, 1 * R + 1)
        await ctx.tick()
        got["rd_valid_1"] = ctx.get(dut.rd_valid)
        got["row_before"] = _row(ctx.get(dut.rd_data))
        ctx.set(dut.fin_we, 0)
        await ctx.tick()
        got["row_after"] = _row(ctx.get(dut.rd_data))
        # FLAT: flat_cap writes pass 0 whatever cap_pass says; a write-back wins over a capture
        ctx.set(dut.rd_en, 0)
        ctx.set(dut.o_in, _words(o_flat))
        ctx.set(dut.flat_cap, 1)
        ctx.set(dut.cap_pass, 1)
        ctx.set(dut.fin_we, 1)
        ctx.set(dut.fin_addr, 0 * D + 1)
        ctx.set(dut.fin_data, 0x5A5A)
        await ctx.tick()
        got["rd_valid_0"] = ctx.get(dut.rd_valid)
        ctx.set(dut.flat_cap, 0)
        ctx.set(dut.fin_we, 0)
        ctx.set(dut.rd_en, 1)
        for row in (0, 1, R + 0):
            ctx.set(dut.rd_addr, row)
            await ctx.tick()
            got[f"row{row}"] = _row(ctx.get(dut.rd_data))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got["fin"] == (0x2000, o_pass1[1 * D + 2])
    assert got["rd_valid_1"] == 1 and got["rd_valid_0"] == 0
    assert got["row_before"] == o_pass1[D:2 * D]
    assert got["row_after"] == o_pass1[D:2 * D - 1] + [0xABCD]
    assert got["row0"] == [o_flat[0], 0x5A5A, o_flat[2]]
    assert got["row1"] == o_flat[D:2 * D]
    assert got[f"row{R}"] == o_pass1[:D]  # pass 1, row 0: untouched by FLAT's capture
