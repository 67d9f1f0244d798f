"""Independent reference of the toy MAC: the exact dot product in Python ints,
wrapped to 32 bits (written from the tile's definition, not the model)."""
from __future__ import annotations

import numpy as np


def check(tile, operands, params, values) -> None:
    exact = sum(int(x) * int(y) for x, y in zip(operands["input"], operands["weight"]))
    want = (exact + 2**31) % 2**32 - 2**31
    assert np.asarray(values).tolist() == [want], (tile, values, want)


def missing_cases(params, items) -> list[str]:
    ks = [t.k for t, _ in items]
    need = {"k = 1": 1 in ks, "k = max_k": params.max_k in ks}
    return [name for name, ok in need.items() if not ok]
