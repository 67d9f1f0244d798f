"""The joint operator-order and residency ILP (COSMA's combined scheduling), solved by HiGHS.

Time-indexed: binary ``x[v,s]`` (op ``v`` of the problem's default order runs at step ``s``,
``s`` within ``v``'s ASAP..ALAP window from its ancestors and descendants) and ``r[t,s]``
(tensor ``t`` resident at step ``s``). With ``X_v(s) = sum x[v, <=s]``:
``r[t,s] <= X_p(s)`` (not before its producer ``p`` runs), ``r[t,s] >= x[v,s]`` for the op
using it (unless streamed), reloads ``l >= r[t,s] - r[t,s-1] - x[p,s]``, streamed reads
``q >= x[v,s] - r[t,s]``, write-back ``w[t] >= X_p(s) - r[t,s] - X_v(s-1)`` for each reader
``v`` (alive, off chip, still to be read); the scratchpad capacity at every step. The
objective is the non-compulsory bytes (one read of each graph input is compulsory).
"""
from __future__ import annotations

import time

from archsim.errors import MappingError
from mappers.allocation.ilp import Solution, _highspy, _Model
from mappers.allocation.problem import Plan, Problem


def _windows(problem: Problem) -> tuple[list[tuple[int, int]], dict[int, set[int]]]:
    """ASAP/ALAP step of each op and its predecessors (ops producing a tensor it reads)."""
    n = len(problem.order)
    preds: dict[int, set[int]] = {v: set() for v in range(n)}
    for t in problem.tensors:
        if t.producer is not None:
            for r in t.readers:
                preds[r].add(t.producer)
    ancestors: dict[int, set[int]] = {}
    for v in range(n):  # the default order is topological
        ancestors[v] = set().union(*(ancestors[p] | {p} for p in preds[v])) if preds[v] else set()
    descendants = {v: {u for u in range(n) if v in ancestors[u]} for v in range(n)}
    return [(len(ancestors[v]), n - 1 - len(descendants[v])) for v in range(n)], preds


def solve_schedule(problem: Problem, time_limit_s: float = 120.0, window: tuple[int, int] | None = None,
                   pinned: Plan | None = None) -> tuple[Problem, Solution]:
    """The best order and plan: ``(problem reordered, its solution)``. With ``window = (lo, hi)``
    only the ops at steps ``lo..hi-1`` move (among those steps) and residency outside them is
    pinned to ``pinned`` (the divide-and-conquer heuristic's subproblem)."""
    hs = _highspy()
    n = len(problem.order)
    win, preds = _windows(problem)
    if window is not None:
        lo_w, hi_w = window
        win = [(max(a, lo_w), min(b, hi_w - 1)) if lo_w <= v < hi_w else (v, v) for v, (a, b) in enumerate(win)]
    m = _Model(hs)
    x = {(v, s): m.col(0.0, 0.0, 1.0, True) for v in range(n) for s in range(win[v][0], win[v][1] + 1)}

    def cum(v: int, s: int, sign: float = 1.0) -> list[tuple[int, float]]:
        return [(x[v, k], sign) for k in range(win[v][0], min(s, win[v][1]) + 1)]

    for v in range(n):
        m.row(1.0, 1.0, cum(v, n - 1))
    for s in range(n):
        m.row(1.0, 1.0, [(x[v, s], 1.0) for v in range(n) if (v, s) in x])
    for v in range(n):
        for p in preds[v]:
            for s in range(n):  # v at or before s only if p before s
                terms = cum(v, s) + cum(p, s - 1, -1.0)
                if terms:
                    m.row(-m.inf, 0.0, terms)
    r = {}
    for i, t in enumerate(problem.tensors):
        size = float(t.size_bytes)
        lo = win[t.producer][0] if t.producer is not None else min(win[v][0] for v in t.readers)
        hi = max([win[v][1] for v in t.readers] + ([win[t.producer][1]] if t.producer is not None else []))
        users = ([t.producer] if t.producer is not None else []) + list(t.readers)
        for s in range(lo, hi + 1):
            if window is not None and not window[0] <= s < window[1]:
                held = float(s in pinned[i])
                r[i, s] = m.col(0.0, held, held, True)
            else:
                r[i, s] = m.col(0.0, 0.0, 1.0, True)
            if t.producer is not None:
                m.row(-m.inf, 0.0, [(r[i, s], 1.0)] + cum(t.producer, s, -1.0))
            for v in users:
                if v not in problem.streamed and (v, s) in x:
                    m.row(0.0, m.inf, [(r[i, s], 1.0), (x[v, s], -1.0)])
                elif v in problem.offchip and (v, s) in x:  # v reads and writes it in DRAM
                    m.row(-m.inf, 1.0, [(r[i, s], 1.0), (x[v, s], 1.0)])
        if t.is_output:
            continue
        for s in range(lo, hi + 1):
            load = m.col(size, 0.0, 1.0, False)
            terms = [(load, 1.0), (r[i, s], -1.0)] + ([(r[i, s - 1], 1.0)] if s > lo else [])
            if t.producer is not None and (t.producer, s) in x:
                terms.append((x[t.producer, s], 1.0))
            m.row(0.0, m.inf, terms)
            for v in t.readers:
                if v in problem.streamed and (v, s) in x:
                    q = m.col(size, 0.0, 1.0, False)
                    m.row(0.0, m.inf, [(q, 1.0), (x[v, s], -1.0), (r[i, s], 1.0)])
        if not t.is_input:
            w = m.col(size, 0.0, 1.0, False)
            for v in t.readers:
                for s in range(lo, hi + 1):
                    m.row(0.0, m.inf, [(w, 1.0), (r[i, s], 1.0)] + cum(t.producer, s, -1.0) + cum(v, s - 1))
    for s in range(n):
        m.row(-m.inf, float(problem.capacity_bytes),
              [(r[i, s], float(t.size_bytes)) for i, t in enumerate(problem.tensors) if (i, s) in r])
    t0 = time.perf_counter()
    values, objective, optimal = m.solve(time_limit_s)
    elapsed = time.perf_counter() - t0
    order = sorted(range(n), key=lambda v: next(s for s in range(win[v][0], win[v][1] + 1) if values[x[v, s]] > 0.5))
    ordered = problem.reordered(order)
    plan = tuple(frozenset(s for s in t.steps if (i, s) in r and values[r[i, s]] > 0.5)
                 for i, t in enumerate(ordered.tensors))
    constant = sum(t.size_bytes for t in problem.tensors if t.is_input and not t.is_output)
    if not plan:
        raise MappingError("allocation: empty problem")
    return ordered, Solution(plan, objective - constant, optimal, elapsed)
