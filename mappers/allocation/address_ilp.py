"""Residency, eviction and scratchpad addresses in one ILP (COSMA's memory allocation), solved by HiGHS.

The residency model of :func:`mappers.allocation.ilp.residency_model` (order fixed: the
problem's) plus an offset per *segment* of each tensor's live range: the producer's step, then
from the step after each read up to the next read. Within a segment a tensor keeps one offset
(``a``, bytes); across a segment boundary it keeps it when resident on both sides (no reload:
the data does not move), else a reload may land elsewhere. No generality is lost against one
offset per resident run: inside a segment no step needs the tensor but its last, so an optimal
plan never holds it there, drops it and loads it again.

Two segments of different tensors whose steps overlap and that fit together get a continuous
``z >= r[t,s] + r[u,s] - 1`` (both resident at a common step ``s``) and a binary ``y`` (which
one lies below); big-M disjunctions with M = the scratchpad::

    a_p + size_p <= a_q + C (1 - y) + C (1 - z)
    a_q + size_q <= a_p + C y       + C (1 - z)

so a plan the ILP returns always fits its addresses. The offsets are made integral afterwards
(each run dropped as low as the runs below it allow, in the ILP's order) and checked.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from archsim.errors import MappingError
from mappers.allocation.addresses import Placement, resident_runs
from mappers.allocation.ilp import plan_from, residency_model
from mappers.allocation.problem import Plan, Problem


@dataclass(frozen=True)
class PlacedSolution:
    """A plan with its addresses: ``peak_bytes`` (<= capacity) the top of the highest placement."""

    plan: Plan
    placements: tuple[Placement, ...]
    peak_bytes: int
    objective_bytes: float
    optimal: bool
    gap: float
    solve_s: float


def segments(problem: Problem) -> list[list[tuple[int, int]]]:
    """Per tensor, its segments ``(first step, last step)``: the producer's step, then each span
    from the step after a read (or the producer) to the next read."""
    out = []
    for t in problem.tensors:
        cuts = ([t.producer] if t.producer is not None else []) + [r for r in t.readers if r != t.producer]
        spans, start = [], t.first
        for c in cuts:
            spans.append((start, c))
            start = c + 1
        out.append(spans)
    return out


def solve_placed(problem: Problem, time_limit_s: float = 120.0,
                 start: tuple[Plan, list[Placement]] | None = None) -> PlacedSolution:
    """The least-traffic plan of ``problem`` (its order) whose tensors get non-overlapping
    addresses in the scratchpad. ``start``: a placed plan (e.g. first fit's) HiGHS starts from,
    so the result is never worse than it. MappingError if HiGHS finds none within ``time_limit_s``."""
    cap = float(problem.capacity_bytes)
    m, r = residency_model(problem)
    size = [t.size_bytes for t in problem.tensors]
    seg = segments(problem)
    a: dict[tuple[int, int], int] = {}
    for i, spans in enumerate(seg):
        if size[i] > cap:
            continue  # never resident (the capacity rows say so)
        for k in range(len(spans)):
            a[i, k] = m.col(0.0, 0.0, cap - size[i], False)
        for k in range(len(spans) - 1):  # resident across the boundary: same offset
            e = spans[k][1]
            both = [(r[i, e], cap), (r[i, e + 1], cap)]
            m.row(-m.inf, 2 * cap, [(a[i, k + 1], 1.0), (a[i, k], -1.0)] + both)
            m.row(-m.inf, 2 * cap, [(a[i, k], 1.0), (a[i, k + 1], -1.0)] + both)
    keys = sorted(a)
    pairs: dict[tuple[tuple[int, int], tuple[int, int]], tuple[int, int]] = {}
    for n, (i, k) in enumerate(keys):
        lo_p, hi_p = seg[i][k]
        for j, l in keys[n + 1:]:
            if j == i or size[i] + size[j] > cap:
                continue  # its own segments never coexist; too big to coexist
            lo, hi = max(lo_p, seg[j][l][0]), min(hi_p, seg[j][l][1])
            if lo > hi:
                continue
            z = m.col(0.0, 0.0, 1.0, False)
            for s in range(lo, hi + 1):
                m.row(-1.0, m.inf, [(z, 1.0), (r[i, s], -1.0), (r[j, s], -1.0)])
            y = m.col(0.0, 0.0, 1.0, True)
            p, q = a[i, k], a[j, l]
            m.row(-m.inf, 2 * cap - size[i], [(p, 1.0), (q, -1.0), (y, cap), (z, cap)])
            m.row(-m.inf, cap - size[j], [(q, 1.0), (p, -1.0), (y, -cap), (z, cap)])
            pairs[(i, k), (j, l)] = y, z
    t0 = time.perf_counter()
    values, objective, optimal = m.solve(time_limit_s, _start(problem, seg, r, a, pairs, start) if start else None)
    elapsed = time.perf_counter() - t0
    plan = plan_from(problem, r, values)
    offset = {}
    for i, first, last in resident_runs(plan):
        k = next(k for k, (lo, hi) in enumerate(seg[i]) if lo <= first <= hi)
        offset[i, first, last] = values[a[i, k]]
    placements, peak = integral_offsets(offset, size)
    if peak > problem.capacity_bytes:
        raise MappingError(f"allocation address ILP: its offsets need {peak} B, over the "
                           f"{problem.capacity_bytes} B scratchpad (solver tolerance)")
    return PlacedSolution(plan, placements, peak, objective, optimal, m.gap, elapsed)


def _start(problem: Problem, seg, r, a, pairs, start: tuple[Plan, list[Placement]]) -> dict[int, float]:
    """Column values of a placed plan: residency, segment offsets and which segment lies below.
    Inside a segment only the run that reaches its last resident step is kept (dropping an earlier
    one never adds traffic, see the module docstring), so each segment has one offset."""
    plan, placements = start
    where = {(p.tensor, s): p.offset_bytes for p in placements for s in range(p.first, p.last + 1)}
    values: dict[int, float] = {}
    offset: dict[tuple[int, int], int] = {}
    for i, spans in enumerate(seg):
        for k, (lo, hi) in enumerate(spans):
            held = sorted(s for s in plan[i] if lo <= s <= hi)
            keep = set()
            for s in reversed(held):  # the last run of the segment
                if keep and s + 1 not in keep:
                    break
                keep.add(s)
            for s in range(lo, hi + 1):
                values[r[i, s]] = float(s in keep)
            if keep and (i, k) in a:
                offset[i, k] = where[i, max(keep)]
                values[a[i, k]] = float(offset[i, k])
    for (p, q), (y, _z) in pairs.items():
        values[y] = float(p not in offset or q not in offset or offset[p] <= offset[q])
    return values


def integral_offsets(offset: dict[tuple[int, int, int], float], size: list[int]) -> tuple[tuple[Placement, ...], int]:
    """Whole-byte offsets for runs ``(tensor, first, last) -> offset`` from the solver: in
    increasing solver offset, each run sits on top of the runs placed before it that share a step
    (the lowest offset the solver's relative order allows), so no two overlap by construction and
    none rises above its solver offset by more than the solver's tolerance."""
    placed: list[Placement] = []
    peak = 0
    for (i, first, last), _ in sorted(offset.items(), key=lambda kv: (kv[1], kv[0])):
        floor = max((p.offset_bytes + size[p.tensor] for p in placed if p.first <= last and first <= p.last),
                    default=0)
        placed.append(Placement(i, first, last, floor))
        peak = max(peak, floor + size[i])
    return tuple(placed), peak
