"""The host signature (rtl/lib/host.py) and the systolic top that implements it (Amaranth only)."""
from __future__ import annotations

import pytest
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from archsim.templates.systolic import SystolicParams
from rtl import design_for
from rtl.lib.host import HOST_MEMBERS, HOST_PORTS, host_signature, host_sizes, implements_host
from rtl.systolic import SystolicAccelerator, SystolicConfig, systolic_signature


def _cfg(rows=2, cols=3):
    return SystolicConfig.from_params(SystolicParams(rows=rows, cols=cols, dataflow="ws"))


def test_host_signature_ports_and_sizes():
    sig = host_signature(8, buf_bits=2, addr_bits=5, wr_data_bits=40, rd_data_bits=96)
    assert tuple(sig.members) == HOST_MEMBERS
    assert implements_host(sig)
    assert host_sizes(sig) == {"cmd_bits": 8, "buf_bits": 2, "addr_bits": 5, "wr_data_bits": 40,
                               "rd_addr_bits": 5, "rd_data_bits": 96}
    names = ["__".join(path) for path, m in sig.members.flatten() if m.is_port]
    assert sorted(names) == sorted(HOST_PORTS[2:])  # clk / rst come from the module


def test_a_signature_without_the_streams_is_not_a_host():
    flat = wiring.Signature({"cmd_valid": In(1), "cmd_ready": Out(1), "busy": Out(1)})
    assert not implements_host(flat)
    with pytest.raises(ValueError, match="host signature"):
        host_sizes(flat)
    # the right names with a wrong direction do not pass either
    members = dict(host_signature(8, buf_bits=2, addr_bits=5, wr_data_bits=8, rd_data_bits=8).members)
    members["rd_data"] = members["rd_data"].flip()
    assert not implements_host(wiring.Signature(members))


def test_systolic_top_implements_it_with_its_own_sizes():
    cfg = _cfg(2, 3)
    sig = systolic_signature(cfg)
    assert implements_host(sig) and "tile_start" in sig.members
    # 64-entry buffers: aw 6; wr data max(3 lanes * 8, 3 * 32) = 96; results 3 * 32
    assert host_sizes(sig) == {"cmd_bits": 43, "buf_bits": 2, "addr_bits": 6, "wr_data_bits": 96,
                               "rd_addr_bits": 6, "rd_data_bits": 96}
    ports = [p.name for p in design_for(SystolicParams(rows=2, cols=3, dataflow="ws")).ports()]
    assert ports[:len(HOST_PORTS)] == list(HOST_PORTS)


def test_systolic_result_stream_holds_a_result_the_host_does_not_take():
    """Write two output entries, read them with rd_data.ready low for a while: the first result
    waits (valid, same payload), no second request is taken until it goes."""
    from amaranth.sim import Simulator

    cfg = _cfg(2, 2)
    dut = SystolicAccelerator(cfg)
    entries = {5: (7 << 32) | 11, 6: (13 << 32) | 17}  # lane 0 low, lane 1 high
    seen = []

    async def bench(ctx):
        for addr, word in entries.items():
            ctx.set(dut.wr.valid, 1)
            ctx.set(dut.wr.payload, {"buf": 2, "addr": addr, "data": word})
            await ctx.tick()
        ctx.set(dut.wr.valid, 0)
        ctx.set(dut.rd_data.ready, 0)
        ctx.set(dut.rd_addr.valid, 1)
        ctx.set(dut.rd_addr.payload, 5)
        assert ctx.get(dut.rd_addr.ready)
        await ctx.tick()  # request for 5 taken
        ctx.set(dut.rd_addr.payload, 6)
        for _ in range(4):  # the host does not take the result
            assert ctx.get(dut.rd_data.valid) and ctx.get(dut.rd_data.payload) == entries[5]
            assert not ctx.get(dut.rd_addr.ready)
            await ctx.tick()
        ctx.set(dut.rd_data.ready, 1)
        for _ in range(6):
            if ctx.get(dut.rd_data.valid):
                seen.append(ctx.get(dut.rd_data.payload))
            if ctx.get(dut.rd_addr.ready) and ctx.get(dut.rd_addr.valid) and ctx.get(dut.rd_addr.payload) == 6:
                await ctx.tick()
                ctx.set(dut.rd_addr.valid, 0)
                continue
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [entries[5], entries[6]]
