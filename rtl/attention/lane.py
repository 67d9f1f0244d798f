"""One lane of the attention array's 1D part (:class:`Lane1D`): the arithmetic of an element op
(the controller picks the operands and writes the results back). An fp32 multiplier and adder
(``fmulx``: the adder takes the product, ``s*c - m*c``), ``exp2`` of the adder's result (range
reduction and ``exp_macs - 1`` Horner steps: the library's :class:`rtl.lib.units.Exp2` with
``exp_stages`` pipeline registers, so ``exp`` is the result of the operands ``exp_stages``
cycles earlier), the correctly rounded reciprocal (the library's restoring divider
:class:`rtl.lib.recip.Recip` with ``recip_stages`` registers: ``recip`` is the reciprocal of
``recip_in`` ``recip_stages`` cycles earlier; every other result is combinational), the
running-max compare and the lane's link of FLAT's segmented row chains (``fmax``: row max, else
row sum through the adder; a row starts at ``row_start``)."""
from __future__ import annotations

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.recip import Recip
from rtl.lib.units import Exp2


class Lane1D(wiring.Component):
    def __init__(self, exp_macs: int, exp_stages: int = 0, recip_stages: int = 0):
        self.exp_macs, self.exp_stages, self.recip_stages = exp_macs, exp_stages, recip_stages
        super().__init__({
            "ma": In(32), "mb": In(32), "aa": In(32), "ab": In(32), "fmulx": In(1), "neg_mc": In(32),
            "recip_in": In(32), "m_in": In(32), "bm_in": In(32), "chain_in": In(32), "s_in": In(32),
            "fmax": In(1), "row_start": In(1),
            "prod": Out(32), "sum": Out(32), "exp": Out(32), "recip": Out(32), "max": Out(32), "seg": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        prod = fp.fp32_mul_finite(m, self.ma, self.mb, "mul")
        add = fp.fp32_add_finite(m, Mux(self.fmulx, prod, self.aa), Mux(self.fmulx, self.neg_mc, self.ab), "add")
        fmx = fp.fp32_max(m, self.chain_in, self.s_in, "fmax")
        m.submodules.exp2 = ex = Exp2(self.exp_macs, stages=self.exp_stages)
        m.submodules.recip = rc = Recip(self.recip_stages)
        m.d.comb += [
            ex.a.eq(add), ex.in_valid.eq(1), rc.a.eq(self.recip_in), rc.in_valid.eq(1),
            self.prod.eq(prod), self.sum.eq(add), self.exp.eq(ex.out),
            self.recip.eq(rc.out),
            self.max.eq(fp.fp32_max(m, self.m_in, self.bm_in, "max")),
            self.seg.eq(Mux(self.fmax, Mux(self.row_start, self.s_in, fmx), add)),
        ]
        return m
