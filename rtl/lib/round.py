"""Round-and-pack: an exact ``(-1)**sign * sig * 2**exp`` to a float format's bits, one round to
nearest even, gradual underflow.

:func:`round_pack` is the general one (any IEEE-style format, any significand
width and exponent, inf / NaN on overflow per the format's specials);
:func:`round_pack_fp32` is the narrow fp32 one of the finite datapaths (a
28-bit significand with the hidden bit at :data:`P` and three guard bits,
the exponent already biased). Cut points (:data:`ROUND_CUTS`, :data:`ROUND_FP32_CUTS`): after
the leading-zero count, after the exponent arithmetic (general one only), after the alignment
shift, after the rounding increment; the caller owns the output register.
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed

from rtl.lib.formats import EXP_W
from rtl.lib.lzc import lzc
from rtl.lib.pipe import Pipe, cut

ROUND_CUTS = 4
ROUND_FP32_CUTS = 3

# round_pack_fp32's significand: 1 carry bit, hidden bit at P, 23 fraction bits, 3 extra bits (guard, round, sticky)
P = 26
W = P + 2
EW = 11  # signed exponent width (biased exponent, may leave 1..254 before rounding)


def round_pack_fp32(m: Module, sign, exp, sig, name: str, pipe: Pipe | None = None):
    """fp32 of ``sig * 2**(exp - 127 - P)`` (``sig`` :data:`W` bits): normalize, round to nearest even,
    pack; an overflowing result saturates to infinity's encoding (finite datapaths)."""
    s1 = Signal(W, name=f"{name}_s1")
    e1 = Signal(signed(EW), name=f"{name}_e1")
    with m.If(sig[W - 1]):  # carry out: one right shift, keep the sticky bit
        m.d.comb += [s1.eq((sig >> 1) | sig[0]), e1.eq(exp + 1)]
    with m.Else():
        m.d.comb += [s1.eq(sig), e1.eq(exp)]
    lz = lzc(m, s1, P + 1, f"{name}_lz")
    sign, s1, e1, lz = cut(pipe, sign, s1, e1, lz)
    s2 = Signal(W, name=f"{name}_s2")
    e2 = Signal(signed(EW), name=f"{name}_e2")
    with m.If(e1 < 1):  # below the normal range: shift right to exponent 1 (subnormal), keep the sticky bit
        rs = Signal(range(W + 1), name=f"{name}_rs")
        m.d.comb += rs.eq(Mux(1 - e1 > W, W, 1 - e1))
        shifted = Signal(W, name=f"{name}_sh")
        m.d.comb += shifted.eq(s1 >> rs)
        sticky = (s1 & ~(Const((1 << W) - 1, W) << rs)[:W]) != 0  # the bits shifted out
        m.d.comb += [s2.eq(shifted | sticky), e2.eq(1)]
    with m.Else():  # leading one below the hidden bit: shift left, not below exponent 1
        ls = Signal(6, name=f"{name}_ls")
        m.d.comb += ls.eq(Mux(lz > e1 - 1, (e1 - 1)[:6], lz))
        m.d.comb += [s2.eq((s1 << ls)[:W]), e2.eq(e1 - ls)]
    sign, s2, e2 = cut(pipe, sign, s2, e2)
    lsb, guard = s2[3], s2[2]
    sticky = s2[:2].any()
    up = guard & (sticky | lsb)
    mant = Signal(25, name=f"{name}_mant")
    m.d.comb += mant.eq(s2[3:P + 1] + up)
    sign, e2, mant = cut(pipe, sign, e2, mant)
    e3 = Signal(signed(EW), name=f"{name}_e3")
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


def round_pack(m: Module, sign, exp, sig, width: int, name: str, ebits: int = 8, mbits: int = 23,
               specials: str = "ieee", pipe: Pipe | None = None):
    """Bits of ``(-1)**sign * sig * 2**exp`` (``sig`` unsigned, ``width`` bits) in the IEEE-style format
    with ``ebits`` / ``mbits`` (default fp32): one RNE rounding, subnormals; overflow to inf
    (``specials="ieee"``) or to the NaN code (``"fn"``: e4m3, whose top code of the top binade is NaN)."""
    bias = (1 << (ebits - 1)) - 1
    emax = (1 << ebits) - 1
    lsb_min = 1 - bias - mbits
    ext_w = width + 2
    sw = EXP_W + 3
    # the result's last mantissa bit sits at lsb = max(lsb_min, ue - mbits), ue = exp + width - 1 - lz the
    # leading one; r = lsb - exp is the right shift (left if <= 0). Both cases are prepared in parallel with
    # the count: the subnormal case (lsb_min - exp) from exp alone, the normal one from lz alone.
    lz = lzc(m, sig, width, f"{name}_lz")
    ek = Signal(signed(sw), name=f"{name}_ek")  # exponent of the last mantissa bit before subtracting lz
    ra = Signal(signed(sw), name=f"{name}_ra")  # r in the subnormal case
    m.d.comb += [ek.eq(exp + (width - 1 - mbits)), ra.eq(lsb_min - exp)]
    ra_left = Signal(name=f"{name}_ra_left")
    ra_ls = Signal(range(mbits + 1), name=f"{name}_ra_ls")
    ra_rc = Signal(range(ext_w + 1), name=f"{name}_ra_rc")
    m.d.comb += [ra_left.eq(ra <= 0), ra_ls.eq(Mux(-ra > mbits, mbits, (-ra)[:ra_ls.shape().width])),
                 ra_rc.eq(Mux(ra > ext_w, ext_w, ra[:ra_rc.shape().width]))]
    sign, sig, lz, ek, ra_left, ra_ls, ra_rc = cut(pipe, sign, sig, lz, ek, ra_left, ra_ls, ra_rc)
    under = Signal(name=f"{name}_under")
    lsb_n = Signal(signed(sw), name=f"{name}_lsbn")
    m.d.comb += [lsb_n.eq(ek - lz), under.eq(lsb_n < lsb_min)]
    k = width - 1 - mbits  # r in the normal case is k - lz
    lsb = Signal(signed(sw), name=f"{name}_lsb")
    left = Signal(name=f"{name}_left")
    ls = Signal(range(mbits + 1), name=f"{name}_ls")
    rc = Signal(range(ext_w + 1), name=f"{name}_rc")
    lzs = Signal(signed(sw), name=f"{name}_lzs")
    m.d.comb += lzs.eq(lz)
    m.d.comb += [
        lsb.eq(Mux(under, lsb_min, lsb_n)),
        left.eq(Mux(under, ra_left, lzs >= k)),
        ls.eq(Mux(under, ra_ls, Mux(lzs - k > mbits, mbits, (lzs - k)[:ls.shape().width]))),
        rc.eq(Mux(under, ra_rc, (k - lzs)[:rc.shape().width])),
    ]
    sign, sig, lsb, left, ls, rc = cut(pipe, sign, sig, lsb, left, ls, rc)
    mant = Signal(mbits + 1, name=f"{name}_mt")
    guard = Signal(name=f"{name}_g")
    sticky = Signal(name=f"{name}_st")
    with m.If(left):  # exact: shift left (at most mbits)
        m.d.comb += mant.eq((sig << ls)[:mbits + 1])
    with m.Else():
        ext = Cat(Const(0, 2), sig)
        sh = Signal(ext_w, name=f"{name}_sh")
        m.d.comb += sh.eq(ext >> rc)
        lost = (ext & ~(Const((1 << ext_w) - 1, ext_w) << rc)[:ext_w]) != 0  # the bits shifted out
        m.d.comb += [mant.eq(sh[2:]), guard.eq(sh[1]), sticky.eq(sh[0] | lost)]
    sign, lsb, mant, guard, sticky = cut(pipe, sign, lsb, mant, guard, sticky)
    up = guard & (sticky | mant[0])
    mr = Signal(mbits + 2, name=f"{name}_mr")
    m.d.comb += mr.eq(mant + up)
    # the biased exponent if the rounded mantissa carries out / keeps its leading one, beside the increment
    be_hi = Signal(signed(EXP_W + 3), name=f"{name}_behi")
    be_mid = Signal(signed(EXP_W + 3), name=f"{name}_bemid")
    m.d.comb += [be_hi.eq(lsb + bias + mbits + 1), be_mid.eq(lsb + bias + mbits)]
    if specials == "fn":  # overflow: above the top binade, or its all-ones mantissa (the NaN code)
        hi_ovf, mid_ovf = be_hi > emax, be_mid > emax
        hi_top, mid_top = be_hi == emax, be_mid == emax
    else:
        hi_ovf, mid_ovf = be_hi >= emax, be_mid >= emax
        hi_top = mid_top = Const(0, 1)
    sign, mr, be_hi, be_mid, hi_ovf, mid_ovf, hi_top, mid_top = cut(
        pipe, sign, mr, be_hi, be_mid, hi_ovf, mid_ovf, hi_top, mid_top)
    be = Signal(ebits, name=f"{name}_be")
    frac = Signal(mbits, name=f"{name}_fr")
    ovf = Signal(name=f"{name}_ovf")
    top = Signal(name=f"{name}_top")
    with m.If(mr[mbits + 1]):
        m.d.comb += [be.eq(be_hi[:ebits]), frac.eq(mr[1:mbits + 1]), ovf.eq(hi_ovf), top.eq(hi_top)]
    with m.Elif(mr[mbits]):
        m.d.comb += [be.eq(be_mid[:ebits]), frac.eq(mr[:mbits]), ovf.eq(mid_ovf), top.eq(mid_top)]
    with m.Else():
        m.d.comb += [be.eq(0), frac.eq(mr[:mbits])]
    out = Signal(1 + ebits + mbits, name=name)
    if specials == "fn":
        with m.If(ovf | (top & (frac == (1 << mbits) - 1))):
            m.d.comb += out.eq(Cat(Const((1 << mbits) - 1, mbits), Const(emax, ebits), sign))
        with m.Else():
            m.d.comb += out.eq(Cat(frac, be, sign))
    else:
        with m.If(ovf):
            m.d.comb += out.eq(Cat(Const(0, mbits), Const(emax, ebits), sign))
        with m.Else():
            m.d.comb += out.eq(Cat(frac, be, sign))
    return out
