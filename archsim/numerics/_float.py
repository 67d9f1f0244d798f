"""Small floating-point formats (sign, exponent, mantissa), bit-exact.

Three kinds of special values, as each format's standard says:

- ``ieee`` (fp16, bf16, fp8_e5m2 per the OCP 8-bit FP spec): the all-ones
  exponent holds inf (mantissa 0) and NaN; overflow rounds to inf (IEEE 754
  round-to-nearest-even: a value at or past half an ulp above the largest
  finite rounds to inf);
- ``fn`` (fp8_e4m3, OCP "E4M3": no inf, one NaN pattern S.1111.111): a value
  past the rounding boundary above 448, and +-inf, encode to NaN (as ml-dtypes'
  ``float8_e4m3fn``; the OCP spec also allows saturating conversion, which
  archsim does not use);
- ``none`` (fp4_e2m1, fp6_e2m3, fp6_e3m2: the OCP MX element formats): no inf,
  no NaN; out-of-range values and +-inf saturate to +-max; NaN encodes to -0
  (the OCP spec leaves it to the implementation; this is what ml-dtypes does).

Every rounding is round-to-nearest, ties to even; subnormals are kept.
"""
from __future__ import annotations

import numpy as np

from archsim.numerics._base import Format, TableCodec, code_dtype


class MiniFloat(Format):
    """A sign / ``ebits`` exponent / ``mbits`` mantissa format with bias ``2**(ebits-1) - 1``."""

    def __init__(self, name: str, ebits: int, mbits: int, specials: str, doc: str = ""):
        bits = 1 + ebits + mbits
        overflow = {"ieee": "inf", "fn": "nan", "none": "saturate"}[specials]
        super().__init__(name, bits, "float", True, 1, overflow, doc)
        object.__setattr__(self, "ebits", ebits)
        object.__setattr__(self, "mbits", mbits)
        object.__setattr__(self, "bias", (1 << (ebits - 1)) - 1)
        object.__setattr__(self, "specials", specials)
        pos = np.arange(1 << (bits - 1), dtype=np.uint64)
        vals = self.decode(pos)
        finite = np.isfinite(vals)
        object.__setattr__(self, "_table", TableCodec(vals[finite], pos[finite]))
        emax_code = (1 << ebits) - 1
        mmax = (1 << mbits) - 1
        nan_code = {"ieee": (emax_code << mbits) | (1 << (mbits - 1)), "fn": (emax_code << mbits) | mmax,
                    "none": None}[specials]
        object.__setattr__(self, "_nan_code", nan_code)
        object.__setattr__(self, "_inf_code", (emax_code << mbits) if specials == "ieee" else None)

    def decode(self, codes) -> np.ndarray:
        c = np.asarray(codes).astype(np.int64)
        m_mask = (1 << self.mbits) - 1
        e_mask = (1 << self.ebits) - 1
        sign = np.where((c >> (self.ebits + self.mbits)) & 1, -1.0, 1.0)
        e = (c >> self.mbits) & e_mask
        m = (c & m_mask).astype(np.float64)
        normal = (1.0 + m / (1 << self.mbits)) * np.exp2(e - self.bias)
        sub = m / (1 << self.mbits) * np.exp2(1 - self.bias)
        out = sign * np.where(e == 0, sub, normal)
        if self.specials == "ieee":
            out = np.where(e == e_mask, np.where(m == 0, sign * np.inf, np.nan), out)
        elif self.specials == "fn":
            out = np.where((e == e_mask) & (m == m_mask), np.nan, out)
        return out

    def encode(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        sign_bit = 1 << (self.ebits + self.mbits)
        neg = np.signbit(x)
        mag = np.abs(x)
        finite = np.isfinite(mag)
        table = self._table
        codes = table.nearest(np.where(finite, mag, 0.0)).astype(np.int64)
        boundary = table.halfway_past_max()
        max_code = int(table.codes[-1])
        over = finite & ((mag > boundary) | ((mag == boundary) & (max_code % 2 == 1)))
        if self.specials == "ieee":
            codes = np.where(over | np.isinf(mag), self._inf_code, codes)
            codes = np.where(np.isnan(x), self._nan_code, codes)
        elif self.specials == "fn":
            codes = np.where(over | np.isinf(mag), self._nan_code, codes)
            codes = np.where(np.isnan(x), self._nan_code, codes)
        else:
            codes = np.where(over | np.isinf(mag), max_code, codes)
            codes = np.where(np.isnan(x), 0, codes)
            neg = np.where(np.isnan(x), True, neg)
        codes = np.where(neg, codes | sign_bit, codes)
        return codes.astype(code_dtype(self.bits))


class Float32(Format):
    """IEEE 754 binary32 (numpy's own rounding: round-to-nearest-even, overflow to inf)."""

    def __init__(self):
        super().__init__("fp32", 32, "float", True, 1, "inf", "IEEE 754 binary32")

    def encode(self, x) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=np.float64).astype(np.float32).view(np.uint32)

    def decode(self, codes) -> np.ndarray:
        return np.asarray(codes).astype(np.uint32).view(np.float32).astype(np.float64)

    @property
    def max_value(self) -> float:
        return float(np.finfo(np.float32).max)

    @property
    def min_positive(self) -> float:
        return float(np.finfo(np.float32).smallest_subnormal)
