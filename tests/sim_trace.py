"""A cycle table of a component under amaranth.sim: drive its inputs per cycle, read its outputs.

``trace(dut, cycles, drive, probes)`` sets, in every cycle ``t``, the inputs ``drive(t)`` returns
(``[(signal, value), ...]``: Amaranth values are not hashable; anything not set keeps its value), then records each probe's value as
seen in that cycle (after the combinational logic settles, before the closing clock edge).
Components' own tests compare such tables with values worked out by hand.
"""
from __future__ import annotations

from amaranth.sim import Simulator


def trace(dut, cycles: int, drive, probes: dict) -> dict[str, list[int]]:
    seen = {name: [] for name in probes}

    async def bench(ctx):
        for t in range(cycles):
            for sig, value in drive(t) or ():
                ctx.set(sig, value)
            for name, sig in probes.items():
                seen[name].append(ctx.get(sig))
            await (ctx.tick() if clocked else ctx.delay(1e-8))

    sim = Simulator(dut)
    try:
        sim.add_clock(1e-8)
        clocked = True
    except NameError:  # a combinational component: no sync domain, one "cycle" is a time step
        clocked = False
    sim.add_testbench(bench)
    sim.run()
    return seen


def cycles_where(values) -> list[int]:
    """The cycles in which a 1-bit probe was high."""
    return [t for t, v in enumerate(values) if v]


async def offer_beat(ctx, dut, stream: str, fields: dict) -> tuple[int, int]:
    """Offer one beat on ``dut``'s valid/ready ``stream`` (payload fields by name, ``""`` for a plain payload)
    until it is taken; returns the cycles it waited and ``dut.busy`` in the cycle it was taken. The host
    overlap tests count with it which beats an engine takes while a tile runs."""
    s = getattr(dut, stream)
    for name, v in fields.items():
        ctx.set(getattr(s.payload, name) if name else s.payload, v)
    ctx.set(s.valid, 1)
    waited = 0
    while True:
        ready, busy = ctx.get(s.ready), ctx.get(dut.busy)
        await ctx.tick()
        if ready:
            break
        waited += 1
    ctx.set(s.valid, 0)
    return waited, busy
