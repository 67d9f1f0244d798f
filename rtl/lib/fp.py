"""Floating-point arithmetic builders, bit-exact with numpy / ml-dtypes (round to nearest even on
every result, gradual underflow).

Two families:

- finite fp32 datapaths (the PIM MAC, the attention array, the LUT core): :func:`fp32_add_finite`,
  :func:`fp32_mul_finite`, :func:`narrow_mul_fp32` (bf16 / fp16 x same -> fp32, exact product,
  one rounding), ``max`` / ``neg`` / ``rint`` / ``ldexp`` / ``recip``, doubling and halving, and
  fp16 -> fp32. No infinities or NaNs on input; an overflowing result saturates to inf's encoding.
- IEEE with specials (the SIMD PE and the library units): :func:`product` (any two decoded operands
  -> fp32), :func:`fp32_mul`, :func:`fp32_add`, and the format-generic :func:`fp_mul`,
  :func:`fp_add` (fp8 e4m3 / e5m2, fp16, bf16, fp32 in and out), :func:`int_to_fp`,
  :func:`fp_to_int`, :func:`fp32_to_small`. NaN results are the format's canonical quiet NaN.

Every builder adds logic to an Amaranth ``Module`` and returns the result bits;
those taking ``pipe`` have cut points (:mod:`rtl.lib.pipe`) and no output register.
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Shape, Signal, Value, signed

from rtl.lib.formats import EXP_W, FP32, Decoded, FormatHw, decode, decode_fp32
from rtl.lib.pipe import HardRegistered, Pipe, carry, cut, drop, registers_next
from rtl.lib.round import (EW, P, W, _const_select, negates_early, packs_specials, round_pack,
                           round_pack_fp32, shift_coarse, shift_fine, splits_add, splits_compare,
                           zero_fill_as_data)

QNAN = 0x7FC00000
F32_ZERO = 0
#: |n| of ``rint`` is clamped to this (2**-300 and 2**300 are outside fp32 anyway)
N_CLAMP = 300


# ----------------------------------------------------------------------------- finite fp32 datapaths

def _magnitude_swap(m: Module, x, y, n: int, mb: int, name: str, split: bool):
    """``pick(select)``: ``select(|x| > |y|)`` for two ``n``-bit IEEE-style patterns (``mb`` fraction bits),
    ``select`` the caller's logic around the compare (its zero selects). One compare of the magnitudes, or
    (``split``) the exponent fields' compare beside the fractions' (two short carry chains side by side
    instead of one ``n - 1`` wide): ``select`` is then built twice, for ``ex > ey | ex == ey`` and for
    ``ex > ey``, each a kept wire (yosys ``keep``: ABC maps it as its own LUT tree, in parallel with the
    fraction chain), and the fraction compare picks one (``fx > fy``): one LUT after the longer chain."""
    if not split:
        return lambda select: select(x[:n - 1] > y[:n - 1])
    e_gt, e_eq, f_gt = (Signal(name=f"{name}_{k}") for k in ("e_gt", "e_eq", "f_gt"))
    m.d.comb += [e_gt.eq(x[mb:n - 1] > y[mb:n - 1]), e_eq.eq(x[mb:n - 1] == y[mb:n - 1]),
                 f_gt.eq(x[:mb] > y[:mb])]

    def pick(select):
        if_f_gt, if_not = Signal(name=f"{name}_if_f_gt", attrs={"keep": 1}), Signal(name=f"{name}_if_not",
                                                                                   attrs={"keep": 1})
        m.d.comb += [if_f_gt.eq(select(e_gt | e_eq)), if_not.eq(select(e_gt))]
        return Mux(f_gt, if_f_gt, if_not)
    return pick


def _align_add(m: Module, a, b, n: int, eb: int, mb: int, name: str, pipe: Pipe | None, a_zero=None,
               b_neg_zero=None):
    """``(sign, exe, total)`` of ``a + b`` (``n``-bit IEEE-style patterns, ``eb`` / ``mb`` fields):
    ``total`` (``mb + 5`` bits: carry, hidden bit, fraction, guard, round, sticky) times
    ``2**(exe - bias - mb - 3)`` rounds like the exact sum. Cut points: after the magnitude compare
    and exponent differences, after the operand swap and the alignment shift's first half (by
    multiples of 8), after its second half, (``split_add``: after the low half of the add,) after the add. ``a_zero`` (optional): ``a`` is +0.0 when set
    (selected after the compares, so they start from ``a``'s register, not from a mask in front);
    ``b_neg_zero`` (optional): ``b`` is -0.0 when set, selected the same way."""
    width = mb + 5
    swap = Signal(name=f"{name}_swap")
    same = Signal(name=f"{name}_same")  # equal magnitudes (x - y cancels exactly)
    ea, eb_ = a[mb:mb + eb], b[mb:mb + eb]
    exa = Signal(eb + 1, name=f"{name}_exa")
    exb = Signal(eb + 1, name=f"{name}_exb")
    swap_if = _magnitude_swap(m, b, a, n, mb, f"{name}_cmp", splits_compare(pipe))  # swap_if(select): b > a
    if a_zero is None and b_neg_zero is None:
        m.d.comb += [swap.eq(swap_if(lambda gt: gt)), same.eq(a[:n - 1] == b[:n - 1])]
        m.d.comb += [exa.eq(Mux(ea == 0, 1, ea)), exb.eq(Mux(eb_ == 0, 1, eb_))]
    elif b_neg_zero is None:
        bnz = b[:n - 1] != 0
        m.d.comb += [swap.eq(swap_if(lambda gt: Mux(a_zero, bnz, gt))),
                     same.eq(Mux(a_zero, ~bnz, a[:n - 1] == b[:n - 1]))]
        m.d.comb += [exa.eq(Mux(a_zero | (ea == 0), 1, ea)), exb.eq(Mux(eb_ == 0, 1, eb_))]
        a = a & ~a_zero.replicate(n)
    else:  # the compares of the operands as given, then the selects (a zero magnitude: never the larger)
        az = Const(0, 1) if a_zero is None else a_zero
        bnz = b[:n - 1] != 0
        anz = a[:n - 1] != 0
        m.d.comb += [swap.eq(swap_if(lambda gt: ~b_neg_zero & Mux(az, bnz, gt))),
                     same.eq(Mux(b_neg_zero, az | ~anz, Mux(az, ~bnz, a[:n - 1] == b[:n - 1])))]
        m.d.comb += [exa.eq(Mux(az | (ea == 0), 1, ea)), exb.eq(Mux(b_neg_zero | (eb_ == 0), 1, eb_))]
        a = a & ~az.replicate(n)
        b = Cat(b[:n - 1] & ~b_neg_zero.replicate(n - 1), b[n - 1] | b_neg_zero)
    zd = zero_fill_as_data(pipe)
    if zd:  # the same exponents as OR / AND data (a biased exponent 0 reads 1; a selected zero reads 1)
        az = Const(0, 1) if a_zero is None else a_zero
        bz = Const(0, 1) if b_neg_zero is None else b_neg_zero
        m.d.comb += [exa.eq(Cat(ea[0] | (ea == 0) | az, ea[1:] & ~az.replicate(eb - 1))),
                     exb.eq(Cat(eb_[0] | (eb_ == 0) | bz, eb_[1:] & ~bz.replicate(eb - 1)))]
    dab = Signal(eb + 1, name=f"{name}_dab")  # exa - exb if a is the larger (then >= 0), and exb - exa if b
    dba = Signal(eb + 1, name=f"{name}_dba")
    m.d.comb += [dab.eq(exa - exb), dba.eq(exb - exa)]
    a, b, swap, same, exa, exb, dab, dba = cut(pipe, a, b, swap, same, exa, exb, dab, dba)
    x = Signal(n, name=f"{name}_x")  # larger magnitude
    y = Signal(n, name=f"{name}_y")
    exe = Signal(eb + 1, name=f"{name}_exe")
    d = Signal(eb + 1, name=f"{name}_d")
    m.d.comb += [x.eq(Mux(swap, b, a)), y.eq(Mux(swap, a, b)), exe.eq(Mux(swap, exb, exa)),
                 d.eq(Mux(swap, dba, dab))]
    dw = width.bit_length()  # an alignment of 2**dw - 1 >= width shifts every bit out, as any larger one
    dc = Signal(dw, name=f"{name}_dc")
    if eb + 1 <= dw:
        m.d.comb += dc.eq(d)
    elif zd:  # the clamp as OR data
        m.d.comb += dc.eq(d[:dw] | (d[dw:] != 0).replicate(dw))
    else:
        m.d.comb += dc.eq(Mux(d[dw:] != 0, (1 << dw) - 1, d[:dw]))
    mx = Cat(Const(0, 3), x[:mb], x[mb:mb + eb] != 0)
    my = Cat(Const(0, 3), y[:mb], y[mb:mb + eb] != 0)
    part, lost, lo = shift_coarse(m, my, width, dc, dw, f"{name}_al", as_data=zd, zero_low=3)
    xs, ys, same, mx, part, lost, lo, exe = cut(pipe, x[n - 1], y[n - 1], same, mx, part, lost, lo, exe)
    ya, sticky = shift_fine(m, part, lost, lo, width, f"{name}_al", as_data=zd, zero_high=width - len(my))
    yal = Signal(width, name=f"{name}_yal")
    m.d.comb += yal.eq(ya | sticky)  # sticky: any bit shifted out
    if splits_add(pipe):  # the operand sign difference before the cut: the add's first stage starts at a register
        sub = Signal(name=f"{name}_sub")
        m.d.comb += sub.eq(xs ^ ys)
        xs, sub, same, mx, yal, exe = cut(pipe, xs, sub, same, mx, yal, exe)
        xs, sub, same, exe, total = _split_add(m, mx, yal, sub, width, name, pipe, xs, same, exe)
    elif negates_early(pipe):  # the subtrahend inverted before the cut: the add's stage is the carry chain alone
        sub, yneg = Signal(name=f"{name}_sub"), Signal(width, name=f"{name}_yneg")
        m.d.comb += [sub.eq(xs ^ ys), yneg.eq(yal ^ sub.replicate(width))]
        xs, sub, same, mx, yneg, exe = cut(pipe, xs, sub, same, mx, yneg, exe)
        total = Signal(width, name=f"{name}_sum")
        m.d.comb += total.eq(mx + yneg + sub)  # one adder: mx +- yal
    else:
        xs, ys, same, mx, yal, exe = cut(pipe, xs, ys, same, mx, yal, exe)
        sub = Signal(name=f"{name}_sub")
        m.d.comb += sub.eq(xs ^ ys)
        total = Signal(width, name=f"{name}_sum")
        m.d.comb += total.eq(mx + (yal ^ Mux(sub, (1 << width) - 1, 0)) + sub)  # one adder: mx +- yal
    sign = Signal(name=f"{name}_sign")  # an exact zero sum (x - y, equal magnitudes) is +0 unless both are -0
    m.d.comb += sign.eq(xs & ~(sub & same) if zd else Mux(sub & same, 0, xs))
    return cut(pipe, sign, exe, total)


def _split_add(m: Module, mx, yal, sub, width: int, name: str, pipe: Pipe, xs, same, exe):
    """``mx + (yal ^ sub...) + sub`` (``width`` bits, the carry out dropped) over two stages
    (:attr:`rtl.lib.pipe.Pipe.split_add`): the low half's sum with its carry out, and the high half's
    operands (``yal``'s inverted for a subtraction, so that stage is a bare carry chain) at one more cut
    point, then the high half's add. Returns ``xs``, ``sub``, ``same``, ``exe`` after that cut and the sum."""
    h = width // 2
    lo = Signal(h + 1, name=f"{name}_sum_lo")
    yhi = Signal(width - h, name=f"{name}_yhi")
    m.d.comb += [lo.eq(mx[:h] + (yal[:h] ^ Mux(sub, (1 << h) - 1, 0)) + sub),
                 yhi.eq(yal[h:] ^ Mux(sub, (1 << (width - h)) - 1, 0))]
    xs, sub, same, exe, lo, mhi, yhi = cut(pipe, xs, sub, same, exe, lo, mx[h:], yhi)
    hi = Signal(width - h, name=f"{name}_sum_hi")
    m.d.comb += hi.eq(mhi + yhi + lo[h])
    total = Signal(width, name=f"{name}_sum")
    m.d.comb += total.eq(Cat(lo[:h], hi))
    return xs, sub, same, exe, total


def fp32_add_finite(m: Module, a, b, name: str, pipe: Pipe | None = None):
    """fp32 bits of ``a + b`` (finite 32-bit patterns). Cut points: the alignment's three, and
    round_pack_fp32's."""
    sign, exe, total = _align_add(m, a, b, 32, 8, 23, name, pipe)
    exp = Signal(signed(EW), name=f"{name}_exp")
    m.d.comb += exp.eq(exe)
    return round_pack_fp32(m, sign, exp, total, name, pipe)


def narrow_mul_fp32(m: Module, f: FormatHw, a, b, name: str, pipe: Pipe | None = None, mul: str = "dsp"):
    """fp32 bits of ``a x b`` for finite operands in the narrow float ``f`` (bf16, fp16): the product
    is exact, then rounded once. Cut points: before the multiplier (its operands), after it, and
    round_pack_fp32's (and the multiplier's own: :func:`multiply`, ``mul``)."""
    mb, eb = f.mbits, f.ebits
    if 2 * mb > P:
        raise ValueError(f"narrow_mul_fp32: {f.name} products do not fit the fp32 rounding window")
    ea, eb_ = a[mb:mb + eb], b[mb:mb + eb]
    ma, mbv = Cat(a[:mb], ea != 0), Cat(b[:mb], eb_ != 0)
    exp = Signal(signed(EW), name=f"{name}_e")
    # prod * 2**(ea' + eb' - 2 bias - 2 mb) = sig * 2**(exp - 127 - P) with sig = prod << (P - 2 mb)
    m.d.comb += exp.eq(Mux(ea == 0, 1, ea) + Mux(eb_ == 0, 1, eb_) + (127 - 2 * f.bias))
    reg_in = registers_next(pipe)  # the DSP's input register (inside the block with "dsp_reg")
    sign, exp, ma, mbv = cut(pipe, a[f.bits - 1] ^ b[f.bits - 1], exp, _hard(mul, ma), _hard(mul, mbv))
    c_s, c_e = carry(pipe, sign), carry(pipe, exp)
    prod = _product_signal(m, multiply(m, ma, mbv, mb + 1, mb + 1, name, pipe, mul, reg_in), 2 * mb + 2, f"{name}_p")
    sign, exp = drop(pipe, c_s), drop(pipe, c_e)
    sign, exp, prod = cut(pipe, sign, exp, prod)
    sig = Signal(W, name=f"{name}_sig")
    m.d.comb += sig.eq(prod << (P - 2 * mb))
    return round_pack_fp32(m, sign, exp, sig, name, pipe)


#: multiplier kinds: ``"dsp"`` (inferred MULT18X18D blocks, no cut inside; the registers around them stay
#: in the fabric), ``"lut"`` (fabric adder tree with a cut point between its levels; no stage carries the DSP
#: block's 3.9 ns combinational delay), ``"dsp_reg"`` (instantiated MULT18X18D blocks whose own input and
#: output registers are the cut points before and after them: :mod:`rtl.lib.ecp5`; ECP5 only, simulate the
#: Verilog with ``mult18x18d_sim_model``), ``"dsp_reg_sim"`` (the same registers and products in Amaranth,
#: for amaranth.sim: same cut points, latency and bits as ``"dsp_reg"``)
MULTIPLIERS = ("dsp", "lut", "dsp_reg", "dsp_reg_sim")
#: the kinds whose operand and product registers are a DSP block's own
DSP_REG = ("dsp_reg", "dsp_reg_sim")


def _hard(mul: str, v):
    """``v`` marked as registered inside the DSP block at the next cut point (``DSP_REG`` kinds)."""
    return HardRegistered(v) if mul in DSP_REG else v


def _product_signal(m: Module, prod, width: int, name: str):
    """A ``width``-bit signal holding ``prod`` (:func:`multiply`'s result), still marked
    :class:`HardRegistered` if ``prod`` was (its register is the block's, at the next cut point)."""
    sig = Signal(width, name=name)
    m.d.comb += sig.eq(prod.value if isinstance(prod, HardRegistered) else prod)
    return HardRegistered(sig) if isinstance(prod, HardRegistered) else sig


def dsp_block(m: Module, x, y, name: str, pipe: Pipe | None, mul: str, reg_in: bool):
    """Unsigned ``x * y`` (at most 18 bits each) through one MULT18X18D (``mul="dsp_reg"``) or its
    Amaranth equivalent (``"dsp_reg_sim"``): the operands registered inside if ``reg_in`` (the cut
    point before was chosen), the product if the next cut point of ``pipe`` is; that cut point
    must take the result (:class:`HardRegistered`) and nothing may cut in between."""
    from rtl.lib.ecp5 import mult18x18d, mult18x18d_behavioural

    wx, wy = len(Value.cast(x)), len(Value.cast(y))
    p = Signal(wx + wy, name=f"{name}_dsp")
    reg_out = registers_next(pipe)
    domain, en = ("sync", None) if pipe is None else (pipe.domain, pipe.en)
    if mul == "dsp_reg":
        m.submodules[f"{name}_mult18x18d"] = mult18x18d(x, y, p, input_reg=reg_in, output_reg=reg_out, signed=False,
                                                        enable=en, domain=domain)
    else:
        mult18x18d_behavioural(m, x, y, p, input_reg=reg_in, output_reg=reg_out, signed=False, enable=en,
                               domain=domain, name=name)
    return HardRegistered(p)


def lut_mul(m: Module, x, y, wx: int, wy: int, name: str, pipe: Pipe | None = None):
    """Unsigned ``x * y`` in fabric logic: ``wy`` rows of ``x`` gated by each bit of ``y``, summed in a
    balanced adder tree of ``ceil(log2 wy)`` levels with a cut point between levels (one adder per
    stage). Cut points: ``ceil(log2 wy) - 1`` (0 for ``wy <= 2``)."""
    rows = [Mux(y[i], x, 0) << i for i in range(wy)]
    level = 0
    while len(rows) > 1:
        if level:
            rows = list(cut(pipe, *rows))
        nxt = []
        for j in range(0, len(rows) - 1, 2):
            r = Signal(wx + wy, name=f"{name}_lm{level}_{j}")
            m.d.comb += r.eq(rows[j] + rows[j + 1])
            nxt.append(r)
        rows = nxt + ([rows[-1]] if len(rows) % 2 else [])
        level += 1
    out = Signal(wx + wy, name=f"{name}_lm")
    m.d.comb += out.eq(rows[0])
    return out


def multiply(m: Module, x, y, wx: int, wy: int, name: str, pipe: Pipe | None = None, mul: str = "dsp",
             reg_in: bool = False):
    """Unsigned ``x * y`` by the multiplier kind ``mul`` (:data:`MULTIPLIERS`): :func:`wide_mul` or
    :func:`lut_mul` (cut points: theirs). ``DSP_REG`` kinds: ``x`` / ``y`` are the operands before the
    cut point that precedes the call (the caller passed them :class:`HardRegistered`), ``reg_in``
    whether that cut point was chosen; an unsplit product comes back :class:`HardRegistered` (the
    caller's next cut point is the block's output register)."""
    if mul not in MULTIPLIERS:
        raise ValueError(f"mul: expected one of {', '.join(MULTIPLIERS)}, got {mul!r}")
    if mul == "lut":
        return lut_mul(m, x, y, wx, wy, name, pipe)
    if mul in DSP_REG:
        return wide_mul(m, x, y, wx, wy, name, pipe,
                        block=lambda px, py, nm: dsp_block(m, px, py, nm, pipe, mul, reg_in))
    return wide_mul(m, x, y, wx, wy, name, pipe)


def wide_mul(m: Module, x, y, wx: int, wy: int, name: str, pipe: Pipe | None = None, block=None):
    """Unsigned ``x * y``; operands wider than 18 bits are split in 17-bit pieces whose partial
    products (one 18x18 DSP each) meet at a cut point, then the off-diagonal ones are summed, a second
    cut point, then added to the diagonal ones (which do not overlap: a bit-wise or). Cut points: 2 if
    split, else 0. ``block(px, py, name)``: one 18x18 product (default: inferred ``px * py``)."""
    if block is None:
        def block(px, py, nm):
            return px * py
    if wx <= 18 and wy <= 18:
        return block(x, y, name)
    def pieces(v, w):
        return [(v[i:min(i + 17, w)], k) for k, i in enumerate(range(0, w, 17))]
    parts = [(block(px, py, f"{name}_pp{kx}{ky}"), kx, ky) for px, kx in pieces(x, wx) for py, ky in pieces(y, wy)]
    regs = cut(pipe, *(p for p, _, _ in parts))
    diag, off = 0, 0
    for r, (_, kx, ky) in zip(regs, parts):
        if kx == ky:  # 34-bit products at multiples of 34 bits: disjoint
            diag = diag | (r << (34 * kx))
        else:
            off = off + (r << (17 * (kx + ky)))
    dsig = Signal(wx + wy, name=f"{name}_wmd")
    osig = Signal(wx + wy, name=f"{name}_wmo")
    m.d.comb += [dsig.eq(diag), osig.eq(off)]
    dsig, osig = cut(pipe, dsig, osig)
    out = Signal(wx + wy, name=f"{name}_wm")
    m.d.comb += out.eq(dsig + osig)
    return out


def fp32_mul_finite(m: Module, a, b, name: str, pipe: Pipe | None = None, mul: str = "dsp"):
    """fp32 bits of ``a * b`` (finite 32-bit patterns, subnormals included; an overflow is inf's
    encoding): :func:`product` of the decoded operands (multiplier ``mul``), no special-value logic.
    Cut points: its."""
    def finite(x, nm):
        d = decode_fp32(m, x, nm)
        return Decoded(Const(0, 1), Const(0, 1), d.sign, d.exp, d.sig)

    return product(m, finite(a, f"{name}_x"), finite(b, f"{name}_y"), 24, 24, name, pipe=pipe, mul=mul)[0]


def fp32_neg(a):
    return Cat(a[:31], ~a[31])


def _key(x):
    """Unsigned key ordered like the fp32 values (finite values)."""
    return Mux(x[31], ~x, x | 0x80000000)


def fp32_key(x):
    """The unsigned 32-bit key of the fp32 bits ``x``, ordered like the finite values (``-0 < +0``; a
    bijection: :func:`fp32_from_key`), for compares that carry keys instead of values."""
    return _key(x)[:32]


def fp32_from_key(k):
    """The fp32 bits of the key ``k`` (:func:`fp32_key`'s inverse)."""
    return Mux(k[31], Cat(k[:31], Const(0, 1)), ~k)[:32]


def fp32_max(m: Module, a, b, name: str):
    out = Signal(32, name=name)
    m.d.comb += out.eq(Mux(_key(b)[:32] > _key(a)[:32], b, a))
    return out


def fp32_max_split(m: Module, a, b, name: str, pipe: Pipe | None = None):
    """:func:`fp32_max` (same bits: ``b`` if its key is greater, else ``a``) with its key compare split
    in two 16-bit halves, so that it pipelines. Cut points: after the operands, after the halves'
    compares (then one select)."""
    a, b = cut(pipe, a, b)
    ka, kb = _key(a)[:32], _key(b)[:32]
    hi_gt, hi_eq, lo_gt = Signal(name=f"{name}_hi_gt"), Signal(name=f"{name}_hi_eq"), Signal(name=f"{name}_lo_gt")
    m.d.comb += [hi_gt.eq(kb[16:] > ka[16:]), hi_eq.eq(kb[16:] == ka[16:]), lo_gt.eq(kb[:16] > ka[:16])]
    a, b, hi_gt, hi_eq, lo_gt = cut(pipe, a, b, hi_gt, hi_eq, lo_gt)
    out = Signal(32, name=name)
    m.d.comb += out.eq(Mux(hi_gt | (hi_eq & lo_gt), b, a))
    return out


def rint(m: Module, x, name: str, pipe: Pipe | None = None):
    """``(n as fp32 bits, n as a signed integer clamped to +-300)``, ``n = rint(x)`` half to even.
    Cut points: after the shift amount, after each half of the shift, after the rounding increment,
    and round_pack_fp32's."""
    e = x[23:31]
    mant = Cat(x[:23], Const(1, 1))  # 24 bits (x normal in the range that matters; subnormals round to 0)
    sh1 = Signal(5, name=f"{name}_sh1")  # right shift that leaves the half bit at bit 0: 149 - e, 0..23
    m.d.comb += sh1.eq((149 - e)[:5])  # (e outside 126..149: the result does not use the shift)
    big = Signal(name=f"{name}_big")  # an integer already
    tiny = Signal(name=f"{name}_tiny")  # |x| < 1/2
    m.d.comb += [big.eq(e >= 150), tiny.eq(e < 126)]
    c_x = carry(pipe, x)
    mant, sh1, big, tiny = cut(pipe, mant, sh1, big, tiny)
    part, lost, lo = shift_coarse(m, mant, 24, sh1, 5, f"{name}_sh")
    part, lost, lo, big, tiny = cut(pipe, part, lost, lo, big, tiny)
    hs, rest = shift_fine(m, part, lost, lo, 24, f"{name}_sh")  # hs[0]: the half bit; rest: the bits below
    hs, rest, big, tiny = cut(pipe, hs, rest, big, tiny)
    ipart = hs[1:]
    mag = Signal(25, name=f"{name}_mag")
    with m.If(big):
        m.d.comb += mag.eq(N_CLAMP + 1)
    with m.Elif(tiny):
        m.d.comb += mag.eq(0)
    with m.Else():
        m.d.comb += mag.eq(ipart + (hs[0] & (rest | ipart[0])))
    mag, big = cut(pipe, mag, big)
    clamped = Signal(10, name=f"{name}_cl")
    m.d.comb += clamped.eq(Mux(mag > N_CLAMP, N_CLAMP, mag[:10]))
    # n as fp32: exact (|n| <= 2**23); -0.0 for a negative x that rounds to 0, as numpy
    c_cl, c_big = carry(pipe, clamped), carry(pipe, big)
    x_now = c_x.value
    packed = round_pack_fp32(m, x_now[31], Const(150, signed(EW)), (mag << 3)[:W], f"{name}_nf", pipe)
    clamped, big, x = drop(pipe, c_cl), drop(pipe, c_big), drop(pipe, c_x)
    n_int = Signal(signed(11), name=f"{name}_ni")
    m.d.comb += n_int.eq(Mux(x[31], -clamped, clamped))
    n_fp = Signal(32, name=f"{name}_nfp")
    m.d.comb += n_fp.eq(Mux(big, x, packed))
    return n_fp, n_int


def ldexp(m: Module, p, n, name: str, pipe: Pipe | None = None):
    """fp32 bits of ``p * 2**n`` (``p`` normal, ``n`` signed), rounded like numpy's ``ldexp``.
    Cut points: after the exponent sum, and round_pack_fp32's."""
    exp = Signal(signed(EW), name=f"{name}_e")
    m.d.comb += exp.eq(p[23:31] + n)
    sig = Cat(Const(0, 3), p[:23], p[23:31] != 0, Const(0, 1))
    sign, exp, sig = cut(pipe, p[31], exp, sig)
    return round_pack_fp32(m, sign, exp, sig, name, pipe)


def fp32_double(x):
    """Bits of ``2 * x`` (exact below overflow): exponent + 1, or a subnormal's magnitude << 1."""
    mag = x[:31]
    return Cat(Mux(x[23:31] != 0, mag + (1 << 23), mag << 1)[:31], x[31])


def fp32_half(m: Module, x, name: str):
    """Bits of ``x * 0.5`` rounded to nearest even (exact unless the result is subnormal)."""
    mag = x[:31]
    low = Signal(31, name=f"{name}_low")
    # exponent field <= 1: the magnitude (hidden bit included for exponent 1) shifts right, ties to even
    m.d.comb += low.eq((mag >> 1) + (mag[0] & mag[1]))
    out = Signal(32, name=name)
    m.d.comb += out.eq(Cat(Mux(x[23:31] > 1, (mag - (1 << 23))[:31], low), x[31]))
    return out


def fp16_to_fp32(m: Module, h, name: str):
    """Exact fp32 bits of an fp16 pattern (finite values; subnormals normalized)."""
    e, f = h[10:15], h[:10]
    out = Signal(32, name=name)
    # subnormal: leading one of f at bit p -> exponent p + 103, fraction = bits below p, left-aligned
    sub = Const(0, 31)
    for p in range(10):
        sub = Mux(f[p], Cat(Const(0, 23 - p), f[:p], Const(p + 103, 8)), sub)
    m.d.comb += out.eq(Cat(Mux(e == 0, sub, Cat(Const(0, 13), f, (e + 112)[:8])), h[15]))
    return out


# ----------------------------------------------------------------------------- IEEE, with specials

def nan_code(f: FormatHw) -> int:
    """The canonical quiet NaN of ``f`` (``fn`` formats: the all-ones code of the positive sign)."""
    emax = (1 << f.ebits) - 1
    if f.specials == "fn":
        return (emax << f.mbits) | ((1 << f.mbits) - 1)
    return (emax << f.mbits) | (1 << (f.mbits - 1))


def special(m: Module, nan, inf, sign, finite, name: str, f: FormatHw = FP32):
    """``finite`` unless ``nan`` (canonical NaN) or ``inf`` (signed inf; ``fn`` formats have none)."""
    out = Signal(f.bits, name=name)
    inf_code = Cat(Const(0, f.mbits), Const((1 << f.ebits) - 1, f.ebits), sign)
    m.d.comb += out.eq(Mux(nan, nan_code(f), Mux(inf, inf_code, finite)))
    return out


def product(m: Module, a: Decoded, b: Decoded, wa: int, wb: int, name: str, sig_product=None,
            pipe: Pipe | None = None, out: FormatHw = FP32, mul: str = "dsp"):
    """Bits of ``a * b`` in ``out`` (default fp32) rounded once (RNE); also the exact unsigned product
    and its sign, timed with the rounded bits (carried across the cut points). Cut points: before and
    after the multiplier (and the multiplier's own, ``mul``: :func:`multiply`), and round_pack's. With
    ``mul="dsp_reg"`` and a chosen cut after the multiplier, the product register is the block's own.

    ``sig_product``: ``a.sig * b.sig`` computed elsewhere (shift-and-add, bit-serial); default a multiplier.
    """
    s = Signal(name=f"{name}_s")
    m.d.comb += s.eq(a.sign ^ b.sign)
    za = (a.sig == 0) & ~a.nan & ~a.inf
    zb = (b.sig == 0) & ~b.nan & ~b.inf
    nan = a.nan | b.nan | (a.inf & zb) | (b.inf & za)
    inf = a.inf | b.inf
    e = Signal(signed(EXP_W + 1), name=f"{name}_e")
    if sig_product is None:  # the multiplier's operands registered first (a DSP's input register)
        reg_in = registers_next(pipe)
        sa, sb, xa, xb, sc, nan, inf = cut(pipe, _hard(mul, a.sig), _hard(mul, b.sig), a.exp, b.exp, s, nan, inf)
        m.d.comb += e.eq(xa + xb)  # beside the multiplier
        cc = [carry(pipe, v) for v in (e, sc, nan, inf)]
        p = _product_signal(m, multiply(m, sa, sb, wa, wb, name, pipe, mul, reg_in), wa + wb, f"{name}_p")
        ec, sc, nan, inf = (drop(pipe, c) for c in cc)
    else:  # the given product is cut with the operands' fields (it is a function of the same cycle)
        m.d.comb += e.eq(a.exp + b.exp)
        ec, sc, nan, inf, sp = cut(pipe, e, s, nan, inf, sig_product)
        p = _product_signal(m, sp, wa + wb, f"{name}_p")
    pc, ec, sc, nan, inf = cut(pipe, p, ec, sc, nan, inf)
    c_nan, c_inf, c_p, c_s = carry(pipe, nan), carry(pipe, inf), carry(pipe, pc), carry(pipe, sc)
    finite = round_pack(m, sc, ec, pc, wa + wb, f"{name}_rp", out.ebits, out.mbits, out.specials, pipe,
                        forced=(c_nan, c_inf, c_s))
    nan, inf, p_out, s_out = drop(pipe, c_nan), drop(pipe, c_inf), drop(pipe, c_p), drop(pipe, c_s)
    if packs_specials(pipe):  # round_pack applied them
        return finite, p_out, s_out
    sign = finite[out.bits - 1]
    return special(m, nan, inf, sign, finite, name, out), p_out, s_out


def fp32_mul(m: Module, x, y, name: str, pipe: Pipe | None = None):
    """fp32 bits of ``x * y`` (fp32 bit patterns), IEEE with RNE. Cut points: :func:`product`'s three."""
    return product(m, decode_fp32(m, x, f"{name}_x"), decode_fp32(m, y, f"{name}_y"), 24, 24, name,
                   pipe=pipe)[0]


def fp32_add(m: Module, x, y, name: str, pipe: Pipe | None = None):
    """fp32 bits of ``x + y``: :func:`fp32_add_finite` plus inf / NaN (canonical NaN)."""
    def cls(v):
        return (v[23:31] == 255) & (v[:23] != 0), (v[23:31] == 255) & (v[:23] == 0)

    xn, xi = cls(x)
    yn, yi = cls(y)
    nan = carry(pipe, xn | yn | (xi & yi & (x[31] != y[31])))
    inf = carry(pipe, xi | yi)
    inf_sign = carry(pipe, Mux(xi, x[31], y[31]))
    finite = fp32_add_finite(m, x, y, f"{name}_f", pipe)
    return special(m, drop(pipe, nan), drop(pipe, inf), drop(pipe, inf_sign), finite, name)


def fp_mul(m: Module, f: FormatHw, a, b, name: str, pipe: Pipe | None = None, mul: str = "dsp"):
    """Bits of ``a * b`` in the IEEE-style float ``f`` (one rounding). Cut points: :func:`product`'s."""
    da, db = decode(m, f, a, f"{name}_a"), decode(m, f, b, f"{name}_b")
    return product(m, da, db, f.sig_bits, f.sig_bits, name, pipe=pipe, out=f, mul=mul)[0]


def fp_add(m: Module, f: FormatHw, a, b, name: str, pipe: Pipe | None = None, a_zero=None, b_neg_zero=None):
    """Bits of ``a + b`` in the IEEE-style float ``f`` (one rounding; ``-0`` only for ``-0 + -0``);
    ``a_zero`` (optional): ``a`` is +0.0 when set; ``b_neg_zero`` (optional): ``b`` is -0.0 when set
    (:func:`_align_add`). Cut points: the alignment's three, and round_pack's."""
    mb, eb, n = f.mbits, f.ebits, f.bits
    if a_zero is not None:  # the specials' decode reads +0.0 (one LUT level, beside the compares)
        da = decode(m, f, a & ~a_zero.replicate(n), f"{name}_a")
    else:
        da = decode(m, f, a, f"{name}_a")
    if b_neg_zero is not None:  # -0.0: neither NaN nor inf; its sign only matters with an inf b
        db = decode(m, f, b & ~b_neg_zero.replicate(n), f"{name}_b")
    else:
        db = decode(m, f, b, f"{name}_b")
    flags = [carry(pipe, v) for v in (da.nan | db.nan | (da.inf & db.inf & (a[n - 1] != b[n - 1])),
                                      da.inf | db.inf, Mux(da.inf, a[n - 1], b[n - 1]))]
    sign, exe, total = _align_add(m, a, b, n, eb, mb, name, pipe, a_zero, b_neg_zero)
    if packs_specials(pipe):  # the offset folded into round_pack's compares (no carry chain before theirs)
        exp, offset = exe, -(f.bias + mb + 3)
    else:
        exp, offset = Signal(signed(EXP_W), name=f"{name}_exp"), 0
        m.d.comb += exp.eq(exe - (f.bias + mb + 3))
    finite = round_pack(m, sign, exp, total, mb + 5, f"{name}_rp", eb, mb, f.specials, pipe, forced=flags,
                        exp_offset=offset)
    nan, inf, inf_sign = (drop(pipe, c) for c in flags)
    if packs_specials(pipe):  # round_pack applied them
        return finite
    return special(m, nan, inf if f.specials == "ieee" else Const(0, 1), inf_sign, finite, name, f)


def fp32_to_small(m: Module, x, f: FormatHw, name: str):
    """Code of fp32 ``x`` rounded (RNE) to the IEEE-style format ``f`` (fp16, bf16): inf -> inf, NaN -> NaN."""
    d = decode_fp32(m, x, f"{name}_in")
    finite = round_pack(m, d.sign, d.exp, d.sig, 24, f"{name}_rp", f.ebits, f.mbits)
    emax = (1 << f.ebits) - 1
    out = Signal(f.bits, name=name)
    m.d.comb += out.eq(Mux(d.nan, Cat(Const(1 << (f.mbits - 1), f.mbits), Const(emax, f.ebits), Const(0, 1)),
                           Mux(d.inf, Cat(Const(0, f.mbits), Const(emax, f.ebits), d.sign), finite)))
    return out


def int_to_fp(m: Module, v, width: int, name: str, f: FormatHw = FP32, pipe: Pipe | None = None):
    """Bits of the signed ``width``-bit integer ``v`` in the float ``f`` (RNE). Cut points: after the
    absolute value, and round_pack's."""
    s = v[width - 1]
    mag = Signal(width, name=f"{name}_abs")
    m.d.comb += mag.eq(Mux(s, (0 - v.as_signed())[:width], v[:width]))
    s, mag = cut(pipe, s, mag)
    return round_pack(m, s, Const(0, signed(EXP_W)), mag, width, name, f.ebits, f.mbits, f.specials, pipe)


def int_to_fp32(m: Module, v, width: int, name: str):
    """fp32 bits of the signed ``width``-bit integer ``v`` (RNE)."""
    return int_to_fp(m, v, width, name)


def fp_to_int(m: Module, f: FormatHw, x, width: int, name: str, pipe: Pipe | None = None):
    """The signed ``width``-bit integer nearest ``x`` (ties to even), saturated to the range; NaN -> 0.
    Cut points: after the decode, after the shift amounts and their clamps' conditions, after the clamps and
    the shifts' coarse halves (by multiples of 8: :func:`rtl.lib.round.shift_coarse`), after their fine halves
    (and the lost bits), after the rounding increment and saturation test."""
    d = decode(m, f, x, f"{name}_d")
    d = Decoded(*cut(pipe, *d.values()))
    sw = f.sig_bits
    big_w = width + 1  # enough to see saturation
    # x = sig * 2**exp: exp >= 0 shifts left (saturates once past width), exp < 0 shifts right with rounding
    # the shift amounts and their clamps' conditions side by side (one carry chain each), the clamps
    # applied after the cut as AND / OR data (no constant mux: yosys would map it onto a synchronous reset)
    ls_w, rs_w = Shape.cast(range(big_w + 1)).width, Shape.cast(range(sw + 3)).width
    ls, rs = Signal(ls_w, name=f"{name}_ls"), Signal(rs_w, name=f"{name}_rs")
    non_neg, huge, tiny = Signal(name=f"{name}_nn"), Signal(name=f"{name}_huge"), Signal(name=f"{name}_tiny")
    m.d.comb += [ls.eq(d.exp[:ls_w]), rs.eq((-d.exp)[:rs_w]), non_neg.eq(d.exp >= 0), huge.eq(d.exp > big_w),
                 tiny.eq(d.exp < -(sw + 2))]
    sign, sig, ls, rs, non_neg, huge, tiny, nan, inf = cut(pipe, d.sign, d.sig, ls, rs, non_neg, huge, tiny, d.nan,
                                                           d.inf)
    ls, rs = _const_select(huge, big_w, ls), _const_select(tiny, sw + 2, rs)  # min(exp, big_w), min(-exp, sw + 2)
    ext_w = sw + 2  # the right shift's input: two bits below (guard, sticky)
    l_part, _, l_lo = shift_coarse(m, sig, big_w + sw, ls, ls.shape().width, f"{name}_sl", left=True)
    r_part, r_lost, r_lo = shift_coarse(m, Cat(Const(0, 2), sig), ext_w, rs, rs.shape().width, f"{name}_sr")
    sig_nz = Signal(name=f"{name}_nz")
    m.d.comb += sig_nz.eq(sig != 0)
    sign, l_part, l_lo, r_part, r_lost, r_lo, sig_nz, non_neg, huge, nan, inf = cut(
        pipe, sign, l_part, l_lo, r_part, r_lost, r_lo, sig_nz, non_neg, huge, nan, inf)
    left, _ = shift_fine(m, l_part, Const(0, 1), l_lo, big_w + sw, f"{name}_sl", left=True)
    sh, lost = shift_fine(m, r_part, r_lost, r_lo, ext_w, f"{name}_sr")  # lost: any bit shifted out
    sign, left, sh, lost, sig_nz, non_neg, huge, nan, inf = cut(pipe, sign, left, sh, lost, sig_nz, non_neg, huge,
                                                                nan, inf)
    ip = sh[2:]
    up = sh[1] & (sh[0] | lost | ip[0])
    mag = Signal(big_w + sw, name=f"{name}_mag")
    m.d.comb += mag.eq(Mux(non_neg, left, ip + up))
    over = Mux(huge, sig_nz, mag[width - 1:] != 0)  # |x| >= 2**(width-1)
    sign, mag, over, nan, inf = cut(pipe, sign, mag, over, nan, inf)
    lim_hi, lim_lo = (1 << (width - 1)) - 1, 1 << (width - 1)
    out = Signal(signed(width), name=name)
    with m.If(nan):
        m.d.comb += out.eq(0)
    with m.Elif(over | inf):
        m.d.comb += out.eq(Mux(sign, -lim_lo, lim_hi))  # -2**(width-1) itself is exact there too
    with m.Else():
        m.d.comb += out.eq(Mux(sign, -mag[:width].as_signed(), mag[:width]))
    return out
