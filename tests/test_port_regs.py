"""rtl/lib/port_regs.py: every port of a component behind a register (for Fmax with port paths)."""
from __future__ import annotations

import re

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from archsim.templates.systolic import SystolicParams
from rtl.lib.port_regs import PortRegs, port_regs_top


class _Adder(wiring.Component):
    def __init__(self):
        super().__init__({"a": In(8), "b": In(8), "s": Out(9)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.s.eq(self.a + self.b)
        return m


def test_port_regs_delay_inputs_and_outputs_by_one_cycle_each():
    from rtl.lib.port_regs import PortRegs

    dut = PortRegs(_Adder())
    seen = []

    async def bench(ctx):
        for cyc in range(6):
            ctx.set(dut.a, 10 * cyc)
            ctx.set(dut.b, 1)
            seen.append(ctx.get(dut.s))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # cycle c shows the sum of the inputs set in cycle c - 2 (in register, out register)
    assert seen == [0, 0, 1, 11, 21, 31]


def test_port_regs_top_keeps_the_designs_ports():
    from rtl.generate import design_for

    design = design_for(SystolicParams(rows=2, cols=2, dataflow="ws"))
    verilog, top = port_regs_top(design)
    assert top == "archsim_systolic_regs"
    header = re.search(r"module archsim_systolic_regs\((.*?)\);", verilog, re.S)
    assert header, "no module archsim_systolic_regs"
    ports = {p.strip() for p in header.group(1).split(",")}
    assert ports == {p.name for p in design.ports()}


def test_cli_synth_wrapper_regs_synthesizes_the_registered_top(monkeypatch, capsys):
    import rtl.synth
    from archsim.cli import main

    seen = {}

    def fake_synth(verilog, top, **kwargs):  # the flow itself is tested in test_rtl_synth.py
        seen.update(top=top, has_module=f"module {top}(" in verilog)
        return {"target": kwargs["target"], "top": top, "luts": 1, "ffs": 1, "dsps": 0, "cells": 2}

    monkeypatch.setattr(rtl.synth, "synthesize_verilog", fake_synth)
    assert main(["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--depth", "16", "--target", "generic", "--wrapper", "regs", "--no-cache"]) == 0
    assert seen == {"top": "archsim_systolic_regs", "has_module": True}
