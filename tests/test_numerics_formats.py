"""archsim.numerics against independent references: ml-dtypes (int2, int4, fp4_e2m1,
fp8_e4m3, fp8_e5m2, bf16, E8M0), numpy (fp16, integer quantization), softposit
(posit8_0, posit16_1) and a slow pure-Python posit decoder written here from the
standard. Exhaustive over every code of every format of <= 16 bits."""
from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest
import softposit
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.numerics import exact_frac_bits, format_names, get_format, to_fixed

ML = {
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp16": np.float16,
    "bf16": ml_dtypes.bfloat16,
}
CODE_DTYPE = {4: np.uint8, 6: np.uint8, 8: np.uint8, 16: np.uint16}


def _ref_decode(name: str, codes: np.ndarray) -> np.ndarray:
    fmt = get_format(name)
    return codes.astype(CODE_DTYPE[fmt.bits]).view(ML[name]).astype(np.float64)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values, NaN equal to NaN, and -0 told apart from +0."""
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


@pytest.mark.parametrize("name", list(ML))
def test_float_decode_every_code(name):
    fmt = get_format(name)
    codes = np.arange(1 << fmt.bits, dtype=np.uint64)
    mism = (~_same(fmt.decode(codes), _ref_decode(name, codes))).sum()
    assert mism == 0, f"{name}: {mism} of {len(codes)} codes decode differently"


@pytest.mark.parametrize("name", list(ML))
def test_float_encode_of_every_value_gives_its_code(name):
    fmt = get_format(name)
    codes = np.arange(1 << fmt.bits, dtype=np.uint64)
    values = fmt.decode(codes)
    ok = ~np.isnan(values)
    assert np.array_equal(fmt.encode(values[ok]).astype(np.uint64), codes[ok])


def _interesting_reals(name: str, rng: np.random.Generator) -> np.ndarray:
    """float32 reals (so that the reference rounds once): random values over the whole
    range, every midpoint between neighbours (exact ties), values just beside them,
    subnormals, the overflow boundary, +-inf and NaN."""
    fmt = get_format(name)
    vals = np.unique(fmt.decode(np.arange(1 << fmt.bits, dtype=np.uint64)))
    vals = vals[np.isfinite(vals)]
    mids = (vals[:-1] + vals[1:]) / 2
    top = vals.max()
    step = vals[-1] - vals[-2]
    extra = [top + step / 2, top + step / 2 * 1.001, top + step / 2 * 0.999, top * 4, top * 1e3,
             np.inf, -np.inf, np.nan, 0.0, -0.0, fmt.min_positive / 2, fmt.min_positive / 4]
    rand = np.exp2(rng.uniform(math.log2(fmt.min_positive) - 2, math.log2(top) + 1, 4000))
    rand *= rng.choice([-1.0, 1.0], 4000)
    x = np.concatenate([mids, -mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), np.array(extra), rand])
    return x.astype(np.float32)


@pytest.mark.parametrize("name", list(ML))
def test_float_encode_of_reals_rounds_as_the_reference(name):
    fmt = get_format(name)
    x = _interesting_reals(name, np.random.default_rng(1))
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(ML[name]).view(CODE_DTYPE[fmt.bits]).astype(np.uint64)
    got = fmt.encode(x.astype(np.float64)).astype(np.uint64)
    nan_ref = np.isnan(x.astype(ML[name]).astype(np.float64))
    # both say NaN (any NaN pattern), or the same code
    mism = ~((nan_ref & np.isnan(fmt.decode(got))) | (got == want))
    assert mism.sum() == 0, f"{name}: {mism.sum()} of {len(x)} reals, e.g. {x[mism][:5]}"


@pytest.mark.parametrize("name,ref", [("int2", ml_dtypes.int2), ("int4", ml_dtypes.int4), ("int8", np.int8),
                                      ("int16", np.int16), ("uint4", ml_dtypes.uint4), ("uint8", np.uint8)])
def test_int_decode_every_code_and_quantize(name, ref):
    fmt = get_format(name)
    codes = np.arange(1 << fmt.bits, dtype=np.uint64)
    want = codes.astype(CODE_DTYPE.get(fmt.bits, np.uint8) if fmt.bits != 2 else np.uint8)
    want = want.view(ref).astype(np.float64) if fmt.bits in (2, 4) else \
        codes.astype({8: np.uint8, 16: np.uint16}[fmt.bits]).view(ref).astype(np.float64)
    assert np.array_equal(fmt.decode(codes), want)
    # quantization: round half to even (numpy's rint), then saturate
    x = np.random.default_rng(2).uniform(fmt.decode(codes).min() - 3, fmt.decode(codes).max() + 3, 5000)
    x = np.concatenate([x, np.arange(-40, 40) + 0.5])
    q = np.clip(np.rint(x), want.min(), want.max())
    assert np.array_equal(fmt.decode(fmt.encode(x)), q)


def test_low_bit_weight_codes():
    int1, ternary, int3 = get_format("int1"), get_format("ternary"), get_format("int3")
    assert int1.decode(np.array([0, 1])).tolist() == [-1.0, 1.0]
    assert int1.encode(np.array([-0.2, 0.0, 3.0])).tolist() == [0, 1, 1]
    assert ternary.decode(np.array([0, 1, 2, 3])).tolist() == [0.0, 1.0, 0.0, -1.0]
    assert ternary.decode(ternary.encode(np.array([-2, -0.6, -0.5, 0.5, 0.51, 9]))).tolist() == [-1, -1, 0, 0, 1, 1]
    assert int3.decode(np.arange(8)).tolist() == [0, 1, 2, 3, -4, -3, -2, -1]


# ----------------------------------------------------------------------------- posits

def posit_reference(code: int, n: int, es: int) -> float:
    """Slow decoder written from the posit standard's definition."""
    if code == 0:
        return 0.0
    if code == 1 << (n - 1):
        return math.nan
    sign = code >> (n - 1)
    if sign:
        code = (1 << n) - code
    bits = [(code >> i) & 1 for i in range(n - 2, -1, -1)]
    r = bits[0]
    run = 1
    while run < len(bits) and bits[run] == r:
        run += 1
    k = run - 1 if r else -run
    rest = bits[run + 1:]
    e_bits = (rest[:es] + [0] * es)[:es]
    e = int("".join(map(str, e_bits)) or "0", 2)
    f_bits = rest[es:]
    f = sum(b / 2 ** (i + 1) for i, b in enumerate(f_bits))
    v = 2.0 ** (k * 2 ** es + e) * (1 + f)
    return -v if sign else v


@pytest.mark.parametrize("n,es", [(n, es) for n in (3, 4, 5, 6, 8, 10, 12) for es in (0, 1, 2, 3)])
def test_posit_decode_every_code_against_the_definition(n, es):
    fmt = get_format(f"posit{n}_{es}")
    codes = np.arange(1 << n)
    want = np.array([posit_reference(int(c), n, es) for c in codes])
    assert _same(fmt.decode(codes), want).all()


@pytest.mark.parametrize("name,ctor", [("posit8_0", softposit.posit8), ("posit16_1", softposit.posit16)])
def test_posit_against_softposit(name, ctor):
    fmt = get_format(name)
    codes = np.arange(1 << fmt.bits)
    nar = 1 << (fmt.bits - 1)
    want = np.array([math.nan if c == nar else float(ctor(bits=int(c))) for c in codes])
    assert _same(fmt.decode(codes), want).all()
    ok = codes != nar
    assert np.array_equal(fmt.encode(fmt.decode(codes[ok])), codes[ok])
    # reals: exact ties between neighbours, values beside them, random, beyond maxpos / below minpos
    vals = np.sort(want[ok])
    mids = (vals[:-1] + vals[1:]) / 2
    rng = np.random.default_rng(3)
    rand = np.exp2(rng.uniform(math.log2(fmt.min_positive) - 3, math.log2(fmt.max_value) + 3, 3000))
    x = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), rand, -rand,
                        [1e30, -1e30, 1e-30, -1e-30, 0.0]]).astype(np.float32).astype(np.float64)
    x = x[::7] if fmt.bits == 16 else x  # softposit conversions are slow in Python
    want_codes = np.array([ctor(float(v)).v.v for v in x])
    got = fmt.encode(x).astype(np.int64)
    mism = got != want_codes
    assert mism.sum() == 0, f"{name}: {mism.sum()} of {len(x)} reals differ, e.g. {x[mism][:4]}"
    assert fmt.encode(np.array([np.nan, np.inf]))[0] == nar


def test_posit_rounding_follows_the_bit_string_where_exponent_bits_are_cut():
    """posit8_2 between 2**20 (0x7E) and maxpos 2**24 (0x7F): the boundary is 2**22 (the bit
    string 0x7E followed by a 1), not the arithmetic mean 2**23.09: 2**23 rounds up."""
    fmt = get_format("posit8_2")
    assert fmt.decode(np.array([0x7E, 0x7F])).tolist() == [2.0 ** 20, 2.0 ** 24]
    assert fmt.encode(np.array([2.0 ** 22, 2.0 ** 22 * 1.01, 2.0 ** 23])).tolist() == [0x7E, 0x7F, 0x7F]


# ----------------------------------------------------------------------------- MX

def mx_reference(x: np.ndarray, elem_dtype, emax: int, elem_max: float) -> np.ndarray:
    """OCP MX v1.0, block by block: scale 2**(floor(log2 amax) - emax) as E8M0, elements
    x / scale clamped to the largest normal and rounded by ml-dtypes."""
    out = []
    for block in x.reshape(-1, 32):
        amax = np.abs(block).max()
        e = int(np.clip(math.floor(math.log2(amax)) - emax, -127, 127)) if amax > 0 else -127
        scale = float(np.array([e + 127], np.uint8).view(ml_dtypes.float8_e8m0fnu)[0])
        q = np.clip(block / scale, -elem_max, elem_max).astype(np.float32)
        out.append(q.astype(elem_dtype).astype(np.float64) * scale)
    return np.concatenate(out)


@pytest.mark.parametrize("name,elem,emax,emaxval", [
    ("mxfp4", ml_dtypes.float4_e2m1fn, 2, 6.0), ("mxfp6_e2m3", ml_dtypes.float6_e2m3fn, 2, 7.5),
    ("mxfp6_e3m2", ml_dtypes.float6_e3m2fn, 4, 28.0), ("mxfp8_e4m3", ml_dtypes.float8_e4m3fn, 8, 448.0),
    ("mxfp8_e5m2", ml_dtypes.float8_e5m2, 15, 57344.0)])
def test_mx_blocks_against_the_spec(name, elem, emax, emaxval):
    fmt = get_format(name)
    assert fmt.block_size == 32
    rng = np.random.default_rng(4)
    x = rng.standard_normal(32 * 64) * np.exp2(rng.integers(-20, 20, 32 * 64))
    x[:32] = 0.0
    x[32:64] = rng.standard_normal(32) * 1e-38  # scale near E8M0's bottom
    got = fmt.decode(fmt.encode(x))
    want = mx_reference(x, elem, emax, emaxval)
    assert _same(got, want).all()


def test_mxint8_and_special_blocks():
    fmt = get_format("mxint8")
    x = np.linspace(-3, 3, 64)
    got = fmt.decode(fmt.encode(x))
    scale = 2.0 ** math.floor(math.log2(3.0))  # emax_elem = 0
    want = np.clip(np.rint(x / scale * 64), -127, 127) / 64 * scale
    assert np.array_equal(got, want)
    y = np.ones(40)
    y[3] = np.nan
    codes = get_format("mxfp8").encode(y)
    assert codes.shape == (2, 33) and codes[0, 0] == 255 and np.isnan(get_format("mxfp8").decode(codes)[:32]).all()


# ----------------------------------------------------------------------------- registry, exactness

def test_unknown_format_is_one_line():
    with pytest.raises(ValueError, match=r"^unknown precision 'fp7'; expected one of int1, .* or posit<n>_<es>$"):
        get_format("fp7")
    with pytest.raises(ValueError, match=r"^posit40_1: archsim supports posits of 2\.\.16 bits with es 0\.\.4$"):
        get_format("posit40_1")


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp4_e2m1", "bf16", "posit8_0", "posit16_1", "int8", "fp16"])
def test_to_fixed_is_exact(name):
    fmt = get_format(name)
    codes = np.arange(1 << fmt.bits, dtype=np.uint64)
    values = fmt.decode(codes)
    codes = codes[np.isfinite(values)]
    f = exact_frac_bits(fmt)
    fixed = to_fixed(fmt, codes, f)
    back = np.array([math.ldexp(int(v), -f) for v in fixed])
    assert np.array_equal(back, fmt.decode(codes))
    if f:
        with pytest.raises(ValueError, match="fraction bits do not hold every value exactly"):
            to_fixed(fmt, codes, f - 1)


def test_every_listed_name_loads():
    for name in format_names():
        assert get_format(name).bits >= 1
    assert re.fullmatch(r"posit12_3", get_format("posit12_3").name)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["fp8_e4m3", "fp8_e5m2", "bf16", "posit8_0", "posit16_1", "fp4_e2m1", "int4"]),
       st.floats(allow_nan=False, allow_infinity=False, width=32), st.floats(allow_nan=False, allow_infinity=False,
                                                                             width=32))
def test_encode_is_monotone_and_round_to_is_idempotent(name, a, b):
    fmt = get_format(name)
    lo, hi = sorted((a, b))
    r = fmt.round_to(np.array([lo, hi]))
    if not np.isnan(r).any():
        assert r[0] <= r[1]
    once = fmt.round_to(np.array([a]))
    assert _same(fmt.round_to(once), once).all()
