"""The PIM bank unit's components one by one (amaranth.sim): the MAC datapath against numpy
(products exact in float32, a pairwise float32 tree, or int32 wrap) exactly ``latency`` cycles
after its operands; the accumulators against a Python running sum (same accumulator hit back to
back, interleaved, after gaps; the group restart; the read-out 2 cycles after an RDACC); the
controller's timing checks on hand-written command sequences; the interleaved accumulators (P partials)
against a Python model of the interleaved order."""
from __future__ import annotations

import ml_dtypes as md
import numpy as np
import pytest
from amaranth.sim import Simulator

from archsim.templates.pim import PimParams
from rtl.pim.accumulators import READ_LATENCY, PimAccumulators
from rtl.pim.controller import ACT, MAC, PRE, RDACC, PimBankController
from rtl.pim.mac import PimMacDatapath, mac_latency


def _run(dut, tb):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()


def _pack(codes, bits):
    return sum(int(c) << (bits * i) for i, c in enumerate(codes))


@pytest.mark.parametrize("lanes,mul_stages,add_stages", [(4, 2, 2), (3, 1, 1), (2, 0, 3)])
def test_bf16_mac_datapath_matches_numpy(lanes, mul_stages, add_stages):
    rng = np.random.default_rng(lanes * 10 + add_stages)
    n = 40
    w = rng.standard_normal((n, lanes)).astype(md.bfloat16)
    x = rng.standard_normal((n, lanes)).astype(md.bfloat16)
    prods = w.astype(np.float32) * x.astype(np.float32)  # exact: 8-bit significands
    width = 1 << (lanes - 1).bit_length()
    tree = np.concatenate([prods, np.zeros((n, width - lanes), np.float32)], axis=1)
    while tree.shape[1] > 1:
        tree = (tree[:, 0::2] + tree[:, 1::2]).astype(np.float32)
    want = tree[:, 0].view(np.uint32)
    dut = PimMacDatapath("bf16", lanes, mul_stages, add_stages)
    assert dut.latency == mul_stages + (lanes - 1).bit_length() * add_stages
    got = {}

    async def tb(ctx):
        for cycle in range(n + dut.latency + 1):
            if cycle < n:
                ctx.set(dut.w, _pack(w[cycle].view(np.uint16), 16))
                ctx.set(dut.x, _pack(x[cycle].view(np.uint16), 16))
            await ctx.tick()
            if cycle + 1 - dut.latency in range(n):
                got[cycle + 1 - dut.latency] = ctx.get(dut.sum)

    _run(dut, tb)
    assert [got[i] for i in range(n)] == [int(v) for v in want]


def test_int8_mac_datapath_wraps_like_int32():
    rng = np.random.default_rng(7)
    n, lanes = 20, 5
    w, x = rng.integers(-128, 128, (n, lanes)), rng.integers(-128, 128, (n, lanes))
    want = [int(v) & 0xFFFFFFFF for v in (w * x).sum(axis=1)]
    dut = PimMacDatapath("int8", lanes, 1, 1)
    assert dut.latency == 1 + 3
    got = {}

    async def tb(ctx):
        for cycle in range(n + dut.latency + 1):
            if cycle < n:
                ctx.set(dut.w, _pack(w[cycle] & 0xFF, 8))
                ctx.set(dut.x, _pack(x[cycle] & 0xFF, 8))
            await ctx.tick()
            if cycle + 1 - dut.latency in range(n):
                got[cycle + 1 - dut.latency] = ctx.get(dut.sum)

    _run(dut, tb)
    assert [got[i] for i in range(n)] == want


def test_int8_datapath_refuses_two_stages():
    with pytest.raises(ValueError, match="add_stages: the int8 datapath takes 0 or 1"):
        PimMacDatapath("int8", 4, 1, 2)
    assert mac_latency("int8", 16, 1, 0) == 1


def _accumulate(dut, schedule, reads, cycles, fp32):
    """Drive ``schedule`` {cycle: (idx, value)} and RDACC ``reads`` {cycle: col}; return
    {read cycle: (cycle the data came out, words)}."""
    out = {}

    async def tb(ctx):
        for cycle in range(cycles):
            acc = schedule.get(cycle)
            nxt = schedule.get(cycle + 1)
            ctx.set(dut.valid, acc is not None)
            ctx.set(dut.idx, acc[0] if acc else 0)
            ctx.set(dut.next_idx, nxt[0] if nxt else 0)
            val = acc[1] if acc else 0
            ctx.set(dut.col_sum, int(np.float32(val).view(np.uint32)) if fp32 else val & 0xFFFFFFFF)
            ctx.set(dut.rd, cycle in reads)
            ctx.set(dut.rdacc, cycle in reads)
            ctx.set(dut.rd_col, reads.get(cycle, 0))
            await ctx.tick()
            if ctx.get(dut.rd_valid):
                word = ctx.get(dut.rd_data)
                out[cycle + 1 - READ_LATENCY] = (cycle + 1, [(word >> (32 * i)) & 0xFFFFFFFF
                                                             for i in range(dut.out_lanes)])

    _run(dut, tb)
    return out


def test_int8_accumulators_forward_back_to_back_and_restart():
    dut = PimAccumulators("int8", registers=6, out_lanes=4, col_bits=2)
    rng = np.random.default_rng(3)
    # group 1: acc 2 back to back, then 2/5 interleaved, a gap, 2 again; group 2 after the RDACC
    order = [2, 2, 2, 5, 2, 5, 5, None, None, 2, 0, 0]
    schedule = {}
    for c, idx in enumerate(order):
        if idx is not None:
            schedule[c] = (idx, int(rng.integers(-2**31, 2**31)))
    g2 = {30: (1, 7), 31: (1, -3), 32: (5, 9)}
    schedule.update(g2)
    reads = {20: 0, 21: 1, 40: 0, 41: 1}
    out = _accumulate(dut, schedule, reads, 50, fp32=False)
    want1 = [0] * 8
    for c, (idx, v) in schedule.items():
        if c < 20:
            want1[idx] = (want1[idx] + v) & 0xFFFFFFFF
    want2 = [0, 4, 0, 0, 0, 9, 0, 0]  # the restart cleared group 1's accumulators
    assert out[20] == (20 + READ_LATENCY, want1[:4])
    assert out[21][1] == want1[4:6] + [0, 0]  # beyond acc_registers: 0
    assert out[40][1] == want2[:4] and out[41][1] == want2[4:6] + [0, 0]


def test_fp32_accumulators_round_like_numpy_step_by_step():
    dut = PimAccumulators("bf16", registers=4, out_lanes=4, col_bits=1)
    rng = np.random.default_rng(5)
    vals = (rng.standard_normal(12) * 10.0 ** rng.integers(-3, 4, 12)).astype(np.float32)
    idxs = [3, 3, 3, 1, 3, 1, 1, 1, 0, 3, 3, 0]
    schedule = {c: (i, v) for c, (i, v) in enumerate(zip(idxs, vals))}
    out = _accumulate(dut, schedule, {20: 0}, 25, fp32=True)
    want = np.zeros(4, np.float32)
    for i, v in zip(idxs, vals):
        want[i] = np.float32(want[i] + v)
    assert out[20][1] == [int(u) for u in want.view(np.uint32)]


P = PimParams(channels=1, banks_per_channel=1, bank_groups=1, rows_per_bank=64, row_bytes=64, column_bytes=16,
              mac_lanes=16, mac_precision="int8", acc_registers=8, input_buffer_bytes=64,
              tRCD=3, tRP=3, tRAS=7, tRTP=2, tWR=4, tCCD_S=1, tCCD_L=2, tRRD=1, tFAW=6, tREFI=200, tRFC=20, tCL=3)


@pytest.mark.parametrize("mac_at,want_error", [(2, 1), (3, 0)])
def test_controller_checks_trcd_and_reads_the_open_row(mac_at, want_error):
    dut = PimBankController(P, 3)
    seen = {}

    async def tb(ctx):
        for cycle in range(20):
            ctx.set(dut.row_valid, cycle in (0, 12))
            ctx.set(dut.row_cmd, ACT if cycle == 0 else PRE)
            ctx.set(dut.row_addr, 9)
            ctx.set(dut.col_valid, cycle == mac_at)
            ctx.set(dut.col_cmd, MAC)
            ctx.set(dut.col_addr, 2)
            await ctx.tick()
            if ctx.get(dut.dram_rd):
                seen["rd"] = (cycle, ctx.get(dut.dram_row), ctx.get(dut.dram_col))
            seen.setdefault("ready_at", None)
            if cycle >= 12 and ctx.get(dut.ready) and seen["ready_at"] is None:
                seen["ready_at"] = cycle + 1
        seen["error"] = ctx.get(dut.error)

    _run(dut, tb)
    assert seen["rd"] == (mac_at, 9, 2)  # high the cycle after the command, the open row
    assert seen["error"] == want_error
    assert seen["ready_at"] == 12 + P.tRP  # closed, tRP after the PRE


def _controller_error(params, cols: dict) -> int:
    """The controller's sticky ``error`` after ACT at 0 and the column commands ``cols`` {cycle: cmd}."""
    dut = PimBankController(params, 3)
    seen = {}

    async def tb(ctx):
        for cycle in range(max(cols) + 3):
            ctx.set(dut.row_valid, cycle == 0)
            ctx.set(dut.row_cmd, ACT)
            ctx.set(dut.col_valid, cycle in cols)
            ctx.set(dut.col_cmd, cols.get(cycle, MAC))
            ctx.set(dut.col_addr, 1)
            await ctx.tick()
        seen["error"] = ctx.get(dut.error)

    _run(dut, tb)
    return seen["error"]


@pytest.mark.parametrize("gap,want_error", [(3, 1), (4, 0)])
def test_controller_flags_an_rdacc_before_the_drain(gap, want_error):
    """Planted stream: an RDACC 3 cycles after the last MAC, before its column is in the accumulators
    (mac_drain = tCL 3 + 1 column cycle - 1 + 1 pipeline cycle = 4, by hand), sets ``error``; at 4 it does not."""
    assert _controller_error(P, {3: MAC, 3 + gap: RDACC}) == want_error


@pytest.mark.parametrize("gap,want_error", [(3, 1), (4, 0)])
def test_controller_flags_rdaccs_closer_than_the_reduction_takes(gap, want_error):
    """Planted stream, interleaved partials P = 8: RDACCs must be P / 2 = 4 cycles apart (the reduction's first
    adder takes an RDACC's 4 pairs one a cycle); 3 apart sets ``error``. The first RDACC is at the drain
    (tCL 14 + 1 - 1 + mac_pipeline_cycles 9 = 23 after the MAC, by hand): not flagged."""
    import dataclasses

    q = dataclasses.replace(P, mac_precision="bf16", column_bytes=8, mac_lanes=4, accumulator_interleave=8,
                            mac_pipeline_cycles=9, tCL=14)
    assert _controller_error(q, {3: MAC, 26: RDACC, 26 + gap: RDACC}) == want_error
    assert _controller_error(q, {3: MAC, 25: RDACC}) == 1  # a cycle before the drain


def _interleaved(dut, macs, reads, cycles, fp32, lead=6):
    """Drive MAC commands ``macs`` {cycle: (acc, value)} (the accumulate ``lead`` cycles later, with
    the tags the counters gave) and RDACC ``reads`` {cycle: col}; return {read cycle: words}."""
    from rtl.pim.interleaved import PARTIALS_LATENCY, TAG_LATENCY

    out, tags = {}, {}

    async def tb(ctx):
        for cycle in range(cycles):
            cmd = macs.get(cycle)
            ctx.set(dut.cmd_mac, cmd is not None)
            ctx.set(dut.cmd_acc, cmd[0] if cmd else 0)
            ctx.set(dut.cmd_rdacc, cycle in reads)
            ctx.set(dut.rd, cycle in reads)
            ctx.set(dut.rd_col, reads.get(cycle, 0))
            now, pre, pre2, pre4 = (macs.get(cycle - lead + d) for d in (0, 1, 2, 4))
            ctx.set(dut.valid, now is not None)
            ctx.set(dut.idx, now[0] if now else 0)
            ctx.set(dut.part, tags.get(cycle - lead, (0, 0))[0])
            val = now[1] if now else 0
            ctx.set(dut.col_sum, int(np.float32(val).view(np.uint32)) if fp32 else val & 0xFFFFFFFF)
            ctx.set(dut.pre_valid, pre is not None)
            ctx.set(dut.pre_idx, pre[0] if pre else 0)
            ctx.set(dut.pre_part, tags.get(cycle - lead + 1, (0, 0))[0])
            ctx.set(dut.pre_first, tags.get(cycle - lead + 1, (0, 0))[1])
            ctx.set(dut.pre2_idx, pre2[0] if pre2 else 0)
            ctx.set(dut.pre2_part, tags.get(cycle - lead + 2, (0, 0))[0])
            ctx.set(dut.pre2_first, tags.get(cycle - lead + 2, (0, 0))[1])
            ctx.set(dut.pre2_valid, pre2 is not None)
            ctx.set(dut.pre4_idx, pre4[0] if pre4 else 0)
            await ctx.tick()
            tagged = cycle + 1 - TAG_LATENCY  # the command whose tags are out now
            if tagged in macs:
                tags[tagged] = (ctx.get(dut.tag_part), ctx.get(dut.tag_first))
            if ctx.get(dut.rd_valid):
                word = ctx.get(dut.rd_data)
                out[cycle + 1 - dut.read_latency] = [(word >> (32 * i)) & 0xFFFFFFFF for i in range(dut.out_lanes)]
        # read the partials, then P / 2 - 1 cycles of pairs into level 0, log2(P) levels of P cycles
        assert dut.read_latency == PARTIALS_LATENCY + dut.P // 2 - 1 + (dut.P.bit_length() - 1) * dut.P

    _run(dut, tb)
    return out


@pytest.mark.parametrize("prec,P", [("int8", 2), ("bf16", 4)])
def test_interleaved_accumulators_partials_forwarding_and_restart(prec, P):
    """Column c of an accumulator into partial c mod P; hits P, P+1, P+2 and more cycles apart;
    the RDACC's pairwise sum of the partials (unwritten ones 0), RDACCs P / 2 = 2 cycles apart (the
    reduction's first-level adder takes an RDACC's pairs one a cycle); a second group restarts."""
    from rtl.pim.interleaved import PimInterleavedAccumulators

    dut = PimInterleavedAccumulators(prec, registers=6, out_lanes=2, col_bits=2, interleave=P)
    rng = np.random.default_rng(P)
    fp32 = prec == "bf16"
    # group 1: acc 3 every cycle, then with gaps of 1 and 2, acc 0/1 interleaved, acc 4 once
    cycles_accs = [(c, 3) for c in range(0, 9)] + [(10, 3), (11, 3), (13, 3), (14, 0), (15, 1), (16, 0),
                                                     (17, 3), (19, 1), (20, 0), (22, 3), (23, 4)]

    def value():
        if fp32:
            return np.float32(rng.standard_normal() * 10.0 ** rng.integers(-3, 4))
        return int(rng.integers(-2**31, 2**31))
    macs = {c: (a, value()) for c, a in cycles_accs}
    g2 = {60: (1, value()), 61: (1, value()), 62: (5, value())}
    macs.update(g2)
    reads = {45: 0, 47: 1, 49: 2, 90: 0, 92: 1, 94: 2}
    out = _interleaved(dut, macs, reads, 110, fp32)

    def want(group):
        parts = {}
        taken = {}
        for c in sorted(group):
            a, v = group[c]
            j = taken.get(a, 0) % P
            taken[a] = taken.get(a, 0) + 1
            old = parts.get((a, j), np.float32(0) if fp32 else 0)
            parts[(a, j)] = np.float32(old + v) if fp32 else (old + v) & 0xFFFFFFFF
        words = []
        for a in range(6):
            ps = [parts.get((a, j), np.float32(0) if fp32 else 0) for j in range(P)]
            while len(ps) > 1:
                ps = [np.float32(ps[i] + ps[i + 1]) if fp32 else (ps[i] + ps[i + 1]) & 0xFFFFFFFF
                      for i in range(0, len(ps), 2)]
            words.append(int(np.float32(ps[0]).view(np.uint32)) if fp32 else ps[0])
        return words

    w1 = want({c: m for c, m in macs.items() if c < 45})
    w2 = want(g2)
    assert [out[45], out[47], out[49]] == [w1[0:2], w1[2:4], w1[4:6]]
    assert [out[90], out[92], out[94]] == [w2[0:2], w2[2:4], w2[4:6]]


# ----------------------------------------------------------------------------- a channel's gather


@pytest.mark.parametrize("banks, registers, lanes", [(2, 64, 8), (3, 8, 4), (4, 6, 3), (3, 5, 1)])
def test_channel_gather_packs_bank_major(banks, registers, lanes):
    """Every RDACC column of the gather, 2 cycles after the command, is the bank-major packing by
    hand: word i = bank i // rg's accumulator i % rg, 0 past the group -- for every rg (rows per
    bank, 0 = all) and every column, including columns that span several banks (rg < lanes) and
    lane counts that are not a power of two."""
    from rtl.pim.channel import PimChannelGather

    rng = np.random.default_rng(banks * 100 + registers)
    accs = [int(v) for v in rng.integers(1, 1 << 32, banks * registers)]
    g = PimChannelGather(banks, registers, lanes, col_bits=8, rg_bits=max(1, (registers - 1).bit_length()))
    cases = [(rgf, col) for rgf in range(registers) for col in range(-(-banks * registers // lanes) + 1)]
    seen = []

    async def tb(ctx):
        ctx.set(g.accs, sum(v << (32 * i) for i, v in enumerate(accs)))
        for rgf, col in cases:
            ctx.set(g.rd, 1)
            ctx.set(g.col, col)
            ctx.set(g.rg, rgf)
            await ctx.tick()
            ctx.set(g.rd, 0)
            assert not ctx.get(g.valid)
            await ctx.tick()
            assert ctx.get(g.valid)
            seen.append(ctx.get(g.data))

    sim = Simulator(g)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    for (rgf, col), data in zip(cases, seen, strict=True):
        rg = rgf or registers
        for k in range(lanes):
            i = col * lanes + k
            want = accs[(i // rg) * registers + i % rg] if i // rg < banks else 0
            assert (data >> (32 * k)) & 0xFFFFFFFF == want, (rg, col, k)
