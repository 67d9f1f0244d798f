"""The LUT core's components on their own (Amaranth simulator, no Verilog simulator needed):
the pipelined table generator against a numpy reference written here, at several latencies."""
from __future__ import annotations

import numpy as np
import pytest

F32 = np.float32


def _reference(a: np.ndarray, idx: int, integer: bool):
    """``sum_j s_j a_j`` (s_j = +1 where bit j of idx is 1, else -1), in j order; fp32: first term
    exact, each add rounded (numpy float32)."""
    signs = [1 if (idx >> j) & 1 else -1 for j in range(len(a))]
    if integer:
        return int(sum(int(x) * s for x, s in zip(a, signs)))
    t = F32(a[0]) * F32(signs[0])
    for x, s in zip(a[1:], signs[1:]):
        t = F32(t + F32(x) * F32(s))
    return t


def _run_generator(gen, words, idxs, is_fp, fp16):
    """Feed one operand per cycle; return the entries seen ``gen.latency`` cycles later."""
    from amaranth.sim import Simulator

    got = []

    async def tb(ctx):
        n = len(words)
        for t in range(n + gen.latency):
            if t < n:
                ctx.set(gen.word, words[t])
                ctx.set(gen.idx, idxs[t])
                ctx.set(gen.is_fp, is_fp)
                ctx.set(gen.fp16, fp16)
            if t >= gen.latency:
                got.append(ctx.get(gen.entry))
            if gen.latency:
                await ctx.tick()
            else:  # combinational: no clock domain
                await ctx.delay(1e-6)

    sim = Simulator(gen)
    if gen.latency:
        sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return got


@pytest.mark.parametrize("latency", [0, 1, 4, 7, 9])
@pytest.mark.parametrize("fmt", ["int8", "fp16", "bf16"])
def test_table_generator_matches_numpy_at_every_latency(fmt, latency):
    """One entry per cycle, back to back, each exactly ``latency`` cycles after its operands."""
    _check_generator(fmt, latency, False)


@pytest.mark.parametrize("latency", [7, 34, 37])
@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_table_generator_with_forcing_as_data_matches_numpy(fmt, latency):
    """The timing builds' generator (fp32 adds with their forcing as data; 34: 11 stages an add; 37: the
    D = 16 build's precompute, 12 stages an add, the significand add split) gives the same entries, as late."""
    _check_generator(fmt, latency, True)


def test_the_fp32_adders_agree_with_numpy_on_finite_operands():
    """The core's fp32 adders (``forcing_as_data`` off / on, and on with ``split_add``) equal numpy's float32 sum on finite
    patterns: normals over every binade, subnormals, sums that overflow, near-cancellations."""
    from amaranth import Module
    from amaranth.sim import Simulator

    from rtl.lut.precompute import fp32_adder

    rng = np.random.default_rng(5)
    n = 400
    exps = np.concatenate([rng.integers(0, 255, n // 4), rng.integers(0, 3, n // 4), rng.integers(250, 255, n // 4),
                           rng.integers(110, 140, n - 3 * (n // 4))])
    a = (rng.integers(0, 2, n).astype(np.uint32) << 31) | (exps.astype(np.uint32) << 23) | rng.integers(0, 1 << 23, n).astype(np.uint32)
    b = rng.permutation(a)
    b[:50] = a[:50] ^ np.uint32(1 << 31) ^ rng.integers(0, 4, 50).astype(np.uint32)  # x - (x +- a few ulp)
    with np.errstate(over="ignore"):
        want = (a.view(F32) + b.view(F32)).view(np.uint32)
    m = Module()
    m.submodules.plain = plain = fp32_adder(0, False)
    m.submodules.as_data = as_data = fp32_adder(0, True)
    m.submodules.split = split = fp32_adder(0, True, split_add=True)
    got = []

    async def tb(ctx):
        for x, y in zip(a.tolist(), b.tolist()):
            for u in (plain, as_data, split):
                ctx.set(u.a, x)
                ctx.set(u.b, y)
            got.append((ctx.get(plain.out), ctx.get(as_data.out), ctx.get(split.out)))

    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    for i, (p_out, d_out, s_out) in enumerate(got):
        assert p_out == d_out == s_out == int(want[i]), (hex(a[i]), hex(b[i]), hex(p_out), hex(d_out), hex(want[i]))


def _check_generator(fmt, latency, forcing_as_data):
    from rtl.lut.precompute import TableGenerator

    K, n = 4, 24
    rng = np.random.default_rng(latency * 7 + len(fmt))
    gen = TableGenerator(K, 16, 32, 13, True, latency, forcing_as_data)  # a mixed build: int and fp arithmetics
    if fmt == "int8":
        acts = rng.integers(-128, 128, (n, K))
        codes = acts & 0xFF
    else:  # magnitudes over many binades so the adds round
        x = (rng.standard_normal((n, K)) * np.exp2(rng.integers(-8, 9, (n, K)))).astype(F32)
        if fmt == "fp16":
            acts = x.astype(np.float16).astype(F32)
            codes = acts.astype(np.float16).view(np.uint16).astype(np.int64)
        else:
            codes = (x.view(np.uint32) >> 16).astype(np.int64)
            acts = (codes.astype(np.uint32) << 16).view(F32)
    words = [sum(int(c) << (16 * j) for j, c in enumerate(row)) for row in codes]
    idxs = [int(i) for i in rng.integers(0, 1 << K, n)]
    got = _run_generator(gen, words, idxs, int(fmt != "int8"), int(fmt == "fp16"))
    for t in range(n):
        want = _reference(acts[t], idxs[t], fmt == "int8")
        if fmt == "int8":
            assert got[t] & 0x1FFF == want & 0x1FFF, (t, got[t], want)
        else:
            assert got[t] == int(np.array(want, F32).view(np.uint32)), (t, hex(got[t]), want)


def test_table_generator_latency_is_spent_as_declared():
    """The adds take the stages that fit; the rest of the latency is a delay (never more, never less)."""
    from rtl.lut.precompute import TableGenerator, fp_add_max_stages

    top = fp_add_max_stages()
    g = TableGenerator(4, 16, 32, None, True, 1 + 3 * 2 + 1)
    assert (g.add_stages, g.pad) == (min(2, top), 1 + 3 * (2 - min(2, top)))
    g = TableGenerator(1, 8, 11, 11, False, 3)  # K = 1: no add, the term register and a delay of 2
    assert (g.add_stages, g.pad) == (0, 2)
    # with the forcing as data: the split adder (11 + 1 stages) once 3 adds have 12 cycles each, not before
    g = TableGenerator(4, 16, 32, None, True, 1 + 3 * 12, True)
    assert (g.add_stages, g.pad, g.split_add) == (12, 0, True)
    g = TableGenerator(4, 16, 32, None, True, 1 + 3 * 12 - 1, True)
    assert (g.add_stages, g.pad, g.split_add) == (11, 2, False)
    assert not TableGenerator(4, 16, 32, None, True, 1 + 3 * 12, False).split_add


def _core(**over):
    from archsim.spec.load import load_arch
    from archsim.templates.lut import conformance
    from rtl.lut.design import LutConfig, LutCore

    arch = load_arch(conformance.base_arch, {**conformance.rtl_arch, **over})
    return LutCore(LutConfig.from_params(arch.params, {}))


def _clocked(dut, testbench):
    """Run ``testbench`` on ``dut`` in the Amaranth simulator with one 1 MHz clock."""
    from amaranth.sim import Simulator

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()


async def _issue(ctx, core, row_blocks, groups, col_blocks):
    """Present one int4 x int8 command (bank 0, no accumulate, tables built here) for a cycle, then
    wait a cycle: the core has taken it (busy) or refused it (error) by then."""
    from rtl.lut.design import AFMT, WFMT

    cmd = {"cmd_row_blocks": row_blocks, "cmd_groups": groups, "cmd_col_blocks": col_blocks,
           "cmd_wfmt": WFMT["int4"], "cmd_afmt": AFMT["int8"], "cmd_accumulate": 0, "cmd_precomputed": 0,
           "cmd_bank": 0}
    for k, v in cmd.items():
        ctx.set(getattr(core, k), v)
    ctx.set(core.cmd_valid, 1)
    await ctx.tick()
    ctx.set(core.cmd_valid, 0)
    await ctx.tick()


@pytest.mark.parametrize("target, refused", [("other_bank", False), ("own_bank", True), ("out_other_bank", False),
                                             ("out_own_bank", True)])
def test_operand_writes_while_a_tile_runs(target, refused):
    """While a tile runs, a write into the operand or output bank it does not use is taken (that it lands
    is what co-simulation checks: the driver writes tile i + 1's operands and psums during tile i); one
    into its own bank is dropped and raises the sticky error."""
    from rtl.lut.design import BUFS

    core = _core()
    seen = {}

    async def tb(ctx):
        await _issue(ctx, core, row_blocks=1, groups=4, col_blocks=1)
        seen["busy"] = ctx.get(core.busy)
        buf = BUFS["out"] if target.startswith("out") else BUFS["act"]
        ctx.set(core.wr_buf, buf)
        ctx.set(core.wr_bank, 0 if target.endswith("own_bank") else 1)
        ctx.set(core.wr_addr, 3)
        ctx.set(core.wr_data, 0x5A)
        ctx.set(core.wr_en, 1)
        await ctx.tick()
        ctx.set(core.wr_en, 0)
        await ctx.tick()
        seen["error"] = ctx.get(core.error)
        for _ in range(200):
            if not ctx.get(core.busy):
                break
            await ctx.tick()
        seen["busy_after"] = ctx.get(core.busy)

    _clocked(core, tb)
    assert seen["busy"] == 1 and seen["busy_after"] == 0
    assert seen["error"] == int(refused)


@pytest.mark.parametrize("latency", [0, 4])
def test_precompute_unit_fills_bank_0_then_bank_1(latency):
    """Two steps of int8 tables (M2, K4 symmetric: 8 stored entries a row, 4 a cycle): step 0 into bank
    0, started by ``restart``; step 1 into bank 1, started by ``go``; each entry against numpy
    (sum_j +-a_j with + where bit j of idx = e + 8 is 1), landed ``pre + latency`` cycles after its start."""
    from archsim.spec.load import load_arch
    from archsim.templates.lut import conformance
    from rtl.lut.design import LutConfig
    from rtl.lut.precompute import PrecomputeUnit

    arch = load_arch(conformance.base_arch, {**conformance.rtl_arch, "activation_formats": ["int8"],
                                             "precompute_pipeline_cycles": latency})
    cfg = LutConfig.from_params(arch.params, {})
    unit = PrecomputeUnit(cfg)
    tm, K, E, eb = cfg.tile_m, cfg.group_k, cfg.entries, cfg.entry_bits
    rng = np.random.default_rng(latency)
    acts = rng.integers(-128, 128, (2, tm, K))  # (step, row, j)
    words = [sum((int(a) & 0xFF) << (8 * i) for i, a in enumerate(acts[s].reshape(-1))) for s in range(2)]
    banks = {}

    async def tb(ctx):
        ctx.set(unit.restart, 1)
        ctx.set(unit.build, 1)
        await ctx.tick()
        ctx.set(unit.restart, 0)
        for cycle in range(2 * (cfg.pre_cycles + latency) + 4):
            step = ctx.get(unit.act_addr)
            ctx.set(unit.act_data, words[min(step, 1)])
            ctx.set(unit.go, int(cycle == cfg.pre_cycles + latency))  # the next build starts after step 0 landed
            await ctx.tick()
            if cycle == cfg.pre_cycles + latency - 1:
                banks[0] = ctx.get(unit.tables)
        banks[1] = ctx.get(unit.tables)

    _clocked(unit, tb)
    mask = (1 << eb) - 1
    for b, step in ((0, 0), (1, 1)):
        for r in range(tm):
            for e in range(E):
                idx = e + E  # stored entries of a symmetric table: top index bit 1
                want = sum(int(acts[step, r, j]) * (1 if (idx >> j) & 1 else -1) for j in range(K))
                got = (banks[b] >> (((b * tm + r) * E + e) * eb)) & mask
                assert got == want & mask, (b, r, e, got, want)


@pytest.mark.parametrize("col_blocks, row_blocks, taken", [(32, 1, True), (33, 1, False), (1, 65, False),
                                                           (1, 64, True)])
def test_a_command_over_the_buffers_is_refused(col_blocks, row_blocks, taken):
    """The controller's counters are as wide as the buffers' addresses: a command that cannot fit them
    (int4: col_blocks x 4 planes > 128 weight entries; row blocks > 64 activation / table entries) sets
    the sticky error and does not start, one that just fits starts (default depths, by hand)."""
    core = _core()
    seen = {}

    async def tb(ctx):
        await _issue(ctx, core, row_blocks=row_blocks, groups=1, col_blocks=col_blocks)
        seen["busy"], seen["error"] = ctx.get(core.busy), ctx.get(core.error)

    _clocked(core, tb)
    assert (seen["busy"], seen["error"]) == (int(taken), int(not taken))
