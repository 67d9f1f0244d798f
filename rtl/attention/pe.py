"""One PE of the attention array's 2D part (:class:`AttentionPE`): one fp32 multiplier, one fp32
adder, ``rint`` and a second adder for the exp's range reduction, ``ldexp``, a compare for the
row max, a ring of 4 score registers and the Horner registers ``p`` / ``f`` / ``n``.

What it does in a cycle is chosen by the controller's decode (one of ``qk_mac``, ``exp0``,
``horner``, ``expfin``, else the ``P.V`` step). With ``mul_stages = S > 0`` the multiplier is
the library's pipelined unit (:class:`rtl.lib.units.Fp32MulFinite`, ``S`` registers; its round-and-pack's
clamps, compares with constants and shifts built as data: same bits): ``qk_mac`` /
``exp0`` / ``horner`` / ``av`` then pick the multiplier's operands and the ports ``qk_acc`` /
``exp0_add`` / ``horner_add`` / ``av_add`` the adder's use of the product ``S`` cycles later
(the controller delays its decode; ``qk_first``, ``qk_ring`` and ``horner_coef`` belong to the
adder's cycle); the row chains (block max, row sum, ``P.V``
column) enter at ``chain_in`` / ``rmax_in`` from the PE on the left and leave at ``chain_out`` /
``rmax_out``, skipping a PE whose column holds no key (``colvalid`` low). Arithmetic: the
template's fp32 (:mod:`rtl.lib.fp`), bit-exact with :mod:`archsim.templates.attention.values`;
operands ``q`` / ``k`` / ``v`` are 16-bit codes in ``precision`` (bf16 or fp16), widened exactly to
fp32 (so a product of two is exact and the models' values do not depend on the widening).

Pipelined (``add_stages = A``, ``rint_stages = Rn``, ``ldexp_stages = Lx``; 0: combinational): the
adders are the library's :class:`rtl.lib.units.Fp32AddFinite` (``A`` registers; one more than its
cut points, :func:`add_stages_max`, registers the adders' operands in front of it), ``rint`` and
``ldexp`` its :class:`~rtl.lib.units.Rint` / :class:`~rtl.lib.units.Ldexp`. The decode ports keep
their meaning at the adder's input; every result is written ``A`` cycles later, ``p`` / ``f`` / ``n`` ``2A + Rn`` cycles
after ``exp0_add`` (the add, ``rint``, ``x - n``), ``expfin`` adds ``ldexp(p, n)`` of ``Lx`` cycles
earlier, and ``chain_out`` is ``chain_in`` plus this PE's term (or ``chain_in`` itself when
``colvalid`` is low) ``A`` cycles later: the controller skews the row's columns by ``A`` each. With
``A > 0`` the row max chain is registered too, and carries keys (:func:`rtl.lib.fp.fp32_key`, ordered
like the values, so each compare is a carry chain straight from flip-flops): ``rmax_key_out`` is a
register fed from ``rmax_key_in`` and a register of the selected score's key, ``rmax_out`` its value
(the row's max leaves the last column ``C + 1`` cycles after the scores are final).

QK with ``A > 0`` is interleaved (ports ``qk_add`` .. ``qk_fin``, the controller's schedule): the
adder's result is read back through the register ``qk_back``, so ``A + 1`` partial sums circulate;
a step (``qk_add``) adds the product (``-0.0`` with ``qk_pad``) to ``qk_back`` (``+0.0`` with
``qk_first``); then the partials leave one a cycle and a pairwise tree on the same adder adds
``qk_back`` of ``2**(k-1)`` cycles earlier (tap ``qk_tap = k - 1``, a delay line of ``qk_back``) to
the current one (``-0.0`` with ``qk_rmask``), and ``qk_fin`` writes the root to the score ring: the
order of :func:`archsim.templates.attention.values.dot_rows`. The controller sends Q, K and these
decode bits to PE ``(i, j)`` ``i + j`` cycles late (the wavefront).
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.exp import exp2_coefficient_bits
from rtl.lib.pipe import delay
from rtl.lib.units import Fp32AddFinite, Fp32MulFinite, Ldexp, Rint


#: cut points of the finite fp32 multiplier (a 12th multiplier stage registers its operands in front of
#: it, more are plain registers after it)
_MUL_CUTS = 11

#: operand formats of the array's buffers (the params' ``precision``); each widens exactly to fp32
OPERAND_FORMATS = ("bf16", "fp16")


def widen_bf16(bf16):
    """fp32 bits of a bf16 code (the low 16 bits zero)."""
    return Cat(Const(0, 16), bf16)


def widen(m: Module, code, precision: str, name: str):
    """Exact fp32 bits of a 16-bit operand ``code`` in ``precision`` (bf16: free; fp16: rebias, and a
    subnormal normalized by a leading-zero count: :func:`rtl.lib.fp.fp16_to_fp32`)."""
    if precision == "bf16":
        return widen_bf16(code)
    if precision == "fp16":
        return fp.fp16_to_fp32(m, code, name)
    raise ValueError(f"precision: the attention PE widens {', '.join(OPERAND_FORMATS)} operands, got {precision!r}")


def add_stages_max() -> int:
    """The most pipeline registers of the PE's adders: the unit's cut points, then its operands."""
    unit = Fp32AddFinite(0)
    unit._MustUse__silence = True  # built only to read its number of cut points
    return unit.max_stages + 1


#: fp32 -0.0: the adder's identity (x + -0.0 == x for every x, +-0.0 included)
NEG_ZERO = 0x80000000


def qk_tree_levels(add_stages: int) -> int:
    """Levels of the pairwise tree over the ``add_stages + 1`` QK partial sums in flight on the adder."""
    return add_stages.bit_length() if add_stages else 0


def _adder(m: Module, a, b, stages: int, name: str):
    """fp32 ``a + b`` after ``stages`` registers (:func:`add_stages_max`; 0: combinational)."""
    if not stages:
        return fp.fp32_add_finite(m, a, b, name)
    cuts = add_stages_max() - 1
    if stages > cuts:  # the operands registered first (the ring / chain / decode muxes in front of the adder)
        a, b = delay(m, a, stages - cuts, f"{name}_opa"), delay(m, b, stages - cuts, f"{name}_opb")
    m.submodules[f"{name}_unit"] = unit = Fp32AddFinite(min(stages, cuts))
    m.d.comb += [unit.a.eq(a), unit.b.eq(b), unit.in_valid.eq(1)]
    return unit.out


class AttentionPE(wiring.Component):
    """PE ``(i, j)``; ``first_col``: the row's first PE (its block max starts from its own score)."""

    def __init__(self, exp_macs: int, first_col: bool, precision: str = "bf16", mul_stages: int = 0,
                 add_stages: int = 0, rint_stages: int = 0, ldexp_stages: int = 0, mul: str = "dsp"):
        if precision not in OPERAND_FORMATS:
            raise ValueError(f"precision: expected one of {', '.join(OPERAND_FORMATS)}, got {precision!r}")
        self.exp_macs, self.first_col, self.precision = exp_macs, first_col, precision
        self.mul_stages = mul_stages
        self.add_stages, self.rint_stages, self.ldexp_stages = add_stages, rint_stages, ldexp_stages
        #: the pipelined multiplier's 18x18 products (:data:`rtl.lib.fp.MULTIPLIERS`; ``"dsp_reg"``: ECP5
        #: MULT18X18D blocks whose own registers are its cut points)
        self.mul = mul
        ports = {
            # decode of the controller (one-hot but for the P.V default)
            "qk_mac": In(1), "qk_first": In(1), "exp0": In(1), "horner": In(1), "expfin": In(1), "av": In(1),
            "flat": In(1), "qk_ring": In(2), "esa_ring": In(2),
            # operands
            "q": In(16), "k": In(16), "v": In(16), "scale": In(32), "neg_mc": In(32), "horner_coef": In(32),
            "p_flat": In(32), "colvalid": In(1), "chain_in": In(32),
            # results
            "chain_out": Out(32), "score": Out(32), "rmax_out": Out(32),
        }
        if add_stages:  # the registered row max chain carries keys (rtl.lib.fp.fp32_key)
            ports["rmax_key_out"] = Out(32)
            if not first_col:
                ports["rmax_key_in"] = In(32)
        elif not first_col:
            ports["rmax_in"] = In(32)
        if mul_stages:  # the adder's decode, S cycles after the multiplier's
            ports.update({"qk_acc": In(1), "exp0_add": In(1), "horner_add": In(1), "av_add": In(1)})
        if add_stages:  # QK interleaved on the pipelined adder (qk_tree_levels)
            ports.update({"qk_add": In(1), "qk_pad": In(1), "qk_tree": In(1), "qk_rmask": In(1),
                          "qk_tap": In(range(max(1, qk_tree_levels(add_stages)))), "qk_fin": In(1)})
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        K = self.exp_macs - 1
        coef_top = exp2_coefficient_bits(self.exp_macs)[K]
        S = Array(Signal(32, name=f"s{r}") for r in range(4))
        p, f, n = Signal(32), Signal(32), Signal(signed(11))
        s_qk, s_esa = S[self.qk_ring], S[self.esa_ring]
        p_av = Mux(self.flat, self.p_flat, p)
        ma, mb, aa, ab = (Signal(32, name=x) for x in ("ma", "mb", "aa", "ab"))
        q, k, v = (widen(m, x, self.precision, f"w{n}") for x, n in ((self.q, "q"), (self.k, "k"), (self.v, "v")))
        with m.If(self.qk_mac):
            m.d.comb += [ma.eq(q), mb.eq(k)]
        with m.Elif(self.exp0):
            m.d.comb += [ma.eq(s_esa), mb.eq(self.scale)]
        with m.Elif(self.horner):
            m.d.comb += [ma.eq(p), mb.eq(f)]
        with m.Else():
            m.d.comb += [ma.eq(p_av), mb.eq(v)]
        Sm = self.mul_stages
        Sa, Sr, Sl = self.add_stages, self.rint_stages, self.ldexp_stages
        if Sm:
            # its round-and-pack's clamps, compares with constants and shifts as data (same bits, latency)
            m.submodules.mul_unit = mul = Fp32MulFinite(min(Sm, _MUL_CUTS), self.mul, zero_fill_as_data=True,
                                                        compare_as_data=True)
            # beyond its cut points: the operands registered first (the decode's muxes in front of the
            # multiplier), then plain registers after it
            pre = 1 if Sm > _MUL_CUTS else 0
            m.d.comb += [mul.a.eq(delay(m, ma, pre, "mul_opa")), mul.b.eq(delay(m, mb, pre, "mul_opb")),
                         mul.in_valid.eq(1)]
            prod = delay(m, mul.out, Sm - min(Sm, _MUL_CUTS) - pre, "prod_d")
            qk_acc, exp0_add, horner_add = self.qk_acc, self.exp0_add, self.horner_add
        else:
            prod = fp.fp32_mul_finite(m, ma, mb, "mul")
            qk_acc, exp0_add, horner_add = self.qk_mac, self.exp0, self.horner
        if Sl:
            m.submodules.ldexp_unit = ldu = Ldexp(Sl)
            m.d.comb += [ldu.p.eq(p), ldu.n.eq(n), ldu.in_valid.eq(1)]
            ld = ldu.out
        else:
            ld = fp.ldexp(m, p, n, "ld")
        if Sa:  # QK's A + 1 partial sums circulate through the adder and its read-back register `back`
            back = Signal(32, name="qk_back")
            levels = qk_tree_levels(Sa)
            taps, tap = [], back  # the tree's left operands: back 2**(k-1) cycles earlier, level k
            for k in range(1, levels + 1):
                tap = delay(m, tap, (1 << (k - 1)) - (1 << (k - 2) if k > 1 else 0), f"qk_tap{k}_")
                taps.append(tap)
            left = Array(taps)[self.qk_tap] if levels else Const(0, 32)
            qk_acc = self.qk_add
        with m.If(qk_acc):
            if Sa:  # a step: +0.0 (first visit) or the partial + the product (-0.0 past the head dim);
                # a tree add: the earlier + the current partial (-0.0 for a missing right one)
                m.d.comb += [aa.eq(Mux(self.qk_tree, left, Mux(self.qk_first, 0, back))),
                             ab.eq(Mux(self.qk_tree | self.qk_pad, Mux(self.qk_tree & ~self.qk_rmask, back,
                                                                           NEG_ZERO), prod))]
            else:
                m.d.comb += [aa.eq(Mux(self.qk_first, 0, s_qk)), ab.eq(prod)]
        with m.Elif(exp0_add):
            m.d.comb += [aa.eq(prod), ab.eq(self.neg_mc)]
        with m.Elif(horner_add):
            m.d.comb += [aa.eq(prod), ab.eq(self.horner_coef)]
        with m.Elif(self.expfin):
            m.d.comb += [aa.eq(self.chain_in), ab.eq(ld)]
        with m.Else():
            m.d.comb += [aa.eq(self.chain_in), ab.eq(prod)]
        add = _adder(m, aa, ab, Sa, "add")
        # the exp's range reduction on the adder's result x: n = rint(x) (Rn cycles), then x - n (A cycles)
        if Sr:
            m.submodules.rint_unit = ru = Rint(Sr)
            m.d.comb += [ru.a.eq(add), ru.in_valid.eq(1)]
            n_fp, n_int = ru.n, ru.n_int
        else:
            n_fp, n_int = fp.rint(m, add, "rint")
        x_d = delay(m, add, Sr, "rr_x")
        frac = _adder(m, x_d, fp.fp32_neg(n_fp), Sa, "frac")
        n_int = delay(m, n_int, Sa, "rr_n")
        # the adder's decode when its result leaves the pipeline
        horner_res = delay(m, horner_add, Sa, "horner_res")
        exp0_res = delay(m, exp0_add, 2 * Sa + Sr, "exp0_res")
        if Sa:
            valid_res, chain_res = delay(m, self.colvalid, Sa, "valid_res"), delay(m, self.chain_in, Sa, "chain_res")
        else:
            valid_res, chain_res = self.colvalid, self.chain_in
        m.d.comb += [self.score.eq(add), self.chain_out.eq(Mux(valid_res, add, chain_res))]
        # the row max chain: combinational; with pipelined adders registered (the selected score's key, then
        # each column's compare of keys: the controller reads the row's max C + 1 cycles after the scores)
        if Sa:  # keys (fp.fp32_key) in the registers: each compare a carry chain straight from flip-flops
            s_key = Signal(32, name="s_sel_key")
            m.d.sync += s_key.eq(fp.fp32_key(s_qk))
            if self.first_col:
                m.d.sync += self.rmax_key_out.eq(s_key)
            else:
                take = self.colvalid & (s_key > self.rmax_key_in)
                m.d.sync += self.rmax_key_out.eq(Mux(take, s_key, self.rmax_key_in))
            m.d.comb += self.rmax_out.eq(fp.fp32_from_key(self.rmax_key_out))
        elif self.first_col:
            m.d.comb += self.rmax_out.eq(s_qk)
        else:
            mx = fp.fp32_max(m, self.rmax_in, s_qk, "max")
            m.d.comb += self.rmax_out.eq(Mux(self.colvalid, mx, self.rmax_in))
        if Sa:
            m.d.sync += back.eq(add)
            with m.If(self.qk_fin):  # the tree's root, in `back`
                m.d.sync += S[self.qk_ring].eq(back)
        else:
            with m.If(qk_acc):
                m.d.sync += S[self.qk_ring].eq(add)
        with m.If(exp0_res):
            m.d.sync += [p.eq(coef_top), f.eq(frac), n.eq(n_int)]
        with m.If(horner_res):
            m.d.sync += p.eq(add)
        with m.If(self.expfin):
            m.d.sync += p.eq(ld)
        return m
