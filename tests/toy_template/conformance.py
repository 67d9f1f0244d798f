"""Level-harness hook of the toy MAC: configurations and random tiles (edge cases first)."""
from __future__ import annotations

import numpy as np

from toy_template import BASE_ARCH

base_arch = BASE_ARCH
rtl_arch: dict = {}


def conformance_archs() -> list[dict]:
    return [{}, {"max_k": 3}]


def sample_tiles(rng: np.random.Generator, params, count: int) -> list:
    from toy_template.model import DotTile

    ks = [1, params.max_k] + [int(rng.integers(1, params.max_k + 1)) for _ in range(count - 2)]
    items = []
    for i, k in enumerate(ks[:count]):
        lo, hi = (-128, 128) if i != 1 else (-128, -127)  # the second tile: every product +16384
        a = rng.integers(lo, hi, size=k)
        w = rng.integers(lo, hi, size=k)
        items.append((DotTile(k), {"input": a, "weight": w}))
    return items
