"""Values of attention tiles in fp32 (the arithmetic of the 2D and 1D arrays).

Arithmetic: operands are bf16 (or fp16) values held in fp32; every multiply
and every add rounds to fp32 (round to nearest even), separately (no fused
multiply-add). Dot products and row sums accumulate in a fixed order (head
dim 0..d-1; keys 0..C-1 along a row), the order of the hardware's chains.

``exp`` is one function everywhere (2D or 1D array, every mapping): with
``c = log2(e) / sqrt(d)`` a score ``s`` becomes ``x = s*c - m*c <= 0`` and

    exp2(x) = 2**n * poly(f),   n = rint(x),  f = x - n in [-1/2, 1/2],

``poly`` the degree ``k = exp_macs - 1`` Taylor polynomial of ``2**f``
(coefficients ``ln2**i / i!`` rounded to fp32) in Horner form: one MAC for
``s*c - m*c`` and ``k`` Horner MACs, ``exp_macs`` MACs per exp on the 2D array.
Its relative error is at most ``(ln2/2)**(k+1) / (k+1)! * 2**(1/2)`` plus
``2(k+1)`` fp32 roundings (bound derived in ``docs/attention.md`` and
:func:`archsim.templates.attention.reference.error_bound`).
"""
from __future__ import annotations

from math import factorial, log

import numpy as np

F32 = np.float32


def exp2_coefficients(exp_macs: int) -> np.ndarray:
    k = exp_macs - 1
    return np.array([log(2.0) ** i / factorial(i) for i in range(k + 1)], dtype=F32)


def exp2_poly(x: np.ndarray, exp_macs: int) -> np.ndarray:
    """``2**x`` for ``x <= 0`` (fp32), by range reduction and a Horner polynomial; ``-inf`` gives 0."""
    x = np.asarray(x, dtype=F32)
    neg_inf = np.isneginf(x)
    xs = np.where(neg_inf, F32(0), x).astype(F32)
    n = np.rint(xs).astype(F32)
    f = (xs - n).astype(F32)
    coef = exp2_coefficients(exp_macs)
    p = np.full_like(f, coef[-1])
    for c in coef[-2::-1]:
        p = (p * f).astype(F32)
        p = (p + c).astype(F32)
    out = np.ldexp(p, n.astype(np.int32)).astype(F32)
    return np.where(neg_inf, F32(0), out).astype(F32)


def scale_of(head_dim: int) -> np.float32:
    """``log2(e) / sqrt(d)`` in fp32: softmax(s / sqrt(d)) = 2**(s*c) normalised."""
    return F32(1.0 / (log(2.0) * np.sqrt(head_dim)))


def dot_rows(q: np.ndarray, k: np.ndarray, partials: int = 1) -> np.ndarray:
    """``q @ k.T`` in fp32 in the PEs' order: ``partials`` interleaved partial sums
    (:func:`interleaved_partials`), then their pairwise tree (:func:`pairwise_sum`). One partial (a
    one-cycle adder) is the head dim accumulated in order from ``+0.0``; an ``A``-stage adder keeps
    ``A + 1`` in flight (the params' ``latency2d_add`` + 1: its stages and the register it reads back)."""
    return pairwise_sum(interleaved_partials(q, k, partials))


def interleaved_partials(q: np.ndarray, k: np.ndarray, partials: int) -> list[np.ndarray]:
    """The ``L = partials`` partial sums of ``q @ k.T`` in flight on a PE's adder, in the order they
    leave it. Step ``t`` (``0 <= t < max(d, L)``) adds product ``t`` (``-0.0``, the identity, for
    ``t >= d``) into partial ``t % L``, which starts from ``+0.0``; then partial ``(c0 + j) % L``
    leaves ``j``-th, ``c0 = max(d, L)``."""
    d, L = q.shape[1], partials
    part = [np.zeros((q.shape[0], k.shape[0]), F32) for _ in range(L)]
    for t in range(max(d, L)):
        prod = (q[:, t, None] * k[None, :, t]).astype(F32) if t < d else F32(-0.0)
        part[t % L] = (part[t % L] + prod).astype(F32)
    c0 = max(d, L)
    return [part[(c0 + j) % L] for j in range(L)]


def pairwise_sum(xs: list[np.ndarray]) -> np.ndarray:
    """fp32 pairwise tree ``(x0 + x1), (x2 + x3), ...`` level by level; an odd last passes through."""
    while len(xs) > 1:
        xs = [(xs[i] + xs[i + 1]).astype(F32) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


def chain_sum(init: np.ndarray, terms_p: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
    """Row chain ``init + p[:,0]*v[0] + p[:,1]*v[1] + ...`` (or ``+ p[:,j]`` without ``v``), fp32, in order."""
    acc = init.astype(F32).copy()
    for j in range(terms_p.shape[1]):
        term = terms_p[:, j] if v is None else (terms_p[:, j, None] * v[None, j, :]).astype(F32)
        acc = (acc + term).astype(F32)
    return acc


def operands_f32(operands: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v = (np.asarray(operands[n], dtype=F32) for n in ("q", "k", "v"))
    return q, k, v


def fusemax_block(state, s: np.ndarray, vb: np.ndarray, c: np.float32, exp_macs: int):
    """Online-softmax update of ``state = (m, mc, l, o)`` with one block's scores ``s`` and values ``vb``."""
    m, mc, l, o = state
    bm = s.max(axis=1)
    m_new = np.maximum(m, bm).astype(F32)
    mc_new = (m_new * c).astype(F32)
    alpha = exp2_poly((mc - mc_new).astype(F32), exp_macs)  # mc = -inf on the first block: alpha = 0
    x = ((s * c).astype(F32) - mc_new[:, None]).astype(F32)
    p = exp2_poly(x, exp_macs)
    rowsum = chain_sum(np.zeros(s.shape[0], F32), p)
    pv = chain_sum(np.zeros((s.shape[0], vb.shape[1]), F32), p, vb)
    l_new = ((l * alpha).astype(F32) + rowsum).astype(F32)
    o_new = ((o * alpha[:, None]).astype(F32) + pv).astype(F32)
    return m_new, mc_new, l_new, o_new


def initial_state(q_rows: int, d: int):
    return (np.full(q_rows, -np.inf, F32), np.full(q_rows, -np.inf, F32), np.zeros(q_rows, F32),
            np.zeros((q_rows, d), F32))


def normalize(l: np.ndarray, o: np.ndarray) -> np.ndarray:
    r = (F32(1) / l).astype(F32)
    return (o * r[:, None]).astype(F32)


def fusemax_values(q, k, v, cols: int, exp_macs: int, passes: int = 1, qk_partials: int = 1) -> np.ndarray:
    """Online softmax; ``passes`` query tiles stacked along the rows, each with its own state;
    ``qk_partials``: the scores' summation order (:func:`dot_rows`)."""
    if passes > 1:
        rows = q.shape[0] // passes
        return np.concatenate([fusemax_values(q[i * rows:(i + 1) * rows], k, v, cols, exp_macs,
                                              qk_partials=qk_partials) for i in range(passes)], axis=0)
    c = scale_of(q.shape[1])
    state = initial_state(q.shape[0], q.shape[1])
    for b0 in range(0, k.shape[0], cols):
        s = dot_rows(q, k[b0:b0 + cols], qk_partials)
        state = fusemax_block(state, s, v[b0:b0 + cols], c, exp_macs)
    return normalize(state[2], state[3])


def flat_values(q, k, v, cols: int, exp_macs: int) -> np.ndarray:
    """Two-pass softmax: all scores of the rows, the max, exps, the sum, normalised P, then P.V."""
    c = scale_of(q.shape[1])
    s = np.concatenate([dot_rows(q, k[b0:b0 + cols]) for b0 in range(0, k.shape[0], cols)], axis=1)
    m = s.max(axis=1)
    mc = (m * c).astype(F32)
    p = exp2_poly(((s * c).astype(F32) - mc[:, None]).astype(F32), exp_macs)
    l = chain_sum(np.zeros(q.shape[0], F32), p)
    r = (F32(1) / l).astype(F32)
    pn = (p * r[:, None]).astype(F32)
    out = np.zeros((q.shape[0], v.shape[1]), F32)
    for b0 in range(0, k.shape[0], cols):
        out = chain_sum(out, pn[:, b0:b0 + cols], v[b0:b0 + cols])
    return out
