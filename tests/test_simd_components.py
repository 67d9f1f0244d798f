"""The SIMD design's components on their own (amaranth.sim): the controller's issue order and timing,
the buffers' ports, one PE's dot product. Expected values by hand from the tile contract
(archsim/templates/simd/tile.py): steps = sum over groups of ceil(len / L), a tile takes
ceil(M*N / P) * steps + pipeline_cycles cycles."""
from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator

from archsim.templates.simd.params import SimdParams
from rtl.simd.buffers import SimdBuffers
from rtl.simd.config import BUF_CODES, SimdConfig
from rtl.simd.controller import SimdController
from rtl.simd.pe import SimdPE


def _run(dut, bench, cycles_limit=2000):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_controller_walks_rounds_groups_steps_and_times_the_tile():
    # int4 x int4 on 16-bit lanes: L = 4; K = 10, G = 4 -> groups 4, 4, 2 -> steps 1 + 1 + 1 = 3
    p = SimdParams(pes=2, lane_bits=16, formats=["int4", "int8"], weight_format="int4", activation_format="int4",
                   pipeline_cycles=6)
    cfg = SimdConfig.from_params(p)
    mode = [md.index for md in cfg.modes if (md.weight.name, md.activation.name) == ("int4", "int4")][0]
    M, N, K, G = 1, 3, 10, 4  # 3 outputs on 2 PEs: 2 rounds
    seen = {"ops": [], "start": [], "done": [], "wb": [], "masks": []}

    async def bench(ctx):
        ctl = dut
        for k, v in dict(cmd_mode=mode, cmd_m=M, cmd_n=N, cmd_k=K, cmd_g=G, cmd_accumulate=0, cmd_valid=1).items():
            ctx.set(getattr(ctl, k), v)
        await ctx.tick()
        ctx.set(ctl.cmd_valid, 0)
        for cycle in range(60):
            if ctx.get(ctl.tile_start):
                seen["start"].append(cycle)
            if ctx.get(ctl.busy) and cycle < 6:
                seen["ops"].append(ctx.get(ctl.op_addr))
            if ctx.get(ctl.s1_v):
                seen["masks"].append(ctx.get(ctl.s1_mask))
            if ctx.get(ctl.wb_en):
                seen["wb"].append(ctx.get(ctl.wb_addr))
            if ctx.get(ctl.tile_done):
                seen["done"].append(cycle)
            await ctx.tick()
        seen["cycles"] = ctx.get(ctl.tile_cycles)

    dut = SimdController(cfg)
    _run(dut, bench)
    steps, rounds = 3, 2
    assert seen["start"] == [0]
    assert seen["ops"][:steps * rounds] == list(range(steps * rounds))
    assert seen["done"] == [steps * rounds - 1 + p.pipeline_cycles]
    assert seen["cycles"] == steps * rounds + p.pipeline_cycles
    assert seen["wb"] == [0, 1]
    # the third group has 2 of 4 lanes: masks 0b1111, 0b1111, 0b0011 per round
    assert seen["masks"][:6] == [0b1111, 0b1111, 0b0011] * 2


def test_buffers_host_and_datapath_ports():
    cfg = SimdConfig.from_params(SimdParams(pes=2, lane_bits=16, formats=["int8"], weight_format="int8",
                                            activation_format="int8"))
    got = {}

    async def bench(ctx):
        b = dut
        for buf, addr, data in (("operands", 3, 0xABCD), ("scales", 1, 0x3F800000), ("outputs", 2, 0x1234)):
            ctx.set(b.wr_en, 1), ctx.set(b.wr_buf, BUF_CODES[buf]), ctx.set(b.wr_addr, addr), ctx.set(b.wr_data, data)
            await ctx.tick()
        ctx.set(b.wr_en, 0)
        ctx.set(b.op_addr, 3), ctx.set(b.sc_addr, 1), ctx.set(b.old_addr, 2)
        await ctx.tick()
        got["op"], got["sc"], got["old"] = ctx.get(b.op_data), ctx.get(b.sc_data), ctx.get(b.old_data)
        # a write-back and a host write in the same cycle: the write-back wins
        ctx.set(b.wb_en, 1), ctx.set(b.wb_addr, 2), ctx.set(b.wb_data, 0x77)
        ctx.set(b.wr_en, 1), ctx.set(b.wr_buf, BUF_CODES["outputs"]), ctx.set(b.wr_addr, 5), ctx.set(b.wr_data, 9)
        await ctx.tick()
        ctx.set(b.wb_en, 0), ctx.set(b.wr_en, 0)
        ctx.set(b.rd_en, 1), ctx.set(b.rd_addr, 2)
        await ctx.tick()
        ctx.set(b.rd_en, 0)
        got["rd_valid"], got["rd"] = ctx.get(b.rd_valid), ctx.get(b.rd_data)

    dut = SimdBuffers(cfg)
    _run(dut, bench)
    assert (got["op"], got["sc"], got["old"]) == (0xABCD, 0x3F800000, 0x1234)
    assert got["rd_valid"] == 1 and got["rd"] == 0x77


def test_one_pe_dot_product_of_one_step():
    """int8 x int8, G = 0, two lanes, one step: out = a0*w0 + a1*w1 (int64), at the contract's stages."""
    p = SimdParams(pes=1, lane_bits=16, formats=["int8"], weight_format="int8", activation_format="int8")
    cfg = SimdConfig.from_params(p)
    a, w = [-7, 100], [55, -3]
    word = (a[0] & 0xFF) | ((a[1] & 0xFF) << 8) | ((w[0] & 0xFF) << 16) | ((w[1] & 0xFF) << 24)
    got = {}

    async def bench(ctx):
        pe = dut
        ctx.set(pe.take, 1), ctx.set(pe.mode, 0), ctx.set(pe.g_zero, 1), ctx.set(pe.accumulate, 0)
        await ctx.tick()
        ctx.set(pe.take, 0)
        ctx.set(pe.entry, word), ctx.set(pe.s1_v, 1), ctx.set(pe.s1_first_bit, 1), ctx.set(pe.s1_mask, 0b11)
        await ctx.tick()  # stage 1 -> 2
        ctx.set(pe.s1_v, 0), ctx.set(pe.s2_v, 1), ctx.set(pe.s2_gstart, 1)
        await ctx.tick()  # stage 2 -> 3
        ctx.set(pe.s2_v, 0), ctx.set(pe.s3_v, 1), ctx.set(pe.s3_gend, 1), ctx.set(pe.s3_first_g, 1)
        await ctx.tick()
        ctx.set(pe.s3_v, 0)
        got["out"] = ctx.get(pe.out)

    dut = SimdPE(cfg)
    _run(dut, bench)
    want = int(np.dot(a, w))
    assert (got["out"] - (1 << 64) if got["out"] >> 63 else got["out"]) == want
