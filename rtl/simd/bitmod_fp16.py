"""Amaranth RTL of BitMoD's bit-serial PE with FP16 activations (``pe: bitmod``, activation format ``fp16``).

Cycle for cycle the integer-activation PE :class:`rtl.simd.bitserial.BitmodPE` (same ports, same
``take`` / ``done`` timing, same decoder: :func:`rtl.simd.bitserial.decode_term`), bit for bit the
contract of :mod:`archsim.templates.simd.bitmod_fp16`:

- per term cycle, lane ``j``: the fp16 code's significand ``m`` and exponent, the weight term's shift
  ``k``; product exponent ``q_j = max(E_j, 1) - 1 + k_j`` (the contract's ``v + 24``; ``E`` the biased
  exponent), active when ``m != 0`` and the term is non-zero; ``V`` = the active lanes' maximum;
  ``p_j = +-((m << GUARD_BITS) >> (V - q_j))``; ``S = sum p_j`` at exponent ``Y = V`` (the contract's
  ``V - GUARD_BITS - 1``, offset by :data:`X_BIAS`);
- the group accumulator ``M * 2**(X - X_BIAS)`` (``ACC_MAN_BITS``-bit two's complement ``M``, unsigned
  ``X``): align both to ``Z = max(X, Y)`` (``Y`` when ``M == 0``) with arithmetic shifts, add,
  normalize by ``n = max(0, bitlen|T| - (ACC_MAN_BITS - 1))`` (:func:`rtl.lib.lzc.lzc` of ``|T|``);
- group end: the dequantization unit (``M`` times the 8-bit scale code, MSB first, exact) keeps the
  group's exponent beside it; the output register is fp32: ``out = out + fp32(D * 2**X)``
  (:func:`rtl.lib.round.round_pack`, then :func:`rtl.lib.fp.fp32_add`, both RNE), ``D = M`` for ``G = 0``;
- the control FSM is the int PE's own, :func:`rtl.simd.bitserial.control_fsm`;
- ``init`` (fp32 bits) is the output's starting value, read at its first group add (the array
  addresses the old output entry from the output's first cycle); ``out`` / ``result`` are fp32 bits.

Ports the int PE has and the fp16 PE widens or narrows: ``a`` is ``L`` fp16 codes, ``init`` / ``out`` /
``result`` are 32 bits (fp32).
"""
from __future__ import annotations

import numpy as np
from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from archsim.numerics import bits_of, get_format
from archsim.templates.simd import bitmod_fp16, bitserial
from rtl.lib.fp import fp32_add
from rtl.lib.formats import EXP_W
from rtl.lib.lzc import lzc
from rtl.lib.round import round_pack
from rtl.simd.bitserial import BUGS, control_fsm, decode_term, decoder_table, drive_outputs

GUARD_BITS, ACC_MAN_BITS = bitmod_fp16.GUARD_BITS, bitmod_fp16.ACC_MAN_BITS
#: exponent offset of the accumulator's and the lanes' exponents: ``X = contract exponent + X_BIAS``
#: (the smallest product exponent, fp16 subnormal x a 1/2 term, is ``-24 - GUARD_BITS - 1``)
X_BIAS = 24 + GUARD_BITS + 1
#: bits of the unsigned exponents (``X`` stays below ``~X_BIAS + 21 + log2(K) + 16``: K < 2**16)
X_BITS = 8
#: bits of the dequantized group sum ``M * scale`` (two's complement, exact)
DQ_BITS = ACC_MAN_BITS + bitserial.SCALE_BITS
FP32_BITS = 32


class BitmodFp16PE(wiring.Component):
    """``BitmodFp16PE(lanes, weight_format)``: BitMoD's bit-serial PE with ``lanes`` fp16 activation lanes
    (the ports of :class:`rtl.simd.bitserial.BitmodPE`; ``init`` / ``out`` / ``result`` fp32 bits)."""

    def __init__(self, lanes: int, weight_format: str, bug: str | None = None):
        if bug is not None and bug not in BUGS + FP16_BUGS:
            raise ValueError(f"bug: expected one of {', '.join(BUGS + FP16_BUGS)}, got {bug!r}")
        if weight_format not in bitserial.WEIGHT_FORMATS:
            raise ValueError(f"weight_format: expected one of {', '.join(bitserial.WEIGHT_FORMATS)}, "
                             f"got {weight_format!r}")
        self.lanes, self.weight_bits, self.bug = lanes, bits_of(weight_format), bug
        self.is_int = get_format(weight_format).kind == "int"
        self.terms = bitserial.terms_per_weight(weight_format)
        super().__init__({
            "start": In(1), "init": In(FP32_BITS),
            "a": In(lanes * 16), "w": In(lanes * self.weight_bits), "sel": In(2),
            "scale": In(bitserial.SCALE_BITS), "group_last": In(1), "tile_last": In(1), "noscale": In(1),
            "take": Out(1), "busy": Out(1), "done": Out(1), "out": Out(FP32_BITS), "result": Out(FP32_BITS),
        })

    def _lanes(self, m: Module, term):
        """The term cycle's lanes: ``(any lane active, S, Y)`` (``S`` signed, ``Y`` biased like ``X``)."""
        L, WB, T = self.lanes, self.weight_bits, self.terms
        table = None if self.is_int else decoder_table(WB, self.bug)
        max_shift = 2 * T if self.is_int else 4
        qs, actives, signs, mants = [], [], [], []
        for j in range(L):
            a, code = self.a[16 * j:16 * (j + 1)], self.w[j * WB:(j + 1) * WB]
            nz, neg, shift = decode_term(m, j, code, self.sel, term, T, table, max_shift, self.bug)
            biased = a[10:15]
            mant, q = Signal(11, name=f"mant{j}"), Signal(X_BITS, name=f"q{j}")
            active = Signal(name=f"active{j}")
            m.d.comb += [mant.eq(Cat(a[:10], biased != 0)), q.eq(Mux(biased == 0, 0, biased - 1) + shift),
                         active.eq(nz & (mant != 0))]
            qs.append(q), actives.append(active), signs.append(a[15] ^ neg), mants.append(mant)
        vmax = Signal(X_BITS, name="vmax")  # inactive lanes count as 0, below every active one's q
        level = [Mux(act, q, 0) for act, q in zip(actives, qs)]
        while len(level) > 1:
            level = [Mux(x > y, x, y) for x, y in zip(level[0::2], level[1::2])] + level[len(level) & ~1:]
        m.d.comb += vmax.eq(level[0])
        aligned_bits = 11 + GUARD_BITS
        total = 0
        for j in range(L):
            mag = Signal(aligned_bits, name=f"aligned{j}")
            dist = Signal(X_BITS, name=f"dist{j}")
            m.d.comb += [dist.eq(vmax - qs[j]),
                         mag.eq(Mux(dist >= aligned_bits, 0, Cat(C(0, GUARD_BITS), mants[j]) >> dist[:4]))]
            if self.bug == "no_guard_bits":  # the alignment truncates to the significand's own bits
                m.d.comb += mag.eq(Mux(dist >= aligned_bits, 0, Cat(C(0, GUARD_BITS), mants[j] >> dist[:4])))
            lane = Signal(signed(aligned_bits + 1), name=f"p{j}")
            m.d.comb += lane.eq(Mux(actives[j], Mux(signs[j], -mag, mag), 0))
            total = total + lane
        s_bits = aligned_bits + 1 + (L - 1).bit_length()
        s = Signal(signed(s_bits), name="lane_sum")
        any_active = Signal(name="any_active")
        m.d.comb += [s.eq(total), any_active.eq(Cat(*actives).any())]
        return any_active, s, vmax

    def _accumulate(self, m: Module, acc_m, acc_x, s, y):
        """The block-float group accumulator's next ``(M, X)`` after adding ``S * 2**Y``."""
        empty = acc_m == 0
        z, dx, dy = Signal(X_BITS, name="acc_z"), Signal(X_BITS, name="acc_dx"), Signal(X_BITS, name="acc_dy")
        m.d.comb += [z.eq(Mux(empty | (y > acc_x), y, acc_x)), dx.eq(z - acc_x), dy.eq(z - y)]
        tw = max(ACC_MAN_BITS, s.shape().width) + 1
        t = Signal(signed(tw), name="acc_t")
        m.d.comb += t.eq(Mux(empty, 0, acc_m >> dx) + (s >> dy))
        mag = Signal(tw, name="acc_abs")
        m.d.comb += mag.eq(Mux(t < 0, -t, t))
        lz = lzc(m, mag, tw, "acc_lz")
        n = Signal(range(tw + 1), name="acc_n")  # bitlen |T| = tw - lz; n = max(0, bitlen - (ACC_MAN_BITS - 1))
        m.d.comb += n.eq(Mux(lz >= tw - (ACC_MAN_BITS - 1), 0, (tw - (ACC_MAN_BITS - 1)) - lz))
        m_next, x_next = Signal(signed(ACC_MAN_BITS), name="acc_m_next"), Signal(X_BITS, name="acc_x_next")
        m.d.comb += [m_next.eq(t >> n), x_next.eq(z + n)]
        return m_next, x_next

    def _group_add(self, m: Module, base, d, x):
        """fp32 bits of ``base + fp32(d * 2**(x - X_BIAS))`` (``d`` signed :data:`DQ_BITS`)."""
        sign = d[DQ_BITS - 1]
        mag = Signal(DQ_BITS, name="grp_abs")
        exp = Signal(signed(EXP_W), name="grp_exp")
        m.d.comb += [mag.eq(Mux(sign, -d, d)), exp.eq(x - X_BIAS)]
        part = round_pack(m, sign, exp, mag, DQ_BITS, "grp_fp32")
        return fp32_add(m, base, part, "out_add")

    def elaborate(self, platform):
        m = Module()
        D, T = bitserial.SCALE_BITS, self.terms
        term = Signal(range(max(T, 2)))  # the term (cycle) of the current lane step
        last_term = Signal()
        m.d.comb += last_term.eq(term == T - 1)
        acc_m, acc_x = Signal(signed(ACC_MAN_BITS), name="acc_m"), Signal(X_BITS, name="acc_x")
        out, fresh = Signal(FP32_BITS, name="out"), Signal(name="fresh")  # fresh: no group added yet (out = init)
        out_next = Signal(FP32_BITS, name="out_next")
        m.d.comb += out_next.eq(out)
        m.d.sync += out.eq(out_next)
        dq_busy, dq_cnt = Signal(), Signal(range(D))
        dq_acc, dq_in = Signal(signed(DQ_BITS), name="dq_acc"), Signal(signed(ACC_MAN_BITS), name="dq_in")
        dq_x, dq_scale = Signal(X_BITS, name="dq_x"), Signal(D)
        held_scale, held_last = Signal(D), Signal(name="held_last")

        any_active, s, y = self._lanes(m, term)
        m_sum, x_sum = self._accumulate(m, acc_m, acc_x, s, y)
        m_next, x_next = Signal(signed(ACC_MAN_BITS), name="grp_m"), Signal(X_BITS, name="grp_x")
        m.d.comb += [m_next.eq(Mux(any_active, m_sum, acc_m)), x_next.eq(Mux(any_active, x_sum, acc_x))]

        # ---- the dequantization unit (one scale bit per cycle, MSB first) and the fp32 output add
        dq_bit = Signal()
        m.d.comb += dq_bit.eq(dq_scale[D - 1])
        dq_acc_next = Signal(signed(DQ_BITS))
        m.d.comb += dq_acc_next.eq((dq_acc << 1) + Mux(dq_bit, dq_in, 0))
        dq_last = Signal()
        m.d.comb += dq_last.eq(dq_busy & (dq_cnt == D - 1))
        dq_free = Signal()
        m.d.comb += dq_free.eq(~dq_busy | dq_last)
        add_d, add_x = Signal(signed(DQ_BITS), name="add_d"), Signal(X_BITS, name="add_x")
        m.d.comb += [add_d.eq(Mux(dq_last, dq_acc_next, m_next)), add_x.eq(Mux(dq_last, dq_x, x_next))]
        added = self._group_add(m, Mux(fresh, self.init, out), add_d, add_x)
        with m.If(dq_busy):
            m.d.sync += [dq_acc.eq(dq_acc_next), dq_cnt.eq(dq_cnt + 1), dq_scale.eq(Cat(C(0, 1), dq_scale[:-1]))]
            with m.If(dq_last):
                m.d.comb += out_next.eq(added)
                m.d.sync += [dq_busy.eq(0), fresh.eq(0)]

        def hand_off(value, exp, scale):
            m.d.sync += [dq_in.eq(value), dq_x.eq(exp), dq_scale.eq(scale), dq_acc.eq(0), dq_cnt.eq(0),
                         dq_busy.eq(1), acc_m.eq(0)]

        m.d.comb += [self.out.eq(out), self.result.eq(out_next)]

        def begin():
            m.d.sync += [fresh.eq(1), acc_m.eq(0), term.eq(0)]
            m.next = "RUN"

        def step():
            m.d.sync += [acc_m.eq(m_next), acc_x.eq(x_next)]

        def add_unscaled():
            m.d.comb += out_next.eq(added)
            m.d.sync += [acc_m.eq(0), fresh.eq(0)]

        control_fsm(m, self, term, last_term, dq_free, dq_last, held_scale, held_last, begin=begin, step=step,
                    add_unscaled=add_unscaled, hand_off_now=lambda: hand_off(m_next, x_next, self.scale),
                    hand_off_held=lambda: hand_off(acc_m, acc_x, held_scale))
        return m


#: planted bugs of the fp16 datapath (besides the decoder's :data:`rtl.simd.bitserial.BUGS`)
FP16_BUGS = ("no_guard_bits",)


# ------------------------------------------------------------------ co-simulation with amaranth.sim

def run_outputs(tile, operands: dict, params, bug: str | None = None) -> tuple[np.ndarray, list[int]]:
    """Every output of an fp16 ``tile`` through one RTL PE, back to back: (fp32 values (M, N), cycles of
    each output from its first RUN cycle to its ``done`` cycle inclusive)."""
    L = bitserial.lanes(params, tile.activation_format)
    dut = BitmodFp16PE(L, tile.weight_format, bug=bug)
    psum = np.asarray(operands["psum"], np.float32).view(np.uint32) if tile.accumulate else None
    values = np.zeros((tile.m, tile.n), np.uint32)
    cycles = drive_outputs(dut, tile, operands, params, psum, values)
    return values.view(np.float32), cycles
