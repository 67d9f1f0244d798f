"""Independent value reference and coverage list of the systolic template, for
the shared level harness (``tests/test_template_levels.py``).

Written from the definition of the tile (``out = psum + input @ weight``,
wrapped to the accumulator width) with numpy object (Python int) arithmetic;
it imports nothing of the template's value code, so it can catch it out.
"""
from __future__ import annotations

import numpy as np


def _wrap(exact: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of exact (Python int) values to ``bits`` bits."""
    mod, half = 1 << bits, 1 << (bits - 1)
    return np.vectorize(lambda v: (int(v) + half) % mod - half, otypes=[object])(exact)

def systolic_reference(tile, ops, params) -> np.ndarray:
    """``out = psum + input @ weight`` exactly, wrapped to the accumulator width."""
    a = np.asarray(ops["input"]).astype(object)
    w = np.asarray(ops["weight"]).astype(object)
    assert a.shape == (tile.m, tile.k) and w.shape == (tile.k, tile.n)
    exact = a.dot(w)
    if tile.accumulate:
        exact = exact + np.asarray(ops["psum"]).astype(object)
    return _wrap(exact, int(params.acc_precision.removeprefix("int")))

def check(tile, ops, params, values) -> None:
    want = systolic_reference(tile, ops, params)
    assert values.shape == want.shape
    assert values.astype(object).tolist() == want.tolist()


def missing_cases(params, items) -> list[str]:
    tiles = [t for t, _ in items]
    R, C = params.rows, params.cols
    flows = {"ws", "os", "is"} if params.dataflow == "auto" else {params.dataflow}
    need = {
        "every dataflow the build runs": {t.dataflow for t in tiles} == flows,
        "an accumulating tile": any(t.accumulate for t in tiles),
        "m = 1": any(t.m == 1 for t in tiles),
        "the 1x1x1 tile": any((t.m, t.k, t.n) == (1, 1, 1) for t in tiles),
        "a full tile": any({"ws": (t.k, t.n) == (R, C), "is": (t.k, t.m) == (R, C),
                            "os": (t.m, t.n) == (R, C)}[t.dataflow] for t in tiles),
        "a partial tile": R * C == 1 or any({"ws": t.k * t.n, "is": t.k * t.m, "os": t.m * t.n}[t.dataflow] < R * C
                                            for t in tiles),
        "a hidden preload": params.preload != "double_buffered" or flows == {"os"}
        or any(t.preload_hidden for t in tiles),
    }
    return [k for k, ok in need.items() if not ok]
