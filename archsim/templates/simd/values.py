"""Fast model values of a SIMD tile: the contract of :mod:`.tile`, vectorized with numpy.

The whole tile at once: every product of a group is formed, rounded to fp32,
padded with ``+0.0`` to whole lane steps, tree-reduced per step and then
summed step by step in fp32 (one numpy add per step over all outputs).
"""
from __future__ import annotations

import numpy as np

from archsim.numerics import get_format
from archsim.templates.simd import interleave
from archsim.templates.simd.interleave import tree_sum
from archsim.templates.simd.tile import (CANONICAL_NAN_BITS, SimdTile, cycles_per_step, exact_integer_output,
                                         integer_path, lanes)

#: outputs per chunk when forming products (bounds memory to ~chunk * K * 4 bytes)
_CHUNK_OUTPUTS = 1 << 14


def decoded_operands(tile: SimdTile, operands: dict, params) -> tuple[np.ndarray, np.ndarray]:
    """(A values (M, K), W values (K, N)) as float64; in dequant mode W is the dequantized weight."""
    a = get_format(tile.activation_format).decode(np.asarray(operands["input"]))
    w = get_format(tile.weight_format).decode(np.asarray(operands["weight"]))
    if params.dequant:
        w = dequantize(w, tile, operands, params)
    return a, w


def dequantize(w: np.ndarray, tile: SimdTile, operands: dict, params) -> np.ndarray:
    """Baseline dequantizer: ``round_to(dequant_format, float32(w * scale))`` per weight."""
    if tile.group_size:
        scale = np.asarray(operands["scale"], np.float32).astype(np.float64)
        rows = np.arange(tile.k) // tile.group_size
        with np.errstate(over="ignore", invalid="ignore"):
            w = (w * scale[rows, :]).astype(np.float32).astype(np.float64)
    return get_format(params.dequant_format).round_to(w)


def round_products(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``float32(a * w)``: the exact product (float64 holds it) rounded once (RNE)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (a * w).astype(np.float32)


def canonical_nan(out: np.ndarray) -> np.ndarray:
    """Every NaN of a float32 array replaced by the canonical quiet NaN 0x7fc00000."""
    nan = np.isnan(out)
    if nan.any():
        out = out.copy()
        out[nan] = np.array(CANONICAL_NAN_BITS, np.uint32).view(np.float32)
    return out


def tile_values(tile: SimdTile, operands: dict, params) -> np.ndarray:
    """The tile's outputs per the contract: int64 (int x int, G = 0) or float32."""
    a, w = decoded_operands(tile, operands, params)
    M, N = tile.m, tile.n
    if exact_integer_output(tile, params):
        out = a.astype(np.int64) @ w.astype(np.int64)
        if tile.accumulate:
            out = out + np.asarray(operands["psum"], np.int64)
        return out
    out = (np.asarray(operands["psum"], np.float32).copy() if tile.accumulate
           else np.zeros((M, N), np.float32))
    scale = np.asarray(operands["scale"], np.float32) if tile.group_size and not params.dequant else None
    L = lanes(tile, params)
    int_path = integer_path(tile, params)
    A, wb = params.accumulators, cycles_per_step(tile, params)
    groups = tile.groups(params.dequant)
    results = []
    for g, (start, length) in enumerate(groups):
        ag, wg = a[:, start:start + length], w[start:start + length, :]
        if int_path:
            acc = (ag.astype(np.int64) @ wg.astype(np.int64)).astype(np.float32)
        else:
            acc = _float_group(ag, wg, L, A, wb)
        with np.errstate(over="ignore", invalid="ignore"):
            if scale is not None:
                acc = acc * scale[g][None, :]
            if A == 1:
                out = out + acc
        results.append(acc)
    if A > 1:  # interleaved output accumulator over the round's cycles (module interleave)
        steps = [-(-length // L) for _start, length in groups]
        ends = interleave.group_end_cycles(steps, wb)
        reduced = interleave.ring_sum([(c, r.reshape(-1)) for c, r in zip(ends, results)],
                                      sum(steps) * wb, A, M * N)
        with np.errstate(over="ignore", invalid="ignore"):
            out = out + reduced.reshape(M, N)
    return canonical_nan(out)


def _float_group(ag: np.ndarray, wg: np.ndarray, L: int, accumulators: int = 1, wb: int = 1) -> np.ndarray:
    """fp32 sum over lane steps of the tree-reduced fp32 products of one group, (M, N): a running sum
    (``accumulators`` 1) or the interleaved partial sums of :mod:`.interleave`."""
    M, length = ag.shape
    N = wg.shape[1]
    steps = -(-length // L)
    pad = steps * L - length
    acc = np.zeros(M * N, np.float32)
    rows_per_chunk = max(1, _CHUNK_OUTPUTS // max(N, 1))
    for m0 in range(0, M, rows_per_chunk):
        am = ag[m0:m0 + rows_per_chunk]
        prod = round_products(am[:, None, :], wg.T[None, :, :])  # (m, N, length)
        if pad:
            prod = np.concatenate([prod, np.zeros(prod.shape[:2] + (pad,), np.float32)], axis=-1)
        cycle_sums = tree_sum(prod.reshape(prod.shape[0] * N, steps, L))  # (m*N, steps)
        if accumulators > 1:
            part = interleave.ring_sum(interleave.step_arrivals(cycle_sums, wb), steps * wb, accumulators,
                                       cycle_sums.shape[0])
        else:
            part = np.zeros(cycle_sums.shape[0], np.float32)
            with np.errstate(over="ignore", invalid="ignore"):
                for s in range(steps):
                    part = part + cycle_sums[:, s]
        acc[m0 * N:m0 * N + part.shape[0]] = part
    return acc.reshape(M, N)
