"""COSMA's address ILP (mappers.allocation.address_ilp): plans always fit their addresses.

Every placement is checked by :func:`assert_fits`, written here from the definition (it walks
the schedule step by step and the byte intervals of the tensors resident there), not by the
code that chose the addresses.
"""
from __future__ import annotations

import pytest

from archsim.errors import MappingError
from mappers.allocation import plan as plan_mod
from mappers.allocation.address_ilp import PlacedSolution, segments, solve_placed
from mappers.allocation.addresses import assign_addresses
from mappers.allocation.plan import allocate, fit_addresses, plan_allocation
from mappers.allocation.problem import Problem, Tensor, traffic

pytest.importorskip("highspy")

K = 1000  # bytes of one unit in the hand-built case


def assert_fits(problem: Problem, plan, placements) -> None:
    """At every step, each resident tensor has exactly one placement covering that step, inside
    the scratchpad, and the byte ranges of the tensors resident there are disjoint; a placement
    covers only steps at which its tensor is resident."""
    size = [t.size_bytes for t in problem.tensors]
    for p in placements:
        assert all(s in plan[p.tensor] for s in range(p.first, p.last + 1)), p
    for s in range(len(problem.order)):
        ranges = []
        for i in (i for i, steps in enumerate(plan) if s in steps):
            covering = [p for p in placements if p.tensor == i and p.first <= s <= p.last]
            assert len(covering) == 1, (problem.tensors[i].name, s, covering)
            lo = covering[0].offset_bytes
            assert 0 <= lo and lo + size[i] <= problem.capacity_bytes, (problem.tensors[i].name, s, lo)
            ranges.append((lo, lo + size[i], problem.tensors[i].name))
        ranges.sort()
        for (_, hi, a), (lo, _, b) in zip(ranges, ranges[1:]):
            assert hi <= lo, f"step {s}: {a} and {b} overlap"


def fragmenting_problem() -> Problem:
    """A 3-unit scratchpad; every tensor is read at each step of its life, so nothing may leave.

    steps 0-3:  A (1) 0..2, B (1) 2..3, D (1) 2, E (2) 3     -- E needs B at an edge
    steps 4-6:  F (2) 4, s1 (1) 4..5, s2 (1) 5..6, G (2) 6   -- s1 and s2 at opposite edges

    First fit by start step puts A, B, D at 0, 1, 2: E finds no 2 contiguous units beside B.
    By size: E, F, G at 0, then s1 above F at 2, s2 above G and s1 at 3. By size x duration: A
    (3 unit-steps) at 0, B at 1: E again. Each needs 4 units. A placement in 3 exists:
    B 0, A 1, D 2, E 1-2; F 0-1, s1 2, s2 0, G 1-2.
    """
    t = [Tensor("A", K, 0, (1, 2)), Tensor("B", K, 2, (3,)), Tensor("D", K, 2, ()), Tensor("E", 2 * K, 3, ()),
         Tensor("F", 2 * K, 4, ()), Tensor("s1", K, 4, (5,)), Tensor("s2", K, 5, (6,)), Tensor("G", 2 * K, 6, ())]
    return Problem(tuple(f"op{s}" for s in range(7)), tuple(t), 3 * K, 0)


def everything_resident(problem):
    return tuple(frozenset(t.steps) for t in problem.tensors)


def test_segments_by_hand():
    p = Problem(("a", "b", "c", "d", "e", "f"), (Tensor("x", 1, 1, (3, 5)), Tensor("in", 1, None, (2, 4)),
                                                  Tensor("out", 1, 0, ())), 10, 0)
    # producer's step alone, then up to each read
    assert segments(p) == [[(1, 1), (2, 3), (4, 5)], [(2, 2), (3, 4)], [(0, 0)]]


def test_first_fit_fragments_where_the_address_ilp_places():
    problem = fragmenting_problem()
    full = everything_resident(problem)
    assert traffic(problem, full).non_compulsory_bytes == 0  # the bytes fit at every step (3 units)
    assert assign_addresses(problem, full)[1] == 4 * K  # every first-fit order needs 4 units (docstring)
    _, peak = fit_addresses(problem, full)
    assert peak > 3 * K  # nothing can leave (every step reads all it holds): re-solving does not help
    sol = solve_placed(problem, 10.0)
    assert sol.optimal and sol.plan == full and sol.peak_bytes == 3 * K
    assert traffic(problem, sol.plan).non_compulsory_bytes == 0
    assert_fits(problem, sol.plan, sol.placements)
    by_name = {problem.tensors[p.tensor].name: p.offset_bytes for p in sol.placements}
    assert by_name["B"] in (0, 2 * K) and by_name["s1"] != by_name["s2"]  # forced to the edges


def test_allocate_reports_which_placement_it_used():
    problem = fragmenting_problem()
    ilp = allocate(problem, "ilp", schedule=False, addresses="ilp")
    assert ilp.addresses.method == "ilp" and ilp.addresses.fits and ilp.optimal
    assert ilp.addresses.note == "address ILP: proven the least traffic for this order"
    ff = allocate(problem, "ilp", schedule=False, addresses="first-fit")
    assert not ff.addresses.fits and ff.addresses.note.startswith("first fit places no re-solved plan: it needs 4000 B")
    with pytest.raises(MappingError, match="^allocation addresses: expected one of ilp, first-fit, got 'best'$"):
        allocate(problem, "ilp", addresses="best")


def test_fallback_is_stated(monkeypatch):
    # x made at step 0 and read at step 2, y made at step 1: 4 units hold both, first fit places them
    problem = Problem(("a", "b", "c"), (Tensor("x", K, 0, (2,)), Tensor("y", K, 1, ())), 4 * K, 0)
    full = everything_resident(problem)

    def none(*_a, **_k):
        raise MappingError("allocation ILP: HiGHS found no plan (Time limit reached)")

    monkeypatch.setattr(plan_mod, "solve_placed", none)
    plan, got = plan_mod.place_with_ilp(problem, full, 0.5)
    assert got.method == "first-fit" and got.fits and plan == full
    assert got.note.startswith("address ILP found no plan in 0.5 s (allocation ILP: HiGHS found no plan")

    def worse(*_a, **_k):  # an unproven incumbent that drops x at step 1: written back and reloaded
        return PlacedSolution((frozenset({0, 2}), frozenset({1})), (), 0, 2.0 * K, False, 0.25, 0.5)

    monkeypatch.setattr(plan_mod, "solve_placed", worse)
    plan, got = plan_mod.place_with_ilp(problem, full, 0.5)
    assert got.method == "first-fit" and plan == full
    assert got.note.startswith("address ILP stopped at its 0.5 s limit (gap 25.0%) above first fit's plan")


@pytest.mark.parametrize("name,capacity_kib", [("resnet50", 1024), ("nas", 512)])
def test_real_graphs_fit_and_never_lose_to_first_fit(name, capacity_kib):
    from tests.test_cosma import _graph

    residency = plan_allocation(_graph(name), capacity_kib << 10, "ilp", schedule=False)
    placed = allocate(residency.problem, "ilp", schedule=False, addresses="ilp", time_limit_s=30)
    first_fit = allocate(residency.problem, "ilp", schedule=False, addresses="first-fit", time_limit_s=30)
    assert placed.addresses.method == "ilp" and placed.addresses.fits
    assert_fits(placed.problem, placed.plan, placed.addresses.placements)
    assert_fits(first_fit.problem, first_fit.plan, first_fit.addresses.placements)
    # the residency ILP ignores addresses: a lower bound; first fit's plan is the ILP's start
    nc = {k: a.traffic.non_compulsory_bytes for k, a in
          {"residency": residency, "placed": placed, "first_fit": first_fit}.items()}
    assert nc["residency"] <= nc["placed"] <= nc["first_fit"]
    if name == "resnet50":  # first fit fragments there: its re-solved plan pays more
        assert assign_addresses(residency.problem, residency.plan)[1] > capacity_kib << 10
        assert nc["placed"] < nc["first_fit"]
