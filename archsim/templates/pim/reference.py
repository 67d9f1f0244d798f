"""Independent value reference and coverage list of the PIM template, for the
shared level harness (``tests/test_template_levels.py``).

Written from the definitions of the bank GEMV modes (dot, axpy) with numpy;
it imports nothing of the template's value code, so it can catch it out.
"""
from __future__ import annotations

import numpy as np


def _wrap(exact: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of exact (Python int) values to ``bits`` bits."""
    mod, half = 1 << bits, 1 << (bits - 1)
    return np.vectorize(lambda v: (int(v) + half) % mod - half, otypes=[object])(exact)

def pim_reference(tile, ops, params) -> tuple[np.ndarray, np.ndarray]:
    """dot: ``out[b, r] = sum_k W[b, r, k] x[k]``; axpy: ``out[j] = sum_{b,t} x[b*rows+t] W[b, t, j]``.

    Returns (reference, error bound): int8 sums are exact and wrapped to the
    int32 accumulators (bound 0); bf16 products are exact in fp32 and summed
    in fp32 in some order, so each output may differ from the exact sum by at
    most ``n * 2**-24 * sum |terms|`` (n = additions on the longest path,
    bounded here by the number of terms incl. padding plus the accumulations).
    """
    w = np.asarray(ops["weight"])
    x = np.asarray(ops["input"])
    assert w.shape == (tile.banks, tile.rows, tile.k)
    ce = params.column_bytes // {"int8": 1, "bf16": 2}[params.mac_precision]
    if tile.mode == "dot":
        assert x.shape == (tile.k,)
        terms = w.astype(np.float64) * x.astype(np.float64)  # [b, r, k]
        kc = -(-tile.k // ce)
        n_adds = kc * ce + kc
    else:
        assert x.shape == (tile.banks * tile.rows,)
        terms = (w.astype(np.float64) * x.reshape(tile.banks, tile.rows, 1)).reshape(-1, tile.k)
        n_adds = tile.banks * tile.rows + tile.banks
    axis = -1 if tile.mode == "dot" else 0
    if params.mac_precision == "int8":
        exact = terms.astype(np.int64).sum(axis=axis)  # |terms| <= 2**14: exact in int64
        return _wrap(exact, 32).astype(np.int64), np.zeros(exact.shape)
    exact = terms.sum(axis=axis)
    return exact, n_adds * 2.0 ** -24 * np.abs(terms).sum(axis=axis) * 1.0001

def check(tile, ops, params, values) -> None:
    want, bound = pim_reference(tile, ops, params)
    assert values.shape == want.shape
    if params.mac_precision == "int8":
        assert values.tolist() == want.tolist()
    else:
        err = np.abs(values.astype(np.float64) - want)
        assert (err <= bound).all(), f"max error {err.max()} over bound {bound[np.argmax(err - bound)]}"


#: template -> checker of the model's values against this file's reference
def missing_cases(params, items) -> list[str]:
    tiles = [t for t, _ in items]
    eb = {"int8": 1, "bf16": 2}[params.mac_precision]
    row_elems = params.row_bytes // eb
    need = {
        "a dot GEMV with values": any(t.mode == "dot" and o is not None for t, o in items),
        # axpy needs a whole column of lanes in the accumulators
        "an axpy GEMV": params.acc_registers < params.column_bytes // eb or any(t.mode == "axpy" for t in tiles),
        "a write": any(t.kind == "write" for t in tiles),
        "the 1-row, 1-element GEMV": any((t.kind, t.rows, t.k) == ("gemv", 1, 1) for t in tiles),
        "more rows than accumulators": any(t.kind == "gemv" and t.mode == "dot" and t.rows > params.acc_registers
                                           for t in tiles),
        "a weight row over two DRAM rows": any(t.kind == "gemv" and t.k > row_elems for t in tiles),
        "an input larger than the buffer": any(
            t.kind == "gemv" and t.input_elements() * eb > params.input_buffer_bytes for t in tiles),
        "every bank of the channel": any(t.banks == params.banks_per_channel for t in tiles),
    }
    return [k for k, ok in need.items() if not ok]
