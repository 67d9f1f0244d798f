"""The residency / eviction ILP of an allocation :class:`~mappers.allocation.problem.Problem`, solved by HiGHS.

Binary ``r[t,s]``: tensor ``t`` resident at step ``s`` of its live range; continuous
``l[t,s] >= r[t,s] - r[t,s-1]`` (a reload), ``q[t,s] >= 1 - r[t,s]`` at a streamed
op's read (a DRAM read), ``w[t] >= 1 - r[t,s]`` (an intermediate written back once);
minimise their bytes (the non-compulsory traffic of :func:`~mappers.allocation.problem.traffic`)
subject to the scratchpad capacity at every step and the running op's tensors on chip.
``fixed`` pins some ``r`` (the divide-and-conquer heuristic solves windows this way).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from archsim.errors import MappingError
from mappers.allocation.problem import Plan, Problem


@dataclass(frozen=True)
class Solution:
    plan: Plan
    objective_bytes: float
    optimal: bool
    solve_s: float


def _highspy():
    try:
        import highspy
    except ImportError:
        raise MappingError("allocation 'ilp'/'heuristic' needs HiGHS: pip install 'archsim[cosma]' "
                           "(the highspy>=1.7 extra)") from None
    return highspy


def solve(problem: Problem, fixed: dict[tuple[int, int], int] | None = None,
          time_limit_s: float = 120.0) -> Solution:
    """Minimise the non-compulsory traffic of ``problem`` (``fixed``: ``(tensor, step) -> 0/1``)."""
    hs = _highspy()
    fixed = fixed or {}
    cost, lower, upper, integer = [], [], [], []
    rows: list[tuple[float, float, list[tuple[int, float]]]] = []

    def col(c: float, lo: float, hi: float, is_int: bool) -> int:
        cost.append(c); lower.append(lo); upper.append(hi); integer.append(is_int)
        return len(cost) - 1

    r: dict[tuple[int, int], int] = {}
    inf = hs.kHighsInf
    for i, t in enumerate(problem.tensors):
        size = float(t.size_bytes)
        for s in t.steps:
            need = s not in problem.streamed and (s == t.producer or s in t.readers)
            lo, hi = (1.0 if need else 0.0), 1.0
            if (i, s) in fixed:
                lo = hi = float(fixed[i, s])
                if need and hi < 1:
                    raise MappingError(f"allocation: {t.name} pinned off chip at step {s}, which needs it")
            r[i, s] = col(0.0, lo, hi, True)
        if t.is_output:
            continue
        for s in t.steps:
            paid = size if not (t.is_input and s == t.first) else 0.0
            if s != t.producer:  # a (re)load
                l_ = col(paid, 0.0, 1.0, False)
                prev = [(r[i, s - 1], 1.0)] if s != t.first else []
                rows.append((0.0, inf, [(l_, 1.0), (r[i, s], -1.0)] + prev))
            if s in problem.streamed and s in t.readers:  # a read of a tensor left off chip
                q = col(paid, 0.0, 1.0, False)
                rows.append((1.0, inf, [(q, 1.0), (r[i, s], 1.0)]))
        if not t.is_input:
            w = col(size, 0.0, 1.0, False)
            for s in t.steps:
                rows.append((1.0, inf, [(w, 1.0), (r[i, s], 1.0)]))
    for s in range(len(problem.order)):
        terms = [(r[i, s], float(t.size_bytes)) for i, t in enumerate(problem.tensors) if (i, s) in r]
        rows.append((-inf, float(problem.capacity_bytes), terms))

    lp = hs.HighsLp()
    lp.num_col_, lp.num_row_ = len(cost), len(rows)
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, lower, upper
    lp.row_lower_ = [lo for lo, _, _ in rows]
    lp.row_upper_ = [hi for _, hi, _ in rows]
    lp.a_matrix_.format_ = hs.MatrixFormat.kRowwise
    start, index, value = [0], [], []
    for _, _, terms in rows:
        index += [c for c, _ in terms]; value += [v for _, v in terms]; start.append(len(index))
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
    lp.integrality_ = [hs.HighsVarType.kInteger if k else hs.HighsVarType.kContinuous for k in integer]
    h = hs.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("threads", 1)
    h.passModel(lp)
    t0 = time.perf_counter()
    h.run()
    elapsed = time.perf_counter() - t0
    status = h.getModelStatus()
    if status not in (hs.HighsModelStatus.kOptimal, hs.HighsModelStatus.kTimeLimit) or h.getInfo().primal_solution_status != 2:
        raise MappingError(f"allocation ILP: HiGHS found no plan ({h.modelStatusToString(status)})")
    x = h.getSolution().col_value
    plan = tuple(frozenset(s for s in t.steps if x[r[i, s]] > 0.5) for i, t in enumerate(problem.tensors))
    return Solution(plan, h.getInfo().objective_function_value, status == hs.HighsModelStatus.kOptimal, elapsed)
