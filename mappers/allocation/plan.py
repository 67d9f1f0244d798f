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

Addresses (``allocate(..., addresses="ilp")``, what the Program uses): the address ILP
(:mod:`mappers.allocation.address_ilp`) re-chooses residency and eviction together with each
tensor's offset, in the order chosen above, started from first fit's placement; a plan
always fits its addresses. ``addresses="first-fit"`` is the earlier way (first fit, the
residency ILP re-solved with less room until it places).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from archsim.errors import MappingError
from archsim.spec.model import OUTPUT_OPS
from mappers.allocation.address_ilp import solve_placed
from mappers.allocation.addresses import Placement, assign_addresses
from mappers.allocation.ilp import solve
from mappers.allocation.schedule import solve_schedule
from mappers.allocation.problem import Plan, Problem, Traffic, build_problem, traffic
from mappers.fusion import plan_fusion

from archsim.spec.options import ALLOCATIONS  # the mapper option's values


#: how a plan gets its scratchpad addresses (``allocate(..., addresses=...)``)
ADDRESS_METHODS = ("ilp", "first-fit")


@dataclass(frozen=True)
class Addresses:
    """The scratchpad addresses of a plan and how they were chosen: ``method`` ``ilp`` (the
    address ILP, :mod:`mappers.allocation.address_ilp`) or ``first-fit`` (first fit, the residency
    ILP re-solved with less room until it places: :func:`fit_addresses`); ``optimal``: the address
    ILP proved its plan the least traffic for the order; ``gap``: its relative MIP gap when not;
    ``note``: one line saying what was used and why."""

    placements: tuple[Placement, ...]
    peak_bytes: int
    capacity_bytes: int
    method: str
    optimal: bool
    gap: float
    solve_s: float
    note: str

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.capacity_bytes


@dataclass(frozen=True)
class Allocation:
    """A plan with its traffic and solve time (``optimal``: the ILP proved it); ``problem``
    is the one the plan is for (its ``order`` is the chosen operator order); ``addresses``: its
    placement when asked for."""

    method: str
    plan: Plan
    traffic: Traffic
    solve_s: float
    optimal: bool
    problem: Problem | None = None
    addresses: Addresses | None = None


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


def place_first_fit(problem: Problem, plan: Plan, time_limit_s: float = 120.0) -> tuple[Plan, Addresses]:
    """``plan`` placed by first fit, re-solved with less room until it places (:func:`fit_addresses`)."""
    t0 = time.perf_counter()
    fitted, peak = fit_addresses(problem, plan, time_limit_s)
    placements = tuple(assign_addresses(problem, fitted)[0])
    fits = peak <= problem.capacity_bytes
    note = ("first fit places the residency plan" if fitted is plan else
            "first fit, the residency ILP re-solved with less room until it places (not proven optimal)"
            if fits else f"first fit places no re-solved plan: it needs {peak} B of the {problem.capacity_bytes} B")
    return fitted, Addresses(placements, peak, problem.capacity_bytes, "first-fit", False, float("nan"),
                             time.perf_counter() - t0, note)


def place_with_ilp(problem: Problem, plan: Plan, time_limit_s: float = 120.0) -> tuple[Plan, Addresses]:
    """The least-traffic plan with addresses for ``problem``'s order (the address ILP), started
    from first fit's placement (:func:`place_first_fit`) so it is never worse than that. If the ILP
    does not prove optimality within ``time_limit_s`` its best plan is kept and the note gives its
    gap; if it finds none, first fit's placement is used and the note says so."""
    fitted, first_fit = place_first_fit(problem, plan, time_limit_s)
    start = (fitted, list(first_fit.placements)) if first_fit.fits else None
    t0 = time.perf_counter()
    try:
        sol = solve_placed(problem, time_limit_s, start)
    except MappingError as err:
        note = f"address ILP found no plan in {time_limit_s:g} s ({err}): {first_fit.note}"
        return fitted, dataclasses.replace(first_fit, note=note)
    elapsed = time.perf_counter() - t0 + first_fit.solve_s
    ilp_bytes = traffic(problem, sol.plan).non_compulsory_bytes
    if first_fit.fits and traffic(problem, fitted).non_compulsory_bytes < ilp_bytes:
        note = (f"address ILP stopped at its {time_limit_s:g} s limit (gap {100 * sol.gap:.1f}%) above first fit's "
                f"plan: {first_fit.note}")
        return fitted, dataclasses.replace(first_fit, note=note, gap=sol.gap, solve_s=elapsed)
    note = ("address ILP: proven the least traffic for this order" if sol.optimal else
            f"address ILP stopped at its {time_limit_s:g} s limit: its best plan, gap {100 * sol.gap:.1f}% "
            "to the proven bound")
    return sol.plan, Addresses(sol.placements, sol.peak_bytes, problem.capacity_bytes, "ilp", sol.optimal, sol.gap,
                               elapsed, note)


def allocate(problem: Problem, method: str, *, window: int = 16, time_limit_s: float = 120.0,
             schedule: bool = True, addresses: str | None = None) -> Allocation:
    """The ``method`` allocation of ``problem`` (``schedule``: the ILP also chooses the order;
    if it stops at ``time_limit_s`` unproven, the better of its plan and the graph order's;
    ``addresses``: place the plan, ``ilp`` (:func:`place_with_ilp`, in the chosen order) or
    ``first-fit`` (:func:`place_first_fit`); ``greedy`` is never placed)."""
    if addresses is not None and addresses not in ADDRESS_METHODS:
        raise MappingError(f"allocation addresses: expected one of {', '.join(ADDRESS_METHODS)}, got {addresses!r}")
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
    placed = None
    if addresses and method != "greedy":
        bound = traffic(problem, plan).non_compulsory_bytes
        plan, placed = (place_with_ilp if addresses == "ilp" else place_first_fit)(problem, plan, time_limit_s)
        # optimal with addresses: the placed plan reaches the residency optimum (a lower bound), or the
        # residency plan was placed as it is
        optimal = optimal and traffic(problem, plan).non_compulsory_bytes == bound
    return Allocation(method, plan, traffic(problem, plan), time.perf_counter() - t0, optimal, problem, placed)


def plan_allocation(graph, capacity_bytes: int, method: str = "ilp", output_ops=OUTPUT_OPS, **kw) -> Allocation:
    """Allocate ``graph`` for ``capacity_bytes`` with ``method``, element-wise ops fused into
    their GEMM where an output unit with ``output_ops`` runs them (:mod:`mappers.fusion`)."""
    return allocate(build_problem(graph, capacity_bytes, plan_fusion(graph, output_ops).fused_into), method, **kw)
