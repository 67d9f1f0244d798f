"""One processing element of the systolic array: operand registers, stationary bank(s), MAC.

PE(r, c) holds ``x`` (left operand, moving right), ``sh`` (shadow / moving operand, moving
down), ``w`` (active stationary operand, double-buffered builds only), ``psum`` (partial sum
moving down in WS/IS; the accumulator in OS) and, with ``P = 1``, ``prod`` (registered
product). All arithmetic is two's complement and wraps at the accumulator width, like
archsim's models. Outputs a neighbour does not use are removed by synthesis.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.systolic.config import SystolicConfig, acc_shape, lane_shape
from rtl.systolic.ecp5 import mult18x18d


def pe_signature(cfg: SystolicConfig) -> wiring.Signature:
    lane, acc = lane_shape(cfg), acc_shape(cfg)
    members = {
        # left operand: this cycle's value and the value it takes next cycle (its register's D input)
        "a": In(lane), "a_next": In(lane), "a_out": Out(lane),
        # moving / shadow operand from the PE above (sh_in_next: its next value)
        "sh_in": In(lane), "sh_in_next": In(lane), "sh_out": Out(lane), "sh_next": Out(lane),
        "psum_in": In(acc), "psum": Out(acc), "total": Out(acc),
        "shift": In(1), "swap": In(1), "os": In(1),
    }
    if cfg.has_os:
        # OS flags travelling with the left operand: bit 0 first MAC (clear), bit 1 last MAC (drive the bus)
        members.update({"flags": In(2), "flags_out": Out(2), "bus": Out(acc)})
    return wiring.Signature(members)


class ProcessingElement(wiring.Component):
    """One MAC of the array (see the module docstring); ``cfg`` selects the datapath."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__(pe_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        lw, P = cfg.lane_bits, cfg.mult_pipeline_stages
        lane, acc = lane_shape(cfg), acc_shape(cfg)

        x = Signal(lane)
        m.d.sync += x.eq(self.a)
        m.d.comb += self.a_out.eq(x)
        if cfg.has_os:
            fl = Signal(2)
            m.d.sync += fl.eq(self.flags)
            m.d.comb += self.flags_out.eq(fl)

        sh = Signal(lane)
        with m.If(self.shift):
            m.d.sync += sh.eq(self.sh_in)
        sh_next = Mux(self.shift, self.sh_in, sh)
        m.d.comb += [self.sh_out.eq(sh), self.sh_next.eq(sh_next)]
        if cfg.double_buffered:
            w_act = Signal(lane, name="w")
            with m.If(self.swap):
                m.d.sync += w_act.eq(sh_next)
            w_next = Mux(self.swap, sh_next, w_act)
        else:
            w_act, w_next = sh, sh_next
        if cfg.has_os and cfg.has_wsis:
            w = Mux(self.os, self.sh_in, w_act)
        elif cfg.has_os:
            w = self.sh_in
        else:
            w = w_act

        f_u = None
        prod_u = Signal(signed(2 * lw), name="prod")
        if cfg.multiplier == "ecp5_dsp":
            # MULT18X18D: its input registers load a_next / w_next, so they hold a / w (duplicates
            # of the operand registers); with P = 1 its output register is the product register
            p_out = Signal(36, name="dsp_p")
            m.submodules.dsp = mult18x18d(self.a_next, w_next, p_out, output_reg=bool(P))
            m.d.comb += prod_u.eq(p_out[:2 * lw])
        else:
            mul = Signal(signed(2 * lw), name="mul")
            m.d.comb += mul.eq(self.a * w)
            if P:
                m.d.sync += prod_u.eq(mul)
                if cfg.has_os:
                    f_u = Signal(2, name="flags_p")
                    m.d.sync += f_u.eq(self.flags)
            else:
                m.d.comb += prod_u.eq(mul)
                f_u = self.flags if cfg.has_os else None

        add_ws = self.psum_in
        if cfg.has_os:
            add_os = Mux(f_u[0], 0, self.psum)
            addend = Mux(self.os, add_os, add_ws) if cfg.has_wsis else add_os
        else:
            addend = add_ws
        total = Signal(acc, name="sum")
        m.d.comb += total.eq(addend + prod_u)
        m.d.sync += self.psum.eq(total)
        m.d.comb += self.total.eq(total)
        if cfg.has_os:
            m.d.comb += self.bus.eq(Mux(f_u[1], total, 0))
        return m
