"""The attention design's exp approximation: range-reduced Horner ``exp2`` in fp32
(``archsim.templates.attention.values.exp2_poly``): ``n = rint(x)``, ``f = x - n``,
``p = Horner(ln2**i / i!, f)``, ``ldexp(p, n)``, every operation rounded to fp32.
"""
from __future__ import annotations

from amaranth import Const, Module

from rtl.lib.fp import fp32_add_finite, fp32_mul_finite, fp32_neg, ldexp, rint
from rtl.lib.pipe import Pipe, carry, cut, drop


def exp2_coefficient_bits(exp_macs: int) -> list[int]:
    """fp32 bits of the Horner coefficients ``ln2**i / i!`` (the template's ``exp2_coefficients``)."""
    import numpy as np

    from archsim.templates.attention.values import exp2_coefficients

    return [int(v) for v in exp2_coefficients(exp_macs).view(np.uint32)]


def exp2_poly(m: Module, x, exp_macs: int, name: str, pipe: Pipe | None = None, mul: str = "dsp"):
    """fp32 bits of ``values.exp2_poly(x)`` (combinational without ``pipe``; cut points: those of
    rint, the subtraction, each Horner multiply (multiplier ``mul``: :func:`rtl.lib.fp.multiply`)
    and add, and ldexp, and one after each of those but ldexp)."""
    coef = exp2_coefficient_bits(exp_macs)
    c_x = carry(pipe, x)
    n_fp, n_int = rint(m, x, f"{name}_rn", pipe)
    x = drop(pipe, c_x)
    n_fp, n_int, x = cut(pipe, n_fp, n_int, x)  # a builder's last stage is not also the next one's first
    c_n = carry(pipe, n_int)
    f = fp32_add_finite(m, x, fp32_neg(n_fp), f"{name}_f", pipe)
    (f,) = cut(pipe, f)
    c_f = carry(pipe, f)
    p = Const(coef[-1], 32)
    for i, c in enumerate(coef[-2::-1]):
        prod = fp32_mul_finite(m, p, c_f.value, f"{name}_m{i}", pipe, mul)
        (prod,) = cut(pipe, prod)
        p = fp32_add_finite(m, prod, Const(c, 32), f"{name}_a{i}", pipe)
        (p,) = cut(pipe, p)
    drop(pipe, c_f)
    return ldexp(m, p, drop(pipe, c_n), f"{name}_ld", pipe)
