"""Round-and-pack: an exact ``(-1)**sign * sig * 2**exp`` to a float format's bits, one round to
nearest even, gradual underflow.

:func:`round_pack` is the general one (any IEEE-style format, any significand
width and exponent, inf / NaN on overflow per the format's specials);
:func:`round_pack_fp32` is the narrow fp32 one of the finite datapaths (a
28-bit significand with the hidden bit at :data:`P` and three guard bits,
the exponent already biased). Cut points (:data:`ROUND_CUTS`, :data:`ROUND_FP32_CUTS`, six each):
after the leading-zero count's first level (with the exponent sums and compares beside it), after
its second level, after the shift amounts and result exponent, after each half of the normalizing
shift (:func:`shift_coarse`, :func:`shift_fine`), after the rounding increment (with the overflow
compares beside it); the caller owns the output register. Each stage is at most one carry chain
and a few LUT levels, which is what closes 150 MHz on an ECP5 (docs/rtl.md).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed

from rtl.lib.formats import EXP_W
from rtl.lib.lzc import lzc_combine, lzc_groups
from rtl.lib.pipe import Pipe, cut

ROUND_CUTS = 6
ROUND_FP32_CUTS = 6

# round_pack_fp32's significand: 1 carry bit, hidden bit at P, 23 fraction bits, 3 extra bits (guard, round, sticky)
P = 26
W = P + 2
EW = 11  # signed exponent width (biased exponent, may leave 1..254 before rounding)


def _mask_below(width: int, amount):
    """The ``width``-bit mask of the bits below bit ``amount``."""
    return ~(Const((1 << width) - 1, width) << amount)[:width]


def _const_select(sel, const: int, v):
    """``Mux(sel, const, v)`` as AND / OR data (each bit ``v & ~sel`` or ``v | sel``), for a register's input:
    a constant in a mux becomes the flip-flops' synchronous reset in yosys (a logic-driven net)."""
    return Cat(*((v[i] | sel) if (const >> i) & 1 else (v[i] & ~sel) for i in range(len(v))))


def _shift_as_data(x, width: int, bits, step: int, left: bool, zero_low: int = 0, zero_high: int = 0):
    """``x`` shifted by ``sum(bits[j] << j) * step``, one 2:1 stage per amount bit, each shifted-in zero an
    AND with the stage's bit: no constant mux, which yosys maps onto a flip-flop's synchronous reset.
    ``x``'s bits below ``zero_low``, from ``width - zero_high`` and from ``len(x)`` are known zeros."""
    v = [x[i] if zero_low <= i < min(len(x), width - zero_high) else None for i in range(width)]  # None: zero
    for j, b in enumerate(bits):
        w = step << j
        src = [i - w if left else i + w for i in range(width)]
        nxt = []
        for i, k in enumerate(src):
            here, there = v[i], (v[k] if 0 <= k < width else None)
            if here is None and there is None:
                nxt.append(None)
            elif there is None:
                nxt.append(here & ~b)
            elif here is None:
                nxt.append(there & b)
            else:
                nxt.append(Mux(b, there, here))
        v = nxt
    return Cat(*(Const(0, 1) if bit is None else bit for bit in v))


def shift_coarse(m: Module, x, width: int, amount, amount_bits: int, name: str, left: bool = False,
                 as_data: bool = False, zero_low: int = 0):
    """First half of a two-stage barrel shift of the ``width``-bit ``x`` by the unsigned ``amount``
    (``amount_bits`` wide; may exceed ``width``): by its bits above the low 3 (multiples of 8).
    Returns ``(partly shifted, any bit shifted out so far, the low 3 bits)`` -- signals to register
    before :func:`shift_fine`. Right shifts report the bits lost (sticky); left ones lose only zeros.
    ``as_data``: the zero fill as AND data (:func:`_shift_as_data`; :attr:`rtl.lib.pipe.Pipe.zero_fill_as_data`),
    same bits; ``zero_low``: ``x``'s low bits known to be zero (constants), for ``as_data``."""
    lo_bits = min(3, amount_bits)
    by = (amount[lo_bits:amount_bits] << lo_bits) if amount_bits > lo_bits else Const(0, 1)
    part = Signal(width, name=f"{name}_c")
    lost = Signal(name=f"{name}_l1")
    lo = Signal(lo_bits, name=f"{name}_lo")
    if as_data:
        m.d.comb += part.eq(_shift_as_data(x, width, [amount[j] for j in range(lo_bits, amount_bits)], 8, left,
                                                zero_low))
    elif left:
        m.d.comb += part.eq((x << by)[:width])
    else:
        m.d.comb += part.eq(x >> by)
    if not left:
        m.d.comb += lost.eq((x & _mask_below(width, by)) != 0)
    m.d.comb += lo.eq(amount[:lo_bits])
    return part, lost, lo


def shift_fine(m: Module, part, lost, lo, width: int, name: str, left: bool = False, as_data: bool = False,
               zero_high: int = 0):
    """Second half of :func:`shift_coarse`: ``(shifted, sticky)`` (sticky: any bit shifted out);
    ``as_data``: :func:`shift_coarse`'s; ``zero_high``: ``part``'s top bits known to be zero, for it."""
    out = Signal(width, name=f"{name}_f")
    sticky = Signal(name=f"{name}_st")
    if as_data:
        m.d.comb += out.eq(_shift_as_data(part, width, [lo[j] for j in range(len(lo))], 1, left,
                                                zero_high=zero_high))
    elif left:
        m.d.comb += out.eq((part << lo)[:width])
    else:
        m.d.comb += out.eq(part >> lo)
    if not left:
        m.d.comb += sticky.eq(lost | ((part & _mask_below(width, lo)) != 0))
    return out, sticky


def round_pack_fp32(m: Module, sign, exp, sig, name: str, pipe: Pipe | None = None):
    """fp32 of ``sig * 2**(exp - 127 - P)`` (``sig`` :data:`W` bits): normalize, round to nearest even,
    pack; an overflowing result saturates to infinity's encoding (finite datapaths)."""
    s1 = Signal(W, name=f"{name}_s1")
    e1 = Signal(signed(EW), name=f"{name}_e1")
    e1m1 = Signal(signed(EW), name=f"{name}_e1m1")
    rs0 = Signal(signed(EW), name=f"{name}_rs0")  # 1 - e1: the right shift of a subnormal result
    carry_out = sig[W - 1]
    with m.If(carry_out):  # carry out: one right shift, keep the sticky bit
        m.d.comb += [s1.eq((sig >> 1) | sig[0]), e1.eq(exp + 1), e1m1.eq(exp), rs0.eq(-exp)]
    with m.Else():
        m.d.comb += [s1.eq(sig), e1.eq(exp), e1m1.eq(exp - 1), rs0.eq(1 - exp)]
    under = Signal(name=f"{name}_under")  # e1 < 1: below the normal range
    m.d.comb += under.eq(Mux(carry_out, exp < 0, exp < 1))
    big = Signal(name=f"{name}_big")  # e1 - 1 >= 32 > any lz: never clipped
    m.d.comb += big.eq(~e1m1[EW - 1] & (e1m1[5:EW - 1] != 0))
    groups = lzc_groups(m, s1, P + 1, f"{name}_lz")
    sign, s1, e1, e1m1, rs0, under, big, *groups = cut(pipe, sign, s1, e1, e1m1, rs0, under, big, *groups)
    lz = lzc_combine(m, groups, P + 1, f"{name}_lz")
    # below the normal range: shift right to exponent 1 (subnormal), keep the sticky bit; else the
    # leading one below the hidden bit: shift left by min(lz, e1 - 1), the exponent not below 1
    rs = Signal(range(32), name=f"{name}_rs")
    m.d.comb += rs.eq(Mux(rs0 > 31, 31, rs0[:5]))
    sign, s1, e1, e1m1, rs, under, big, lz = cut(pipe, sign, s1, e1, e1m1, rs, under, big, lz)
    clip = Signal(name=f"{name}_clip")  # lz > e1 - 1 (a 5-bit compare: e1 - 1 in 0..31 when it matters)
    m.d.comb += clip.eq(~big & (lz > e1m1[:5]))
    ls = Signal(5, name=f"{name}_ls")
    m.d.comb += ls.eq(Mux(clip, e1m1[:5], lz))
    e1lz = Signal(signed(EW), name=f"{name}_e1lz")
    m.d.comb += e1lz.eq(e1 - lz)
    e2 = Signal(signed(EW), name=f"{name}_e2")
    m.d.comb += e2.eq(Mux(under | clip, 1, e1lz))
    sign, s1, rs, ls, under, e2 = cut(pipe, sign, s1, rs, ls, under, e2)
    r_part, r_lost, r_lo = shift_coarse(m, s1, W, rs, 5, f"{name}_sr")
    l_part, _, l_lo = shift_coarse(m, s1, W, ls, 5, f"{name}_sl", left=True)
    sign, under, e2, r_part, r_lost, r_lo, l_part, l_lo = cut(pipe, sign, under, e2, r_part, r_lost, r_lo,
                                                              l_part, l_lo)
    sr, sticky_r = shift_fine(m, r_part, r_lost, r_lo, W, f"{name}_sr")
    sl, _ = shift_fine(m, l_part, None, l_lo, W, f"{name}_sl", left=True)
    s2 = Signal(W, name=f"{name}_s2")
    m.d.comb += s2.eq(Mux(under, sr | sticky_r, sl))
    sign, s2, e2 = cut(pipe, sign, s2, e2)
    lsb, guard = s2[3], s2[2]
    sticky = s2[:2].any()
    up = guard & (sticky | lsb)
    mant = Signal(25, name=f"{name}_mant")
    m.d.comb += mant.eq(s2[3:P + 1] + up)
    ovf_hi = Signal(name=f"{name}_ovh")  # e2 + 1 >= 255 (the rounded mantissa carries out)
    ovf_mid = Signal(name=f"{name}_ovm")
    e2p1 = Signal(signed(EW), name=f"{name}_e2p1")
    m.d.comb += [ovf_hi.eq(e2 >= 254), ovf_mid.eq(e2 >= 255), e2p1.eq(e2 + 1)]
    sign, e2, e2p1, mant, ovf_hi, ovf_mid = cut(pipe, sign, e2, e2p1, mant, ovf_hi, ovf_mid)
    e3 = Signal(8, name=f"{name}_e3")
    frac = Signal(23, name=f"{name}_frac")
    ovf = Signal(name=f"{name}_ovf")
    with m.If(mant[24]):
        m.d.comb += [e3.eq(e2p1[:8]), frac.eq(mant[1:24]), ovf.eq(ovf_hi)]
    with m.Else():
        m.d.comb += [e3.eq(Mux(mant[23], e2[:8], 0)), frac.eq(mant[:23]), ovf.eq(mant[23] & ovf_mid)]
    out = Signal(32, name=name)
    with m.If(ovf):
        m.d.comb += out.eq(Cat(Const(0, 23), Const(255, 8), sign))
    with m.Else():
        m.d.comb += out.eq(Cat(frac, e3, sign))
    return out


def round_pack(m: Module, sign, exp, sig, width: int, name: str, ebits: int = 8, mbits: int = 23,
               specials: str = "ieee", pipe: Pipe | None = None, forced=None, exp_offset: int = 0):
    """Bits of ``(-1)**sign * sig * 2**exp`` (``sig`` unsigned, ``width`` bits) in the IEEE-style format
    with ``ebits`` / ``mbits`` (default fp32): one RNE rounding, subnormals; overflow to inf
    (``specials="ieee"``) or to the NaN code (``"fn"``: e4m3, whose top code of the top binade is NaN).

    With a pipe whose ``specials_as_data`` is set (:func:`packs_specials`), the overflow and the caller's
    special cases ``forced`` = ``(nan, inf, inf_sign)`` (:class:`rtl.lib.pipe.Carried` values, or None:
    none) are decided beside the rounding increment and applied as AND / OR data (:func:`_pack_as_data`);
    the result is then final (the caller applies no :func:`rtl.lib.fp.special`). Same cut points, bits.

    ``exp_offset``: the exponent is ``exp + exp_offset`` (folded into the compares and sums with constants
    that read it, so a caller's constant offset is no carry chain of its own before theirs)."""
    bias = (1 << (ebits - 1)) - 1
    emax = (1 << ebits) - 1
    lsb_min = 1 - bias - mbits
    ext_w = width + 2
    sw = EXP_W + 3
    k = width - 1 - mbits  # the right shift r in the normal case is k - lz
    # the result's last mantissa bit sits at lsb = max(lsb_min, ue - mbits), ue = exp + width - 1 - lz the
    # leading one; r = lsb - exp is the right shift (left if <= 0). Both cases are prepared in parallel with
    # the count: the subnormal case (lsb_min - exp) from exp alone, the normal one from lz alone.
    groups = lzc_groups(m, sig, width, f"{name}_lz")
    ek = Signal(signed(sw), name=f"{name}_ek")  # exponent of the last mantissa bit before subtracting lz
    ekm = Signal(signed(sw), name=f"{name}_ekm")  # ek - lsb_min: below the normal range iff lz > ekm
    ra = Signal(signed(sw), name=f"{name}_ra")  # r in the subnormal case
    nra = Signal(signed(sw), name=f"{name}_nra")
    off = exp_offset
    m.d.comb += [ek.eq(exp + (k + off)), ekm.eq(exp + (k - lsb_min + off)), ra.eq((lsb_min - off) - exp),
                 nra.eq(exp - (lsb_min - off))]
    # the subnormal case's clamps as compares of exp with constants, beside the subtractions
    ra_left = Signal(name=f"{name}_ra_left")  # ra <= 0
    ra_ls_max = Signal(name=f"{name}_ra_lsmax")  # -ra > mbits
    ra_rc_max = Signal(name=f"{name}_ra_rcmax")  # ra > ext_w
    if compares_as_data(pipe):  # AND / OR trees of exp's bits: no carry chain before the cut
        m.d.comb += [ra_left.eq(~lt_const(exp, lsb_min - off)), ra_ls_max.eq(~lt_const(exp, lsb_min + mbits - off + 1)),
                     ra_rc_max.eq(lt_const(exp, lsb_min - ext_w - off))]
    else:
        m.d.comb += [ra_left.eq(exp >= lsb_min - off), ra_ls_max.eq(exp > lsb_min + mbits - off),
                     ra_rc_max.eq(exp < lsb_min - ext_w - off)]
    ra_ls = Signal(range(mbits + 1), name=f"{name}_ra_ls")
    ra_rc = Signal(range(ext_w + 1), name=f"{name}_ra_rc")
    ls_w, rc_w = ra_ls.shape().width, ra_rc.shape().width
    sign, sig, ek, ekm, ra_lo, nra_lo, ra_left, ra_ls_max, ra_rc_max, *groups = cut(
        pipe, sign, sig, ek, ekm, ra[:rc_w], nra[:ls_w], ra_left, ra_ls_max, ra_rc_max, *groups)
    lz = lzc_combine(m, groups, width, f"{name}_lz")
    zd = zero_fill_as_data(pipe)
    sel = _const_select if zd else Mux
    m.d.comb += [ra_ls.eq(sel(ra_ls_max, mbits, nra_lo)), ra_rc.eq(sel(ra_rc_max, ext_w, ra_lo))]
    lzw = lz.shape().width
    ekm_lo = Signal(lzw, name=f"{name}_ekm_lo")  # under = lz > ekm as a narrow compare: ekm < 0, or its low bits
    ekm_neg = Signal(name=f"{name}_ekm_neg")
    ekm_big = Signal(name=f"{name}_ekm_big")
    m.d.comb += [ekm_lo.eq(ekm[:lzw]), ekm_neg.eq(ekm[sw - 1]), ekm_big.eq(~ekm[sw - 1] & (ekm[lzw:sw - 1] != 0))]
    sign, sig, lz, ek, ekm_lo, ekm_neg, ekm_big, ra_left, ra_ls, ra_rc = cut(
        pipe, sign, sig, lz, ek, ekm_lo, ekm_neg, ekm_big, ra_left, ra_ls, ra_rc)
    under = Signal(name=f"{name}_under")
    lsb_n = Signal(signed(sw), name=f"{name}_lsbn")
    lzs = Signal(signed(sw), name=f"{name}_lzs")
    m.d.comb += [lzs.eq(lz), lsb_n.eq(ek - lz), under.eq(ekm_neg | (~ekm_big & (lz > ekm_lo)))]
    n_ls = Signal(signed(sw), name=f"{name}_nls")  # lz - k and k - lz, beside the compares
    n_rc = Signal(signed(sw), name=f"{name}_nrc")
    m.d.comb += [n_ls.eq(lzs - k), n_rc.eq(k - lzs)]
    lsb = Signal(signed(sw), name=f"{name}_lsb")
    left = Signal(name=f"{name}_left")
    ls = Signal(range(mbits + 1), name=f"{name}_ls")
    rc = Signal(range(ext_w + 1), name=f"{name}_rc")
    if compares_as_data(pipe):  # the normal case's compares of lz with constants as AND / OR trees of its
        # bits, and its clamp as data: no carry chain, no constant for yosys to map onto a synchronous reset
        lz_ge_k, ls_clamp = ~lt_const(lz, k), ~lt_const(lz, k + mbits + 1)
        ls_normal = _const_select(ls_clamp, mbits, n_ls[:ls.shape().width])
    else:
        lz_ge_k, ls_normal = lz >= k, Mux(lz > k + mbits, mbits, n_ls[:ls.shape().width])
    m.d.comb += [
        lsb.eq(sel(under, lsb_min, lsb_n)),
        left.eq(Mux(under, ra_left, lz_ge_k)),
        ls.eq(Mux(under, ra_ls, ls_normal)),
        rc.eq(Mux(under, ra_rc, n_rc[:rc.shape().width])),
    ]
    sign, sig, lsb, left, ls, rc = cut(pipe, sign, sig, lsb, left, ls, rc)
    # the shift, in two registered halves: left (exact, at most mbits; the value fits mbits + 1 bits
    # then) or right (with the bits lost as sticky)
    l_part, _, l_lo = shift_coarse(m, sig[:mbits + 1], mbits + 1, ls, ls.shape().width, f"{name}_sl", left=True,
                                   as_data=zd)
    r_part, r_lost, r_lo = shift_coarse(m, Cat(Const(0, 2), sig), ext_w, rc, rc.shape().width, f"{name}_sr",
                                        as_data=zd, zero_low=2)
    sign, lsb, left, l_part, l_lo, r_part, r_lost, r_lo = cut(pipe, sign, lsb, left, l_part, l_lo, r_part, r_lost,
                                                             r_lo)
    sl, _ = shift_fine(m, l_part, None, l_lo, mbits + 1, f"{name}_sl", left=True, as_data=zd)
    sh, lost = shift_fine(m, r_part, r_lost, r_lo, ext_w, f"{name}_sr", as_data=zd)
    mant = Signal(mbits + 1, name=f"{name}_mt")
    guard = Signal(name=f"{name}_g")
    sticky = Signal(name=f"{name}_st")
    if zd:  # a left shift is exact: no guard / sticky bits (ANDs, not constants in a mux)
        m.d.comb += [mant.eq(Mux(left, sl, sh[2:])), guard.eq(sh[1] & ~left), sticky.eq((sh[0] | lost) & ~left)]
    else:
        with m.If(left):  # exact
            m.d.comb += mant.eq(sl)
        with m.Else():
            m.d.comb += [mant.eq(sh[2:]), guard.eq(sh[1]), sticky.eq(sh[0] | lost)]
    if packs_specials(pipe):
        return _pack_as_data(m, sign, lsb, mant, guard, sticky, name, ebits, mbits, specials, pipe, forced)
    sign, lsb, mant, guard, sticky = cut(pipe, sign, lsb, mant, guard, sticky)
    up = guard & (sticky | mant[0])
    mr = Signal(mbits + 2, name=f"{name}_mr")
    m.d.comb += mr.eq(mant + up)
    # the biased exponent if the rounded mantissa carries out / keeps its leading one, beside the increment
    be_hi = Signal(signed(EXP_W + 3), name=f"{name}_behi")
    be_mid = Signal(signed(EXP_W + 3), name=f"{name}_bemid")
    m.d.comb += [be_hi.eq(lsb + bias + mbits + 1), be_mid.eq(lsb + bias + mbits)]
    top_lsb = emax - bias - mbits  # lsb at which be_mid == emax (be_hi == emax one below): compares on lsb
    if specials == "fn":  # overflow: above the top binade, or its all-ones mantissa (the NaN code)
        hi_ovf, mid_ovf = lsb > top_lsb - 1, lsb > top_lsb
        hi_top, mid_top = lsb == top_lsb - 1, lsb == top_lsb
    else:
        hi_ovf, mid_ovf = lsb >= top_lsb - 1, lsb >= top_lsb
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


def zero_fill_as_data(pipe: Pipe | None) -> bool:
    """Whether the shifts on ``pipe`` fill zeros as AND data (:attr:`rtl.lib.pipe.Pipe.zero_fill_as_data`)."""
    return pipe is not None and pipe.zero_fill_as_data


def compares_as_data(pipe: Pipe | None) -> bool:
    """Whether :func:`round_pack` on ``pipe`` builds its exponent compares as data (:attr:`rtl.lib.pipe.Pipe.compare_as_data`)."""
    return pipe is not None and pipe.compare_as_data


def lt_const(x, c: int):
    """``x < c`` (``x`` a signed or unsigned Amaranth value, ``c`` an integer) as an AND / OR chain of
    ``x``'s bits, LSB first: ``lt = ~x_i | lt`` where ``c``'s bit is 1, ``~x_i & lt`` where it is 0 (the
    signed MSB flipped to offset binary). No adder: yosys maps it onto LUTs, not onto a carry chain."""
    x = Value.cast(x)
    n, signed_x = len(x), x.shape().signed
    off = (1 << (n - 1)) if signed_x else 0
    cu = c + off  # x < c  <=>  x + off < c + off, both unsigned n-bit then
    if cu <= 0:
        return Const(0, 1)
    if cu >= 1 << n:
        return Const(1, 1)
    bits = [x[i] for i in range(n)]
    if signed_x:
        bits[n - 1] = ~x[n - 1]
    lt = Const(0, 1)
    for i, b in enumerate(bits):
        lt = (~b | lt) if (cu >> i) & 1 else (~b & lt)
    return lt


def splits_compare(pipe: Pipe | None) -> bool:
    """Whether the adders on ``pipe`` split their magnitude compare (:attr:`rtl.lib.pipe.Pipe.split_compare`)."""
    return pipe is not None and pipe.split_compare


def negates_early(pipe: Pipe | None) -> bool:
    """Whether the adders on ``pipe`` invert the subtrahend before the add's cut point (:attr:`rtl.lib.pipe.Pipe.negate_early`)."""
    return pipe is not None and pipe.negate_early


def splits_add(pipe: Pipe | None) -> bool:
    """Whether the adders on ``pipe`` add their significands in two stages (:attr:`rtl.lib.pipe.Pipe.split_add`)."""
    return pipe is not None and pipe.split_add


def packs_specials(pipe: Pipe | None) -> bool:
    """Whether :func:`round_pack` on ``pipe`` applies overflow and the caller's specials itself, as data."""
    return pipe is not None and pipe.specials_as_data


def _pack_as_data(m: Module, sign, lsb, mant, guard, sticky, name: str, ebits: int, mbits: int, specials: str,
                  pipe: Pipe, forced):
    """round_pack's last two cut points with the forcing as data: the exponent compares beside the
    fine shift; beside the increment, whether it carries out / keeps the leading one (all-ones
    detects, not its sum), the overflow, the forced exponent and sign; after it, each fraction bit is
    one LUT of registered values (``mr & ~force | nan``) -- no constant mux before the output register,
    which yosys maps onto the flip-flops' synchronous reset. The rounded fraction is ``mr[:mbits]`` in
    every case (a carry out leaves ``mr = 2**(mbits + 1)``, whose low bits are 0)."""
    bias = (1 << (ebits - 1)) - 1
    be_hi = Signal(signed(EXP_W + 3), name=f"{name}_behi")
    be_mid = Signal(signed(EXP_W + 3), name=f"{name}_bemid")
    m.d.comb += [be_hi.eq(lsb + (bias + mbits + 1)), be_mid.eq(lsb + (bias + mbits))]  # one constant each
    top_lsb = (1 << ebits) - 1 - bias - mbits

    def at_least(t: int, tag: str):  # lsb >= t: the sign bit of one subtraction one bit wider (no compare cell)
        d = Signal(signed(len(lsb) + 1), name=f"{name}_{tag}")
        m.d.comb += d.eq(lsb - t)
        return ~d[-1]

    if pipe.packed_round:
        return _pack_one_add(m, sign, mant, guard, sticky, be_mid[:ebits],
                             at_least(top_lsb + 1 if specials == "fn" else top_lsb, "dmid"), name, ebits, mbits,
                             specials, pipe, forced)
    if specials == "fn":
        hi_ovf, mid_ovf, mid_top = at_least(top_lsb, "dhi"), at_least(top_lsb + 1, "dmid"), lsb == top_lsb
    else:
        hi_ovf, mid_ovf, mid_top = at_least(top_lsb - 1, "dhi"), at_least(top_lsb, "dmid"), Const(0, 1)
    sign, mant, guard, sticky, be_hi, be_mid, hi_ovf, mid_ovf, mid_top = cut(
        pipe, sign, mant, guard, sticky, be_hi[:ebits], be_mid[:ebits], hi_ovf, mid_ovf, mid_top)
    up = Signal(name=f"{name}_up")
    m.d.comb += up.eq(guard & (sticky | mant[0]))
    mr = Signal(mbits + 2, name=f"{name}_mr")
    m.d.comb += mr.eq(mant + up)
    low_ones = mant[:mbits].all()
    hi = Signal(name=f"{name}_hi")  # the increment carries out: mr = 2**(mbits + 1)
    mid = Signal(name=f"{name}_mid")  # else the leading one at bit mbits (a normal result)
    m.d.comb += [hi.eq(up & low_ones & mant[mbits]), mid.eq(~hi & (mant[mbits] | (up & low_ones)))]
    nan, inf, inf_sign = (Const(0, 1),) * 3 if forced is None else (c.value for c in forced)
    force = Signal(name=f"{name}_force")  # the result is a special code: exponent all ones
    if specials == "fn":  # above the top binade, or its all-ones mantissa (the NaN code), or a NaN operand
        frac_ones = Mux(up, mant[1:mbits].all() & ~mant[0], low_ones)  # mr[:mbits] all ones
        m.d.comb += force.eq((hi & hi_ovf) | (mid & mid_ovf) | (mid & mid_top & frac_ones) | nan)
    else:
        m.d.comb += force.eq((hi & hi_ovf) | (mid & mid_ovf) | nan | inf)
    be = Signal(ebits, name=f"{name}_be")
    m.d.comb += be.eq((be_hi & hi.replicate(ebits)) | (be_mid & mid.replicate(ebits)) | force.replicate(ebits))
    sign_out = Signal(name=f"{name}_so")  # a NaN is positive; an inf operand's sign wins
    m.d.comb += sign_out.eq(~nan & Mux(inf, inf_sign, sign))
    sign_out, be, frac, force, nan = cut(pipe, sign_out, be, mr[:mbits], force, nan)
    out = Signal(1 + ebits + mbits, name=name)
    if specials == "fn":  # the NaN code: all-ones fraction
        m.d.comb += out.eq(Cat(frac | force.replicate(mbits), be, sign_out))
    else:  # inf: zero fraction; the canonical NaN: its quiet bit
        m.d.comb += out.eq(Cat(frac & ~force.replicate(mbits), be, sign_out) | (nan << (mbits - 1)))
    return out


def _pack_one_add(m: Module, sign, mant, guard, sticky, be_mid, mid_ovf, name: str, ebits: int, mbits: int,
                  specials: str, pipe: Pipe, forced):
    """:func:`_pack_as_data`'s last two cut points with the increment as one add on the packed exponent ||
    fraction (:attr:`rtl.lib.pipe.Pipe.packed_round`): a fraction that carries out increments the exponent
    field, a subnormal that rounds up reaches exponent 1, and the top binade's carry gives inf's code, so
    no all-ones detect of the mantissa selects the exponent after the increment. ``be_mid``: the biased
    exponent of a leading one at bit ``mbits`` (``ebits`` bits); ``mid_ovf``: it does not fit (``fn``: above
    the top binade). Beside the add only an AND per exponent bit and the forcing; after it one LUT per bit
    (``fn``: the NaN-code detect of the packed sum, ``ebits + mbits + 1`` inputs, too)."""
    sign, mant, guard, sticky, be_mid, mid_ovf = cut(pipe, sign, mant, guard, sticky, be_mid, mid_ovf)
    up = Signal(name=f"{name}_up")
    m.d.comb += up.eq(guard & (sticky | mant[0]))
    normal = mant[mbits]  # else a subnormal or zero: lsb at its minimum, exponent field 0
    packed = Signal(ebits + mbits + 1, name=f"{name}_pk")
    m.d.comb += packed.eq(Cat(mant[:mbits], be_mid & normal.replicate(ebits)) + up)
    nan, inf, inf_sign = (Const(0, 1),) * 3 if forced is None else (c.value for c in forced)
    force = Signal(name=f"{name}_force")  # exponent all ones: overflow before rounding, or a special operand
    m.d.comb += force.eq((normal & mid_ovf) | nan | (Const(0, 1) if specials == "fn" else inf))
    sign_out = Signal(name=f"{name}_so")  # a NaN is positive; an inf operand's sign wins
    m.d.comb += sign_out.eq(~nan & Mux(inf, inf_sign, sign))
    sign_out, packed, force, nan = cut(pipe, sign_out, packed, force, nan)
    frac, be = packed[:mbits], packed[mbits:mbits + ebits]
    out = Signal(1 + ebits + mbits, name=name)
    if specials == "fn":  # the NaN code (all ones) also when rounding reaches it or carries past the top binade
        nan_code = Signal(name=f"{name}_nc")
        m.d.comb += nan_code.eq(force | packed[mbits + ebits] | packed[:mbits + ebits].all())
        m.d.comb += out.eq(Cat(frac | nan_code.replicate(mbits), be | nan_code.replicate(ebits), sign_out))
    else:  # a carry into the all-ones exponent leaves a zero fraction: inf's code already
        m.d.comb += out.eq(Cat(frac & ~force.replicate(mbits), be | force.replicate(ebits), sign_out)
                           | (nan << (mbits - 1)))
    return out
