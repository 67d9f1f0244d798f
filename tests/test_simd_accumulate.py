"""The SIMD PE's interleaved fp32 accumulator (rtl/simd/accumulate.py) against the models' order.

The expected sums come from archsim.templates.simd.interleave.ring_sum (the order the fast and
detailed models use; those two are checked against two independent scalar references in
tests/test_simd_rtl.py), computed with numpy float32 adds.
"""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from archsim.templates.simd.interleave import ring_sum
from rtl.simd.accumulate import InterleavedSum

QNAN = 0x7FC00000


def _bits(x: np.float32) -> int:
    return QNAN if np.isnan(x) else int(np.float32(x).view(np.uint32))


def _runs(rng, count: int):
    """Random runs: (cycles, [(cycle, fp32 value) ...], idle cycles after)."""
    runs = []
    for _ in range(count):
        n = int(rng.choice([1, 2, 3, int(rng.integers(1, 25))]))
        arr = []
        for c in range(n):
            if rng.random() < 0.7:
                v = np.float32(rng.standard_normal() * 2.0 ** int(rng.integers(-20, 20)))
                if rng.random() < 0.05:
                    v = np.float32(-0.0)
                arr.append((c, v))
        runs.append((n, arr, int(rng.choice([0, 0, 0, 3]))))
    return runs


def simulate(slots: int, runs) -> list[int]:
    dut = InterleavedSum(slots)
    got = []
    total = sum(n + idle for n, _a, idle in runs) + dut.latency + 2

    async def tb(ctx):
        for n, arr, idle in runs:
            vals = dict(arr)
            for c in range(n):
                ctx.set(dut.start, c == 0)
                ctx.set(dut.end, c == n - 1)
                ctx.set(dut.in_valid, c in vals)
                ctx.set(dut.in_x, _bits(vals[c]) if c in vals else 0x12345678)  # junk when invalid
                await ctx.tick()
                if ctx.get(dut.out_valid):
                    got.append(ctx.get(dut.out))
            for _ in range(idle):
                ctx.set(dut.start, 0), ctx.set(dut.end, 0), ctx.set(dut.in_valid, 0)
                await ctx.tick()
                if ctx.get(dut.out_valid):
                    got.append(ctx.get(dut.out))
        ctx.set(dut.start, 0), ctx.set(dut.end, 0), ctx.set(dut.in_valid, 0)
        for _ in range(dut.latency + 2):
            await ctx.tick()
            if ctx.get(dut.out_valid):
                got.append(ctx.get(dut.out))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    assert total > 0
    return got


@pytest.mark.parametrize("slots", [2, 3, 4, 8, 11])
def test_interleaved_sum_follows_the_models_order(slots):
    rng = np.random.default_rng(slots)
    runs = _runs(rng, 40)
    want = [_bits(ring_sum([(c, np.array([v], np.float32)) for c, v in arr], n, slots, 1)[0])
            for n, arr, _idle in runs]
    got = simulate(slots, runs)
    assert len(got) == len(want)
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, f"runs {bad[:5]} differ: {[hex(got[i]) for i in bad[:3]]} != {[hex(want[i]) for i in bad[:3]]}"


def test_the_order_is_not_a_running_sum():
    """The check above can fail: a run whose running sum rounds differently from the interleaved one."""
    big, small = np.float32(2.0 ** 24), np.float32(1.0)
    arr = [(0, big), (1, small), (2, small), (3, -big)]  # running: 0.0 ; slots of 2: (big+1 -> big) ...
    running = np.float32(0)
    for _c, v in arr:
        running = np.float32(running + v)
    inter = ring_sum([(c, np.array([v], np.float32)) for c, v in arr], 4, 2, 1)[0]
    assert _bits(inter) != _bits(running)
    assert simulate(2, [(4, arr, 0)]) == [_bits(inter)]
