"""Amaranth RTL of BitMoD's bit-serial PE (``pe: bitmod`` of the simd template) and its co-simulation.

One PE of ``L`` lanes computing one output at a time, cycle for cycle the contract of
:mod:`archsim.templates.simd.bitserial`:

- operand word (one lane step): ``L`` activation codes, ``L`` weight codes, the group's 2-bit
  datatype selector and 8-bit scale code, ``group_last`` / ``tile_last`` / ``noscale`` (G = 0)
  flags; the PE raises ``take`` in the cycle it consumes the word (the step's last term cycle);
- decoder, one term per cycle: a BitMoD type's (selector, code) -> its two terms, each a sign, a
  zero flag and a shift (a constant table built from :mod:`archsim.numerics`' BitMoD types); an
  integer's radix-4 Booth digit ``term`` from code bits ``2t+1, 2t, 2t-1``, LSB first;
- per term cycle: ``psum += sum_j +-(a_j << shift_j)`` (exact, ``ACC_BITS``-bit two's complement);
- group end: hand the partial sum to the dequantization unit when it is free (else wait);
  with ``noscale`` the partial sum goes straight into the output register (``done`` in that cycle);
  the unit runs ``SCALE_BITS`` cycles MSB first, ``acc = 2*acc + (bit ? psum : 0)``, and adds
  ``acc`` into the output register in its last cycle; ``done`` is high in the output's last
  cycle (the drain's last dequantization cycle), when ``result`` is the output's value (``out``
  holds it from the next cycle); ``start`` in a ``done`` cycle begins the next output in the next
  cycle (back to back, as the array :mod:`rtl.simd.bitmod_array` runs its rounds).

``run_outputs`` drives it with :mod:`amaranth.sim` (no Verilog simulator needed).
"""
from __future__ import annotations

import numpy as np
from amaranth.hdl import Array, C, Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from archsim.numerics import bits_of, get_format
from archsim.templates.simd import bitserial

ACC_BITS = 64
#: planted bugs the co-simulation test must catch
BUGS = ("special_sign", "dequant_lsb_first", "no_wait", "booth_minus_two")


def _term_table(wb: int) -> list[tuple[int, int, int, int, int, int]]:
    """Per (selector << wb | code): (nz0, neg0, shift0, nz1, neg1, shift1) of the two terms."""
    table = bitserial.w2_table(wb)
    hi, lo = bitserial.term_split(table)
    rows = []
    for sel in range(4):
        for code in range(1 << wb):
            entry = []
            for t in (int(hi[sel, code]), int(lo[sel, code])):
                entry += [int(t != 0), int(t < 0), abs(t).bit_length() - 1 if t else 0]
            rows.append(tuple(entry))
    return rows


def decoder_table(wb: int, bug: str | None = None) -> Array:
    """The BitMoD decoder's constant table: per (selector << wb | code) the two terms' (nz, neg, shift)
    packed in 10 bits (:func:`_term_table`); bug ``special_sign`` flips the -0 code's special value."""
    rows = _term_table(wb)
    if bug == "special_sign":  # the -0 code's special value with the wrong sign
        half = 1 << (wb - 1)
        rows = [(r[0], r[1] ^ (i % (1 << wb) == half), *r[2:]) for i, r in enumerate(rows)]
    return Array(C(nz0 | neg0 << 1 | s0 << 2 | nz1 << 5 | neg1 << 6 | s1 << 7, 10)
                 for nz0, neg0, s0, nz1, neg1, s1 in rows)


def decode_term(m: Module, j: int, code, sel, term, terms: int, table, max_shift: int, bug: str | None):
    """Lane ``j``'s weight term of this cycle: ``(nz, neg, shift)`` signals (the term is
    ``(-1)**neg * 2**shift`` in units of 1/2 when ``nz``). ``table`` (:func:`decoder_table`) for a BitMoD
    type, None for an integer: its radix-4 Booth digit ``term`` (``terms`` digits, LSB first)."""
    nz, neg = Signal(name=f"nz{j}"), Signal(name=f"neg{j}")
    shift = Signal(range(max_shift + 1), name=f"shift{j}")
    if table is None:  # radix-4 Booth digit: bits 2t+1, 2t, 2t-1 (bit -1 = 0), x2 for the fraction bit
        triple, padded = Signal(3, name=f"booth{j}"), Cat(C(0, 1), code)
        with m.Switch(term):  # a case per digit (no variable shift: lint-clean)
            for t in range(terms):
                with m.Case(t):
                    m.d.comb += triple.eq(padded[2 * t:2 * t + 3])
        two = (triple == 0b011) | ((triple == 0b100) & (bug != "booth_minus_two"))
        m.d.comb += [nz.eq((triple != 0) & (triple != 0b111)), neg.eq(triple[2]),
                     shift.eq(term * 2 + 1 + two)]
    else:
        entry = Signal(10, name=f"dec{j}")
        m.d.comb += entry.eq(table[Cat(code, sel)])
        bits = Mux(term, entry[5:10], entry[0:5])
        m.d.comb += [nz.eq(bits[0]), neg.eq(bits[1]), shift.eq(bits[2:5])]
    return nz, neg, shift


def control_fsm(m: Module, pe, term, last_term, dq_free, dq_last, held_scale, held_last, *,
                begin, step, add_unscaled, hand_off_now, hand_off_held):
    """The control FSM (IDLE / RUN / WAIT / DRAIN) of a BitMoD PE, shared by the int-activation
    :class:`BitmodPE` and the fp16 one (:class:`rtl.simd.bitmod_fp16.BitmodFp16PE`): same ports, same
    ``take`` / ``done`` timing; only their datapaths differ, given as callbacks that add statements:
    ``begin()`` an output's first cycle (sets ``m.next``), ``step()`` a term cycle's accumulate,
    ``add_unscaled()`` a G = 0 group's add into the output, ``hand_off_now()`` / ``hand_off_held()`` the
    group sum to the dequantization unit at the group's last term cycle / from WAIT."""
    def restart_or_idle():
        """The output's done cycle: the next output's first term cycle follows on ``start``."""
        with m.If(pe.start):
            begin()
        with m.Else():
            m.next = "IDLE"

    with m.FSM():
        with m.State("IDLE"):
            with m.If(pe.start):
                begin()
        with m.State("RUN"):
            m.d.comb += [pe.busy.eq(1), pe.take.eq(last_term)]
            step()
            m.d.sync += term.eq(Mux(last_term, 0, term + 1))
            with m.If(last_term):
                m.d.sync += [held_scale.eq(pe.scale), held_last.eq(pe.tile_last)]
                with m.If(pe.group_last & pe.noscale):  # G = 0: no dequantization
                    add_unscaled()
                    m.d.comb += pe.done.eq(pe.tile_last)
                    with m.If(pe.tile_last):
                        restart_or_idle()
                with m.Elif(pe.group_last):
                    with m.If(dq_free):
                        hand_off_now()
                        with m.If(pe.tile_last):
                            m.next = "DRAIN"
                    with m.Else():
                        m.next = "WAIT"
        with m.State("WAIT"):
            m.d.comb += pe.busy.eq(1)
            with m.If(dq_free):
                hand_off_held()
                with m.If(held_last):
                    m.next = "DRAIN"
                with m.Else():
                    m.next = "RUN"
        with m.State("DRAIN"):
            m.d.comb += [pe.busy.eq(1), pe.done.eq(dq_last)]
            with m.If(dq_last):
                restart_or_idle()


class BitmodPE(wiring.Component):
    """``BitmodPE(lanes, act_bits, weight_format)``: BitMoD's bit-serial PE, one output at a time,
    for one weight format (a BitMoD width's four types, or an integer width)."""

    def __init__(self, lanes: int, act_bits: int, weight_format: str, bug: str | None = None):
        if bug is not None and bug not in BUGS:
            raise ValueError(f"bug: expected one of {', '.join(BUGS)}, got {bug!r}")
        if weight_format not in bitserial.WEIGHT_FORMATS:
            raise ValueError(f"weight_format: expected one of {', '.join(bitserial.WEIGHT_FORMATS)}, "
                             f"got {weight_format!r}")
        weight_bits = bits_of(weight_format)
        self.lanes, self.act_bits, self.weight_bits, self.bug = lanes, act_bits, weight_bits, bug
        self.is_int = get_format(weight_format).kind == "int"
        self.terms = bitserial.terms_per_weight(weight_format)
        super().__init__({
            "start": In(1), "init": In(signed(ACC_BITS)),
            "a": In(lanes * act_bits), "w": In(lanes * weight_bits), "sel": In(2),
            "scale": In(bitserial.SCALE_BITS), "group_last": In(1), "tile_last": In(1), "noscale": In(1),
            "take": Out(1), "busy": Out(1), "done": Out(1), "out": Out(signed(ACC_BITS)),
            "result": Out(signed(ACC_BITS)),
        })

    def elaborate(self, platform):
        m = Module()
        L, AB, WB, D, T = self.lanes, self.act_bits, self.weight_bits, bitserial.SCALE_BITS, self.terms
        table = None if self.is_int else decoder_table(WB, self.bug)
        max_shift = 2 * T if self.is_int else 4

        term = Signal(range(max(T, 2)))  # the term (cycle) of the current lane step
        last_term = Signal()
        m.d.comb += last_term.eq(term == T - 1)
        psum = Signal(signed(ACC_BITS))
        out = Signal(signed(ACC_BITS))
        out_next = Signal(signed(ACC_BITS))  # the value out takes at the end of this cycle
        m.d.comb += out_next.eq(out)
        m.d.sync += out.eq(out_next)
        dq_busy, dq_cnt = Signal(), Signal(range(D))
        dq_acc, dq_in = Signal(signed(ACC_BITS)), Signal(signed(ACC_BITS))
        dq_scale = Signal(D)
        held_scale, held_last = Signal(D), Signal(name="held_last")

        # ---- one term cycle of the lanes
        dot = []
        for j in range(L):
            a = self.a[j * AB:(j + 1) * AB].as_signed()
            code = self.w[j * WB:(j + 1) * WB]
            nz, neg, shift = decode_term(m, j, code, self.sel, term, T, table, max_shift, self.bug)
            mag = Signal(signed(AB + max_shift + 1), name=f"shifted{j}")
            m.d.comb += mag.eq(a << shift)
            lane = Signal(signed(AB + max_shift + 2), name=f"lane{j}")
            m.d.comb += lane.eq(Mux(nz, Mux(neg, -mag, mag), 0))
            dot.append(lane)
        psum_next = Signal(signed(ACC_BITS))
        m.d.comb += psum_next.eq(psum + sum(dot))

        # ---- the dequantization unit (one scale bit per cycle)
        dq_bit = Signal()  # the scale register shifts its next bit to the top (MSB first) each cycle
        lsb_first = self.bug == "dequant_lsb_first"
        m.d.comb += dq_bit.eq(dq_scale[0] if lsb_first else dq_scale[D - 1])
        dq_acc_next = Signal(signed(ACC_BITS))
        m.d.comb += dq_acc_next.eq((dq_acc << 1) + Mux(dq_bit, dq_in, 0))
        dq_last = Signal()
        m.d.comb += dq_last.eq(dq_busy & (dq_cnt == D - 1))
        dq_free = Signal()
        m.d.comb += dq_free.eq(~dq_busy | dq_last | (self.bug == "no_wait"))
        with m.If(dq_busy):
            m.d.sync += [dq_acc.eq(dq_acc_next), dq_cnt.eq(dq_cnt + 1),
                         dq_scale.eq(dq_scale[1:] if lsb_first else Cat(C(0, 1), dq_scale[:-1]))]
            with m.If(dq_last):
                m.d.comb += out_next.eq(out + dq_acc_next)
                m.d.sync += dq_busy.eq(0)

        def hand_off(value, scale):
            m.d.sync += [dq_in.eq(value), dq_scale.eq(scale), dq_acc.eq(0), dq_cnt.eq(0), dq_busy.eq(1),
                         psum.eq(0)]

        m.d.comb += [self.out.eq(out), self.result.eq(out_next)]

        def begin():
            m.d.sync += [out.eq(self.init), psum.eq(0), term.eq(0)]
            m.next = "RUN"

        def add_unscaled():
            m.d.comb += out_next.eq(out + psum_next)
            m.d.sync += psum.eq(0)

        def step():
            m.d.sync += psum.eq(psum_next)

        control_fsm(m, self, term, last_term, dq_free, dq_last, held_scale, held_last, begin=begin, step=step,
                    add_unscaled=add_unscaled,
                    hand_off_now=lambda: hand_off(psum_next, self.scale),
                    hand_off_held=lambda: hand_off(psum, held_scale))
        return m


# ------------------------------------------------------------------ co-simulation with amaranth.sim

def output_words(tile, operands: dict, params, mi: int, ni: int) -> list[dict]:
    """The operand words (lane steps) of output ``(mi, ni)`` in issue order."""
    L = bitserial.lanes(params, tile.activation_format)
    ab, wb = bits_of(tile.activation_format), bits_of(tile.weight_format)
    A = np.asarray(operands["input"]).astype(np.int64)
    W = np.asarray(operands["weight"]).astype(np.int64)
    sel = bitserial.selectors(tile, operands)
    scale = bitserial.scale_codes(tile, operands)
    groups = tile.groups()
    words = []
    for g, (start, length) in enumerate(groups):
        steps = -(-length // L)
        for s in range(steps):
            a = w = 0
            for j in range(L):
                k = start + s * L + j
                if k < start + length:  # padded lanes: activation code 0 (value 0)
                    a |= int(A[mi, k]) << (j * ab)
                    w |= int(W[k, ni]) << (j * wb)
            words.append({"a": a, "w": w, "sel": int(sel[g, ni]), "scale": 0 if scale is None else int(scale[g, ni]),
                          "group_last": int(s == steps - 1), "tile_last": int(g == len(groups) - 1 and s == steps - 1),
                          "noscale": int(scale is None)})
    return words


def run_outputs(tile, operands: dict, params, bug: str | None = None) -> tuple[np.ndarray, list[int]]:
    """Every output of ``tile`` through one RTL PE, back to back: (values int64 (M, N),
    cycles of each output from its first RUN cycle to its ``done`` cycle inclusive)."""
    L = bitserial.lanes(params, tile.activation_format)
    dut = BitmodPE(L, bits_of(tile.activation_format), tile.weight_format, bug=bug)
    psum = np.asarray(operands["psum"], np.int64) if tile.accumulate else None
    values = np.zeros((tile.m, tile.n), np.int64)
    return values, drive_outputs(dut, tile, operands, params, psum, values)


def drive_outputs(dut, tile, operands: dict, params, psum, values: np.ndarray) -> list[int]:
    """Runs every output of ``tile`` through the PE ``dut`` (the int or the fp16 BitMoD PE: same ports
    and handshake) in amaranth.sim, back to back, its ``init`` from ``psum`` (None: 0); writes each
    result into ``values`` and returns each output's cycles (-1: no ``done`` within the limit)."""
    from amaranth.sim import Simulator

    outs = [(o // tile.n, o % tile.n) for o in range(tile.outputs)]
    cycles: list[int] = []

    async def bench(ctx):
        for mi, ni in outs:
            words = output_words(tile, operands, params, mi, ni)
            ctx.set(dut.init, int(psum[mi, ni]) if psum is not None else 0)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            i, count = 0, 0
            limit = 4 * bitserial.output_cycles(tile, params) + 16
            while count < limit:
                word = words[min(i, len(words) - 1)]
                for name, v in word.items():
                    ctx.set(getattr(dut, name), v)
                take, done = ctx.get(dut.take), ctx.get(dut.done)
                await ctx.tick()
                count += 1
                i += take
                if done:
                    break
            cycles.append(count if count < limit else -1)
            values[mi, ni] = ctx.get(dut.out)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return cycles
