"""Number formats as the hardware sees them, and their decoders.

Every operand is decoded to ``(nan, inf, sign, exp, sig)`` with value
``(-1)**sign * sig * 2**exp`` (``sig`` an unsigned integer): two's complement
integers, small floats (``ieee`` / ``fn`` / ``none`` specials, as
:mod:`archsim.numerics._float`), posits (regime, ``es`` exponent bits,
fraction; NaR is a NaN) and fp32.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, signed

from rtl.lib.lzc import lzc_combine, lzc_groups
from rtl.lib.pipe import Pipe, cut

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
        raise ValueError(f"{name}: the RTL decodes two's complement ints, small floats and posits")


#: the IEEE-style float formats of the arithmetic units (``fn``: no infinity, one NaN code per sign)
FP32 = FormatHw("fp32", 32, "float", 8, 23, 127, "ieee")
BF16 = FormatHw("bf16", 16, "float", 8, 7, 127, "ieee")
FP16 = FormatHw("fp16", 16, "float", 5, 10, 15, "ieee")
FP8_E5M2 = FormatHw("fp8_e5m2", 8, "float", 5, 2, 15, "ieee")
FP8_E4M3 = FormatHw("fp8_e4m3", 8, "float", 4, 3, 7, "fn")
FLOATS = {f.name: f for f in (FP32, BF16, FP16, FP8_E5M2, FP8_E4M3)}


@dataclass
class Decoded:
    nan: object
    inf: object
    sign: object
    exp: object  # signed EXP_W
    sig: object  # unsigned

    def values(self):
        return (self.nan, self.inf, self.sign, self.exp, self.sig)


def decode_cut_points(f: FormatHw) -> int:
    """Cut points :func:`decode` offers for ``f`` (a posit's regime/exponent split has its own; the
    other kinds none): the ``n_cuts`` of a :class:`Pipe` that a caller passes to it."""
    m = Module()
    m._MustUse__silence = True  # a scratch module, never elaborated
    pipe = Pipe(m, 0, 1 << 30, "count")
    decode(m, f, Signal(f.bits, name="code"), "count", pipe)
    return pipe._next


def decode(m: Module, f: FormatHw, code, name: str, pipe: Pipe | None = None) -> Decoded:
    """Decode the ``f.bits``-bit ``code`` (see the module docstring). Posits have four cut points
    (after the two's complement, between the regime count's two levels, after the count, after the
    regime shift), the other kinds none."""
    b = f.bits
    sign = Signal(name=f"{name}_s")
    exp = Signal(signed(EXP_W), name=f"{name}_e")
    sig = Signal(f.sig_bits, name=f"{name}_m")
    nan = Signal(name=f"{name}_nan")
    inf = Signal(name=f"{name}_inf")
    if f.kind != "posit":
        m.d.comb += sign.eq(code[b - 1])
    if f.kind == "int":
        m.d.comb += [sig.eq(Mux(code[b - 1], ((1 << b) - code[:b])[:b], code[:b])), exp.eq(0)]
    elif f.kind == "float":
        mb, eb = f.mbits, f.ebits
        ef, mf = code[mb:mb + eb], code[:mb]
        m.d.comb += [sig.eq(Cat(mf, ef != 0)), exp.eq(Mux(ef == 0, 1, ef) - (f.bias + mb))]  # one adder
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
        zero = code[:n] == 0
        is_nar = code[:n] == (1 << (n - 1))
        mag, zero, is_nar, s0 = cut(pipe, mag, zero, is_nar, code[n - 1])  # after the two's complement
        body = mag[:n - 1]
        first = body[n - 2]
        run_src = Signal(n - 1, name=f"{name}_rs")
        m.d.comb += run_src.eq(Mux(first, ~body, body))
        groups = cut(pipe, *lzc_groups(m, run_src, n - 1, f"{name}_run"), first, body, zero, is_nar, s0)
        *groups, first, body, zero, is_nar, s0 = groups  # between the regime count's two levels
        run = lzc_combine(m, groups, n - 1, f"{name}_run")  # regime run length k
        run, first, body, zero, is_nar, s0 = cut(pipe, run, first, body, zero, is_nar, s0)
        regime = Signal(signed(6), name=f"{name}_k")
        m.d.comb += regime.eq(Mux(first, run - 1, -run))
        rest = Signal(n - 1, name=f"{name}_rest")
        m.d.comb += rest.eq((body << (run + 1))[:n - 1])  # exponent bits, then fraction, zero filled
        regime, rest, zero, is_nar, s0 = cut(pipe, regime, rest, zero, is_nar, s0)  # after the regime shift
        m.d.comb += sign.eq(s0)
        e_bits = rest[n - 1 - es:n - 1] if es else Const(0, 1)
        frac = rest[n - 1 - es - fw:n - 1 - es] if fw else Const(0, 0)
        m.d.comb += [sig.eq(Cat(frac, Const(1, 1))), exp.eq((regime << es) + e_bits - fw)]
        m.d.comb += nan.eq(is_nar)
        with m.If(zero):
            m.d.comb += sig.eq(0)
    return Decoded(nan, inf, sign, exp, sig)


def decode_fp32(m: Module, x, name: str) -> Decoded:
    ef, mf = x[23:31], x[:23]
    exp = Signal(signed(EXP_W), name=f"{name}_e")
    m.d.comb += exp.eq(Mux(ef == 0, 1, ef) - 150)
    return Decoded((ef == 255) & (mf != 0), (ef == 255) & (mf == 0), x[31], exp, Cat(mf, ef != 0))
