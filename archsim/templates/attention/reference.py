"""Independent value reference of the attention template (for the level harness).

``check`` computes ``softmax(Q K^T / sqrt(d)) V`` in float64 with numpy's
own ``exp`` (never the template's value code) and asserts that the tile's
fp32 values are within :func:`error_bound`.

Derivation of the bound (``u = 2**-24``, ``gamma(n) = n u / (1 - n u)``; inputs
are bf16 values, so every product of two is exact in fp32):

1. scores: a dot product summed in fp32 over ``d`` terms has
   ``|s^ - s| <= gamma(d) * sum_t |q_t k_t| =: ds``;
2. exponent ``x = s*c - m*c`` (``c = log2(e)/sqrt(d)`` rounded, the two
   products and the difference rounded): ``|x^ - x| <= 2 c ds + 4 u c (|s| + |m|) <= ex``
   with ``ex = 2 c ds + 8 u c smax``; relative effect on ``2**x``: ``2**ex - 1``;
3. ``exp2`` itself: ``2**f`` for ``|f| <= 1/2`` by the degree-``k`` Taylor
   polynomial: remainder ``<= (ln2/2)**(k+1)/(k+1)! * 2**(1/2)``; Horner in fp32
   with positive coefficients and ``|f| <= 1/2``: ``<= 2 gamma(2k)`` relative:
   ``eexp = trunc + 2 gamma(2k)``;
4. online rescales: each of the ``nb`` key blocks multiplies the state by an
   ``alpha`` computed like (2)-(3) with its own rounding, and each update
   rounds once more: relative ``(1 + eexp + 4 u c smax ln2 + 2u)**nb``;
5. so every weight ``p_j`` carries a relative error at most
   ``delta = (1+eexp) 2**ex (1 + ea)**nb - 1``; for normalised weights this
   moves the output by at most ``2 delta/(1 - delta) * max|v|``; the sums of
   ``p`` (positive terms) and of ``p v`` over ``L + nb`` terms add
   ``2 gamma(L + nb + 2) max|v|``, the final reciprocal and product ``3 u max|v|``.

Bound: ``(2 delta / (1 - delta) + 2 gamma(L + nb + 2) + 3u) * max|v|`` (per row,
with that row's ``ds``, ``smax`` and ``max|v|`` taken over all keys).
The same bound holds for the two-pass (flat) tiles (no rescales: a looser bound).
"""
from __future__ import annotations

from math import factorial, log

import numpy as np

from archsim.templates.attention.pruning import PruneTile, split_values

U = 2.0 ** -24


def _gamma(n: int) -> float:
    return n * U / (1 - n * U)


def reference_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    s = s - s.max(axis=1, keepdims=True)
    w = np.exp(s)
    return (w / w.sum(axis=1, keepdims=True)) @ v


def error_bound(q, k, v, cols: int, exp_macs: int) -> np.ndarray:
    """Per-row bound of ``|O - O_ref|`` (see the module docstring)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    d, L = q.shape[1], k.shape[0]
    nb = -(-L // cols)
    c = 1.0 / (log(2.0) * np.sqrt(d))
    ds = _gamma(d) * (np.abs(q) @ np.abs(k).T).max(axis=1)
    smax = np.abs(q @ k.T).max(axis=1) + ds
    ex = 2 * c * ds + 8 * U * c * smax
    kdeg = exp_macs - 1
    trunc = (log(2.0) / 2) ** (kdeg + 1) / factorial(kdeg + 1) * np.sqrt(2.0)
    eexp = trunc + 2 * _gamma(2 * kdeg)
    ea = eexp + 4 * U * c * smax * log(2.0) + 2 * U
    delta = (1 + eexp) * 2.0 ** ex * (1 + ea) ** nb - 1
    vmax = np.abs(v).max() if v.size else 0.0
    return (2 * delta / (1 - delta) + 2 * _gamma(L + nb + 2) + 3 * U) * vmax


def reference_topk(scores, k: int) -> list[int]:
    """The ``k`` largest scores' indices, ascending; among equal scores the lower index is kept."""
    by_rank = sorted(range(len(scores)), key=lambda i: (-int(scores[i]), i))
    return sorted(by_rank[:k])


def check_prune(tile, operands, params, values) -> None:
    """A pruning step: per head the outputs within :func:`error_bound` of float64 attention, the
    keys' sums within 1e-3 of float64 softmax column sums, and the kept keys the ``k`` largest
    of the step's own sums (by :func:`reference_topk` on their fp32 bit patterns)."""
    got = split_values(tile, values)
    sums = np.zeros(tile.kv_len)
    for h in range(tile.heads):
        q, k, v = (np.asarray(operands[n][h], np.float64) for n in ("q", "k", "v"))
        want = reference_attention(q, k, v)
        err = np.abs(got.out[h].astype(np.float64) - want).max(axis=1)
        assert np.all(err <= error_bound(q, k, v, params.cols, params.exp_macs)), (tile, h, err)
        s = q @ k.T / np.sqrt(q.shape[1])
        p = np.exp(s - s.max(axis=1, keepdims=True))
        sums += (p / p.sum(axis=1, keepdims=True)).sum(axis=0)
    assert np.allclose(got.importance.astype(np.float64), sums, rtol=1e-3, atol=1e-6), (tile, got.importance, sums)
    want_kept = reference_topk(np.asarray(got.importance, np.float32).view(np.uint32).astype(np.int64), tile.k)
    assert [int(i) for i in got.kept] == want_kept, (tile, list(got.kept), want_kept)


def check(tile, operands, params, values) -> None:
    if isinstance(tile, PruneTile):  # SpAtten's pruning step
        check_prune(tile, operands, params, values)
        return
    if "scores" in operands:  # a top-k tile (SpAtten's engine): exact indices
        want = reference_topk(operands["scores"], tile.k)
        assert [int(i) for i in np.asarray(values)] == want, (tile, list(values), want)
        return
    q, k, v = operands["q"], operands["k"], operands["v"]
    want = reference_attention(q, k, v)
    got = np.asarray(values, np.float64)
    assert got.shape == want.shape, (tile, got.shape, want.shape)
    bound = error_bound(q, k, v, params.cols, params.exp_macs)  # rows are independent: passes need nothing more
    err = np.abs(got - want).max(axis=1)
    assert np.all(err <= bound), (tile, float((err / bound).max()))


def missing_cases(params, items) -> list[str]:
    prune = [t for t, _ in items if isinstance(t, PruneTile)]
    items = [(t, o) for t, o in items if not isinstance(t, PruneTile)]
    topk = [(t, o) for t, o in items if o is not None and "scores" in o]
    items = [(t, o) for t, o in items if o is None or "scores" not in o]
    with_values = [t for t, o in items if o is not None]
    cycles_only = [t for t, o in items if o is None]
    P = params.topk_parallelism
    need = {} if not P else {
        "top-k: ties at the threshold": any(int(np.sum(o["scores"] == np.sort(o["scores"])[t.n - t.k])) > 1
                                            and t.k < t.n for t, o in topk),
        "top-k: keep one": any(t.k == 1 < t.n for t, _ in topk),
        "top-k: keep all (bypass)": any(t.k == t.n for t, _ in topk),
        "top-k: a partial last row of scores": P == 1 or any(t.n % P and t.k < t.n for t, _ in topk),
        "pruning step: two heads, a partial last probability pass": any(t.heads > 1 and t.kv_len % t.head_dim
                                                                        for t in prune),
        "pruning step: one probability pass": any(t.probability_passes == 1 for t in prune),
    }
    need |= {
        "fusemax tile with values": any(t.mapping == "fusemax" for t in with_values),
        "flat tile with values": any(t.mapping == "flat" for t in with_values),
        "a partial last key block": params.cols == 1 or any(t.kv_len % params.cols for t in with_values),
        "three or more key blocks": any(-(-t.kv_len // params.cols) >= 3 for t in with_values),
        "a full query tile (q_rows = rows)": any(t.q_rows == params.rows for t in with_values),
        "one query row": any(t.q_rows == 1 for t in with_values),
        "phases rescale, qk, softmax, av": {t.phase for t in cycles_only} >= {"rescale", "qk", "softmax", "av"},
        "a tile without drain": any(not t.drain for t, _ in items),
        "a chunk that is not the last": any(not t.last for t, _ in items),
        "a multi-pass tile with values": any(t.passes > 1 for t in with_values),
    }
    return [name for name, ok in need.items() if not ok]
