"""The library's arithmetic units as pipelined Amaranth components.

Each unit takes its operands with ``in_valid`` and presents the result with
``out_valid`` exactly :attr:`Unit.latency` (= ``stages``) cycles later, every
cycle (no stalls). ``stages`` picks how many of the builder's cut points
(:mod:`rtl.lib.pipe`) are registers, the output first; ``max_stages`` is how
many there are. ``stages=0`` is combinational.
"""
from __future__ import annotations

from amaranth import Module, Mux, Shape, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.exp import exp2_poly
from rtl.lib.fma import fp_fma
from rtl.lib.formats import EXP_W, FLOATS, FormatHw, decode
from rtl.lib.lzc import lzc
from rtl.lib.pipe import Pipe
from rtl.lib.round import round_pack


def _count_cuts(build, inputs: dict[str, Shape], split_add: bool = False) -> int:
    """Cut points ``build`` uses (a dry run into a scratch module; ``split_add`` adds one to an adder's)."""
    m = Module()
    m._MustUse__silence = True  # a scratch module, never elaborated
    pipe = Pipe(m, 0, 1 << 30, "count", split_add=split_add)
    build(m, {k: Signal(s, name=k) for k, s in inputs.items()}, pipe)
    return pipe._next


class Unit(wiring.Component):
    """Operands in, results ``latency`` cycles later. Subclasses set ``inputs`` / ``outputs``
    (name -> shape) and :meth:`build` (the combinational builder with cut points)."""

    inputs: dict[str, Shape]
    outputs: dict[str, Shape]
    #: the forcing options (below) this unit's builder honours; asking for another one is refused, so an
    #: option that would change nothing never reads as applied
    forcing_options: frozenset[str] = frozenset()

    def __init__(self, stages: int, specials_as_data: bool = False, zero_fill_as_data: bool = False,
                 packed_round: bool = False, split_compare: bool = False, compare_as_data: bool = False,
                 negate_early: bool = False, split_add: bool = False):
        asked = {"specials_as_data": specials_as_data, "zero_fill_as_data": zero_fill_as_data,
                 "packed_round": packed_round, "split_compare": split_compare, "compare_as_data": compare_as_data,
                 "negate_early": negate_early, "split_add": split_add}
        ignored = sorted(k for k, on in asked.items() if on and k not in self.forcing_options)
        if ignored:
            raise ValueError(f"{type(self).__name__}: {', '.join(ignored)} not built by this unit (it builds "
                             f"{', '.join(sorted(self.forcing_options)) or 'none of the forcing options'})")
        #: round-and-pack's forcing as data (:attr:`rtl.lib.pipe.Pipe.specials_as_data`): same bits and latency
        self.specials_as_data = specials_as_data
        #: its increment on the packed exponent || fraction (:attr:`rtl.lib.pipe.Pipe.packed_round`; needs
        #: ``specials_as_data``): same bits and latency
        self.packed_round = packed_round
        #: the shifts' zero fill as data (:attr:`rtl.lib.pipe.Pipe.zero_fill_as_data`): same bits and latency
        self.zero_fill_as_data = zero_fill_as_data
        #: an adder's magnitude compare split in exponent and fraction (:attr:`rtl.lib.pipe.Pipe.split_compare`):
        #: same bits and latency
        self.split_compare = split_compare
        #: round-and-pack's exponent compares with constants as data (:attr:`rtl.lib.pipe.Pipe.compare_as_data`):
        #: same bits and latency
        self.compare_as_data = compare_as_data
        #: an adder's subtrahend inverted before the add's cut point (:attr:`rtl.lib.pipe.Pipe.negate_early`): same
        #: bits and latency
        self.negate_early = negate_early
        #: an adder's significand add over two stages (:attr:`rtl.lib.pipe.Pipe.split_add`): same bits, ONE MORE
        #: cut point (``max_stages`` + 1)
        self.split_add = split_add
        #: cut points of the builder plus the output register
        self.max_stages = _count_cuts(self.build, self.inputs, split_add) + 1
        if isinstance(stages, bool) or not isinstance(stages, int) or not 0 <= stages <= self.max_stages:
            raise ValueError(f"{type(self).__name__}: stages expected an integer 0..{self.max_stages}, got {stages!r}")
        self.stages = stages
        ports = {"in_valid": In(1), "out_valid": Out(1)}
        ports.update({k: In(s) for k, s in self.inputs.items()})
        ports.update({k: Out(s) for k, s in self.outputs.items()})
        super().__init__(ports)

    @property
    def latency(self) -> int:
        """Cycles from operands to result (the declared latency a model reads)."""
        return self.stages

    def build(self, m: Module, ins: dict, pipe: Pipe | None) -> dict:
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        pipe = Pipe(m, self.stages, self.max_stages, "u", specials_as_data=self.specials_as_data,
                    zero_fill_as_data=self.zero_fill_as_data, packed_round=self.packed_round,
                    split_compare=self.split_compare, compare_as_data=self.compare_as_data,
                    negate_early=self.negate_early, split_add=self.split_add)
        outs = self.build(m, {k: getattr(self, k) for k in self.inputs}, pipe)
        names = list(self.outputs)
        regs = pipe.cut(*(outs[k] for k in names))  # the output register (the last cut point)
        pipe.finish()
        valid = self.in_valid
        for i in range(self.stages):  # the valid bit: one register per chosen cut
            v = Signal(name=f"valid_{i}")
            m.d.sync += v.eq(valid)
            valid = v
        m.d.comb += self.out_valid.eq(valid)
        for k, v in zip(names, regs):
            m.d.comb += getattr(self, k).eq(v)
        return m


class FpMul(Unit):
    """``a * b`` in the float ``fmt`` (fp8_e4m3, fp8_e5m2, fp16, bf16, fp32), one RNE rounding;
    ``mul``: the significand multiplier (:data:`rtl.lib.fp.MULTIPLIERS`): ``"dsp"`` (inferred DSP blocks),
    ``"lut"`` (fabric, one more cut point), ``"dsp_reg"`` (instantiated MULT18X18D blocks with their own
    registers, ECP5) or ``"dsp_reg_sim"`` (their Amaranth equivalent, for amaranth.sim): :func:`rtl.lib.fp.multiply`."""

    forcing_options = frozenset({"specials_as_data", "packed_round"})

    def __init__(self, fmt: str, stages: int = 1, mul: str = "dsp", specials_as_data: bool = False,
                 packed_round: bool = False):
        self.fmt = _float(fmt)
        self.mul = _mul(mul)
        self.inputs = {"a": Shape(self.fmt.bits), "b": Shape(self.fmt.bits)}
        self.outputs = {"out": Shape(self.fmt.bits)}
        super().__init__(stages, specials_as_data, packed_round=packed_round)

    def build(self, m, ins, pipe):
        return {"out": fp.fp_mul(m, self.fmt, ins["a"], ins["b"], "mul", pipe, self.mul)}


class FpAdd(Unit):
    """``a + b`` in the float ``fmt``, one RNE rounding; ``specials_as_data``: :class:`Unit`'s; ``zero_a``:
    an input ``a_zero`` that makes ``a`` +0.0 (:func:`rtl.lib.fp.fp_add`: a select after the operand compares,
    not a mask before them); ``neg_zero_b``: an input ``b_neg_zero`` that makes ``b`` -0.0, the same way;
    ``zero_fill_as_data``, ``packed_round``, ``split_compare``, ``negate_early``, ``split_add`` (one more cut
    point): :class:`Unit`'s."""

    forcing_options = frozenset({"specials_as_data", "zero_fill_as_data", "packed_round", "split_compare",
                                 "negate_early", "split_add"})

    def __init__(self, fmt: str, stages: int = 1, specials_as_data: bool = False, zero_a: bool = False,
                 neg_zero_b: bool = False, zero_fill_as_data: bool = False, packed_round: bool = False,
                 split_compare: bool = False, negate_early: bool = False, split_add: bool = False):
        self.fmt = _float(fmt)
        self.inputs = {"a": Shape(self.fmt.bits), "b": Shape(self.fmt.bits)}
        if zero_a:
            self.inputs["a_zero"] = Shape(1)
        if neg_zero_b:
            self.inputs["b_neg_zero"] = Shape(1)
        self.outputs = {"out": Shape(self.fmt.bits)}
        super().__init__(stages, specials_as_data, zero_fill_as_data, packed_round, split_compare,
                         negate_early=negate_early, split_add=split_add)

    def build(self, m, ins, pipe):
        return {"out": fp.fp_add(m, self.fmt, ins["a"], ins["b"], "add", pipe, ins.get("a_zero"),
                                 ins.get("b_neg_zero"))}


class FpFma(Unit):
    """``a * b + c`` in the float ``fmt``, fused: the exact product and sum, one RNE rounding
    (:func:`rtl.lib.fma.fp_fma`); ``mul`` as :class:`FpMul`'s; ``specials_as_data``, ``zero_fill_as_data``,
    ``packed_round``: :class:`Unit`'s."""

    forcing_options = frozenset({"specials_as_data", "zero_fill_as_data", "packed_round"})

    def __init__(self, fmt: str, stages: int = 1, mul: str = "dsp", specials_as_data: bool = False,
                 zero_fill_as_data: bool = False, packed_round: bool = False):
        self.fmt = _float(fmt)
        self.mul = _mul(mul)
        self.inputs = {"a": Shape(self.fmt.bits), "b": Shape(self.fmt.bits), "c": Shape(self.fmt.bits)}
        self.outputs = {"out": Shape(self.fmt.bits)}
        super().__init__(stages, specials_as_data, zero_fill_as_data, packed_round)

    def build(self, m, ins, pipe):
        return {"out": fp_fma(m, self.fmt, ins["a"], ins["b"], ins["c"], "fma", pipe, self.mul)}


class NarrowMulFp32(Unit):
    """Finite bf16 / fp16 ``a * b`` -> fp32 (exact product, one rounding): the MAC multiplier;
    ``mul`` as :class:`FpMul`'s."""

    def __init__(self, fmt: str, stages: int = 1, mul: str = "dsp"):
        self.fmt = _float(fmt)
        self.mul = _mul(mul)
        self.inputs = {"a": Shape(self.fmt.bits), "b": Shape(self.fmt.bits)}
        self.outputs = {"out": Shape(32)}
        super().__init__(stages)

    def build(self, m, ins, pipe):
        return {"out": fp.narrow_mul_fp32(m, self.fmt, ins["a"], ins["b"], "mul", pipe, self.mul)}


class Fp32AddFinite(Unit):
    """Finite fp32 ``a + b`` (the datapaths' adder); ``zero_fill_as_data``, ``split_compare``, ``negate_early``:
    :class:`Unit`'s (its round-and-pack has no forcing to build as data: :class:`FpAdd` for ``specials_as_data``)."""

    forcing_options = frozenset({"zero_fill_as_data", "split_compare", "negate_early"})

    inputs = {"a": Shape(32), "b": Shape(32)}
    outputs = {"out": Shape(32)}

    def __init__(self, stages: int, zero_fill_as_data: bool = False, split_compare: bool = False,
                 negate_early: bool = False):
        super().__init__(stages, zero_fill_as_data=zero_fill_as_data, split_compare=split_compare,
                         negate_early=negate_early)

    def build(self, m, ins, pipe):
        return {"out": fp.fp32_add_finite(m, ins["a"], ins["b"], "add", pipe)}


class Fp32Max(Unit):
    """fp32 ``max(a, b)`` of finite values (:func:`rtl.lib.fp.fp32_max_split`: ``a`` unless ``b`` is
    greater; ``-0 < +0``), the 1D lanes' compare."""

    inputs = {"a": Shape(32), "b": Shape(32)}
    outputs = {"out": Shape(32)}

    def build(self, m, ins, pipe):
        return {"out": fp.fp32_max_split(m, ins["a"], ins["b"], "max", pipe)}


class Fp32MulFinite(Unit):
    """Finite fp32 ``a * b`` (subnormals included); ``mul`` as :class:`FpMul`'s; ``zero_fill_as_data``,
    ``compare_as_data``: :class:`Unit`'s (its round-and-pack's shifts, clamps and compares with constants)."""

    forcing_options = frozenset({"zero_fill_as_data", "compare_as_data"})

    inputs = {"a": Shape(32), "b": Shape(32)}
    outputs = {"out": Shape(32)}

    def __init__(self, stages: int = 1, mul: str = "dsp", zero_fill_as_data: bool = False,
                 compare_as_data: bool = False):
        self.mul = _mul(mul)
        super().__init__(stages, zero_fill_as_data=zero_fill_as_data, compare_as_data=compare_as_data)

    def build(self, m, ins, pipe):
        return {"out": fp.fp32_mul_finite(m, ins["a"], ins["b"], "mul", pipe, self.mul)}


class Rint(Unit):
    """``n = rint(a)`` half to even for a finite fp32 ``a``: ``n`` as fp32 bits and ``n_int`` (signed,
    clamped to +-300) (:func:`rtl.lib.fp.rint`; the exp's range reduction)."""

    inputs = {"a": Shape(32)}
    outputs = {"n": Shape(32), "n_int": signed(11)}

    def build(self, m, ins, pipe):
        n_fp, n_int = fp.rint(m, ins["a"], "rint", pipe)
        return {"n": n_fp, "n_int": n_int}


class Ldexp(Unit):
    """fp32 ``p * 2**n`` (``p`` normal, ``n`` signed) rounded like numpy's ``ldexp`` (:func:`rtl.lib.fp.ldexp`)."""

    inputs = {"p": Shape(32), "n": signed(11)}
    outputs = {"out": Shape(32)}

    def build(self, m, ins, pipe):
        return {"out": fp.ldexp(m, ins["p"], ins["n"], "ldexp", pipe)}


class Lzc(Unit):
    """Leading zeros of a ``width``-bit value (``width`` if zero)."""

    def __init__(self, width: int, stages: int = 1):
        self.width = width
        self.inputs = {"a": Shape(width)}
        self.outputs = {"out": Shape.cast(range(width + 1))}
        super().__init__(stages)

    def build(self, m, ins, pipe):
        return {"out": lzc(m, ins["a"], self.width, "lzc")}


class RoundPack(Unit):
    """``(-1)**sign * sig * 2**exp`` (``sig`` ``width`` bits, ``exp`` signed) to the float ``fmt``, RNE."""

    forcing_options = frozenset({"specials_as_data", "packed_round", "compare_as_data"})

    def __init__(self, width: int, fmt: str = "fp32", stages: int = 1, specials_as_data: bool = False,
                 packed_round: bool = False, compare_as_data: bool = False):
        self.width, self.fmt = width, _float(fmt)
        self.inputs = {"sign": Shape(1), "exp": signed(EXP_W), "sig": Shape(width)}
        self.outputs = {"out": Shape(self.fmt.bits)}
        super().__init__(stages, specials_as_data, packed_round=packed_round, compare_as_data=compare_as_data)

    def build(self, m, ins, pipe):
        f = self.fmt
        return {"out": round_pack(m, ins["sign"], ins["exp"], ins["sig"], self.width, "rp", f.ebits, f.mbits,
                                  f.specials, pipe)}


class IntToFp(Unit):
    """Signed ``width``-bit integer to the float ``fmt``, RNE."""

    forcing_options = frozenset({"specials_as_data", "packed_round"})

    def __init__(self, width: int, fmt: str = "fp32", stages: int = 1, specials_as_data: bool = False,
                 packed_round: bool = False):
        self.width, self.fmt = width, _float(fmt)
        self.inputs = {"a": signed(width)}
        self.outputs = {"out": Shape(self.fmt.bits)}
        super().__init__(stages, specials_as_data, packed_round=packed_round)

    def build(self, m, ins, pipe):
        return {"out": fp.int_to_fp(m, ins["a"], self.width, "i2f", self.fmt, pipe)}


class FpToInt(Unit):
    """The float ``fmt`` to the nearest signed ``width``-bit integer (ties to even), saturating; NaN -> 0."""

    def __init__(self, fmt: str, width: int, stages: int = 1):
        self.width, self.fmt = width, _float(fmt)
        self.inputs = {"a": Shape(self.fmt.bits)}
        self.outputs = {"out": signed(width)}
        super().__init__(stages)

    def build(self, m, ins, pipe):
        return {"out": fp.fp_to_int(m, self.fmt, ins["a"], self.width, "f2i", pipe)}


class PositDecode(Unit):
    """A posit(``bits``, ``es``) code to ``(nar, sign, exp, sig)``: value ``(-1)**sign * sig * 2**exp``."""

    def __init__(self, bits: int, es: int, stages: int = 1):
        self.fmt = FormatHw(f"posit{bits}_{es}", bits, "posit", es=es)
        self.inputs = {"a": Shape(bits)}
        self.outputs = {"nar": Shape(1), "sign": Shape(1), "exp": signed(EXP_W), "sig": Shape(self.fmt.sig_bits)}
        super().__init__(stages)

    def build(self, m, ins, pipe):
        d = decode(m, self.fmt, ins["a"], "pd", pipe)
        return {"nar": d.nan, "sign": d.sign, "exp": d.exp, "sig": d.sig}


class Exp2(Unit):
    """fp32 ``exp2(x)`` as the attention design computes it (:mod:`rtl.lib.exp`), ``exp_macs`` Horner terms;
    ``mul`` as :class:`FpMul`'s; ``zero_fill_as_data``: :class:`Unit`'s (its adders' exponent clamps
    and shifts); ``compare_as_data``: :class:`Unit`'s (its multipliers' round-and-pack exponent compares)."""

    forcing_options = frozenset({"zero_fill_as_data", "compare_as_data"})

    inputs = {"a": Shape(32)}
    outputs = {"out": Shape(32)}

    def __init__(self, exp_macs: int, stages: int = 1, mul: str = "dsp", zero_fill_as_data: bool = False,
                 compare_as_data: bool = False):
        self.exp_macs = exp_macs
        self.mul = _mul(mul)
        super().__init__(stages, zero_fill_as_data=zero_fill_as_data, compare_as_data=compare_as_data)

    def build(self, m, ins, pipe):
        return {"out": exp2_poly(m, ins["a"], self.exp_macs, "exp2", pipe, self.mul)}


class IntMac(wiring.Component):
    """``acc = (first ? 0 : acc) + a * b`` on signed integers, a ``stages``-deep pipeline:
    ``stages=1`` multiplies and accumulates in one cycle, ``stages=2`` registers the product first,
    ``stages=3`` also the operands (before the multiplier). ``acc`` shows the sum including an
    operand pair ``latency`` cycles after it entered. ``mul``: ``"dsp"`` (inferred; the registers in
    the fabric), ``"dsp_reg"`` (an instantiated MULT18X18D whose own registers are the operand and
    product registers: :mod:`rtl.lib.ecp5`) or ``"dsp_reg_sim"`` (its Amaranth equivalent)."""

    MULS = ("dsp", "dsp_reg", "dsp_reg_sim")

    def __init__(self, a_bits: int, b_bits: int, acc_bits: int, stages: int = 2, mul: str = "dsp"):
        if isinstance(stages, bool) or stages not in (1, 2, 3):
            raise ValueError(f"IntMac: stages expected 1, 2 or 3, got {stages!r}")
        if mul not in self.MULS:
            raise ValueError(f"IntMac: mul expected one of {', '.join(self.MULS)}, got {mul!r}")
        if mul != "dsp" and max(a_bits, b_bits) > 18:
            raise ValueError(f"IntMac: mul={mul!r} takes operands of at most 18 bits, got {a_bits} x {b_bits}")
        self.stages, self.max_stages, self.mul = stages, 3, mul
        self.acc_bits = acc_bits
        super().__init__({"in_valid": In(1), "first": In(1), "a": In(signed(a_bits)), "b": In(signed(b_bits)),
                          "acc": Out(signed(acc_bits)), "out_valid": Out(1)})

    @property
    def latency(self) -> int:
        return self.stages

    def elaborate(self, platform):
        from rtl.lib.ecp5 import mult18x18d, mult18x18d_behavioural

        m = Module()
        prod = Signal(signed(len(self.a) + len(self.b)), name="prod")
        valid, first = self.in_valid, self.first
        reg_in, reg_out = self.stages == 3, self.stages >= 2
        for i in range(self.stages - 1):  # valid and first beside the operand / product registers
            v, f = Signal(name=f"valid_{i}"), Signal(name=f"first_{i}")
            m.d.sync += [v.eq(valid), f.eq(first)]
            valid, first = v, f
        if self.mul == "dsp_reg":
            m.submodules.mult18x18d = mult18x18d(self.a, self.b, prod, input_reg=reg_in, output_reg=reg_out)
        elif self.mul == "dsp_reg_sim":
            mult18x18d_behavioural(m, self.a, self.b, prod, input_reg=reg_in, output_reg=reg_out, name="mul")
        else:
            a, b = self.a, self.b
            if reg_in:
                a, b = Signal.like(self.a, name="a_q"), Signal.like(self.b, name="b_q")
                m.d.sync += [a.eq(self.a), b.eq(self.b)]
            if reg_out:
                m.d.sync += prod.eq(a * b)
            else:
                m.d.comb += prod.eq(a * b)
        acc = Signal(signed(self.acc_bits), name="acc_r")
        ov = Signal()
        m.d.sync += ov.eq(valid)
        with m.If(valid):
            m.d.sync += acc.eq(Mux(first, 0, acc) + prod)
        m.d.comb += [self.acc.eq(acc), self.out_valid.eq(ov)]
        return m


def _mul(kind: str) -> str:
    if kind not in fp.MULTIPLIERS:
        raise ValueError(f"mul: expected one of {', '.join(fp.MULTIPLIERS)}, got {kind!r}")
    return kind


def _float(name: str) -> FormatHw:
    if name not in FLOATS:
        raise ValueError(f"format: expected one of {', '.join(FLOATS)}, got {name!r}")
    return FLOATS[name]
