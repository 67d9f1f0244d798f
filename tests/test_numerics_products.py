"""Exact products: every product of two values of the formats the simd template runs is exact in
float64, so ``float32(float64(a) * float64(w))`` rounds the exact product once (the models' claim).

Checked two ways: (1) by significand width and exponent range of every finite code (a product of
an s1-bit and an s2-bit significand has at most s1 + s2 <= 53 bits, and no product reaches
float64's subnormals or overflow); (2) directly with Python Fractions on random code pairs."""
from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from archsim.numerics import get_format
from archsim.templates.simd.params import SUPPORTED_FORMATS


@functools.lru_cache(maxsize=None)
def _significands_and_exponents(name):
    fmt = get_format(name)
    vals = fmt.decode(np.arange(1 << fmt.bits))
    vals = np.abs(vals[np.isfinite(vals) & (vals != 0)])
    sig_bits, exps = [], []
    for v in vals.tolist():
        m, e = math.frexp(v)  # v = m * 2**e, 0.5 <= m < 1
        mant = Fraction(m).numerator  # odd integer significand
        sig_bits.append(mant.bit_length())
        exps.append(e)
    return max(sig_bits), min(exps), max(exps)


@pytest.mark.parametrize("a, b", list(itertools.combinations_with_replacement(SUPPORTED_FORMATS, 2)))
def test_product_fits_float64(a, b):
    sa, lo_a, hi_a = _significands_and_exponents(a)
    sb, lo_b, hi_b = _significands_and_exponents(b)
    assert sa + sb <= 53
    assert lo_a + lo_b - 2 > -1021 and hi_a + hi_b < 1024


@pytest.mark.parametrize("a, b", [("bf16", "bf16"), ("posit16_1", "bf16"), ("int16", "fp16"), ("fp8_e5m2", "int16"),
                                  ("posit8_0", "fp4_e2m1"), ("int8", "posit16_1")])
def test_products_against_fractions(a, b):
    fa, fb = get_format(a), get_format(b)
    rng = np.random.default_rng(0)
    ca = rng.integers(0, 1 << fa.bits, 2000)
    cb = rng.integers(0, 1 << fb.bits, 2000)
    va, vb = fa.decode(ca), fb.decode(cb)
    ok = np.isfinite(va) & np.isfinite(vb)
    prod = va[ok] * vb[ok]
    for x, y, p in zip(va[ok].tolist(), vb[ok].tolist(), prod.tolist()):
        assert Fraction(x) * Fraction(y) == Fraction(p)
