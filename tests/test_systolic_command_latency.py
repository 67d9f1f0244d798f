"""The systolic controller's command pipeline (amaranth.sim, no HDL simulator needed).

A taken command is registered, decoded into the queue a cycle later and launched: on an idle
engine its tile starts later than a command decoded as it is taken would; queued behind a running
tile it starts back to back. ``PortRegs`` (rtl/lib/port_regs.py) delays every port by one cycle.
"""
from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from archsim.templates.systolic import SystolicParams
from archsim.templates.systolic.tile import SystolicTile
from rtl.systolic.config import COMMAND_LATENCY_CYCLES, DATAFLOW_CODES, FETCH_LATENCY, SystolicConfig
from rtl.systolic.controller import TileController


def _run(params: SystolicParams, tiles: list[dict], offer_at: list[int], cycles: int = 200):
    """Offer ``tiles`` (command fields) from the given cycles on; return (take, start, done) cycles."""
    dut = TileController(SystolicConfig.from_params(params))
    takes, starts, dones = [], [], []

    async def bench(ctx):
        pending = 0
        for cyc in range(cycles):
            offering = pending < len(tiles) and cyc >= offer_at[pending]
            ctx.set(dut.cmd.valid, int(offering))
            if offering:
                t = tiles[pending]
                for name in ("m", "k", "n"):
                    ctx.set(getattr(dut.cmd.payload, name), t[name])
                ctx.set(dut.cmd.payload.dataflow, DATAFLOW_CODES[t["dataflow"]])
                ctx.set(dut.cmd.payload.preload_hidden, int(t.get("preload_hidden", False)))
            # values seen in this cycle (before its closing edge)
            if ctx.get(dut.tile_start):
                starts.append(cyc)
            if ctx.get(dut.tile_done):
                dones.append(cyc)
            if offering and ctx.get(dut.cmd.ready):
                takes.append(cyc)
                pending += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return takes, starts, dones


def _params(pipe: int, preload: str = "double_buffered") -> SystolicParams:
    return SystolicParams(rows=4, cols=4, dataflow="ws", preload=preload, mult_pipeline_stages=pipe)


@pytest.mark.parametrize("pipe", [0, 1])
def test_idle_engine_starts_a_tile_after_the_counted_registers(pipe):
    # hand count of the registers between the take and contract cycle 0 (tile_start):
    # command register, queue head, launch (the fetch-level FSM), RAM address register, read data,
    # edge register, and (P = 0 only) the product register that the contract hides
    hand_count = 3 + 3 + (1 - pipe)
    assert COMMAND_LATENCY_CYCLES + FETCH_LATENCY + 1 - pipe == hand_count
    takes, starts, _ = _run(_params(pipe), [dict(dataflow="ws", m=5, k=4, n=4)], [3])
    assert takes == [3]
    assert starts == [3 + hand_count]


@pytest.mark.parametrize("dataflow,preload,hidden", [("ws", "serial", False), ("ws", "double_buffered", True),
                                                     ("os", "double_buffered", False)])
def test_commands_queued_behind_a_tile_start_back_to_back(dataflow, preload, hidden):
    params = SystolicParams(rows=4, cols=4, dataflow=dataflow, preload=preload)
    # short tiles (m = k = n = 1: the shortest the contract allows) so the decode has the least room
    tiles = [dict(dataflow=dataflow, m=1, k=1, n=1, preload_hidden=hidden and i > 0) for i in range(5)]
    takes, starts, dones = _run(params, tiles, [0] * len(tiles))
    assert len(starts) == len(dones) == len(tiles)
    # each tile starts in the cycle after the previous one's last output (the models' back to back)
    assert [s - d for s, d in zip(starts[1:], dones[:-1])] == [1] * (len(tiles) - 1)
    # and each lasts what the timing contract says (fast model's closed form)
    from archsim.templates.systolic.fast import tile_cycles

    for i, t in enumerate(tiles):
        tile = SystolicTile(dataflow=t["dataflow"], m=1, k=1, n=1, preload_hidden=t["preload_hidden"])
        assert dones[i] - starts[i] + 1 == tile_cycles(tile, params)
