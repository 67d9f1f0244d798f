"""FP16 activations on BitMoD's bit-serial PE (``pe: bitmod``, activation format ``fp16``): values.

The paper's PE (Chen et al., HPCA 2025; the authors' RTL yc2367/BitMoD ``hardware/pe``:
``exp_match.v``, ``bs_mul.v``, ``grp_accum.v``, ``dequant.v``) multiplies FP16 activations by
one weight term per cycle without a floating-point multiplier: the lanes' product exponents are
aligned to their maximum, the aligned mantissas are summed as integers, and the group's partial
sum is kept in a block-floating-point accumulator that truncates. Cycles are those of integer
activations (:mod:`archsim.templates.simd.bitserial`: one term per cycle, ``L = lane_bits // 16``).

Contract, per term cycle (terms as in the integer contract: ``w2 = 2 * value`` split into signed
powers of two, ``term = t * 2**k``, t in {-1, 0, 1}):

- lane ``j``: activation ``a = s * m * 2**e`` (``m`` the 11-bit integer significand, ``e = max(E, 1)
  - 25`` for biased exponent ``E``; inf / NaN codes are refused); *active* when ``m != 0`` and
  ``t != 0``; product exponent ``v = e + k``;
- alignment (``exp_match.v`` / ``bs_mul.v``): ``V = max`` of the active lanes' ``v``;
  ``p_j = s t * floor(m * 2**GUARD_BITS / 2**(V - v))`` (the magnitude is truncated, then signed);
  the cycle adds ``S * 2**Y``, ``S = sum_j p_j``, ``Y = V - GUARD_BITS - 1`` (the 1/2 unit of ``w2``);
  a cycle without an active lane adds nothing;
- group accumulator (``grp_accum.v``), ``value = M * 2**X`` with ``|M| < 2**(ACC_MAN_BITS - 1)``:
  ``Z = Y`` if ``M == 0`` else ``max(X, Y)``; ``T = floor(M / 2**(Z - X)) + floor(S / 2**(Z - Y))``
  (arithmetic shifts); normalize: ``n = max(0, bitlen(|T|) - (ACC_MAN_BITS - 1))``,
  ``M = floor(T / 2**n)``, ``X = Z + n``;
- group end: the dequantization unit multiplies ``M`` by the 8-bit scale code bit-serially (exact:
  ``|M * scale| < 2**22``) and the output accumulator adds ``M * scale * 2**X`` in fp32
  (round to nearest even); ``G = 0``: adds ``M * 2**X``. The output is fp32 (``psum`` fp32).

Differences from the authors' RTL, on purpose: their group accumulator shifts only the accumulator
to the larger exponent (never the incoming sum); here both operands are aligned to the larger one.
"""
from __future__ import annotations

import numpy as np

#: guard bits below the activation significand in the aligned products (the authors' A_MAN_WIDTH + 3)
GUARD_BITS = 3
#: bits of the group accumulator's two's-complement mantissa (the authors' ACC_MAN_WIDTH)
ACC_MAN_BITS = 15
#: the activation format this path handles
FP16 = "fp16"


def fp16_parts(codes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sign +-1, integer significand, exponent) of fp16 codes: ``value = sign * m * 2**e``;
    ``ValueError`` naming the operand for an inf / NaN code."""
    bits = np.asarray(codes).astype(np.int64) & 0xFFFF
    biased, frac = (bits >> 10) & 0x1F, bits & 0x3FF
    if np.any(biased == 0x1F):
        raise ValueError("input: pe bitmod takes finite fp16 activations (an inf or NaN code was given)")
    sign = 1 - 2 * (bits >> 15)
    mant = np.where(biased > 0, frac | 0x400, frac)
    return sign, mant, np.maximum(biased, 1) - 25


def _shr(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``floor(x / 2**n)`` for int64 ``x`` and ``n >= 0`` (shifts past 63 give 0 or -1, still the floor)."""
    return x >> np.minimum(n, 63)


def term_cycle(acc_m: np.ndarray, acc_x: np.ndarray, a_sign, a_mant, a_exp, term: np.ndarray):
    """One term cycle of the lanes and the group accumulator, vectorized over outputs (rows).

    ``a_*`` and ``term`` are ``(outputs, L)`` int64 (``term``: a signed power of two or 0, units of 1/2);
    returns the new ``(acc_m, acc_x)``."""
    active = (a_mant != 0) & (term != 0)
    k = np.where(term != 0, np.abs(term), 1)
    v = a_exp + (np.frexp(k.astype(np.float64))[1] - 1)  # k = 2**log2(k)
    big = np.iinfo(np.int64).min // 2
    V = np.where(active, v, big).max(axis=1)
    shift = np.where(active, V[:, None] - v, 0)
    mag = (a_mant << GUARD_BITS) >> np.minimum(shift, 63)
    S = np.where(active, a_sign * np.sign(term) * mag, 0).sum(axis=1)
    Y = V - GUARD_BITS - 1
    any_active = active.any(axis=1)
    empty = acc_m == 0
    Z = np.where(empty, Y, np.maximum(acc_x, Y))
    T = _shr(acc_m, np.where(empty, 0, Z - acc_x)) + _shr(S, Z - Y)
    n = np.maximum(0, np.frexp(np.abs(T).astype(np.float64))[1] - (ACC_MAN_BITS - 1))
    return np.where(any_active, _shr(T, n), acc_m), np.where(any_active, Z + n, acc_x)


def add_group(out: np.ndarray, acc_m: np.ndarray, acc_x: np.ndarray, scale) -> np.ndarray:
    """The output accumulator's fp32 add of a group: ``out + M * scale * 2**X`` (``scale`` None: 1)."""
    d = acc_m if scale is None else acc_m * np.asarray(scale, np.int64)
    return (np.asarray(out, np.float32) + np.ldexp(d.astype(np.float64), acc_x).astype(np.float32)).astype(np.float32)


def tile_values(tile, operands: dict, params, weight_terms, scale_codes, lanes: int) -> np.ndarray:
    """fp32 ``(M, N)`` outputs, every output at once (``weight_terms`` / ``scale_codes`` from
    :mod:`archsim.templates.simd.bitserial`, which calls this for fp16 activations)."""
    sign, mant, exp = fp16_parts(operands["input"])
    M, N = tile.m, tile.n
    mi, ni = np.repeat(np.arange(M), N), np.tile(np.arange(N), M)
    out = (np.asarray(operands["psum"], np.float32).reshape(-1).copy() if tile.accumulate
           else np.zeros(M * N, np.float32))
    for g, (start, length) in enumerate(tile.groups()):
        acc_m, acc_x = np.zeros(M * N, np.int64), np.zeros(M * N, np.int64)
        for s in range(-(-length // lanes)):
            k = start + s * lanes + np.arange(lanes)
            valid = k < start + length
            kk = np.where(valid, k, start)
            lane = lambda arr: np.where(valid, arr[mi[:, None], kk[None, :]], 0)  # noqa: E731
            a_s, a_m, a_e = lane(sign), lane(mant), lane(exp)
            for terms in weight_terms:
                t = np.where(valid, terms[kk[None, :], ni[:, None]], 0)
                acc_m, acc_x = term_cycle(acc_m, acc_x, a_s, a_m, a_e, t)
        out = add_group(out, acc_m, acc_x, None if scale_codes is None else scale_codes[g, ni])
    return out.reshape(M, N)
