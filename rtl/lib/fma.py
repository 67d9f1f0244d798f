"""Fused multiply-add ``round(a * b + c)``: the exact product, the exact sum, ONE round to nearest even.

The significands' product (:func:`rtl.lib.fp.multiply`, exact, ``2p`` bits) and the addend ``c`` (``p``
bits) are placed in a window of ``N = 2p + 3`` bits: the operand whose window top is higher (``X``) sits
with its top at bit ``N - 1``, the other (``Y``) is shifted right by the exponent difference, the bits
shifted out ORed into its last bit (sticky). The product enters the window with three zero bits below
it, so ``X`` is a multiple of 8 there and a sticky ``Y`` only happens when ``X`` dominates: the result's
last bit is then at least two bits above the window's (a guard bit above the sticky), and rounding the
window sum is rounding the exact sum. ``|X - Y|`` (either may be the larger: a subnormal ``X`` need not
be) goes to :func:`rtl.lib.round.round_pack` (subnormal results, overflow, the format's specials).

Specials, as :func:`rtl.lib.fp.fp_add` / :func:`rtl.lib.fp.product`: a NaN operand, ``inf * 0`` or
``inf - inf`` (the product's infinity against ``c``'s) give the canonical NaN; an infinite product or
``c`` gives that infinity; ``fn`` formats (e4m3) overflow to their NaN code with the sum's sign
(round_pack's, as ml-dtypes' cast). An exact zero sum is ``+0`` unless both terms are ``-0`` (so
``x*y - x*y = +0``, ``-0 * 1 + -0 = -0``); a non-zero sum that rounds to zero keeps its sign. Subnormal
operands and results are gradual (no flush), as the library's other units.
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed

from rtl.lib.formats import EXP_W, FormatHw, decode
from rtl.lib.fp import _hard, _product_signal, multiply, special
from rtl.lib.pipe import Pipe, carry, cut, drop, registers_next
from rtl.lib.round import packs_specials, round_pack, shift_coarse, shift_fine, zero_fill_as_data

#: zero bits below the product in the window (see the module docstring: two would not do with a
#: subnormal ``a`` or ``b``)
PRODUCT_GUARD = 3


def window_bits(f: FormatHw) -> int:
    """``N``: the alignment window of ``f`` (the sum has one more bit, the carry)."""
    return 2 * f.sig_bits + PRODUCT_GUARD


def fp_fma(m: Module, f: FormatHw, a, b, c, name: str, pipe: Pipe | None = None, mul: str = "dsp"):
    """Bits of ``a * b + c`` in the IEEE-style float ``f``, rounded once (RNE); ``mul``: the significand
    multiplier (:data:`rtl.lib.fp.MULTIPLIERS`). Cut points: before the multiplier (the exponent difference,
    the swap and the shift amount beside it), the multiplier's own (:func:`rtl.lib.fp.multiply`), after it,
    after each half of the alignment shift, after the add, and round_pack's."""
    p, n = f.sig_bits, f.bits
    nw = window_bits(f)
    da, db, dc = decode(m, f, a, f"{name}_a"), decode(m, f, b, f"{name}_b"), decode(m, f, c, f"{name}_c")
    za = (da.sig == 0) & ~da.nan & ~da.inf
    zb = (db.sig == 0) & ~db.nan & ~db.inf
    zc = (dc.sig == 0) & ~dc.nan & ~dc.inf
    p_inf = da.inf | db.inf
    sp = Signal(name=f"{name}_sp")
    m.d.comb += sp.eq(a[n - 1] ^ b[n - 1])
    nan = Signal(name=f"{name}_nan")
    inf = Signal(name=f"{name}_inf")
    inf_sign = Signal(name=f"{name}_infs")
    m.d.comb += [nan.eq(da.nan | db.nan | dc.nan | (da.inf & zb) | (db.inf & za) | (p_inf & dc.inf & (sp != c[n - 1]))),
                 inf.eq(p_inf | dc.inf), inf_sign.eq(Mux(p_inf, sp, c[n - 1]))]
    # window exponents (value = window bits * 2**q): the product at bit PRODUCT_GUARD, c's top at N - 1.
    # Before the multiplier one carry chain each, from the exponent fields (e' = max(e, 1)): the product's
    # e'a + e'b and c's e'c + bias - 1; beside it, q_p = e'a + e'b - 2 (bias + mb) - 3, q_c = e'c - (bias + mb)
    # - N + p and the difference q_p - q_c = (e'a + e'b) - (e'c + bias - 1), one chain each.
    eb_, mb = f.ebits, f.mbits
    def field(code):
        e = code[mb:mb + eb_]
        return Mux(e == 0, 1, e)
    s_ab = Signal(eb_ + 1, name=f"{name}_sab")
    ec_k = Signal(eb_ + 1, name=f"{name}_eck")
    ec = Signal(eb_, name=f"{name}_ec")
    m.d.comb += [s_ab.eq(field(a) + field(b)), ec.eq(field(c)), ec_k.eq(field(c) + (f.bias - 1))]
    p_zero = Signal(name=f"{name}_pz")
    c_zero = Signal(name=f"{name}_cz")
    m.d.comb += [p_zero.eq(za | zb), c_zero.eq(zc)]
    reg_in = registers_next(pipe)  # the multiplier's operands registered first (a DSP's input register)
    flags = (nan, inf, inf_sign)
    sa, sb, sp, sc, csig, s_ab, ec, ec_k, p_zero, c_zero, *flags = cut(
        pipe, _hard(mul, da.sig), _hard(mul, db.sig), sp, c[n - 1], dc.sig, s_ab, ec, ec_k, p_zero, c_zero, *flags)
    qw = EXP_W + 1
    q_p = Signal(signed(qw), name=f"{name}_qp")
    q_c = Signal(signed(qw), name=f"{name}_qc")
    d_pc = Signal(signed(qw), name=f"{name}_dpc")  # the right shift of Y, either way (>= 0 where it matters)
    d_cp = Signal(signed(qw), name=f"{name}_dcp")
    m.d.comb += [q_p.eq(s_ab - (2 * (f.bias + mb) + PRODUCT_GUARD)), q_c.eq(ec - (f.bias + mb + nw - p)),
                 d_pc.eq(s_ab - ec_k), d_cp.eq(ec_k - s_ab)]
    c_top = Signal(name=f"{name}_ctop")  # c is X: its window is higher (and it is not zero), or the product is 0
    m.d.comb += c_top.eq(p_zero | (~c_zero & d_pc[-1]))
    # X's window exponent and Y's right shift, clamped: still beside the multiplier
    q = Signal(signed(EXP_W), name=f"{name}_q")
    d = Signal(signed(qw), name=f"{name}_d")
    m.d.comb += [q.eq(Mux(c_top, q_c, q_p)), d.eq(Mux(c_top, d_cp, d_pc))]
    dw = nw.bit_length()  # a shift of 2**dw - 1 >= nw moves every bit out, as any larger one (or a negative d:
    dsh = Signal(dw, name=f"{name}_dsh")  # only with a zero Y)
    m.d.comb += dsh.eq(Mux(d[dw:] != 0, (1 << dw) - 1, d[:dw]))
    beside = [carry(pipe, v) for v in (sp, sc, csig, q, c_top, dsh, *flags)]
    prod = _product_signal(m, multiply(m, sa, sb, p, p, name, pipe, mul, reg_in), 2 * p, f"{name}_p")
    sp, sc, csig, q, c_top, dsh, *flags = (drop(pipe, v) for v in beside)
    prod, sp, sc, csig, q, c_top, dsh, *flags = cut(pipe, prod, sp, sc, csig, q, c_top, dsh, *flags)
    flags = [carry(pipe, v) for v in flags]  # to round_pack's forcing (or the special mux after it)
    # the swap and the alignment shift's first half
    p_win = Cat(Const(0, PRODUCT_GUARD), prod)
    c_win = Cat(Const(0, nw - p), csig)
    x = Signal(nw, name=f"{name}_x")
    y = Signal(nw, name=f"{name}_y")
    sx = Signal(name=f"{name}_sx")
    sy = Signal(name=f"{name}_sy")
    m.d.comb += [x.eq(Mux(c_top, c_win, p_win)), y.eq(Mux(c_top, p_win, c_win)), sx.eq(Mux(c_top, sc, sp)),
                 sy.eq(Mux(c_top, sp, sc))]
    zd = zero_fill_as_data(pipe)
    part, lost, lo = shift_coarse(m, y, nw, dsh, dw, f"{name}_al", as_data=zd)
    x, sx, sy, q, part, lost, lo = cut(pipe, x, sx, sy, q, part, lost, lo)
    ya, sticky = shift_fine(m, part, lost, lo, nw, f"{name}_al", as_data=zd)
    yal = Signal(nw, name=f"{name}_yal")
    m.d.comb += yal.eq(ya | sticky)
    x, sx, sy, q, yal = cut(pipe, x, sx, sy, q, yal)
    # |X +- Y|: the sum, both differences (one carry chain each, in parallel) and the equality
    sub = sx ^ sy
    total = Signal(nw + 1, name=f"{name}_sum")
    dxy = Signal(nw + 1, name=f"{name}_dxy")  # X - Y; its top bit: a borrow (Y larger)
    dyx = Signal(nw, name=f"{name}_dyx")
    m.d.comb += [total.eq(x + yal), dxy.eq(x - yal), dyx.eq(yal - x)]
    neg = dxy[nw]
    mag = Signal(nw + 1, name=f"{name}_mag")
    m.d.comb += mag.eq(Mux(sub, Mux(neg, dyx, dxy[:nw]), total))
    sign = Signal(name=f"{name}_sign")  # an exact zero difference is +0; a zero sum of like signs keeps it
    m.d.comb += sign.eq(Mux(sub, Mux(neg, sy, sx & (x != yal)), sx))
    sign, mag, q = cut(pipe, sign, mag, q)
    forced = tuple(flags)
    finite = round_pack(m, sign, q, mag, nw + 1, f"{name}_rp", f.ebits, f.mbits, f.specials, pipe, forced=forced)
    nan, inf, inf_sign = (drop(pipe, v) for v in flags)
    if packs_specials(pipe):  # round_pack applied them
        return finite
    return special(m, nan, inf if f.specials == "ieee" else Const(0, 1), inf_sign, finite, name, f)
