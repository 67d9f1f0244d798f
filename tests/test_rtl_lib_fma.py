"""The fused multiply-add (rtl.lib.units.FpFma) against an exact reference (amaranth's simulator): bit for bit
(every NaN as NaN), the result exactly ``latency`` cycles after its operands, at stages 0, a middle depth and
the maximum.

Reference: the exact ``a * b + c`` as a ``fractions.Fraction``, rounded ONCE to the format (round to nearest
even, gradual underflow, overflow to inf -- e4m3fn: to its NaN code, signed as ml-dtypes does) by
:func:`round_exact`, written here from the format's fields alone. Not float64 ``a * b + c``: that rounds
twice (the sum of an fp32 product and an addend far apart is not exact in 53 bits). The reference itself
is cross-checked against ml-dtypes / numpy where float64 holds the sum exactly (then one cast is the
single rounding)."""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes as md
import numpy as np
import pytest

from rtl.lib.formats import FLOATS
from tests.test_rtl_lib import DTYPES, random_codes, simulate

FORMATS = ["fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"]
#: formats whose float64 cast is ml-dtypes' (through float32: a second rounding unless float32 holds the value)
ML_DTYPES = ("bf16", "fp8_e4m3", "fp8_e5m2")


# ----------------------------------------------------------------------------- the exact reference

def _value(fmt: str, code: int):
    """``(kind, sign, Fraction)`` of a code: kind "nan", "inf" or "num" (decoded from the fields)."""
    f = FLOATS[fmt]
    sign = code >> (f.bits - 1) & 1
    e, m = code >> f.mbits & ((1 << f.ebits) - 1), code & ((1 << f.mbits) - 1)
    emax = (1 << f.ebits) - 1
    if f.specials == "ieee" and e == emax:
        return ("nan" if m else "inf"), sign, None
    if f.specials == "fn" and e == emax and m == (1 << f.mbits) - 1:
        return "nan", sign, None
    sig = m | (1 << f.mbits) if e else m
    v = Fraction(sig) * Fraction(2) ** (max(e, 1) - f.bias - f.mbits)
    return "num", sign, -v if sign else v


def _nan(fmt: str) -> int:
    f = FLOATS[fmt]
    emax = (1 << f.ebits) - 1
    return (emax << f.mbits) | ((1 << f.mbits) - 1 if f.specials == "fn" else 1 << (f.mbits - 1))


def _inf(fmt: str, sign: int) -> int:
    f = FLOATS[fmt]
    return (sign << (f.bits - 1)) | (((1 << f.ebits) - 1) << f.mbits)


def round_exact(fmt: str, v: Fraction, zero_sign: int) -> int:
    """The code of ``v`` rounded once to nearest even (``zero_sign``: the sign of a zero ``v``)."""
    f = FLOATS[fmt]
    if v == 0:
        return zero_sign << (f.bits - 1)
    sign, a = int(v < 0), abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2**e <= a < 2**(e + 2)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    lsb = max(e, 1 - f.bias) - f.mbits  # the quantum: gradual underflow below 2**(1 - bias)
    q = a / Fraction(2) ** lsb
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2):
        n += 1
    top_code = ((1 << f.ebits) - 1) << f.mbits  # the first code above the largest finite (ieee)
    if f.specials == "fn":
        top_code = (((1 << f.ebits) - 1) << f.mbits) | ((1 << f.mbits) - 1)  # the NaN code
    # n * 2**lsb as a code: the fields of an integer significand (the hidden bit carries into the exponent)
    ef = (lsb + f.mbits + f.bias) if n >> f.mbits else 0
    while n >> (f.mbits + 1):  # rounding carried out of the binade
        n >>= 1
        ef += 1
    code = (ef << f.mbits) | (n & ((1 << f.mbits) - 1)) if ef else n
    if code >= top_code:
        # e4m3fn: the NaN code with the sum's sign (ml-dtypes' cast of -896 is 0xff; an operand NaN is 0x7f)
        return (sign << (f.bits - 1)) | _nan(fmt) if f.specials == "fn" else _inf(fmt, sign)
    return (sign << (f.bits - 1)) | code


def fma_reference(fmt: str, a: int, b: int, c: int) -> int:
    """The code of ``round(a * b + c)`` (one rounding) with IEEE specials."""
    (ka, sa, va), (kb, sb, vb), (kc, sc, vc) = (_value(fmt, x) for x in (a, b, c))
    if "nan" in (ka, kb, kc):
        return _nan(fmt)
    sp = sa ^ sb
    p_inf = "inf" in (ka, kb)
    if (ka == "inf" and kb == "num" and vb == 0) or (kb == "inf" and ka == "num" and va == 0):
        return _nan(fmt)
    if p_inf and kc == "inf" and sp != sc:
        return _nan(fmt)
    if p_inf:
        return _inf(fmt, sp)
    if kc == "inf":
        return _inf(fmt, sc)
    prod = va * vb
    exact = prod + vc
    zero_sign = sp & sc if prod == 0 and vc == 0 else 0  # an exact zero: +0 unless both terms are -0
    if exact != 0:
        zero_sign = int(exact < 0)  # a non-zero sum rounded to zero keeps its sign
    return round_exact(fmt, exact, zero_sign)


def references(fmt, a, b, c):
    return np.array([fma_reference(fmt, int(x), int(y), int(z)) for x, y, z in zip(a, b, c)], dtype=np.uint64)


def same_bits(fmt: str, got, want):
    """Bit for bit, NaNs as any NaN (they are canonical in the unit; the reference's too)."""
    got, want = np.asarray(got, dtype=np.uint64), np.asarray(want, dtype=np.uint64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{fmt}: {bad.size} mismatches, first at {bad[0]}: got {int(got[bad[0]]):#x} "
                           f"want {int(want[bad[0]]):#x}")


# ----------------------------------------------------------------------------- operands

def _code(fmt: str, x: float) -> int:
    dt, ut = DTYPES[fmt]
    return int(np.array(x, dtype=np.float64).astype(dt).view(ut))


def triples(fmt: str, n: int, seed: int):
    """Random codes plus the cases that break a sloppy FMA: ``c`` close to ``-a*b`` (cancellation, the
    product's low bits decide), ``c`` dominating, ties of the single rounding, overflow, underflow."""
    f = FLOATS[fmt]
    rng = np.random.default_rng(seed)
    a, b, c = random_codes(fmt, n, seed), random_codes(fmt, n, seed + 1), random_codes(fmt, n, seed + 2)
    # cancellation: c = -round(a*b) +- a few ulps (the exact product's low half is the result)
    third = n // 3
    for i in range(third):
        ka, _, va = _value(fmt, int(a[i]))
        kb, _, vb = _value(fmt, int(b[i]))
        if ka == kb == "num":
            r = round_exact(fmt, -(va * vb), 0)
            kr, _, _ = _value(fmt, r)
            if kr == "num":
                c[i] = (r + int(rng.integers(-2, 3))) & ((1 << f.bits) - 1)
    edges = []
    half_ulp = 2.0 ** -(f.mbits + 1)
    big = float(np.array(np.inf).astype(DTYPES[fmt][0])) if f.specials == "ieee" else 448.0
    maxf = float(md.finfo(DTYPES[fmt][0]).max)
    tiny = float(md.finfo(DTYPES[fmt][0]).smallest_subnormal)
    for x, y, z in [
        (1 + 2 * half_ulp, 1 + 2 * half_ulp, -1.0),  # (1+u)^2 - 1 = 2u + u^2: exact only fused
        (1.0, 1.0, half_ulp),  # a tie: 1 + u/2 -> 1 (even)
        (1 + 2 * half_ulp, 1.0, half_ulp),  # a tie to the odd side -> up
        (1.0, half_ulp, 1.0),  # the tie made by the product
        (1 + 2 * half_ulp, half_ulp, 1.0),  # just above the tie: the product's low bits round up
        (maxf, 2.0, -maxf),  # the product overflows, the sum does not
        (maxf, 1.0, maxf),  # overflow of the sum
        (maxf, -1.0, -maxf),
        (tiny, 0.5, 0.0), (tiny, 0.75, 0.0), (tiny, 1.5, -tiny),  # underflow, rounding to the subnormals
        (tiny, tiny, 0.0), (-tiny, tiny, 0.0), (tiny, tiny, -0.0),  # products far below the subnormals
        (tiny, tiny, tiny), (tiny, -tiny, tiny),  # c dominating with a sticky product
        (maxf, maxf, 1.0), (1e-30, 1e-30, 1.0),  # c dominating / product dominating
        (0.0, 5.0, -0.0), (-0.0, 5.0, -0.0), (0.0, -5.0, 0.0), (2.0, 3.0, -6.0), (-2.0, 3.0, 6.0),  # zero signs
        (big, 0.0, 1.0), (big, 1.0, -big), (big, 1.0, big), (1.0, 1.0, -big), (big, -1.0, 3.0),  # specials
        (float("nan"), 1.0, 1.0), (1.0, 1.0, float("nan")),
    ]:
        edges.append((_code(fmt, x), _code(fmt, y), _code(fmt, z)))
    e = np.array(edges, dtype=np.uint64).T
    return np.concatenate([e[0], a]), np.concatenate([e[1], b]), np.concatenate([e[2], c])


# ----------------------------------------------------------------------------- the reference's own checks

@pytest.mark.parametrize("fmt", FORMATS)
def test_reference_agrees_with_ml_dtypes_where_float64_is_exact(fmt):
    """Where float64 holds ``a*b + c`` exactly (and float32 too for ml-dtypes' formats, whose cast goes
    through float32), one ml-dtypes / numpy cast of it is the single rounding: the Fraction reference must
    agree there (NaN as NaN)."""
    dt, ut = DTYPES[fmt]
    a, b, c = triples(fmt, 600, 3)
    with np.errstate(all="ignore"):
        av, bv, cv = (np.asarray(x, dtype=np.uint64).astype(ut).view(dt).astype(np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        s = av * bv + cv
    want = references(fmt, a, b, c)
    checked = 0
    for i in range(len(a)):
        kinds = [_value(fmt, int(x))[0] for x in (a[i], b[i], c[i])]
        if kinds != ["num"] * 3 or not np.isfinite(s[i]):
            continue
        exact = _value(fmt, int(a[i]))[2] * _value(fmt, int(b[i]))[2] + _value(fmt, int(c[i]))[2]
        if Fraction(float(s[i])) != exact:
            continue
        with np.errstate(over="ignore"):
            in_fp32 = float(np.float32(s[i])) == s[i]
        if fmt in ML_DTYPES and not in_fp32:  # ml-dtypes casts float64 via float32
            continue
        with np.errstate(all="ignore"):
            ml = np.array(s[i]).astype(dt)
        ml_code = int(ml.view(ut))
        if np.isnan(float(ml)):
            assert _value(fmt, int(want[i]))[0] == "nan", (fmt, i)
        elif exact == 0:  # float64 rounds -0 + +0 to +0 as IEEE does; the reference's sign rule is its own
            assert int(want[i]) & ((1 << (FLOATS[fmt].bits - 1)) - 1) == 0
        else:
            assert int(want[i]) == ml_code, (fmt, i, hex(int(want[i])), hex(ml_code))
        checked += 1
    assert checked > len(a) // 4  # a good part of them (fp32 sums are often not exact in float64)


def test_reference_is_not_double_rounding():
    """fp32 1.5 * (1 + 2**-23) = 1.5 + 2**-23 + 2**-24 exactly: a tie between 1.5 + 2**-23 (odd) and
    1.5 + 2**-22 (even). Adding -2**-70 puts the exact sum just below the tie (one rounding: down);
    float64 absorbs the 2**-70 (back onto the tie) and float32 then rounds to even (up): double rounding."""
    fmt = "fp32"
    a, b, c = _code(fmt, 1.5), _code(fmt, 1 + 2.0 ** -23), _code(fmt, -(2.0 ** -70))
    single = fma_reference(fmt, a, b, c)
    assert single == _code(fmt, 1.5 + 2.0 ** -23)
    twice = _code(fmt, float(np.float32(np.float64(1.5) * (1 + 2.0 ** -23) - 2.0 ** -70)))
    assert twice == _code(fmt, 1.5 + 2.0 ** -22) != single


# ----------------------------------------------------------------------------- the unit

def _max_stages(fmt: str, **kw) -> int:
    from rtl.lib.units import FpFma

    probe = FpFma(fmt, 0, **kw)
    probe._MustUse__silence = True  # only asked for its depth, never elaborated
    return probe.max_stages


@pytest.mark.parametrize("fmt", FORMATS)
def test_fma_random_and_edges(fmt):
    from rtl.lib.units import FpFma

    a, b, c = triples(fmt, 240, 11)
    want = references(fmt, a, b, c)
    top = _max_stages(fmt)
    for stages in (0, top // 2, top):
        unit = FpFma(fmt, stages)
        assert unit.latency == stages
        got = simulate(unit, {"a": a, "b": b, "c": c})  # checks out_valid exactly `latency` cycles later
        same_bits(fmt, got["out"], want)


@pytest.mark.parametrize("fmt", ["fp32", "fp8_e4m3"])
def test_fma_options_same_bits(fmt):
    """round_pack's forcing as data, its packed increment, the shifts' zero fill as data, the fabric
    multiplier and the registered DSP block's model: the same bits as the reference, at the declared latency."""
    from rtl.lib.units import FpFma

    a, b, c = triples(fmt, 90, 23)
    want = references(fmt, a, b, c)
    for kw in ({"specials_as_data": True}, {"specials_as_data": True, "packed_round": True},
               {"zero_fill_as_data": True}, {"mul": "lut"}, {"mul": "dsp_reg_sim"}):
        top = _max_stages(fmt, **kw)
        for stages in (top // 2, top):
            got = simulate(FpFma(fmt, stages, **kw), {"a": a, "b": b, "c": c})
            same_bits(fmt, got["out"], want)


def test_fma_every_depth_declares_its_latency():
    """bf16 at every depth 0..max: the result exactly ``latency`` (= stages) cycles after its operands
    (simulate checks the cycles), and the right bits."""
    from rtl.lib.units import FpFma

    a, b, c = triples("bf16", 12, 31)
    want = references("bf16", a, b, c)
    top = _max_stages("bf16")
    assert top == 12  # 1 before the multiplier, 1 after, 2 alignment, 1 add, 6 round_pack, the output
    for stages in range(top + 1):
        unit = FpFma("bf16", stages)
        assert unit.latency == stages
        same_bits("bf16", simulate(unit, {"a": a, "b": b, "c": c})["out"], want)


def test_planted_error_is_caught():
    """The comparison fails on a result one ulp off (the tests can fail)."""
    a, b, c = triples("fp16", 20, 5)
    want = references("fp16", a, b, c)
    with pytest.raises(AssertionError, match="mismatch"):
        same_bits("fp16", want ^ np.uint64(1) * (np.arange(len(want)) == 3), want)


def test_bad_arguments_are_refused():
    from rtl.lib.units import FpFma

    with pytest.raises(ValueError, match="stages"):
        FpFma("fp16", 99)
    with pytest.raises(ValueError, match="format"):
        FpFma("fp12", 1)
    with pytest.raises(ValueError, match="mul"):
        FpFma("fp16", 1, "abacus")


def _every_product(fmt: str, sample: int | None):
    """Every (a, b) pair of codes (65,536; or a seeded ``sample`` of them), each with its own c: a random
    code for half of them, for the other half -round(a*b) plus -2..2 codes (the cancellations where the
    exact product's low bits decide); the unit at 3 stages against the reference."""
    from rtl.lib.units import FpFma

    a, b = (x.ravel() for x in np.meshgrid(np.arange(256, dtype=np.uint64), np.arange(256, dtype=np.uint64)))
    rng = np.random.default_rng(17)
    c = random_codes(fmt, a.size, 18)
    for i in np.flatnonzero(rng.random(a.size) < 0.5):
        ka, _, va = _value(fmt, int(a[i]))
        kb, _, vb = _value(fmt, int(b[i]))
        if ka == kb == "num":
            r = round_exact(fmt, -(va * vb), 0)
            if _value(fmt, r)[0] == "num":
                c[i] = (r + int(rng.integers(-2, 3))) & 0xFF
    if sample is not None:
        pick = np.random.default_rng(19).choice(a.size, sample, replace=False)
        a, b, c = a[pick], b[pick], c[pick]
    got = simulate(FpFma(fmt, 3), {"a": a, "b": b, "c": c})
    same_bits(fmt, got["out"], references(fmt, a, b, c))


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_fma_product_sample(fmt):
    """A seeded 2,048 of :func:`_every_product`'s triples (the default suite; the whole set is `long`)."""
    _every_product(fmt, 2048)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_fma_every_product(fmt):
    """:func:`_every_product` whole: 40-60 s per format on the shared machine, so `long` (deselected by
    default). All 2**24 triples are out of reach of amaranth.sim (~1,500 triples/s: 3 h per format)."""
    _every_product(fmt, None)


@pytest.mark.verilog
@pytest.mark.parametrize("fmt, depth, mul", [("fp32", "max", "dsp"), ("fp32", 0, "dsp"), ("bf16", "mid", "dsp"),
                                             ("fp8_e4m3", "max", "dsp"), ("fp32", "max", "dsp_reg")])
def test_fma_verilog_is_lint_clean(fmt, depth, mul):
    """Verilator -Wall on the unit's Verilog with the shipped waivers (rtl.lint, as tests/test_rtl_lint.py
    for the templates): 0 warnings, while the raw lint does warn (the waivers do the work); with
    ``mul="dsp_reg"`` the MULT18X18D model beside it, under its model waivers."""
    from amaranth.back import verilog

    from rtl.lib.ecp5 import mult18x18d_sim_model
    from rtl.lib.units import FpFma
    from rtl.lint import lint_verilog, waivers_for

    top = _max_stages(fmt, mul=mul)
    stages = {"max": top, "mid": top // 2}.get(depth, depth)
    text = verilog.convert(FpFma(fmt, stages, mul), name="lib_fma", emit_src=False)
    models = {"MULT18X18D_model.v": mult18x18d_sim_model()} if mul == "dsp_reg" else {}
    raw = lint_verilog(text, None, models)
    waived = lint_verilog(text, waivers_for(text, models=tuple(models)), models)
    assert waived.count == 0, f"{waived.per_rule()}\n{waived.output[:3000]}"
    assert raw.count > 0


@pytest.mark.rtl
@pytest.mark.verilog
@pytest.mark.parametrize("fmt", ["fp32", "bf16"])
def test_fma_dsp_reg_primitive_in_icarus(fmt, tmp_path):
    """The instantiated MULT18X18D blocks (``mul="dsp_reg"``, the deepest setting) through their Verilog
    model in Icarus: the reference's bits at the declared latency (run_icarus checks the cycles)."""
    from rtl.lib.units import FpFma
    from tests.test_rtl_lib import run_icarus

    a, b, c = triples(fmt, 50, 43)
    unit = FpFma(fmt, _max_stages(fmt, mul="dsp_reg"), "dsp_reg")
    same_bits(fmt, run_icarus(unit, {"a": a, "b": b, "c": c}, "out", tmp_path), references(fmt, a, b, c))


def test_three_guard_bits_below_the_product_are_needed(monkeypatch):
    """e5m2 ``min_subnormal * 2**k + c`` for negative normal ``c``: the subnormal makes the product
    unnormalized, so with two zero bits below it in the window the sticky bit of a shifted ``c`` lands on
    the result's guard bit and some results are wrong; with three (the unit's) none is."""
    import rtl.lib.fma as fma
    from rtl.lib.units import FpFma

    fmt = "fp8_e5m2"
    b, c = (x.ravel() for x in np.meshgrid(np.arange(0x40, 0x70, 4, dtype=np.uint64),
                                           np.arange(0x80, 0x100, dtype=np.uint64)))
    a = np.ones_like(b)
    want = references(fmt, a, b, c)
    wrong = {}
    for guard in (2, 3):
        monkeypatch.setattr(fma, "PRODUCT_GUARD", guard)
        got = np.asarray(simulate(FpFma(fmt, 0), {"a": a, "b": b, "c": c})["out"], dtype=np.uint64)
        wrong[guard] = int((got != want).sum())
    assert fma.PRODUCT_GUARD == 3 and wrong[3] == 0 and wrong[2] > 0, wrong
