"""An independent scalar reference of FP16 activations on BitMoD's bit-serial PE, written from the contract's
text (:mod:`archsim.templates.simd.bitmod_fp16`) with Python ints and the paper's value sets (Table III),
not from the model's vectorized code or tables: output by output, term cycle by term cycle.
"""
from __future__ import annotations

import math

import numpy as np

FP3, FP4 = [0, 1, 2, 4], [0, 0.5, 1, 1.5, 2, 3, 4, 6]
SPECIAL = {"er": {3: 3, 4: 5}, "ea": {3: 6, 4: 8}}  # the -0 code's value (paper, Table III)
TYPES = ["er_pos", "er_neg", "ea_pos", "ea_neg"]  # the 2-bit selector's order


def _terms(code: int, fmt: str, type_name: str) -> list[int]:
    """The weight's terms in units of 1/2, in issue order."""
    if fmt.startswith("int"):  # radix-4 Booth, LSB first
        bits = int(fmt[3:])
        b = lambda i: (code >> min(i, bits - 1)) & 1 if i >= 0 else 0  # noqa: E731 - sign-extended bits
        return [2 * (-2 * b(2 * i + 1) + b(2 * i) + b(2 * i - 1)) * 4 ** i for i in range(-(-bits // 2))]
    width = int(fmt[2])
    half = 1 << (width - 1)
    if code == half:
        kind, sign = type_name.split("_")
        value = SPECIAL[kind][width] * (1 if sign == "pos" else -1)
    else:
        value = (FP3 if width == 3 else FP4)[code & (half - 1)] * (-1 if code & half else 1)
    w2 = int(2 * value)
    mag = abs(w2)
    hi = 1 << (mag.bit_length() - 1) if mag else 0
    return [int(math.copysign(hi, w2)) if hi else 0, int(math.copysign(mag - hi, w2)) if mag - hi else 0]


def _fp16(code: int) -> tuple[int, int, int]:
    sign, biased, frac = code >> 15 & 1, code >> 10 & 31, code & 1023
    assert biased != 31
    return (-1 if sign else 1), (frac | 1024 if biased else frac), max(biased, 1) - 25


def reference(tile, ops, lanes: int) -> np.ndarray:
    """Output by output, cycle by cycle, with Python ints, from the contract's text."""
    A, W = np.asarray(ops["input"]).tolist(), np.asarray(ops["weight"]).tolist()
    G = tile.group_size or tile.k
    groups = -(-tile.k // G)
    sel = np.asarray(ops["dtype"]).tolist() if ops.get("dtype") is not None else None
    base_type = tile.weight_format[4:] if not tile.weight_format.startswith("int") else ""
    out = np.zeros((tile.m, tile.n), np.float32)
    for m in range(tile.m):
        for n in range(tile.n):
            acc = np.float32(ops["psum"][m][n]) if tile.accumulate else np.float32(0)
            for g in range(groups):
                ks = list(range(g * G, min(tile.k, (g + 1) * G)))
                type_name = TYPES[sel[g][n]] if sel is not None and base_type else base_type
                M = X = 0
                for s in range(0, len(ks), lanes):
                    step = ks[s:s + lanes]
                    weight_terms = [_terms(W[k][n], tile.weight_format, type_name) for k in step]
                    for t in range(len(weight_terms[0])):
                        lanes_on = []
                        for k, terms in zip(step, weight_terms):
                            sa, ma, ea = _fp16(A[m][k])
                            if ma and terms[t]:  # (sign, significand, product exponent e + log2 |term|)
                                sign = sa * (1 if terms[t] > 0 else -1)
                                lanes_on.append((sign, ma, ea + abs(terms[t]).bit_length() - 1))
                        if not lanes_on:
                            continue
                        V = max(v for _s, _m, v in lanes_on)
                        S = sum(sg * ((ma << 3) >> (V - v)) for sg, ma, v in lanes_on)
                        Y = V - 4
                        Z = Y if M == 0 else max(X, Y)
                        T = (M >> (Z - X) if M else 0) + (S >> (Z - Y))
                        shift = max(0, abs(T).bit_length() - 14)
                        M, X = T >> shift, Z + shift
                D = M * int(ops["scale"][g][n]) if tile.group_size else M
                acc = np.float32(acc + np.float32(math.ldexp(D, X)))
            out[m, n] = acc
    return out
