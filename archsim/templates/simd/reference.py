"""Independent reference of the simd template's values, for the level harness.

Written from the contract in :mod:`archsim.templates.simd.tile`, output by output
with Python scalars and ``np.float32`` scalar arithmetic (the IEEE RNE reference
adder), never the template's vectorized value code. Integer results are exact
Python ints. It is bit-exact, so the check compares bit patterns (bound 0).
"""
from __future__ import annotations

import numpy as np

from archsim.numerics import get_format

_NAN = np.uint32(0x7FC00000)


def _pair_kind(tile, params) -> str:
    ints = get_format(tile.weight_format).kind == "int" and get_format(tile.activation_format).kind == "int"
    if ints and not params.dequant:
        return "exact" if tile.group_size == 0 else "int_groups"
    return "float"


def _lanes(tile, params) -> int:
    ab = get_format(tile.activation_format).bits
    if params.dequant:
        return params.lane_bits // max(16, ab)
    if params.multiplier == "bit_serial":
        return params.lane_bits // ab
    return params.lane_bits // max(get_format(tile.weight_format).bits, ab)


def _tree(values: list) -> np.float32:
    while len(values) > 1:
        nxt = [np.float32(values[i] + values[i + 1]) for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            nxt.append(values[-1])
        values = nxt
    return values[0]


def _interleaved(arrivals: list, n_cycles: int, slots: int) -> np.float32:
    """``slots`` fp32 partial sums fed by arrival cycle modulo ``slots``; the pairwise tree over the
    partials of the last ``slots`` cycles, oldest first (+0.0 before the run's first cycle)."""
    part = [np.float32(0.0)] * slots
    for cycle, x in arrivals:
        part[cycle % slots] = np.float32(part[cycle % slots] + x)
    return _tree([part[c % slots] if c >= 0 else np.float32(0.0) for c in range(n_cycles - slots, n_cycles)])


def reference_values(tile, operands, params) -> np.ndarray:
    """The tile's outputs computed output by output (int64 or float32)."""
    a = get_format(tile.activation_format).decode(np.asarray(operands["input"])).tolist()
    w = get_format(tile.weight_format).decode(np.asarray(operands["weight"])).tolist()
    kind = _pair_kind(tile, params)
    G = tile.group_size
    scale = np.asarray(operands["scale"], np.float32) if G else None
    if params.dequant:
        dq = get_format(params.dequant_format)
        for k in range(tile.k):
            for n in range(tile.n):
                v = np.float32(w[k][n])
                if G:
                    v = np.float32(v * scale[k // G, n])
                w[k][n] = float(dq.decode(dq.encode(np.array([float(v)])))[0])
        groups = [(0, tile.k)]
    else:
        groups = [(s, min(G, tile.k - s)) for s in range(0, tile.k, G)] if G else [(0, tile.k)]
    L = _lanes(tile, params)
    psum = np.asarray(operands["psum"]) if tile.accumulate else None
    out = np.zeros((tile.m, tile.n), np.int64 if kind == "exact" else np.float32)
    for m in range(tile.m):
        for n in range(tile.n):
            if kind == "exact":
                total = sum(int(a[m][k]) * int(w[k][n]) for k in range(tile.k))
                out[m, n] = total + (int(psum[m, n]) if psum is not None else 0)
                continue
            acc = np.float32(psum[m, n]) if psum is not None else np.float32(0.0)
            slots = params.accumulators
            wb = get_format(tile.weight_format).bits if params.multiplier == "bit_serial" else 1
            round_cycle, group_ends = 0, []
            for g, (start, length) in enumerate(groups):
                if kind == "int_groups":
                    s = sum(int(a[m][k]) * int(w[k][n]) for k in range(start, start + length))
                    part = np.float32(float(s))  # |s| < 2**53: float() is exact
                else:
                    part, sums = np.float32(0.0), []
                    for s0 in range(start, start + length, L):
                        lane = [np.float32(a[m][k] * w[k][n]) if k < start + length else np.float32(0.0)
                                for k in range(s0, s0 + L)]
                        sums.append(_tree(lane))
                        part = np.float32(part + sums[-1])
                    if slots > 1:
                        part = _interleaved([((i + 1) * wb - 1, x) for i, x in enumerate(sums)], len(sums) * wb,
                                            slots)
                round_cycle += -(-length // L) * wb
                if G and not params.dequant:
                    part = np.float32(part * scale[g, n])
                group_ends.append((round_cycle - 1, part))
                if slots == 1:
                    acc = np.float32(acc + part)
            if slots > 1:
                acc = np.float32(acc + _interleaved(group_ends, round_cycle, slots))
            out[m, n] = acc
    if out.dtype == np.float32:
        bits = out.view(np.uint32)
        bits[np.isnan(out)] = _NAN
    return out


def check(tile, operands, params, values) -> None:
    """Assert ``values`` equal the reference bit for bit (same dtype, same bit patterns)."""
    from archsim.templates.simd import bitserial

    with np.errstate(over="ignore", invalid="ignore"):
        want = (bitserial.reference_values(tile, operands, params) if bitserial.is_bitmod(params)
                else reference_values(tile, operands, params))
    got = np.asarray(values)
    assert got.dtype == want.dtype, (tile, got.dtype, want.dtype)
    if got.dtype == np.float32:
        bad = got.view(np.uint32) != want.view(np.uint32)
    else:
        bad = got != want
    assert not bad.any(), (tile, f"{int(bad.sum())} outputs differ from the reference, e.g. "
                                 f"{got[bad][:3].tolist()} != {want[bad][:3].tolist()}")


def missing_cases(params, items) -> list[str]:
    """Cases the samples promise: the smallest tile, accumulate, a partial last group and
    round, and every precision mode of :func:`conformance.mode_pairs` the params run."""
    from archsim.templates.simd.conformance import mode_pairs

    tiles = [t for t, _ in items]
    need = {
        "1x1x1 tile": any(t.m == t.k == t.n == 1 for t in tiles),
        "accumulate": any(t.accumulate for t in tiles),
        "partial last group": any(t.group_size and t.k % t.group_size for t in tiles),
        "partial last round": any(t.m * t.n % params.pes for t in tiles),
    }
    have = {(t.weight_format, t.activation_format) for t in tiles}
    for pair in (params.pairs() if params.pe == "bitmod" else mode_pairs(params)):
        need[f"mode {pair[0]} x {pair[1]}"] = pair in have
    return [name for name, ok in need.items() if not ok]
