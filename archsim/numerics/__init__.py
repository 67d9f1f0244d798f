"""The one registry of number formats archsim uses, with bit-exact codecs.

``get_format(name)`` returns a :class:`Format` with ``bits``, ``kind``
(int, uint, float, posit, mx), ``signed``, ``encode(x) -> codes`` (unsigned
integers; round to nearest, ties to even; overflow, inf and NaN as each
format's standard says: see the format's module and ``docs/numerics.md``),
``decode(codes) -> float64``, ``max_value``, ``min_positive`` and, for MX
formats, ``block_size``. ``bits_of(name)`` is the width every table in
archsim reads.

Exact arithmetic for hardware models: every finite value of these formats is
a dyadic rational, so ``to_fixed(fmt, codes, frac_bits)`` gives it exactly as
an integer times ``2**-frac_bits`` and ``exact_frac_bits(fmt)`` is the least
``frac_bits`` that holds every value; a product of two formats is exact with
``exact_frac_bits(a) + exact_frac_bits(b)`` fraction bits, so an exact wide
fixed-point accumulator needs no rounding until its one final rounding.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from archsim.numerics._base import Format
from archsim.numerics._bitmod import bitmod_formats, quantize_groups, quantize_mixture, sqnr_db
from archsim.numerics._float import Float32, MiniFloat
from archsim.numerics._int import IntFormat, LevelFormat
from archsim.numerics._mx import MxFormat, mx_formats
from archsim.numerics._posit import NAME_RE as _POSIT_RE
from archsim.numerics._posit import Posit

#: formats listed by ``format_names()`` (any ``posit<n>_<es>`` with 2 <= n <= 16, es <= 4 works too)
_ALIASES = {"mxfp6": "mxfp6_e2m3", "mxfp8": "mxfp8_e4m3"}


@functools.lru_cache(maxsize=None)
def _registry() -> dict[str, Format]:
    formats: list[Format] = [
        LevelFormat("int1", 1, {0: -1.0, 1: 1.0}, "one bit: code 0 = -1, code 1 = +1"),
        LevelFormat("ternary", 2, {0b00: 0.0, 0b01: 1.0, 0b11: -1.0},
                    "1.58-bit ternary in 2 bits: 00 = 0, 01 = +1, 11 = -1 (10 unused, reads as 0)"),
        *(IntFormat(b) for b in (2, 3, 4, 8, 16, 32, 64)),
        IntFormat(4, signed=False), IntFormat(8, signed=False),
        MiniFloat("fp4_e2m1", 2, 1, "none", "OCP MX FP4 E2M1: no inf/NaN, saturating"),
        MiniFloat("fp6_e2m3", 2, 3, "none", "OCP MX FP6 E2M3: no inf/NaN, saturating"),
        MiniFloat("fp6_e3m2", 3, 2, "none", "OCP MX FP6 E3M2: no inf/NaN, saturating"),
        MiniFloat("fp8_e4m3", 4, 3, "fn", "OCP FP8 E4M3: no inf, NaN = S.1111.111, overflow to NaN"),
        MiniFloat("fp8_e5m2", 5, 2, "ieee", "OCP FP8 E5M2: IEEE-like with inf and NaN"),
        MiniFloat("fp16", 5, 10, "ieee", "IEEE 754 binary16"),
        MiniFloat("bf16", 8, 7, "ieee", "bfloat16: binary32's exponent, 7-bit mantissa"),
        Float32(),
        *(Posit(n, es) for n, es in ((4, 1), (8, 0), (8, 2), (16, 1), (16, 2))),
        *mx_formats().values(),
        *bitmod_formats(),
    ]
    return {f.name: f for f in formats}


def format_names() -> list[str]:
    """Every registered format name (plus any ``posit<n>_<es>``)."""
    return list(_registry())


@functools.lru_cache(maxsize=None)
def get_format(name: str) -> Format:
    """The format called ``name``; ``ValueError`` (one line, with the valid names) if unknown."""
    key = _ALIASES.get(name, name)
    reg = _registry()
    if isinstance(key, str) and key in reg:
        return reg[key]
    m = _POSIT_RE.match(key) if isinstance(key, str) else None
    if m:
        return Posit(int(m.group(1)), int(m.group(2)))
    raise ValueError(f"unknown precision {name!r}; expected one of {', '.join(format_names())} "
                     f"or posit<n>_<es>")


def bits_of(name: str) -> int:
    """Bits per element of a format (MX: per element, the shared scale not counted)."""
    return get_format(name).bits


def exact_frac_bits(fmt: Format | str) -> int:
    """Least ``f`` such that every finite value of ``fmt`` is an integer times ``2**-f``
    (MX: of the elements, before the shared scale)."""
    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    if isinstance(fmt, MxFormat):
        return exact_frac_bits(fmt.element) - fmt.element_scale_exp
    if fmt.kind in ("int", "uint"):
        return 0
    return max(0, -int(math.floor(math.log2(fmt.min_positive))))


def to_fixed(fmt: Format | str, codes, frac_bits: int | None = None) -> np.ndarray:
    """Exact values of ``codes`` times ``2**frac_bits`` as integers (int64 when they fit,
    else Python ints in an object array); ``ValueError`` for NaN/inf or a value that
    ``frac_bits`` cannot hold exactly."""
    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    if frac_bits is None:
        frac_bits = exact_frac_bits(fmt)
    values = fmt.decode(codes)
    if not np.isfinite(values).all():
        raise ValueError(f"{fmt.name}: NaN or inf has no fixed-point value")
    scaled = np.ldexp(values, frac_bits)
    if not (np.floor(scaled) == scaled).all():
        raise ValueError(f"{fmt.name}: {frac_bits} fraction bits do not hold every value exactly")
    if np.abs(scaled).max(initial=0.0) < 2.0 ** 62:
        return scaled.astype(np.int64)
    return np.vectorize(int, otypes=[object])(scaled)


__all__ = ["Format", "bits_of", "exact_frac_bits", "format_names", "get_format", "quantize_groups",
           "quantize_mixture", "sqnr_db", "to_fixed"]
