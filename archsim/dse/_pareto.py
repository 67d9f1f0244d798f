"""Pareto front of points under min/max objectives."""
from __future__ import annotations

import math
from typing import Sequence


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """``a`` dominates ``b`` (all objectives minimized): no worse anywhere, better somewhere."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def pareto_front(points: Sequence[Sequence[float]], senses: Sequence[str] | None = None) -> list[int]:
    """Indices (ascending) of the non-dominated points.

    ``senses`` gives ``"min"`` or ``"max"`` per objective (default all min).
    Points with a missing or NaN objective are never on the front. Equal
    points do not dominate each other, so duplicates are all kept.

    Points are visited in lexicographic order of their (minimized) objectives,
    so a point's dominators come before it; a point is on the front iff no
    front point found so far dominates it (a dominating non-front point is
    itself dominated by a front point, and domination is transitive). That
    costs O(n log n + n * front size).
    """
    if not points:
        return []
    width = len(points[0])
    senses = list(senses) if senses is not None else ["min"] * width
    if len(senses) != width:
        raise ValueError(f"expected {width} senses, got {len(senses)}")
    signs = [1.0 if s == "min" else -1.0 for s in senses]
    keyed = []
    for index, point in enumerate(points):
        if len(point) != width:
            raise ValueError(f"point {index}: expected {width} objectives, got {len(point)}")
        values = []
        for sign, value in zip(signs, point):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                break
            values.append(sign * float(value))
        else:
            keyed.append((tuple(values), index))
    keyed.sort()
    front: list[tuple[tuple[float, ...], int]] = []
    for values, index in keyed:
        if not any(dominates(kept, values) for kept, _ in front):
            front.append((values, index))
    return sorted(index for _, index in front)
