"""Pareto front: compared with a brute-force definition on random and hand-made point sets."""
from __future__ import annotations

import math
import random

import pytest

from archsim.dse import pareto_front


def brute_force(points, senses):
    sign = [1 if s == "min" else -1 for s in senses]
    ok = [i for i, p in enumerate(points) if not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in p)]
    front = []
    for i in ok:
        a = [s * v for s, v in zip(sign, points[i])]
        dominated = False
        for j in ok:
            b = [s * v for s, v in zip(sign, points[j])]
            if all(y <= x for x, y in zip(a, b)) and any(y < x for x, y in zip(a, b)):
                dominated = True
                break
        if not dominated:
            front.append(i)
    return front


def test_hand_made_front():
    pts = [(1, 9), (2, 5), (3, 5), (4, 1), (5, 5), (2, 5), (9, 0.5), (10, 10)]
    # (3,5) and (5,5) are dominated by (2,5); duplicates (2,5) both stay; (10,10) dominated
    assert pareto_front(pts) == [0, 1, 3, 5, 6]
    assert pareto_front(pts, ["max", "max"]) == [7]
    # minimize the first, maximize the second: (1, 9) beats everything but (10, 10)
    assert pareto_front(pts, ["min", "max"]) == [0, 7]


@pytest.mark.parametrize("seed", range(12))
def test_random_sets_match_brute_force(seed):
    rng = random.Random(seed)
    dims = 1 + seed % 4
    senses = [rng.choice(["min", "max"]) for _ in range(dims)]
    n = rng.randint(1, 120)
    pts = [tuple(rng.choice([rng.randint(0, 6), rng.random()]) for _ in range(dims)) for _ in range(n)]
    if seed % 3 == 0:
        pts[0] = tuple([float("nan")] + list(pts[0][1:]))
    assert pareto_front(pts, senses) == brute_force(pts, senses)


def test_nan_and_empty():
    assert pareto_front([]) == []
    assert pareto_front([(float("nan"), 1.0), (2.0, 2.0)]) == [1]
    with pytest.raises(ValueError):
        pareto_front([(1, 2)], ["min"])
