"""fp32 reciprocal as a restoring divider with a cut point after each of its rows, as the library
unit :class:`Recip` (``stages`` registers, latency ``stages``; 0: combinational).

The quotient and remainder of ``2**49 // mant`` are built one bit per row (a 25-bit trial
subtraction and a select), so a row is the natural cut point: with ``stages`` registers the
27 rows and round_pack_fp32's normalise / round steps are split evenly (:mod:`rtl.lib.pipe`),
the output register last. The bits are the same at every depth (numpy's
correctly rounded ``1 / x`` for normal ``x``; subnormal results included). yosys' generic ``$div``
of the same 50-by-24-bit quotient costs ~9.7k LUT4 + 6.2k CCU2C on ECP5; these rows ~1/10 of that.
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Shape, Signal, signed

from rtl.lib.pipe import Pipe, cut
from rtl.lib.round import EW, W, round_pack_fp32
from rtl.lib.units import Unit

#: quotient bits (rows) of ``2**49 // mant``, ``mant`` in ``[2**23, 2**24)``
ROWS = 27


def recip_rows(m: Module, a, name: str, pipe: Pipe | None = None):
    """``(sign, exp, q, r)`` for fp32 ``a`` (normal): ``q = 2**49 // mant``, ``r = 2**49 % mant`` as
    a restoring long division computes them (one 25-bit trial subtraction per row), and the result's sign and biased exponent
    (``254 - e``). Cut points: after each row but the last (26)."""
    mant = Cat(a[:23], Const(1, 1))
    sign = a[31]
    exp = Signal(signed(EW), name=f"{name}_e")
    m.d.comb += exp.eq(254 - a[23:31])
    r = Const(1 << 23, 25)  # 2**49 >> 26: the numerator's bits above quotient bit 26 (all below are 0)
    q = None  # quotient bits so far, most significant first (bit 0 = the latest row)
    for i in range(ROWS):
        if i:
            r = Cat(Const(0, 1), r[:24])  # r < mant < 2**24, so 2 r fits 25 bits
        diff = Signal(26, name=f"{name}_d{i}")
        m.d.comb += diff.eq(r - mant)
        take = ~diff[25]  # r >= mant
        nxt = Signal(25, name=f"{name}_r{i}")
        m.d.comb += nxt.eq(Mux(take, diff[:25], r))
        q = take if q is None else Cat(take, q)
        r = nxt
        if i < ROWS - 1:
            sign, exp, mant, r, q = cut(pipe, sign, exp, mant, r, q)
    return sign, exp, q, r[:24]


def recip_pipelined(m: Module, a, name: str, pipe: Pipe | None = None):
    """fp32 bits of ``1 / a`` (``a`` normal), correctly rounded: :func:`recip_rows`, the sticky
    remainder, round_pack_fp32. Cut points: the rows' 26, then round_pack_fp32's."""
    sign, exp, q, r = recip_rows(m, a, name, pipe)
    sig = Signal(W, name=f"{name}_sig")
    m.d.comb += sig.eq(q | (r != 0))
    return round_pack_fp32(m, sign, exp, sig, name, pipe)


class Recip(Unit):
    """fp32 ``1 / a`` for normal ``a`` (the attention lanes' reciprocal), correctly rounded."""

    inputs = {"a": Shape(32)}
    outputs = {"out": Shape(32)}

    def build(self, m, ins, pipe):
        return {"out": recip_pipelined(m, ins["a"], "recip", pipe)}
