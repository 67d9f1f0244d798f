"""One processing element of the systolic array: operand registers, stationary bank(s), MAC.

PE(r, c) holds ``x`` (left operand, moving right), ``sh`` (shadow / moving operand, moving
down), ``w`` (active stationary operand, double-buffered builds only), ``psum`` (partial sum
moving down in WS/IS; the accumulator in OS) and ``prod`` (the registered product, in the
DSP's output register with ``ecp5_dsp``). All arithmetic is two's complement and wraps at the accumulator width, like
archsim's models. Outputs a neighbour does not use are removed by synthesis.

With ``pe_style="tpe"`` (``cfg.carry_save``) the PE has no product register and no carry-propagate
adder: the radix-4 Booth partial products of this cycle's operands are compressed together with the
partial sum, which is a (sum, carry) pair of registers (``psum`` / ``psum_c``, and the result bus
pair in OS); the array resolves a pair in one registered adder per column as the value leaves. The
controller presents the OS flags and ``os_acc`` with the operands (one cycle earlier than for the
standard PE, whose product register delays the add), so the pair is written in the cycle the
standard PE writes its product, and the edge register in the cycle it writes its sum.
"""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.csa import booth_rows, compress
from rtl.systolic.config import SystolicConfig, acc_shape, lane_shape
from rtl.lib.ecp5 import mult18x18d


def pe_signature(cfg: SystolicConfig) -> wiring.Signature:
    lane, acc = lane_shape(cfg), acc_shape(cfg)
    members = {
        # left operand: this cycle's value and the value it takes next cycle (its register's D input)
        "a": In(lane), "a_next": In(lane), "a_out": Out(lane),
        # moving / shadow operand from the PE above (sh_in_next: its next value)
        "sh_in": In(lane), "sh_in_next": In(lane), "sh_out": Out(lane), "sh_next": Out(lane),
        "psum_in": In(acc), "psum": Out(acc),
        # controls: shift / swap / os on the operand side, os_acc with the partial sums
        "shift": In(1), "swap": In(1), "os": In(1), "os_acc": In(1),
    }
    if cfg.has_os:
        # OS flags travelling with the left operand: bit 0 first MAC (clear), bit 1 last MAC; the PE
        # drives its column's result bus with the accumulator in the cycle after its last MAC
        members.update({"flags": In(2), "flags_out": Out(2), "bus": Out(acc)})
    if cfg.carry_save:  # the carry halves of the partial sum (and of the OS result bus)
        members.update({"psum_c_in": In(acc), "psum_c": Out(acc)})
        if cfg.has_os:
            members["bus_c"] = Out(acc)
    return wiring.Signature(members)


class ProcessingElement(wiring.Component):
    """One MAC of the array (see the module docstring); ``cfg`` selects the datapath."""

    def __init__(self, cfg: SystolicConfig, top_row: bool = False):
        self.cfg = cfg
        self.top_row = top_row  # carry-save PEs: the partial sum from above is known to be zero
        super().__init__(pe_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        lw = cfg.lane_bits
        lane, acc = lane_shape(cfg), acc_shape(cfg)

        x = Signal(lane)
        m.d.sync += x.eq(self.a)
        m.d.comb += self.a_out.eq(x)
        if cfg.has_os:
            fl = Signal(2)
            m.d.sync += fl.eq(self.flags)
            m.d.comb += self.flags_out.eq(fl)

        sh = Signal(lane)
        if cfg.has_os and not cfg.has_wsis:
            # OS only: the moving operand shifts every cycle (values outside a tile's MACs are
            # never accumulated), so no enable and no mux in front of the DSP
            m.d.sync += sh.eq(self.sh_in)
            sh_next = self.sh_in
        else:
            with m.If(self.shift):
                m.d.sync += sh.eq(self.sh_in)
            sh_next = Mux(self.shift, self.sh_in, sh)
        m.d.comb += [self.sh_out.eq(sh), self.sh_next.eq(sh_next)]
        use_dsp = cfg.multiplier == "ecp5_dsp"
        if cfg.double_buffered and not use_dsp:
            w_act = Signal(lane, name="w")
            with m.If(self.swap):
                m.d.sync += w_act.eq(sh_next)
        else:
            w_act = sh
        if cfg.has_os and cfg.has_wsis:
            w = Mux(self.os, self.sh_in, w_act)
        elif cfg.has_os:
            w = self.sh_in
        else:
            w = w_act

        if cfg.carry_save:
            self._carry_save_mac(m, w)
            return m

        # the product register: always there. With P = 0 the operand side (a, sh, w) runs one
        # cycle ahead of the contract, so the registered product meets the partial sum in the
        # contract's cycle; with P = 1 the operands are on time and the product is the +1.
        prod_u = Signal(signed(2 * lw), name="prod")
        if use_dsp:
            # MULT18X18D: its A register loads a_next, so it holds a (a duplicate of the operand
            # register); its B register is the stationary operand itself: the active bank (loaded
            # from the shadow chain at a swap) when double-buffered, a copy of sh when serial, or
            # the moving operand (OS). Its output register is the product register.
            if cfg.has_os:
                b_data, b_en = self.sh_in_next, None
            elif cfg.double_buffered:
                b_data, b_en = sh_next, self.swap
            else:
                b_data, b_en = self.sh_in, self.shift
            p_out = Signal(36, name="dsp_p")
            m.submodules.dsp = mult18x18d(self.a_next, b_data, p_out, output_reg=True, b_enable=b_en)
            m.d.comb += prod_u.eq(p_out[:2 * lw])
        else:
            m.d.sync += prod_u.eq(self.a * w)
        f_u = self.flags if cfg.has_os else None  # the flags arrive with the product

        add_ws = self.psum_in
        if cfg.has_os:
            add_os = Mux(f_u[0], 0, self.psum)
            addend = Mux(self.os_acc, add_os, add_ws) if cfg.has_wsis else add_os
        else:
            addend = add_ws
        total = Signal(acc, name="sum")
        m.d.comb += total.eq(addend + prod_u)
        m.d.sync += self.psum.eq(total)
        if cfg.has_os:
            # the result bus term, one cycle after the last MAC: from the accumulator register
            last_q = Signal(name="last_q")
            m.d.sync += last_q.eq(f_u[1])
            m.d.comb += self.bus.eq(Mux(last_q, self.psum, 0))
        return m

    def _carry_save_mac(self, m, w):
        """``(psum, psum_c) <= compress(booth(a * w), addend pair)``: the TPE's merged multiply-accumulate."""
        cfg = self.cfg
        aw = cfg.acc_bits
        rows = booth_rows(m, self.a, w, aw, "pp")
        # the top row's partial sum from above is zero: leave it out of the tree (its constant rows would
        # give flip-flops of known value, on which yosys' generic flow stops: "Conflicting init values")
        ws_pair = (Const(0, aw), Const(0, aw)) if self.top_row else (self.psum_in, self.psum_c_in)
        if cfg.has_os:
            first = self.flags[0]  # flags arrive with the operands (see the module docstring)
            os_pair = (Mux(first, 0, self.psum), Mux(first, 0, self.psum_c))
            if cfg.has_wsis:
                pair = tuple(Mux(self.os_acc, o, i) for o, i in zip(os_pair, ws_pair))
            else:
                pair = os_pair
        else:
            pair = ws_pair
        addends = [v.as_unsigned() for v in pair if not (isinstance(v, Const) and v.value == 0)]
        s, c = compress(m, rows + addends, aw, "csa")
        m.d.sync += [self.psum.eq(s), self.psum_c.eq(c)]
        if cfg.has_os:
            last_q = Signal(name="last_q")
            m.d.sync += last_q.eq(self.flags[1])
            m.d.comb += [self.bus.eq(Mux(last_q, self.psum, 0)), self.bus_c.eq(Mux(last_q, self.psum_c, 0))]
