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


def new_highs(hs):
    """A ``Highs`` instance without its copyright banner: HiGHS prints it from C++ to standard output
    once per process, which would corrupt a report written to stdout (``archsim validate --json``)."""
    import os
    import sys

    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1: nothing to protect
        return hs.Highs()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        h = hs.Highs()
        h.setOptionValue("output_flag", False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    return h


def _highspy():
    try:
        import highspy
    except ImportError:
        raise MappingError("allocation 'ilp'/'heuristic' needs HiGHS: pip install 'archsim[cosma]' "
                           "(the highspy>=1.7 extra)") from None
    return highspy


class _Model:
    """A MIP built row by row, solved by HiGHS (one thread, zero gap)."""

    def __init__(self, hs):
        self.hs, self.inf = hs, hs.kHighsInf
        self.cost, self.lower, self.upper, self.integer = [], [], [], []
        self.rows: list[tuple[float, float, list[tuple[int, float]]]] = []
        #: relative MIP gap HiGHS reported after :meth:`solve` (0 when proven optimal)
        self.gap = float("nan")

    def col(self, cost: float, lo: float, hi: float, is_int: bool) -> int:
        self.cost.append(cost); self.lower.append(lo); self.upper.append(hi); self.integer.append(is_int)
        return len(self.cost) - 1

    def row(self, lo: float, hi: float, terms: list[tuple[int, float]]) -> None:
        self.rows.append((lo, hi, terms))

    def solve(self, time_limit_s: float, initial: dict[int, float] | None = None) -> tuple[list[float], float, bool]:
        """``(column values, objective, proven optimal)``; MappingError if no plan was found.
        ``initial``: values of some columns, a starting solution HiGHS completes (ignored if infeasible)."""
        hs = self.hs
        lp = hs.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.cost), len(self.rows)
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = self.cost, self.lower, self.upper
        lp.row_lower_ = [lo for lo, _, _ in self.rows]
        lp.row_upper_ = [hi for _, hi, _ in self.rows]
        lp.a_matrix_.format_ = hs.MatrixFormat.kRowwise
        start, index, value = [0], [], []
        for _, _, terms in self.rows:
            index += [c for c, _ in terms]; value += [v for _, v in terms]; start.append(len(index))
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
        lp.integrality_ = [hs.HighsVarType.kInteger if k else hs.HighsVarType.kContinuous for k in self.integer]
        h = new_highs(hs)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("time_limit", float(time_limit_s))
        h.setOptionValue("threads", 1)
        h.passModel(lp)
        if initial:
            import numpy as np

            cols = sorted(initial)
            h.setSolution(len(cols), np.array(cols, dtype=np.int32),
                          np.array([initial[c] for c in cols], dtype=np.float64))
        h.run()
        status = h.getModelStatus()
        if status not in (hs.HighsModelStatus.kOptimal, hs.HighsModelStatus.kTimeLimit) \
                or h.getInfo().primal_solution_status != 2:
            raise MappingError(f"allocation ILP: HiGHS found no plan ({h.modelStatusToString(status)})")
        self.gap = 0.0 if status == hs.HighsModelStatus.kOptimal else float(h.getInfo().mip_gap)
        return list(h.getSolution().col_value), h.getInfo().objective_function_value, \
            status == hs.HighsModelStatus.kOptimal


def solve(problem: Problem, fixed: dict[tuple[int, int], int] | None = None,
          time_limit_s: float = 120.0, capacity_scale: float = 1.0) -> Solution:
    """Minimise the non-compulsory traffic of ``problem`` (``fixed``: ``(tensor, step) -> 0/1``).
    ``capacity_scale < 1`` leaves headroom for fragmentation: each step may hold that share of
    the scratchpad (or its op's own tensors, if more)."""
    m, r = residency_model(problem, fixed, capacity_scale)
    t0 = time.perf_counter()
    x, objective, optimal = m.solve(time_limit_s)
    elapsed = time.perf_counter() - t0
    return Solution(plan_from(problem, r, x), objective, optimal, elapsed)


def plan_from(problem: Problem, r: dict[tuple[int, int], int], values: list[float]) -> Plan:
    """The plan a solution's ``r[tensor, step]`` columns say."""
    return tuple(frozenset(s for s in t.steps if values[r[i, s]] > 0.5) for i, t in enumerate(problem.tensors))


def residency_model(problem: Problem, fixed: dict[tuple[int, int], int] | None = None,
                    capacity_scale: float = 1.0) -> tuple[_Model, dict[tuple[int, int], int]]:
    """The residency / eviction MIP of ``problem`` (see :func:`solve`) and its ``r[tensor, step]`` columns."""
    m = _Model(_highspy())
    fixed = fixed or {}
    r: dict[tuple[int, int], int] = {}
    for i, t in enumerate(problem.tensors):
        size = float(t.size_bytes)
        for s in t.steps:
            need = s not in problem.streamed and (s == t.producer or s in t.readers)
            lo, hi = (1.0 if need else 0.0), 1.0
            if s in problem.offchip and (s == t.producer or s in t.readers):
                hi = 0.0  # that op reads and writes its tensors in DRAM
            if (i, s) in fixed:
                lo = hi = float(fixed[i, s])
                if need and hi < 1:
                    raise MappingError(f"allocation: {t.name} pinned off chip at step {s}, which needs it")
            r[i, s] = m.col(0.0, lo, hi, True)
        if t.is_output:
            continue
        for s in t.steps:
            paid = size if not (t.is_input and s == t.first) else 0.0
            if s != t.producer:  # a (re)load
                load = m.col(paid, 0.0, 1.0, False)
                prev = [(r[i, s - 1], 1.0)] if s != t.first else []
                m.row(0.0, m.inf, [(load, 1.0), (r[i, s], -1.0)] + prev)
            if s in problem.streamed and s in t.readers:  # a read of a tensor left off chip
                q = m.col(paid, 0.0, 1.0, False)
                m.row(1.0, m.inf, [(q, 1.0), (r[i, s], 1.0)])
        if not t.is_input:
            w = m.col(size, 0.0, 1.0, False)
            for s in t.steps:
                m.row(1.0, m.inf, [(w, 1.0), (r[i, s], 1.0)])
    for s in range(len(problem.order)):
        own = 0 if s in problem.streamed else sum(problem.tensors[i].size_bytes for i in problem.touched(s))
        limit = min(problem.capacity_bytes, max(own, capacity_scale * problem.capacity_bytes))
        m.row(-m.inf, float(limit),
              [(r[i, s], float(t.size_bytes)) for i, t in enumerate(problem.tensors) if (i, s) in r])
    return m, r
