"""Shared operands of the SIMD array (issue 23 item 8): the operand entry holds each distinct activation
row and weight column of a round once, and the buffers broadcast them to the PEs by per-PE selects.

Expected bounds by hand (module docstring of rtl.simd.broadcast) and by brute force over every round of
every output width N; expected PE entries from the tile's operands directly. The end-to-end check
(values and cycles of the whole array) is the co-simulation in tests/test_simd_rtl.py and the level
harness, which now run on this layout.
"""
from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator

from archsim.templates.simd import SimdParams
from rtl.simd.broadcast import BroadcastLayout, operand_slots
from rtl.simd.buffers import SimdBuffers
from rtl.simd.config import BUF_CODES, SimdConfig, SimdRtlOptions


def test_a_round_never_touches_more_rows_and_columns_than_the_slots():
    for P in range(1, 10):
        layout = BroadcastLayout(P, 8, 8)
        worst = 0
        for N in range(1, 2 * P + 3):
            M = 2 * P + 2
            for base in range(0, M * N, P):
                outs = [((o // N), o % N) if o < M * N else None for o in range(base, base + P)]
                live = [mn for mn in outs if mn is not None]
                rows, cols = {m for m, _ in live}, {n for _, n in live}
                worst = max(worst, len(rows) + len(cols))
                r_list, c_list, sels = layout.round_operands(outs)
                assert set(r_list) == rows and set(c_list) == cols
                for p, mn in enumerate(outs):
                    if mn is not None:
                        assert r_list[sels[p][0]] == mn[0] and c_list[sels[p][1]] == mn[1]
                        assert max(sels[p]) <= p  # PE p's select ranges over p + 1 slots
        assert worst == operand_slots(P) == (P + 2 if P > 1 else 2), P  # the bound is reached


def test_the_entry_is_slots_then_selects():
    layout = BroadcastLayout(4, 16, 16)
    assert layout.slots == 6
    assert layout.entry_bits == 6 * 16 + 2 * (0 + 1 + 2 + 2)
    # replicated, the same four PEs' entry was 4 x (16 + 16) = 128 bits; with 64 PEs 4096 vs 66 * 16 + 2 * 332
    assert BroadcastLayout(64, 16, 16).entry_bits == 66 * 16 + 2 * sum(p.bit_length() for p in range(64))


def test_the_buffers_hand_every_pe_its_own_row_and_column():
    """Write one broadcast entry through the host port, read it on the datapath port: PE p's entry is
    (its row's activation word, its column's weight word)."""
    P = 5
    params = SimdParams(pes=P, lane_bits=16, formats=["int8"])
    cfg = SimdConfig.from_params(params, SimdRtlOptions(op_depth=4, scale_depth=4, out_depth=4))
    layout = cfg.operand_layout
    AW, WW, EW = cfg.act_word_bits, cfg.weight_word_bits, cfg.entry_bits
    rng = np.random.default_rng(0)
    N = 3  # a round of 5 outputs: (0,1) (0,2) (1,0) (1,1) (1,2) after output 1
    outs = [((o // N), o % N) for o in range(1, 1 + P)]
    act = {m: int(rng.integers(0, 1 << AW)) for m in range(3)}
    wgt = {n: int(rng.integers(0, 1 << WW)) for n in range(N)}
    rows, cols, sels = layout.round_operands(outs)
    word = layout.pack([act[m] for m in rows], [wgt[n] for n in cols], sels)
    dut = SimdBuffers(cfg, layout)
    got = {}

    async def bench(ctx):
        ctx.set(dut.wr_en, 1)
        ctx.set(dut.wr_buf, BUF_CODES["operands"])
        ctx.set(dut.wr_addr, 2)
        ctx.set(dut.wr_data, word)
        await ctx.tick()
        ctx.set(dut.wr_en, 0)
        ctx.set(dut.op_addr, 2)
        await ctx.tick()
        got["op"] = ctx.get(dut.op_data)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for p, (m, n) in enumerate(outs):
        assert (got["op"] >> (p * EW)) & ((1 << EW) - 1) == act[m] | wgt[n] << AW, p
