"""rtl/lib/delay_ram.py: the RAM delay line gives the input of exactly ``cycles`` cycles before (zeros
before that), checked against a Python list of what was driven (not against the register chain it
replaces, which shares no code with the test)."""
from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from rtl.lib.delay_ram import MIN_CYCLES, DelayRam


@pytest.mark.parametrize("width, cycles", [(64, 130), (32, 4), (7, 16), (5, 17), (3, 5)])
def test_the_output_is_the_input_of_cycles_ago(width, cycles):
    dut = DelayRam(width, cycles)
    rng = random.Random(cycles)
    driven = [rng.getrandbits(width) for _ in range(3 * dut.depth + 5)]
    seen = []

    async def tb(ctx):
        for v in driven:
            ctx.set(dut.i, v)
            seen.append(ctx.get(dut.o))  # the output during this cycle
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    want = [0] * cycles + driven[:len(driven) - cycles]
    assert seen == want
    assert dut.latency == cycles
    assert cycles - 2 <= dut.depth < 2 * (cycles - 2)  # (64, 130), (32, 4): the slot read is written that cycle


def test_a_short_delay_is_refused():
    with pytest.raises(ValueError, match="cycles must be >= 4"):
        DelayRam(8, MIN_CYCLES - 1)
