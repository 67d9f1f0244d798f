"""Port registers for timing: any component with every input and output port behind a flip-flop.

Out of context, nextpnr times only register-to-register paths: a bare design's Fmax leaves out
every path that starts at an input port (e.g. a command decoded in the cycle it is taken) or ends
at an output port. ``PortRegs(inner)`` has ``inner``'s signature; each input member is registered
on its way in and each output member on its way out, so those paths start and end at flip-flops
and the reported Fmax includes them (as it would behind a host that drives the ports from
registers, such as the AXI wrapper).

For synthesis only: the extra cycle on each side breaks valid/ready handshakes (a ``ready`` seen a
cycle late), so the wrapped design is not meant to be simulated against the models.
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Flow


class PortRegs(wiring.Component):
    """``inner`` with a register on every port (see the module docstring)."""

    def __init__(self, inner: wiring.Component):
        self.inner = inner
        super().__init__(inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        outer_ports = self.signature.flatten(self)
        inner_ports = inner.signature.flatten(inner)
        for (path, member, outer), (_, _, inner_value) in zip(outer_ports, inner_ports):
            if member.flow == Flow.In:
                m.d.sync += inner_value.eq(outer)
            else:
                m.d.sync += outer.eq(inner_value)
        return m


def port_regs_verilog(component: wiring.Component, name: str) -> str:
    """Verilog of ``PortRegs(component)`` as module ``name``."""
    from amaranth.back import verilog as amaranth_verilog

    return amaranth_verilog.convert(PortRegs(component), name=name, emit_src=False)


def port_regs_top(design) -> tuple[str, str]:
    """(Verilog, top module name ``<top>_regs``) of an :class:`~rtl.design.RtlDesign` behind port registers."""
    top = f"{design.toplevel}_regs"
    return port_regs_verilog(design.component(), top), top
