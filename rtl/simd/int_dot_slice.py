"""The integer dot-product unit of one SIMD PE alone (either ``pe_style``), for synthesis comparisons:
bench/bench_tpe.py sets the carry-save tree of :mod:`rtl.simd.int_dot` against the standard lanes."""
from __future__ import annotations

from amaranth import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.simd.pe import SimdPE, _ModeRegs


def int_dot_slice(cfg):
    """The integer dot-product unit of one SIMD PE, alone, for synthesis comparisons (bench/bench_tpe.py):
    registered activation / weight words (the operand buffer's read register) -> the PE's own lanes
    (:meth:`rtl.simd.pe.SimdPE._lanes`, either ``pe_style``) -> the cycle's integer sum, registered
    (``cycle_sum_i``). Ports ``a``, ``w`` (the words), ``mask`` (lanes on), ``take`` / ``mode`` (the
    command's mode registers), ``out``. The group and output accumulators are not in it."""
    if cfg.accumulators > 1 or not cfg.has_int:
        raise ValueError("int_dot_slice: expected the one-stage PE (accumulators 1) with an integer x integer mode")
    AW, WW = cfg.act_word_bits, cfg.weight_word_bits

    class IntDotSlice(wiring.Component):
        def __init__(self):
            super().__init__({"a": In(AW), "w": In(WW), "mask": In(cfg.max_lanes), "take": In(1),
                              "mode": In(max(1, (len(cfg.modes) - 1).bit_length())), "out": Out(signed(40))})

        def elaborate(self, platform):
            m = Module()
            pe = SimdPE(cfg)
            pe._MustUse__silence = True  # only its lanes are built, into this module
            m.d.sync += [pe.entry[:AW].eq(self.a), pe.entry[AW:AW + WW].eq(self.w), pe.s1_mask.eq(self.mask)]
            regs = _ModeRegs()
            int_mode = regs.reg("int_mode", 1, lambda md: md.integer)
            _f, prods_i = pe._lanes(m, regs, int_mode, pipelined=False)
            total = prods_i[0]
            for x in prods_i[1:]:
                total = total + x
            m.d.sync += self.out.eq(total)
            regs.emit(m, self.take, self.mode, cfg.modes)
            return m

    return IntDotSlice()
