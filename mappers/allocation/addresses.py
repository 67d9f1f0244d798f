"""Scratchpad addresses for a residency plan: first fit over the plan's resident runs.

The residency ILPs decide *which* tensors are resident at each step (bytes fit); this places each
contiguous resident run of a tensor at an offset so that no two runs live at the same step
overlap. First fit (in a few run orders, the best kept) is not optimal: when
fragmentation needs more than the scratchpad, :func:`assign_addresses` says so
(``peak_bytes > capacity``) rather than claiming the plan fits. A reload may land at a new
address (the tensor is copied in again). The address ILP (:mod:`mappers.allocation.address_ilp`)
chooses offsets with the residency instead and starts from this placement.
"""
from __future__ import annotations

from dataclasses import dataclass

from mappers.allocation.problem import Plan, Problem


@dataclass(frozen=True)
class Placement:
    """One resident run: tensor index, first and last step, offset in bytes."""

    tensor: int
    first: int
    last: int
    offset_bytes: int


def resident_runs(plan: Plan) -> list[tuple[int, int, int]]:
    """``(tensor, first step, last step)`` of each maximal run of consecutive resident steps."""
    runs = []
    for i, steps in enumerate(plan):
        ordered = sorted(steps)
        start = prev = None
        for s in ordered:
            if start is None:
                start = prev = s
            elif s == prev + 1:
                prev = s
            else:
                runs.append((i, start, prev))
                start = prev = s
        if start is not None:
            runs.append((i, start, prev))
    return runs


#: orders the runs are placed in; the lowest peak wins
_ORDERS = {
    "start": lambda size, r: (r[1], -size[r[0]], r[0]),
    "largest": lambda size, r: (-size[r[0]], r[1], r[0]),
    "longest": lambda size, r: (-(r[2] - r[1] + 1) * size[r[0]], r[1], r[0]),
}


def assign_addresses(problem: Problem, plan: Plan) -> tuple[list[Placement], int]:
    """``(placements, peak bytes)``: the plan fits with these addresses iff peak <= capacity.
    First fit in each of :data:`_ORDERS`; the placement with the lowest peak."""
    size = [t.size_bytes for t in problem.tensors]
    best = None
    for key in _ORDERS.values():
        got = _first_fit(sorted(resident_runs(plan), key=lambda r: key(size, r)), size)
        if best is None or got[1] < best[1]:
            best = got
    return best


def _first_fit(runs, size) -> tuple[list[Placement], int]:
    placed: list[Placement] = []
    peak = 0
    for i, first, last in runs:
        busy = sorted((p.offset_bytes, p.offset_bytes + size[p.tensor]) for p in placed
                      if p.first <= last and first <= p.last)
        offset = 0
        for lo, hi in busy:
            if offset + size[i] <= lo:
                break
            offset = max(offset, hi)
        placed.append(Placement(i, first, last, offset))
        peak = max(peak, offset + size[i])
    return placed, peak
