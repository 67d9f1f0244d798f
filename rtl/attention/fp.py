"""Combinational fp32 arithmetic of the attention RTL, bit-exact with numpy float32.

The attention template's value path (:mod:`archsim.templates.attention.values`)
rounds every multiply and add to fp32 (round to nearest even, gradual
underflow); these functions build that arithmetic in an Amaranth ``Module``
and return 32-bit fp32 bit patterns. :func:`fp32_add` and the rounding /
packing step come from :mod:`rtl.pim.fp`; added here: the fp32 x fp32
multiply, ``max``, ``rint`` (round half to even), ``ldexp`` and the
reciprocal (correctly rounded), and the range-reduced Horner ``exp2`` of
``values.exp2_poly``. Infinities and NaNs are not produced by valid tiles and
not handled (the template's first-block ``alpha = exp2(-inf) = 0`` is a
control decision, not arithmetic); subnormal operands are handled by the
multiply and add, not by ``recip`` (a row sum is at least 1).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed

from rtl.pim.fp import _EW, _W, _round_pack, fp32_add

__all__ = ["fp32_add", "fp32_mul", "fp32_max", "fp32_neg", "rint", "ldexp", "recip", "exp2_poly", "F32_ZERO"]

F32_ZERO = 0
#: |n| of ``rint`` is clamped to this (2**-300 and 2**300 are outside fp32 anyway)
_N_CLAMP = 300


def fp32_neg(a):
    return Cat(a[:31], ~a[31])


def _lzc(m: Module, sig, width: int, name: str):
    count = Const(width, 7)
    for i in range(width):
        count = Mux(sig[i], width - 1 - i, count)
    out = Signal(7, name=name)
    m.d.comb += out.eq(count)
    return out


def fp32_mul(m: Module, a, b, name: str):
    """fp32 bits of ``a * b`` (32-bit patterns)."""
    ea, eb = a[23:31], b[23:31]
    ma = Cat(a[:23], ea != 0)
    mb = Cat(b[:23], eb != 0)
    prod = Signal(48, name=f"{name}_p")
    m.d.comb += prod.eq(ma * mb)
    # normalise first (subnormal operands): leading one to bit 46 or 47
    lz = _lzc(m, prod[:47], 47, f"{name}_lz")
    norm = Signal(48, name=f"{name}_n")
    m.d.comb += norm.eq(Mux(prod[47], prod, (prod << lz)[:48]))
    exp = Signal(signed(_EW), name=f"{name}_e")
    m.d.comb += exp.eq(Mux(ea == 0, 1, ea) + Mux(eb == 0, 1, eb) - 127 - Mux(prod[47], 0, lz))
    sig = Signal(_W, name=f"{name}_sig")  # hidden bit at 46 -> P; 20 bits below the window become sticky
    m.d.comb += sig.eq(norm[20:48] | (norm[:20] != 0))
    return _round_pack(m, a[31] ^ b[31], exp, sig, name)


def _key(x):
    """Unsigned key ordered like the fp32 values (finite values)."""
    return Mux(x[31], ~x, x | 0x80000000)


def fp32_max(m: Module, a, b, name: str):
    out = Signal(32, name=name)
    m.d.comb += out.eq(Mux(_key(b)[:32] > _key(a)[:32], b, a))
    return out


def rint(m: Module, x, name: str):
    """``(n as fp32 bits, n as a signed integer clamped to +-300)``, ``n = rint(x)`` half to even."""
    e = x[23:31]
    mant = Cat(x[:23], Const(1, 1))  # 24 bits (x normal in the range that matters; subnormals round to 0)
    sh = Signal(range(32), name=f"{name}_sh")  # right shift that leaves the integer part: 150 - e, 1..24
    sh1 = Signal(range(32), name=f"{name}_sh1")
    shl = Signal(range(32), name=f"{name}_shl")
    m.d.comb += [sh.eq(150 - e), sh1.eq(149 - e), shl.eq(e - 125)]
    ipart = Signal(25, name=f"{name}_ip")
    m.d.comb += ipart.eq(mant >> sh)
    half = Signal(name=f"{name}_half")
    rest = Signal(name=f"{name}_rest")
    m.d.comb += [half.eq((mant >> sh1)[0]),
                 rest.eq(((mant << shl)[:24]) != 0)]  # bits below the half bit
    mag = Signal(25, name=f"{name}_mag")
    with m.If(e >= 150):  # an integer already
        m.d.comb += mag.eq(_N_CLAMP + 1)
    with m.Elif(e < 126):  # |x| < 1/2
        m.d.comb += mag.eq(0)
    with m.Else():
        m.d.comb += mag.eq(ipart + (half & (rest | ipart[0])))
    big = Signal(name=f"{name}_big")
    m.d.comb += big.eq(e >= 150)
    n_int = Signal(signed(11), name=f"{name}_ni")
    clamped = Mux(mag > _N_CLAMP, _N_CLAMP, mag[:10])
    m.d.comb += n_int.eq(Mux(x[31], -clamped, clamped))
    # n as fp32: exact (|n| <= 2**23); -0.0 for a negative x that rounds to 0, as numpy
    packed = _round_pack(m, x[31], Const(150, signed(_EW)), (mag << 3)[:_W], f"{name}_nf")
    n_fp = Signal(32, name=f"{name}_nfp")
    m.d.comb += n_fp.eq(Mux(big, x, packed))
    return n_fp, n_int


def ldexp(m: Module, p, n, name: str):
    """fp32 bits of ``p * 2**n`` (``p`` normal, ``n`` signed), rounded like numpy's ``ldexp``."""
    exp = Signal(signed(_EW), name=f"{name}_e")
    m.d.comb += exp.eq(p[23:31] + n)
    sig = Cat(Const(0, 3), p[:23], p[23:31] != 0, Const(0, 1))
    return _round_pack(m, p[31], exp, sig, name)


def recip(m: Module, a, name: str):
    """fp32 bits of ``1 / a`` (``a`` normal), correctly rounded."""
    mant = Cat(a[:23], Const(1, 1))
    q = Signal(27, name=f"{name}_q")
    r = Signal(24, name=f"{name}_r")
    num = Const(1 << 49, 50)
    m.d.comb += [q.eq(num // mant), r.eq(num % mant)]
    exp = Signal(signed(_EW), name=f"{name}_e")
    m.d.comb += exp.eq(254 - a[23:31])
    sig = Signal(_W, name=f"{name}_sig")
    m.d.comb += sig.eq(q | (r != 0))
    return _round_pack(m, a[31], exp, sig, name)


def exp2_coefficient_bits(exp_macs: int) -> list[int]:
    """fp32 bits of the Horner coefficients ``ln2**i / i!`` (the template's ``exp2_coefficients``)."""
    import numpy as np

    from archsim.templates.attention.values import exp2_coefficients

    return [int(v) for v in exp2_coefficients(exp_macs).view(np.uint32)]


def exp2_poly(m: Module, x, exp_macs: int, name: str):
    """fp32 bits of ``values.exp2_poly(x)`` in one cycle (the 1D array's exp unit)."""
    coef = exp2_coefficient_bits(exp_macs)
    n_fp, n_int = rint(m, x, f"{name}_rn")
    f = fp32_add(m, x, fp32_neg(n_fp), f"{name}_f")
    p = Const(coef[-1], 32)
    for i, c in enumerate(coef[-2::-1]):
        p = fp32_add(m, fp32_mul(m, p, f, f"{name}_m{i}"), Const(c, 32), f"{name}_a{i}")
    return ldexp(m, p, n_int, f"{name}_ld")
