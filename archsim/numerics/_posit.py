"""Posits ``posit<n>_<es>`` (2022 posit standard; 2 <= n <= 16, 0 <= es <= 4), bit-exact.

Decoding follows the standard's fields (sign, regime, ``es`` exponent bits,
fraction; bits cut off at the end of the word read as 0). Encoding rounds the
real's infinite bit string to ``n`` bits, ties to the even bit pattern, which
in value terms means: the boundary between neighbouring codes ``c`` and
``c+1`` is the value of the ``(n+1)``-bit posit ``2c+1`` (not their arithmetic
mean where exponent bits are cut). Never rounds to zero or NaR: reals above
maxpos give maxpos, nonzero reals below minpos give minpos; NaN and +-inf give
NaR (code ``1 << (n-1)``), which decodes to NaN.
"""
from __future__ import annotations

import re

import numpy as np

from archsim.numerics._base import Format, TableCodec, code_dtype

NAME_RE = re.compile(r"^posit(\d+)_(\d+)$")


def posit_values(codes: np.ndarray, n: int, es: int) -> np.ndarray:
    """float64 value of each ``n``-bit posit code (NaR -> NaN), vectorized."""
    mask = (1 << n) - 1
    c = np.asarray(codes).astype(np.int64) & mask
    nar = c == (1 << (n - 1))
    zero = c == 0
    neg = ((c >> (n - 1)) & 1).astype(bool)
    c = np.where(neg, (-c) & mask, c)
    body_bits = n - 1
    body = c & ((1 << body_bits) - 1)
    first = (body >> (body_bits - 1)) & 1
    run = np.zeros_like(c)
    same = np.ones(c.shape, bool)
    for i in range(body_bits - 1, -1, -1):
        same &= ((body >> i) & 1) == first
        run += same
    k = np.where(first == 1, run - 1, -run)
    rem = np.maximum(body_bits - run - 1, 0)  # bits after the regime's terminating bit
    tail = body & ((np.int64(1) << rem) - 1)
    e_avail = np.minimum(rem, es)
    e = (tail >> (rem - e_avail)) << (es - e_avail)
    f_bits = rem - e_avail
    frac = (tail & ((np.int64(1) << f_bits) - 1)).astype(np.float64) / np.exp2(f_bits)
    value = np.exp2((k << es) + e) * (1.0 + frac)
    value = np.where(neg, -value, value)
    value = np.where(zero, 0.0, value)
    return np.where(nar, np.nan, value)


class Posit(Format):
    def __init__(self, n: int, es: int):
        if not (2 <= n <= 16 and 0 <= es <= 4):
            raise ValueError(f"posit{n}_{es}: archsim supports posits of 2..16 bits with es 0..4")
        super().__init__(f"posit{n}_{es}", n, "posit", True, 1, "saturate",
                         f"posit, {n} bits, {es} exponent bits (2022 standard rounding)")
        object.__setattr__(self, "es", es)
        pos = np.arange(0, 1 << (n - 1), dtype=np.int64)  # 0 .. maxpos
        values = posit_values(pos, n, es)
        mids = posit_values(2 * pos[:-1] + 1, n + 1, es)  # bit string c followed by a 1
        object.__setattr__(self, "_table", TableCodec(values, pos, mids))

    def decode(self, codes) -> np.ndarray:
        return posit_values(codes, self.bits, self.es)

    def encode(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        n = self.bits
        mag = np.abs(x)
        finite = np.isfinite(x)
        codes = self._table.nearest(np.where(finite, mag, 0.0)).astype(np.int64)
        codes = np.where(finite & (mag > 0) & (codes == 0), 1, codes)  # never round to zero
        codes = np.where(x < 0, (-codes) & ((1 << n) - 1), codes)
        codes = np.where(~finite, 1 << (n - 1), codes)
        return codes.astype(code_dtype(n))
