"""The three allocations of the ``allocation`` mapper option: greedy, ilp, heuristic.

- ``greedy`` is archsim's behaviour today (not the paper's baselines): layer by layer,
  each layer (a GEMM with its fused element-wise chain, or an unfused op) loads its
  inputs from DRAM and stores its output to DRAM (:func:`layer_by_layer_traffic`).
  Its plan is the residency that implies (a tensor on chip only where its op needs it).
- ``ilp`` is the optimal operator order, residency and eviction plan
  (:mod:`mappers.allocation.schedule`); with ``schedule=False`` the optimal residency and
  eviction for the graph's own order (:mod:`mappers.allocation.ilp`, much smaller).
- ``heuristic`` is a divide-and-conquer for graphs too big for the joint ILP: starting
  from the greedy plan it re-solves the joint ILP over windows of ``window`` steps (their
  ops reordered among them), the residency outside the window pinned to the current plan.
  Each window's old plan is feasible, so the traffic never rises: heuristic <= greedy, and
  ilp <= heuristic when the joint ILP is proven optimal.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from archsim.errors import MappingError
from archsim.spec.model import OUTPUT_OPS
from mappers.allocation.addresses import assign_addresses
from mappers.allocation.ilp import solve
from mappers.allocation.schedule import solve_schedule
from mappers.allocation.problem import Plan, Problem, Traffic, build_problem, traffic
from mappers.fusion import plan_fusion

from archsim.spec.options import ALLOCATIONS  # the mapper option's values


@dataclass(frozen=True)
class Allocation:
    """A plan with its traffic and solve time (``optimal``: the ILP proved it); ``problem``
    is the one the plan is for (its ``order`` is the chosen operator order)."""

    method: str
    plan: Plan
    traffic: Traffic
    solve_s: float
    optimal: bool
    problem: Problem | None = None


def greedy_plan(problem: Problem) -> Plan:
    """archsim's layer-by-layer plan: a tensor is resident only where its op needs it."""
    return tuple(frozenset(s for s in t.steps if s not in problem.streamed and (s == t.producer or s in t.readers))
                 for t in problem.tensors)


def layer_by_layer_traffic(problem: Problem) -> Traffic:
    """Today's traffic: every intermediate stored once and loaded by each reading layer."""
    compulsory, extra = problem.weight_bytes, 0
    for t in problem.tensors:
        if t.is_output:
            compulsory += t.size_bytes
        elif t.is_input:
            compulsory += t.size_bytes
            extra += (len(t.readers) - 1) * t.size_bytes
        else:
            extra += (1 + len(t.readers)) * t.size_bytes
    return Traffic(compulsory, extra)


def heuristic_plan(problem: Problem, window: int = 16, time_limit_s: float = 60.0) -> tuple[Problem, Plan]:
    """Divide and conquer: the joint order + residency ILP over windows of ``window`` steps
    (the ops of a window reordered among its steps, residency elsewhere pinned), swept twice,
    the second sweep offset by half a window; a window's result is kept only if no worse."""
    plan = greedy_plan(problem)
    cost = traffic(problem, plan).non_compulsory_bytes
    n = len(problem.order)
    for lo in [lo for shift in (0, window // 2) for lo in range(shift, n, window)]:
        ordered, sol = solve_schedule(problem, time_limit_s, (lo, min(n, lo + window)), plan)
        got = traffic(ordered, sol.plan).non_compulsory_bytes
        if got <= cost:
            problem, plan, cost = ordered, sol.plan, got
    return problem, plan


def fit_addresses(problem: Problem, plan: Plan, time_limit_s: float = 120.0) -> tuple[Plan, int]:
    """``(plan, address peak bytes)``: ``plan`` if its first-fit addresses fit the scratchpad,
    else the residency ILP re-solved in ``problem``'s order with less capacity per step
    (95%, 90%, ... 50%) until they do; the last try if none does (the peak says so)."""
    peak = assign_addresses(problem, plan)[1]
    scale = 1.0
    while peak > problem.capacity_bytes and scale > 0.5:
        scale -= 0.05
        plan = solve(problem, time_limit_s=time_limit_s, capacity_scale=scale).plan
        peak = assign_addresses(problem, plan)[1]
    return plan, peak


def allocate(problem: Problem, method: str, *, window: int = 16, time_limit_s: float = 120.0,
             schedule: bool = True, addresses: bool = False) -> Allocation:
    """The ``method`` allocation of ``problem`` (``schedule``: the ILP also chooses the order;
    if it stops at ``time_limit_s`` unproven, the better of its plan and the graph order's;
    ``addresses``: a plan whose first-fit addresses fit, :func:`fit_addresses`)."""
    t0 = time.perf_counter()
    if method == "greedy":
        plan, optimal = greedy_plan(problem), False
        return Allocation(method, plan, layer_by_layer_traffic(problem), time.perf_counter() - t0, optimal, problem)
    elif method == "ilp":
        sol = solve(problem, time_limit_s=time_limit_s)
        plan, optimal = sol.plan, sol.optimal
        if schedule:
            ordered, joint = solve_schedule(problem, time_limit_s)
            better = traffic(ordered, joint.plan).non_compulsory_bytes < traffic(problem, plan).non_compulsory_bytes
            if joint.optimal or better:
                problem, plan = ordered, joint.plan
            optimal = joint.optimal  # over all orders
    elif method == "heuristic":
        (problem, plan), optimal = heuristic_plan(problem, window, time_limit_s), False
    else:
        raise MappingError(f"allocation: expected one of {', '.join(ALLOCATIONS)}, got {method!r}")
    if addresses and method != "greedy":
        fitted, _ = fit_addresses(problem, plan, time_limit_s)
        if fitted is not plan:
            plan, optimal = fitted, False
    return Allocation(method, plan, traffic(problem, plan), time.perf_counter() - t0, optimal, problem)


def plan_allocation(graph, capacity_bytes: int, method: str = "ilp", output_ops=OUTPUT_OPS, **kw) -> Allocation:
    """Allocate ``graph`` for ``capacity_bytes`` with ``method``, element-wise ops fused into
    their GEMM where an output unit with ``output_ops`` runs them (:mod:`mappers.fusion`)."""
    return allocate(build_problem(graph, capacity_bytes, plan_fusion(graph, output_ops).fused_into), method, **kw)
