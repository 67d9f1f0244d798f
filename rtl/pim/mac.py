"""The bank's MAC datapath (:class:`PimMacDatapath`): ``E`` lane products of a DRAM column and
an input-buffer slice, summed by a pairwise adder tree (lanes padded with zeros to a power of
two, as the models' ``tree_sum``), pipelined.

bf16: each product is the library's :class:`rtl.lib.units.NarrowMulFp32` (exact product, fp32)
with ``mul_stages`` registers and its significand multiplier ``mul`` (``"dsp"``: inferred DSP blocks, the
default; ``"lut"``: fabric, one more cut point -- the deepest ``"dsp"`` unit stays below 150 MHz on ECP5;
``"dsp_reg"``: ECP5 DSP blocks whose own registers are the cut points around them), each tree adder a
:class:`rtl.lib.units.Fp32AddFinite` with
``add_stages``; int8: exact products and sums (int32 wrap), one register after the products and
after each tree level. :attr:`PimMacDatapath.latency` is the cycles from ``w`` / ``x`` to ``sum``.
"""
from __future__ import annotations

from amaranth import Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.units import Fp32AddFinite, NarrowMulFp32

LANE_BITS = {"int8": 8, "bf16": 16}
#: the bf16 multipliers' significand multiplier (:data:`rtl.lib.fp.MULTIPLIERS`): ``"dsp"`` and ``"lut"`` simulate
#: as they synthesize; ``"dsp_reg"`` (ECP5 MULT18X18D instances with their own registers) simulates with
#: :func:`rtl.lib.ecp5.mult18x18d_sim_model` beside the Verilog (the design's ``sim_sources``)
MULS = ("dsp", "lut", "dsp_reg")


def tree_levels(lanes: int) -> int:
    """Levels of the pairwise adder tree over ``lanes`` products."""
    return max(0, (lanes - 1).bit_length())


def mac_latency(precision: str, lanes: int, mul_stages: int, add_stages: int) -> int:
    """Cycles through the datapath: ``mul_stages + levels * add_stages``."""
    return mul_stages + tree_levels(lanes) * add_stages


class PimMacDatapath(wiring.Component):
    """``sum`` = the adder-tree sum of ``w[i] * x[i]`` over the lanes, :attr:`latency` cycles after
    ``w`` and ``x``; one column per cycle (no stalls)."""

    def __init__(self, precision: str, lanes: int, mul_stages: int = 1, add_stages: int = 1, mul: str = "dsp"):
        if mul not in MULS:
            raise ValueError(f"mul: expected one of {', '.join(MULS)}, got {mul!r}")
        if precision == "int8" and mul != "dsp":
            raise ValueError("mul: the int8 datapath has exact products (no multiplier choice); it takes 'dsp'")
        self.mul = mul
        if precision not in LANE_BITS:
            raise ValueError(f"mac_precision: expected one of {', '.join(LANE_BITS)}, got {precision!r}")
        self.precision, self.lanes = precision, lanes
        self.mul_stages, self.add_stages = mul_stages, add_stages
        if precision == "bf16":  # check the depths against the units now (one clear line)
            for unit in (NarrowMulFp32("bf16", mul_stages, mul), Fp32AddFinite(add_stages)):
                unit._MustUse__silence = True  # built only for the check
        else:
            for key, v in (("mul_stages", mul_stages), ("add_stages", add_stages)):
                if v not in (0, 1):
                    raise ValueError(f"{key}: the int8 datapath takes 0 or 1, got {v!r}")
        self.latency = mac_latency(precision, lanes, mul_stages, add_stages)
        lb = LANE_BITS[precision]
        super().__init__({"w": In(lb * lanes), "x": In(lb * lanes), "sum": Out(32)})

    def elaborate(self, platform):
        m = Module()
        lb, E = LANE_BITS[self.precision], self.lanes
        width = 1 << tree_levels(E)
        if self.precision == "bf16":
            terms = []
            for lane in range(E):
                u = NarrowMulFp32("bf16", self.mul_stages, self.mul)
                m.submodules[f"mul{lane}"] = u
                m.d.comb += [u.in_valid.eq(1), u.a.eq(self.w[lb * lane:lb * lane + lb]),
                             u.b.eq(self.x[lb * lane:lb * lane + lb])]
                terms.append(u.out)
            terms += [0] * (width - E)
            level = 0
            while len(terms) > 1:
                nxt = []
                for i in range(0, len(terms), 2):
                    u = Fp32AddFinite(self.add_stages)
                    m.submodules[f"add{level}_{i // 2}"] = u
                    m.d.comb += [u.in_valid.eq(1), u.a.eq(terms[i]), u.b.eq(terms[i + 1])]
                    nxt.append(u.out)
                terms, level = nxt, level + 1
            m.d.comb += self.sum.eq(terms[0])
            return m
        terms = []
        for lane in range(E):
            r = Signal(32, name=f"prod{lane}")
            w, x = self.w[lb * lane:lb * lane + lb], self.x[lb * lane:lb * lane + lb]
            m.d["sync" if self.mul_stages else "comb"] += r.eq(w.as_signed() * x.as_signed())
            terms.append(r)
        terms += [Const(0, 32)] * (width - E)
        level = 0
        while len(terms) > 1:
            level += 1
            nxt = []
            for i in range(0, len(terms), 2):
                r = Signal(32, name=f"tree{level}_{i // 2}")
                m.d["sync" if self.add_stages else "comb"] += r.eq((terms[i] + terms[i + 1])[:32])
                nxt.append(r)
            terms = nxt
        m.d.comb += self.sum.eq(terms[0])
        return m
