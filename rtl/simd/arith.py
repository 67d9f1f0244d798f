"""Combinational arithmetic of the SIMD PE: operand decoders for every format,
exact products rounded once to fp32, IEEE fp32 add / multiply with inf and NaN,
int64 -> fp32.

Every operand is decoded to ``(nan, inf, sign, exp, sig)`` with value
``(-1)**sign * sig * 2**exp`` (``sig`` an unsigned integer): two's complement
integers, small floats (``ieee`` / ``fn`` / ``none`` specials, as
:mod:`archsim.numerics._float`), posits (regime, ``es`` exponent bits,
fraction; NaR is a NaN) and fp32. :func:`round_pack` turns any such exact
value into fp32 bits with one round to nearest even, gradual underflow and
overflow to inf, so a product of two decoded operands is exact until that one
rounding. NaN results are the canonical quiet NaN ``0x7fc00000``. The finite
fp32 adder is :func:`rtl.pim.fp.fp32_add`; :func:`fp32_add` wraps it with
the IEEE special cases.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, signed

from rtl.pim import fp as pim_fp

QNAN = 0x7FC00000
EXP_W = 12  # signed exponent width of decoded operands (bf16 / fp32 / posit16 ranges fit)


@dataclass(frozen=True)
class FormatHw:
    """What the hardware needs to know about a format (from :func:`archsim.numerics.get_format`)."""

    name: str
    bits: int
    kind: str  # "int" | "float" | "posit"
    ebits: int = 0
    mbits: int = 0
    bias: int = 0
    specials: str = "none"
    es: int = 0

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def sig_bits(self) -> int:
        if self.kind == "int":
            return self.bits
        if self.kind == "float":
            return self.mbits + 1
        return max(0, self.bits - 3 - self.es) + 1

    @staticmethod
    def of(name: str) -> "FormatHw":
        from archsim.numerics import get_format

        f = get_format(name)
        if f.kind == "int" and getattr(f, "lo", None) == -(1 << (f.bits - 1)):
            return FormatHw(name, f.bits, "int")
        if f.kind == "float" and hasattr(f, "ebits"):
            return FormatHw(name, f.bits, "float", f.ebits, f.mbits, f.bias, f.specials)
        if f.kind == "posit":
            return FormatHw(name, f.bits, "posit", es=f.es)
        raise ValueError(f"{name}: the SIMD RTL decodes two's complement ints, small floats and posits")


@dataclass
class Decoded:
    nan: object
    inf: object
    sign: object
    exp: object  # signed EXP_W
    sig: object  # unsigned


def _lzc(m: Module, sig, width: int, name: str):
    """Leading zeros of the ``width``-bit ``sig`` (``width`` if zero): a log-depth tree."""
    w2 = 1 << max(0, (width - 1).bit_length())
    padded = Cat(Const((1 << (w2 - width)) - 1, w2 - width), sig[:width]) if w2 > width else sig[:width]

    def tree(x, w):  # (count of leading zeros, all zero) of the w-bit x
        if w == 1:
            return ~x[0], ~x[0]
        hi_c, hi_z = tree(x[w // 2:], w // 2)
        lo_c, lo_z = tree(x[:w // 2], w // 2)
        c = Signal(range(w + 1), name=f"{name}_t{w}")
        m.d.comb += c.eq(Mux(hi_z, (w // 2) + lo_c, hi_c))
        return c, hi_z & lo_z

    count, _ = tree(padded, w2)
    out = Signal(range(width + 1), name=name)
    m.d.comb += out.eq(count)
    return out


def decode(m: Module, f: FormatHw, code, name: str) -> Decoded:
    """Decode the ``f.bits``-bit ``code`` (see the module docstring)."""
    b = f.bits
    sign = Signal(name=f"{name}_s")
    exp = Signal(signed(EXP_W), name=f"{name}_e")
    sig = Signal(f.sig_bits, name=f"{name}_m")
    nan = Signal(name=f"{name}_nan")
    inf = Signal(name=f"{name}_inf")
    m.d.comb += sign.eq(code[b - 1])
    if f.kind == "int":
        m.d.comb += [sig.eq(Mux(code[b - 1], ((1 << b) - code[:b])[:b], code[:b])), exp.eq(0)]
    elif f.kind == "float":
        mb, eb = f.mbits, f.ebits
        ef, mf = code[mb:mb + eb], code[:mb]
        m.d.comb += [sig.eq(Cat(mf, ef != 0)), exp.eq(Mux(ef == 0, 1, ef) - f.bias - mb)]
        emax = (1 << eb) - 1
        if f.specials == "ieee":
            m.d.comb += [nan.eq((ef == emax) & (mf != 0)), inf.eq((ef == emax) & (mf == 0))]
        elif f.specials == "fn":
            m.d.comb += nan.eq((ef == emax) & (mf == (1 << mb) - 1))
    else:  # posit
        n, es = b, f.es
        fw = f.sig_bits - 1
        mag = Signal(n, name=f"{name}_abs")
        m.d.comb += mag.eq(Mux(code[n - 1], ((1 << n) - code[:n])[:n], code[:n]))
        body = mag[:n - 1]
        first = body[n - 2]
        run_src = Signal(n - 1, name=f"{name}_rs")
        m.d.comb += run_src.eq(Mux(first, ~body, body))
        run = _lzc(m, run_src, n - 1, f"{name}_run")  # regime run length k
        regime = Signal(signed(6), name=f"{name}_k")
        m.d.comb += regime.eq(Mux(first, run - 1, -run))
        rest = Signal(n - 1, name=f"{name}_rest")
        m.d.comb += rest.eq((body << (run + 1))[:n - 1])  # exponent bits, then fraction, zero filled
        e_bits = rest[n - 1 - es:n - 1] if es else Const(0, 1)
        frac = rest[n - 1 - es - fw:n - 1 - es] if fw else Const(0, 0)
        m.d.comb += [sig.eq(Cat(frac, Const(1, 1))), exp.eq((regime << es) + e_bits - fw)]
        zero = code[:n] == 0
        m.d.comb += nan.eq(code[:n] == (1 << (n - 1)))
        with m.If(zero):
            m.d.comb += sig.eq(0)
    return Decoded(nan, inf, sign, exp, sig)


def decode_fp32(m: Module, x, name: str) -> Decoded:
    ef, mf = x[23:31], x[:23]
    exp = Signal(signed(EXP_W), name=f"{name}_e")
    m.d.comb += exp.eq(Mux(ef == 0, 1, ef) - 150)
    return Decoded((ef == 255) & (mf != 0), (ef == 255) & (mf == 0), x[31], exp, Cat(mf, ef != 0))


def round_pack(m: Module, sign, exp, sig, width: int, name: str, ebits: int = 8, mbits: int = 23):
    """Bits of ``(-1)**sign * sig * 2**exp`` (``sig`` unsigned, ``width`` bits) in the IEEE-style format
    with ``ebits`` / ``mbits`` (default fp32), one RNE rounding, subnormals, overflow to inf."""
    bias = (1 << (ebits - 1)) - 1
    emax = (1 << ebits) - 1
    lsb_min = 1 - bias - mbits
    lz = _lzc(m, sig, width, f"{name}_lz")
    ue = Signal(signed(EXP_W + 2), name=f"{name}_ue")  # exponent of the leading one
    m.d.comb += ue.eq(exp + (width - 1) - lz)
    lsb = Signal(signed(EXP_W + 2), name=f"{name}_lsb")  # exponent of the result's last mantissa bit
    m.d.comb += lsb.eq(Mux(ue - mbits < lsb_min, lsb_min, ue - mbits))
    r = Signal(signed(EXP_W + 3), name=f"{name}_r")
    m.d.comb += r.eq(lsb - exp)
    mant = Signal(mbits + 1, name=f"{name}_mt")
    guard = Signal(name=f"{name}_g")
    sticky = Signal(name=f"{name}_st")
    with m.If(r <= 0):  # exact: shift left (at most mbits)
        ls = Signal(range(mbits + 1), name=f"{name}_ls")
        m.d.comb += ls.eq(Mux(-r > mbits, mbits, (-r)[:ls.shape().width]))
        m.d.comb += mant.eq((sig << ls)[:mbits + 1])
    with m.Else():
        ext_w = width + 2
        ext = Cat(Const(0, 2), sig)
        rc = Signal(range(ext_w + 1), name=f"{name}_rc")
        m.d.comb += rc.eq(Mux(r > ext_w, ext_w, r[:rc.shape().width]))
        sh = Signal(ext_w, name=f"{name}_sh")
        m.d.comb += sh.eq(ext >> rc)
        lost = (sh << rc)[:ext_w] != ext
        m.d.comb += [mant.eq(sh[2:]), guard.eq(sh[1]), sticky.eq(sh[0] | lost)]
    up = guard & (sticky | mant[0])
    mr = Signal(mbits + 2, name=f"{name}_mr")
    m.d.comb += mr.eq(mant + up)
    be = Signal(signed(EXP_W + 3), name=f"{name}_be")
    frac = Signal(mbits, name=f"{name}_fr")
    with m.If(mr[mbits + 1]):
        m.d.comb += [be.eq(lsb + bias + mbits + 1), frac.eq(mr[1:mbits + 1])]
    with m.Elif(mr[mbits]):
        m.d.comb += [be.eq(lsb + bias + mbits), frac.eq(mr[:mbits])]
    with m.Else():
        m.d.comb += [be.eq(0), frac.eq(mr[:mbits])]
    out = Signal(1 + ebits + mbits, name=name)
    with m.If(be >= emax):
        m.d.comb += out.eq(Cat(Const(0, mbits), Const(emax, ebits), sign))
    with m.Else():
        m.d.comb += out.eq(Cat(frac, be[:ebits], sign))
    return out


def fp32_to_small(m: Module, x, f: FormatHw, name: str):
    """Code of fp32 ``x`` rounded (RNE) to the IEEE-style format ``f`` (fp16, bf16): inf -> inf, NaN -> NaN."""
    d = decode_fp32(m, x, f"{name}_in")
    finite = round_pack(m, d.sign, d.exp, d.sig, 24, f"{name}_rp", f.ebits, f.mbits)
    emax = (1 << f.ebits) - 1
    out = Signal(f.bits, name=name)
    m.d.comb += out.eq(Mux(d.nan, Cat(Const(1 << (f.mbits - 1), f.mbits), Const(emax, f.ebits), Const(0, 1)),
                           Mux(d.inf, Cat(Const(0, f.mbits), Const(emax, f.ebits), d.sign), finite)))
    return out


def special(m: Module, nan, inf, sign, finite, name: str):
    """``finite`` unless ``nan`` (canonical NaN) or ``inf`` (signed inf)."""
    out = Signal(32, name=name)
    m.d.comb += out.eq(Mux(nan, QNAN, Mux(inf, Cat(Const(0, 23), Const(255, 8), sign), finite)))
    return out


def product(m: Module, a: Decoded, b: Decoded, wa: int, wb: int, name: str, sig_product=None):
    """fp32 bits of ``a * b`` rounded once (RNE); also the exact unsigned product and its sign.

    ``sig_product``: ``a.sig * b.sig`` computed elsewhere (shift-and-add, bit-serial); default a multiplier.
    """
    p = Signal(wa + wb, name=f"{name}_p")
    m.d.comb += p.eq(a.sig * b.sig if sig_product is None else sig_product)
    e = Signal(signed(EXP_W + 1), name=f"{name}_e")
    m.d.comb += e.eq(a.exp + b.exp)
    s = Signal(name=f"{name}_s")
    m.d.comb += s.eq(a.sign ^ b.sign)
    za = (a.sig == 0) & ~a.nan & ~a.inf
    zb = (b.sig == 0) & ~b.nan & ~b.inf
    nan = a.nan | b.nan | (a.inf & zb) | (b.inf & za)
    finite = round_pack(m, s, e, p, wa + wb, f"{name}_rp")
    return special(m, nan, a.inf | b.inf, s, finite, name), p, s


def fp32_mul(m: Module, x, y, name: str):
    """fp32 bits of ``x * y`` (fp32 bit patterns), IEEE with RNE."""
    return product(m, decode_fp32(m, x, f"{name}_x"), decode_fp32(m, y, f"{name}_y"), 24, 24, name)[0]


def fp32_add(m: Module, x, y, name: str):
    """fp32 bits of ``x + y``: :func:`rtl.pim.fp.fp32_add` plus inf / NaN (canonical NaN)."""
    def cls(v):
        return (v[23:31] == 255) & (v[:23] != 0), (v[23:31] == 255) & (v[:23] == 0)

    xn, xi = cls(x)
    yn, yi = cls(y)
    nan = xn | yn | (xi & yi & (x[31] != y[31]))
    finite = pim_fp.fp32_add(m, x, y, f"{name}_f")
    return special(m, nan, xi | yi, Mux(xi, x[31], y[31]), finite, name)


def int_to_fp32(m: Module, v, width: int, name: str):
    """fp32 bits of the signed ``width``-bit integer ``v`` (RNE)."""
    s = v[width - 1]
    mag = Signal(width, name=f"{name}_abs")
    m.d.comb += mag.eq(Mux(s, (0 - v.as_signed())[:width], v[:width]))
    return round_pack(m, s, Const(0, signed(EXP_W)), mag, width, name)
