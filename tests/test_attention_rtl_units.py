"""The attention RTL's components on their own (amaranth's simulator, no Verilog tools):
one 2D PE (:class:`rtl.attention.pe.AttentionPE`), one 1D lane (:class:`rtl.attention.lane.Lane1D`)
and the operand buffers (:class:`rtl.attention.buffers.OperandBuffers`).

Expected values: numpy fp32 step by step (every multiply and add rounded to fp32, the order of
the template's contract), the exp against the template's ``exp2_poly`` and numpy's ``exp2``.
"""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from archsim.templates.attention.values import exp2_coefficients, exp2_poly, scale_of
from rtl.attention.buffers import OperandBuffers
from rtl.attention.engine import command_layout
from rtl.attention.design import AttentionRtlConfig
from rtl.attention.lane import Lane1D
from rtl.attention.pe import AttentionPE

F32 = np.float32


def _bits(x) -> int:
    return int(np.array([x], F32).view(np.uint32)[0])


def _f32(b: int) -> np.float32:
    return np.array([b], np.uint32).view(F32)[0]


def _bf16(x) -> int:
    return _bits(x) >> 16


def _run(dut, bench, clock: bool = True):
    sim = Simulator(dut)
    if clock:
        sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_pe_dot_product_exp_and_pv_step():
    """QK over d = 3 head-dim steps, then the exp of the scaled score (exp0, E-1 Horner steps,
    expfin onto a row-sum chain of 0.25), then one P.V step onto a chain of -1."""
    E = 4
    pe = AttentionPE(E, first_col=True)
    q = [1.5, -0.75, 2.0]
    k = [0.5, 1.25, -0.375]
    d = len(q)
    c = scale_of(d)
    m_c = F32(0.5)  # the row's running max times c
    got = {}

    async def bench(ctx):
        ctx.set(pe.colvalid, 1)
        for t in range(d):  # s += q[t] * k[t]
            ctx.set(pe.qk_mac, 1)
            ctx.set(pe.qk_first, t == 0)
            ctx.set(pe.q, _bf16(q[t]))
            ctx.set(pe.k, _bf16(k[t]))
            await ctx.tick()
        ctx.set(pe.qk_mac, 0)
        got["score"] = ctx.get(pe.rmax_out)  # the first column's block max is its own score
        ctx.set(pe.exp0, 1)
        ctx.set(pe.scale, _bits(c))
        ctx.set(pe.neg_mc, _bits(-m_c))
        await ctx.tick()
        ctx.set(pe.exp0, 0)
        coef = exp2_coefficients(E)
        for step in range(1, E):
            ctx.set(pe.horner, 1)
            ctx.set(pe.horner_coef, _bits(coef[E - 1 - step]))
            await ctx.tick()
        ctx.set(pe.horner, 0)
        ctx.set(pe.expfin, 1)
        ctx.set(pe.chain_in, _bits(0.25))
        got["rowsum"] = ctx.get(pe.chain_out)
        await ctx.tick()
        ctx.set(pe.expfin, 0)
        ctx.set(pe.av, 1)
        ctx.set(pe.v, _bf16(3.0))
        ctx.set(pe.chain_in, _bits(-1.0))
        got["pv"] = ctx.get(pe.chain_out)
        ctx.set(pe.colvalid, 0)  # a column without a key passes the chain through
        got["skip"] = ctx.get(pe.chain_out)

    _run(pe, bench)
    s = F32(0)
    for a, b in zip(q, k):
        s = F32(s + F32(F32(a) * F32(b)))
    assert got["score"] == _bits(s)
    x = F32(F32(s * c) - m_c)
    p = exp2_poly(np.array([x], F32), E)[0]
    assert abs(p / np.exp2(np.float64(x)) - 1) < 1e-3  # a degree-3 polynomial: close to exp2
    assert got["rowsum"] == _bits(F32(F32(0.25) + p))
    assert got["pv"] == _bits(F32(F32(-1.0) + F32(p * F32(3.0))))
    assert got["skip"] == _bits(-1.0)


def test_pe_row_max_skips_a_column_without_a_key():
    pe = AttentionPE(4, first_col=False)
    got = []

    async def bench(ctx):
        ctx.set(pe.qk_mac, 1)
        ctx.set(pe.qk_first, 1)
        ctx.set(pe.q, _bf16(2.0))
        ctx.set(pe.k, _bf16(3.0))
        await ctx.tick()  # score 6.0
        ctx.set(pe.qk_mac, 0)
        for left, valid in ((5.0, 1), (7.0, 1), (-9.0, 0)):
            ctx.set(pe.rmax_in, _bits(left))
            ctx.set(pe.colvalid, valid)
            got.append(_f32(ctx.get(pe.rmax_out)))

    _run(pe, bench)
    assert got == [6.0, 7.0, -9.0]


def test_operand_buffers_write_one_bank_and_read_every_bank():
    buf = OperandBuffers(rows=2, cols=3, head_dim_max=2, passes_max=2, key_blocks_max=4)
    got = {}

    async def bench(ctx):
        writes = [(0, 1, 1, 0x1111_2222), (1, 2, 3, 0x3333_4444), (2, 0, 3, 0x5555_6666), (1, 0, 3, 0x7777_8888)]
        for b, bank, addr, data in writes:
            ctx.set(buf.wr_en, 1)
            ctx.set(buf.wr_buf, b)
            ctx.set(buf.wr_bank, bank)
            ctx.set(buf.wr_addr, addr)
            ctx.set(buf.wr_data, data)
            await ctx.tick()
        ctx.set(buf.wr_en, 0)
        ctx.set(buf.q_addr, 1)
        ctx.set(buf.kv_addr_k, 3)
        ctx.set(buf.kv_addr_v, 3)
        got["q"] = [ctx.get(buf.q_data[i]) for i in range(2)]
        got["k"] = [ctx.get(buf.k_data[j]) for j in range(3)]
        got["v"] = [ctx.get(buf.v_data[j]) for j in range(3)]

    _run(buf, bench)
    assert got["q"] == [0, 0x1111_2222]
    assert got["k"] == [0x7777_8888, 0, 0x3333_4444]
    assert got["v"] == [0x5555_6666, 0, 0]


def test_command_layout_fields_by_hand():
    """rows 3 -> q_rows 2 bits (0..3); 16 blocks x 2 cols -> kv_len 6 bits (0..32); head dim 8 ->
    4 bits; 4 passes -> 3 bits; flat, drain and the operand sets of Q and of K / V 1 bit each: 19 bits,
    flat lowest."""
    cfg = AttentionRtlConfig(rows=3, cols=2, pe1d=2, exp_macs=4)
    layout = command_layout(cfg)
    assert [(n, f.offset, f.width) for n, f in layout] == [
        ("flat", 0, 1), ("q_rows", 1, 2), ("kv_len", 3, 6), ("head_dim", 9, 4), ("passes", 13, 3), ("drain", 16, 1),
        ("q_set", 17, 1), ("kv_set", 18, 1)]


def test_lane_ops_against_numpy():
    """The lane's results for one set of operands: product, sum, ``s*c - m*c`` (fmulx), exp2 of the
    sum, reciprocal, max, and both links of FLAT's segmented chains."""
    E = 6
    lane = Lane1D(E)
    got = {}

    async def bench(ctx):
        for name, v in (("ma", 1.75), ("mb", -0.625), ("aa", -3.25), ("ab", 0.5), ("neg_mc", -2.5),
                        ("recip_in", 3.0), ("m_in", -1.0), ("bm_in", -0.5), ("chain_in", 2.0), ("s_in", 1.5)):
            ctx.set(getattr(lane, name), _bits(v))
        await ctx.delay(1e-9)
        for k in ("prod", "sum", "exp", "recip", "max", "seg"):
            got[k] = ctx.get(getattr(lane, k))
        ctx.set(lane.fmax, 1)
        got["seg_max"] = ctx.get(lane.seg)
        ctx.set(lane.row_start, 1)
        got["seg_start"] = ctx.get(lane.seg)
        ctx.set(lane.fmax, 0)
        ctx.set(lane.fmulx, 1)
        got["fmulx"] = ctx.get(lane.sum)

    _run(lane, bench, clock=False)
    total = F32(F32(-3.25) + F32(0.5))
    assert got["prod"] == _bits(F32(1.75) * F32(-0.625))
    assert got["sum"] == got["seg"] == _bits(total)
    assert got["exp"] == _bits(exp2_poly(np.array([total], F32), E)[0])
    assert abs(_f32(got["exp"]) / np.exp2(np.float64(total)) - 1) < 1e-5
    assert got["recip"] == _bits(F32(1) / F32(3))
    assert got["max"] == _bits(-0.5)
    assert got["seg_max"] == _bits(2.0) and got["seg_start"] == _bits(1.5)
    assert got["fmulx"] == _bits(F32(F32(1.75) * F32(-0.625)) - F32(2.5))


def test_lane_exp_pipeline_latency():
    """With ``exp_stages=3`` the exp of the operands shows 3 cycles later (the same bits), while the
    adder's sum is combinational."""
    lane = Lane1D(4, exp_stages=3)
    xs = [-0.75, -2.5, -7.125, 0.0, -0.3]
    got = []

    async def bench(ctx):
        for t in range(len(xs) + 3):
            x = xs[t] if t < len(xs) else 0.0
            ctx.set(lane.aa, _bits(x))
            ctx.set(lane.ab, 0)
            got.append((ctx.get(lane.sum), ctx.get(lane.exp)))
            await ctx.tick()

    _run(lane, bench)
    want = exp2_poly(np.array(xs, F32), 4)
    assert [s for s, _e in got[:len(xs)]] == [_bits(x) for x in xs]
    assert [e for _s, e in got[3:]] == [_bits(w) for w in want]


def test_lane_recip_pipeline_latency():
    """With ``recip_stages=5`` the reciprocal of ``recip_in`` shows 5 cycles later (numpy's correctly
    rounded ``1 / x``), while the exp stays combinational (``exp_stages=0``)."""
    lane = Lane1D(4, recip_stages=5)
    xs = [3.0, -0.1, 7.5e37, 1.0, 2.0 ** -120, 0.3]
    got = []

    async def bench(ctx):
        for t in range(len(xs) + 5):
            ctx.set(lane.recip_in, _bits(xs[t] if t < len(xs) else 1.0))
            ctx.set(lane.aa, _bits(-0.5))
            got.append((ctx.get(lane.recip), ctx.get(lane.exp)))
            await ctx.tick()

    _run(lane, bench)
    assert [r for r, _e in got[5:]] == [_bits(F32(1) / F32(x)) for x in xs]
    assert got[0][1] == _bits(exp2_poly(np.array([-0.5], F32), 4)[0])


@pytest.mark.parametrize("mul, A", [("dsp", 3), ("dsp_reg_sim", 3), ("dsp", 12)])
def test_lane_mul_add_pipeline_latency(mul, A):
    """``mul_stages=2``, ``add_stages=A``, ``exp_stages=1``: ``prod`` shows 2 cycles after its operands,
    ``sum`` A after, FMULX's ``s*c - m*c`` (``neg_mc`` given with ``s`` and ``c``) 2 + A after, and the
    exp of ``aa + ab`` A + 1 after; every value numpy float32's, with inferred multipliers and with the
    ECP5 DSP blocks' registered model (``dsp_reg_sim``: what ``dsp_reg`` synthesizes). A = 12: the adder's
    11 cut points and its operands (the ``fmulx`` select) registered in front of them."""
    lane = Lane1D(4, exp_stages=1, mul_stages=2, add_stages=A, mul=mul)
    rng = np.random.default_rng(3)
    a, b, c, d, mc = (rng.uniform(-4, 4, 8).astype(F32) for _ in range(5))
    n = len(a)
    for fmulx in (0, 1):
        got = []

        async def bench(ctx):
            ctx.set(lane.fmulx, fmulx)
            for t in range(n + 2 + A):
                k = min(t, n - 1)
                for port, v in ((lane.ma, a[k]), (lane.mb, b[k]), (lane.aa, c[k]), (lane.ab, d[k]),
                                (lane.neg_mc, -mc[k])):
                    ctx.set(port, _bits(v))
                got.append((ctx.get(lane.prod), ctx.get(lane.sum), ctx.get(lane.exp)))
                await ctx.tick()

        _run(lane, bench)
        assert [p for p, _s, _e in got[2:2 + n]] == [_bits(x) for x in a * b]
        if fmulx:
            assert [s for _p, s, _e in got[2 + A:2 + A + n]] == [_bits(x) for x in (a * b).astype(F32) - mc]
        else:
            assert [s for _p, s, _e in got[A:A + n]] == [_bits(x) for x in c + d]
            want = exp2_poly((c + d).astype(F32), 4)
            assert [e for _p, _s, e in got[A + 1:A + 1 + n]] == [_bits(x) for x in want]


def test_lane_max_pipeline_latency():
    """``max_stages=2`` (the lane's pipelined compare): ``max`` shows 2 cycles after its operands --
    ``max(m_in, bm_in)``, or with ``fmax`` ``max(chain_in, s_in)`` (``s_in`` itself at ``row_start``)
    -- numpy's float32 maximum of finite values; ``seg`` is then the adder's link only."""
    lane = Lane1D(4, max_stages=2)
    rng = np.random.default_rng(5)
    m_in, bm_in, chain, s = (rng.uniform(-4, 4, 6).astype(F32) for _ in range(4))
    fmax, start = [0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 0, 1]
    n = len(m_in)
    got = []

    async def bench(ctx):
        ctx.set(lane.aa, _bits(1.5))
        for t in range(n + 2):
            k = min(t, n - 1)
            for port, v in ((lane.m_in, m_in[k]), (lane.bm_in, bm_in[k]), (lane.chain_in, chain[k]),
                            (lane.s_in, s[k])):
                ctx.set(port, _bits(v))
            ctx.set(lane.fmax, fmax[k])
            ctx.set(lane.row_start, start[k])
            got.append((ctx.get(lane.max), ctx.get(lane.seg)))
            await ctx.tick()

    _run(lane, bench)
    want = [np.maximum(m_in[k], bm_in[k]) if not fmax[k] else (s[k] if start[k] else np.maximum(chain[k], s[k]))
            for k in range(n)]
    assert [x for x, _seg in got[2:2 + n]] == [_bits(w) for w in want]
    assert all(seg == _bits(1.5) for _x, seg in got)
