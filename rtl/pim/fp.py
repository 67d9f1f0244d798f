"""Combinational bf16 x bf16 -> fp32 multiply and fp32 + fp32 add, bit-exact with numpy float32.

Both round to nearest even and keep gradual underflow (subnormal results), as
IEEE 754 / numpy do; the sign of an exact zero sum is ``+0`` unless both
operands are ``-0``. Infinities and NaNs are not handled (finite operands whose
results stay finite; an overflowing result saturates to infinity's encoding).
These are the MAC unit's arithmetic for ``mac_precision: bf16``
(:mod:`archsim.templates.pim.values`: exact products in fp32, a pairwise adder
tree, fp32 accumulators).

Every function adds logic to an Amaranth ``Module`` and returns the result
as a 32-bit value (fp32 bit pattern).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed

# internal significand: 1 carry bit, hidden bit at P, 23 fraction bits, 3 extra bits (guard, round, sticky)
_P = 26
_W = _P + 2
_EW = 11  # signed exponent width (biased exponent, may leave 1..254 before rounding)


def _lzc(m: Module, sig, top: int, name: str):
    """Leading zeros of ``sig`` counted from bit ``top`` down (top+1 if zero)."""
    n = top + 1
    count = Const(n, 6)
    for i in range(0, top + 1):  # highest set bit wins: build from the bottom up
        count = Mux(sig[i], top - i, count)
    out = Signal(6, name=name)
    m.d.comb += out.eq(count)
    return out


def _round_pack(m: Module, sign, exp, sig, name: str):
    """fp32 of ``sig * 2**(exp - 127 - P)``: normalize, round to nearest even, pack."""
    s1 = Signal(_W, name=f"{name}_s1")
    e1 = Signal(signed(_EW), name=f"{name}_e1")
    with m.If(sig[_W - 1]):  # carry out: one right shift, keep the sticky bit
        m.d.comb += [s1.eq((sig >> 1) | sig[0]), e1.eq(exp + 1)]
    with m.Else():
        m.d.comb += [s1.eq(sig), e1.eq(exp)]
    s2 = Signal(_W, name=f"{name}_s2")
    e2 = Signal(signed(_EW), name=f"{name}_e2")
    lz = _lzc(m, s1, _P, f"{name}_lz")
    with m.If(e1 < 1):  # below the normal range: shift right to exponent 1 (subnormal), keep the sticky bit
        rs = Signal(range(_W + 1), name=f"{name}_rs")
        m.d.comb += rs.eq(Mux(1 - e1 > _W, _W, 1 - e1))
        shifted = Signal(_W, name=f"{name}_sh")
        m.d.comb += shifted.eq(s1 >> rs)
        sticky = (shifted << rs)[:_W] != s1
        m.d.comb += [s2.eq(shifted | sticky), e2.eq(1)]
    with m.Else():  # leading one below the hidden bit: shift left, not below exponent 1
        ls = Signal(6, name=f"{name}_ls")
        m.d.comb += ls.eq(Mux(lz > e1 - 1, (e1 - 1)[:6], lz))
        m.d.comb += [s2.eq((s1 << ls)[:_W]), e2.eq(e1 - ls)]
    lsb, guard = s2[3], s2[2]
    sticky = s2[:2].any()
    up = guard & (sticky | lsb)
    mant = Signal(25, name=f"{name}_mant")
    m.d.comb += mant.eq(s2[3:_P + 1] + up)
    e3 = Signal(signed(_EW), name=f"{name}_e3")
    frac = Signal(23, name=f"{name}_frac")
    with m.If(mant[24]):
        m.d.comb += [e3.eq(e2 + 1), frac.eq(mant[1:24])]
    with m.Else():
        m.d.comb += [e3.eq(Mux(mant[23], e2, 0)), frac.eq(mant[:23])]
    out = Signal(32, name=name)
    with m.If(e3 >= 255):
        m.d.comb += out.eq(Cat(Const(0, 23), Const(255, 8), sign))
    with m.Else():
        m.d.comb += out.eq(Cat(frac, e3[:8], sign))
    return out


def bf16_mul(m: Module, a, b, name: str):
    """fp32 bits of bf16 ``a`` x bf16 ``b`` (16-bit patterns)."""
    ea, eb = a[7:15], b[7:15]
    ma = Cat(a[:7], ea != 0)
    mb = Cat(b[:7], eb != 0)
    prod = Signal(16, name=f"{name}_p")
    m.d.comb += prod.eq(ma * mb)
    exp = Signal(signed(_EW), name=f"{name}_e")
    # product = prod * 2**(ea' + eb' - 254 - 14), ea' = max(ea, 1); as sig = prod << (P - 14): exp = ea' + eb' - 127
    m.d.comb += exp.eq(Mux(ea == 0, 1, ea) + Mux(eb == 0, 1, eb) - 127)
    sig = Signal(_W, name=f"{name}_sig")
    m.d.comb += sig.eq(prod << (_P - 14))
    return _round_pack(m, a[15] ^ b[15], exp, sig, name)


def fp32_add(m: Module, a, b, name: str):
    """fp32 bits of ``a + b`` (32-bit patterns)."""
    mag_a, mag_b = a[:31], b[:31]
    swap = mag_b > mag_a
    x = Signal(32, name=f"{name}_x")  # larger magnitude
    y = Signal(32, name=f"{name}_y")
    m.d.comb += [x.eq(Mux(swap, b, a)), y.eq(Mux(swap, a, b))]
    ex, ey = x[23:31], y[23:31]
    exe = Signal(9, name=f"{name}_exe")
    eye = Signal(9, name=f"{name}_eye")
    m.d.comb += [exe.eq(Mux(ex == 0, 1, ex)), eye.eq(Mux(ey == 0, 1, ey))]
    mx = Cat(Const(0, 3), x[:23], ex != 0)  # 27 bits: hidden bit at P = 26
    my = Cat(Const(0, 3), y[:23], ey != 0)
    d = Signal(9, name=f"{name}_d")
    m.d.comb += d.eq(exe - eye)
    dc = Signal(range(_W + 1), name=f"{name}_dc")
    m.d.comb += dc.eq(Mux(d > _W, _W, d))
    ya = Signal(_W, name=f"{name}_ya")
    m.d.comb += ya.eq(my >> dc)
    y_sticky = (ya << dc)[:_W] != my
    yal = Signal(_W, name=f"{name}_yal")
    m.d.comb += yal.eq(ya | y_sticky)
    total = Signal(_W, name=f"{name}_sum")
    sub = x[31] ^ y[31]
    m.d.comb += total.eq(Mux(sub, mx - yal, mx + yal))
    sign = Signal(name=f"{name}_sign")
    m.d.comb += sign.eq(Mux(total == 0, x[31] & y[31], x[31]))
    exp = Signal(signed(_EW), name=f"{name}_exp")
    m.d.comb += exp.eq(exe)
    return _round_pack(m, sign, exp, total, name)
