"""One lane of the attention array's 1D part (:class:`Lane1D`): the arithmetic of an element op
(the controller picks the operands and writes the results back).

- ``prod``: the library's fp32 multiplier (:class:`rtl.lib.units.Fp32MulFinite`, ``mul_stages``
  registers; pipelined, its round-and-pack's clamps, compares with constants and shifts built as data:
  same bits): ``ma * mb`` of the operands ``mul_stages`` cycles earlier.
- ``sum``: the library's fp32 adder (:class:`rtl.lib.units.Fp32AddFinite`, ``add_stages``
  registers; one more than its cut points, :func:`rtl.attention.pe.add_stages_max`, registers its
  operands in front of it, the ``fmulx`` select included) of ``aa + ab``, or with ``fmulx`` (FLAT's
  ``s*c - m*c``) of the product and ``neg_mc``, both taken ``mul_stages`` cycles after issue (``neg_mc`` rides a delay line beside the
  multiplier): ``sum`` is the operands' ``add_stages`` (``fmulx``: ``mul_stages + add_stages``)
  cycles later. The controller holds ``fmulx`` for the whole op, its drain included.
- ``exp``: ``exp2`` of the adder's result (range reduction and ``exp_macs - 1`` Horner steps: the
  library's :class:`rtl.lib.units.Exp2` with ``exp_stages`` registers), so the exp op's latency is
  ``add_stages + exp_stages`` (the params' ``latency1d.exp``).
- ``recip``: the correctly rounded reciprocal (the library's restoring divider
  :class:`rtl.lib.recip.Recip`, ``recip_stages`` registers) of ``recip_in``.
- ``mul``: the multipliers' significand product (:data:`rtl.lib.fp.MULTIPLIERS`; ``"dsp_reg"``: ECP5
  MULT18X18D blocks whose own registers are cut points, for synthesis of the lane alone).
- ``max`` and ``seg`` (``max_stages = 0``): combinational; the running-max compare and the lane's
  link of FLAT's segmented row chains (``fmax``: row max; else, at ``add_stages = 0``, row sum through
  the adder; a row starts at ``row_start``). With a pipelined adder the row sum is not a chain: the
  controller feeds ``sum`` back into ``aa`` (each lane sums its own rows, up to ``add_stages``
  interleaved).
- ``max_stages > 0``: one compare, the library's :class:`rtl.lib.units.Fp32Max` (``max_stages``
  registers): ``max`` is ``max(m_in, bm_in)``, or with ``fmax`` ``max(row_start ? s_in : chain_in,
  s_in)``, of the operands ``max_stages`` cycles earlier. FLAT's row max is then not a chain either:
  the controller feeds ``max`` back into ``chain_in`` (each lane its own rows, up to ``max_stages``
  interleaved, as the row sum); ``seg`` is the adder's link only.
"""
from __future__ import annotations

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.attention.pe import add_stages_max
from rtl.lib import fp
from rtl.lib.pipe import delay
from rtl.lib.recip import Recip
from rtl.lib.units import Exp2, Fp32AddFinite, Fp32Max, Fp32MulFinite


class Lane1D(wiring.Component):
    def __init__(self, exp_macs: int, exp_stages: int = 0, recip_stages: int = 0, mul_stages: int = 0,
                 add_stages: int = 0, mul: str = "dsp", max_stages: int = 0):
        self.exp_macs, self.exp_stages, self.recip_stages = exp_macs, exp_stages, recip_stages
        self.mul = mul  # the multipliers' (its own and exp2's) significand product: rtl.lib.fp.MULTIPLIERS
        self.mul_stages, self.add_stages, self.max_stages = mul_stages, add_stages, max_stages
        super().__init__({
            "ma": In(32), "mb": In(32), "aa": In(32), "ab": In(32), "fmulx": In(1), "neg_mc": In(32),
            "recip_in": In(32), "m_in": In(32), "bm_in": In(32), "chain_in": In(32), "s_in": In(32),
            "fmax": In(1), "row_start": In(1),
            "prod": Out(32), "sum": Out(32), "exp": Out(32), "recip": Out(32), "max": Out(32), "seg": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        # pipelined (timing): the multiplier's round-and-pack clamps, compares with constants and shifts as
        # data, the adders' exponent clamps and shifts too (same bits and latency)
        m.submodules.multiplier = mul = Fp32MulFinite(self.mul_stages, self.mul, zero_fill_as_data=self.mul_stages > 0,
                                                      compare_as_data=self.mul_stages > 0)
        add_cuts = add_stages_max() - 1
        m.submodules.adder = add = Fp32AddFinite(min(self.add_stages, add_cuts), zero_fill_as_data=self.add_stages > 0)
        m.submodules.exp2 = ex = Exp2(self.exp_macs, stages=self.exp_stages, mul=self.mul,
                                      zero_fill_as_data=self.exp_stages > 0, compare_as_data=self.exp_stages > 0)
        m.submodules.recip = rc = Recip(self.recip_stages)
        neg_mc = delay(m, self.neg_mc, self.mul_stages, "neg_mc_d")  # FMULX's subtrahend beside its product
        # beyond the adder's cut points: its operands registered first (the fmulx select before a register)
        pre = self.add_stages - min(self.add_stages, add_cuts)
        add_a = delay(m, Mux(self.fmulx, mul.out, self.aa), pre, "add_opa")
        add_b = delay(m, Mux(self.fmulx, neg_mc, self.ab), pre, "add_opb")
        m.d.comb += [
            mul.a.eq(self.ma), mul.b.eq(self.mb), mul.in_valid.eq(1), add.a.eq(add_a), add.b.eq(add_b),
            add.in_valid.eq(1),
            ex.a.eq(add.out), ex.in_valid.eq(1), rc.a.eq(self.recip_in), rc.in_valid.eq(1),
            self.prod.eq(mul.out), self.sum.eq(add.out), self.exp.eq(ex.out),
            self.recip.eq(rc.out),
        ]
        if self.max_stages:  # one pipelined compare; FLAT's row max fed back by the controller
            m.submodules.compare = cmp = Fp32Max(self.max_stages)
            m.d.comb += [cmp.a.eq(Mux(self.fmax, Mux(self.row_start, self.s_in, self.chain_in), self.m_in)),
                         cmp.b.eq(Mux(self.fmax, self.s_in, self.bm_in)), cmp.in_valid.eq(1),
                         self.max.eq(cmp.out), self.seg.eq(add.out)]
        else:
            fmx = fp.fp32_max(m, self.chain_in, self.s_in, "fmax")
            m.d.comb += [self.max.eq(fp.fp32_max(m, self.m_in, self.bm_in, "max")),
                         self.seg.eq(Mux(self.fmax, Mux(self.row_start, self.s_in, fmx), add.out))]
        return m
