"""COSMA scratchpad allocation (mappers.allocation): hand counts, brute force, ordering of the plans."""
from __future__ import annotations

import itertools
import sys

import pytest

from archsim.errors import ArchsimError, MappingError
from mappers.allocation import build_problem, check_plan, plan_allocation, traffic
from mappers.allocation.ilp import solve
from mappers.allocation.plan import allocate, greedy_plan
from mappers.allocation.synthetic import nas_cells
from workloads.graph import Graph
from workloads.ops import Elementwise

pytest.importorskip("highspy")


def _ew(name, out_n, *in_ns):
    """An int8 element-wise op: output of ``out_n`` bytes, one input per ``in_ns`` (bytes each)."""
    return Elementwise(name, fn="add", shape=(1, out_n), num_inputs=len(in_ns),
                       in_shapes=tuple((1, n) for n in in_ns))


def _chain():
    """x (graph input, 1000 B) -> a -> b -> c (graph output), 1000 B tensors."""
    g = Graph("chain")
    g.add(_ew("a", 1000, 1000), [None])
    g.add(_ew("b", 1000, 1000), ["a"])
    g.add(_ew("c", 1000, 1000), ["b"])
    return g


def _branchy():
    """a (300 B) read by b, c and e; b, c -> d; a, d -> e: a lives across the whole graph."""
    g = Graph("branchy")
    g.add(_ew("a", 300, 100), [None])
    g.add(_ew("b", 200, 300), ["a"])
    g.add(_ew("c", 100, 300), ["a"])
    g.add(_ew("d", 100, 200, 100), ["b", "c"])
    g.add(_ew("e", 50, 300, 100), ["a", "d"])
    return g


def test_chain_compulsory_and_layer_by_layer_by_hand():
    # compulsory: read x once (1000) + write c once (1000), no weights
    # layer by layer: a and b each stored once and loaded once: 4 * 1000
    for method in ("greedy", "ilp", "heuristic"):
        assert plan_allocation(_chain(), 2000, method).traffic.compulsory_bytes == 2000
    assert plan_allocation(_chain(), 2000, "greedy").traffic.non_compulsory_bytes == 4000
    # 2000 B hold each op's input and output: nothing need leave the chip
    assert plan_allocation(_chain(), 2000, "ilp").traffic.non_compulsory_bytes == 0
    # 1999 B cannot hold a and b together (b's step): one of them goes out and back (1000 + 1000);
    # the other stays, since a streamed op may still keep one 1000 B operand on chip
    assert plan_allocation(_chain(), 1999, "ilp").traffic.non_compulsory_bytes == 2000
    # 999 B hold no tensor: a and b both go out and back
    assert plan_allocation(_chain(), 999, "ilp").traffic.non_compulsory_bytes == 4000


def test_concat_reads_every_input_by_hand():
    """a (100 B) and b (200 B) concatenated (a free shape op) into c's 300 B input."""
    from workloads.ops import ShapeOp

    g = Graph("concat")
    g.add(_ew("a", 100, 100), [None])
    g.add(_ew("b", 200, 100), [None])
    g.add(ShapeOp("cat", fn="concat", in_shapes=((1, 100), (1, 200)), out_shapes=((1, 300),)), ["a", "b"])
    g.add(_ew("c", 300, 300), ["cat"])
    greedy = plan_allocation(g, 10_000, "greedy").traffic
    assert greedy.compulsory_bytes == 100 + 100 + 300  # two graph inputs read, c's output written
    assert greedy.non_compulsory_bytes == 2 * 100 + 2 * 200  # a and b each stored and loaded once
    assert plan_allocation(g, 10_000, "ilp").traffic.non_compulsory_bytes == 0
    # 450 B: at c's step a, b and c's output (600 B) do not fit, so c streams; at b's step a (100)
    # and b's tensors (300) fit: keep a and b on chip and c reads both from the scratchpad
    assert plan_allocation(g, 450, "ilp").traffic.non_compulsory_bytes == 0
    # 250 B: b and c stream; a (100) and b's output (200) never fit together after b runs, so one
    # of them goes out and back: the cheaper is a (100 written + 100 read)
    assert plan_allocation(g, 250, "ilp").traffic.non_compulsory_bytes == 200


def _simulated_extra_bytes(problem, plan) -> int:
    """Non-compulsory DRAM bytes of ``plan`` by walking the steps (independent of traffic())."""
    extra = 0
    for t, held in zip(problem.tensors, plan):
        if not t.readers:
            continue
        in_dram = t.producer is None
        reads = 0
        for s in t.steps:
            before = s - 1 in held and s - 1 >= t.first
            if s in held and s != t.producer and not before:
                assert in_dram, "reload of a tensor never written"
                reads += 1
            if s not in held and s in t.readers:
                if not in_dram:
                    extra += t.size_bytes  # written when produced off chip
                    in_dram = True
                reads += 1
            if s not in held and not in_dram and (s != t.producer or s in t.readers or s < t.last):
                extra += t.size_bytes  # evicted while still needed: written back
                in_dram = True
        extra += (reads - (1 if t.producer is None else 0)) * t.size_bytes
    return extra


def _all_valid_plans(problem):
    options = [[frozenset(c) for k in range(len(t.steps) + 1) for c in itertools.combinations(t.steps, k)]
               for t in problem.tensors]
    for plan in itertools.product(*options):
        try:
            check_plan(problem, plan)
        except MappingError:
            continue
        yield plan


@pytest.mark.parametrize("capacity", [350, 400, 500, 600, 700, 800, 1000])
def test_ilp_equals_brute_force_optimum(capacity):
    problem = build_problem(_branchy(), capacity)
    best = min(_simulated_extra_bytes(problem, p) for p in _all_valid_plans(problem))
    sol = solve(problem)
    assert sol.optimal
    assert _simulated_extra_bytes(problem, sol.plan) == best
    assert traffic(problem, sol.plan).non_compulsory_bytes == best
    assert round(sol.objective_bytes) == best


def _two_branches():
    """x feeds two branches a1 -> a2 and b1 -> b2 (300 B then 10 B), summed by s; added
    interleaved, so the graph's own order holds both 300 B tensors at once."""
    g = Graph("two_branches")
    g.add(_ew("a1", 300, 100), [None])
    g.add(_ew("b1", 300, 100), [None])
    g.add(_ew("a2", 10, 300), ["a1"])
    g.add(_ew("b2", 10, 300), ["b1"])
    g.add(_ew("s", 10, 10, 10), ["a2", "b2"])
    return g


def _topological_orders(problem):
    n = len(problem.order)
    for perm in itertools.permutations(range(n)):
        try:
            yield problem.reordered(list(perm))
        except MappingError:
            continue


@pytest.mark.parametrize("graph", [_branchy, _two_branches])
@pytest.mark.parametrize("capacity", [320, 400, 450, 650, 700])
def test_joint_order_ilp_equals_brute_force_over_orders(graph, capacity):
    from mappers.allocation.schedule import solve_schedule

    base = build_problem(graph(), capacity)
    best = min(_simulated_extra_bytes(p, plan) for p in _topological_orders(base) for plan in _all_valid_plans(p))
    ordered, sol = solve_schedule(base)
    assert sol.optimal
    assert _simulated_extra_bytes(ordered, sol.plan) == best == round(sol.objective_bytes)


def test_choosing_the_order_beats_the_graph_order():
    """Two branches: run each to its 10 B end before starting the other (brute force says so too)."""
    problem = build_problem(_two_branches(), 450)
    fixed = min(_simulated_extra_bytes(problem, p) for p in _all_valid_plans(problem))
    joint = plan_allocation(_two_branches(), 450, "ilp")
    assert joint.traffic.non_compulsory_bytes < fixed
    assert plan_allocation(_two_branches(), 450, "ilp", schedule=False).traffic.non_compulsory_bytes == fixed


def test_brute_force_sees_a_tight_scratchpad():
    """The optimum of the branchy graph falls as the scratchpad grows (the test can fail)."""
    small = build_problem(_branchy(), 400)
    big = build_problem(_branchy(), 1000)
    assert solve(small).objective_bytes > solve(big).objective_bytes == 0


GRAPHS = {"mobilenet-v1": None, "resnet50": None, "nas": None}


def _graph(name):
    from workloads.zoo import build

    if GRAPHS[name] is None:
        GRAPHS[name] = nas_cells() if name == "nas" else build(name)
    return GRAPHS[name]


@pytest.mark.parametrize("name,capacity_kib", [(n, k) for n in ("mobilenet-v1", "resnet50") for k in (64, 256, 1024)]
                         + [("nas", 1024), ("nas", 2048)])
def test_ilp_le_heuristic_le_greedy(name, capacity_kib):
    g = _graph(name)
    got = {m: plan_allocation(g, capacity_kib << 10, m, time_limit_s=60) for m in ("greedy", "heuristic", "ilp")}
    nc = {m: a.traffic.non_compulsory_bytes for m, a in got.items()}
    assert got["ilp"].optimal  # over every order: the bound holds only for a proven optimum
    assert nc["ilp"] <= nc["heuristic"] <= nc["greedy"]
    assert len({a.traffic.compulsory_bytes for a in got.values()}) == 1


@pytest.mark.parametrize("capacity_kib", [pytest.param(64, marks=pytest.mark.long), 256])  # 64 KiB: 20x the time
def test_heuristic_le_greedy_where_the_joint_ilp_is_too_big(capacity_kib):
    g = _graph("nas")
    heur = plan_allocation(g, capacity_kib << 10, "heuristic")
    greedy = plan_allocation(g, capacity_kib << 10, "greedy")
    assert heur.traffic.non_compulsory_bytes < greedy.traffic.non_compulsory_bytes
    assert sorted(heur.problem.order) == sorted(greedy.problem.order)  # a permutation of the same layers


def test_joint_order_ilp_le_graph_order_ilp_on_resnet():
    g = _graph("resnet50")
    joint = plan_allocation(g, 512 << 10, "ilp", time_limit_s=60)
    assert joint.optimal
    fixed = plan_allocation(g, 512 << 10, "ilp", schedule=False)
    assert joint.traffic.non_compulsory_bytes <= fixed.traffic.non_compulsory_bytes


def test_greedy_plan_traffic_never_exceeds_layer_by_layer():
    g = _graph("resnet50")
    from mappers.fusion import plan_fusion
    from archsim.spec.model import OUTPUT_OPS

    problem = build_problem(g, 256 << 10, plan_fusion(g, OUTPUT_OPS).fused_into)
    assert traffic(problem, greedy_plan(problem)).non_compulsory_bytes <= \
        allocate(problem, "greedy").traffic.non_compulsory_bytes


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(ArchsimError, match="^scratchpad capacity: expected a positive number of bytes, got 0$"):
        build_problem(_chain(), 0)
    with pytest.raises(ArchsimError, match="^allocation: expected one of greedy, ilp, heuristic, got 'lru'$"):
        plan_allocation(_chain(), 2000, "lru")


def test_missing_highspy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "highspy", None)
    with pytest.raises(MappingError, match=r"pip install 'archsim\[cosma\]'"):
        plan_allocation(_chain(), 2000, "ilp")


def test_mapper_option_is_validated_and_applied():
    import mappers
    from archsim.spec import load_arch
    from archsim.spec.options import options_for

    assert options_for("systolic", {}, {"allocation": "ilp"}).allocation == "ilp"
    assert options_for("systolic", {}).allocation == "greedy"
    with pytest.raises(MappingError, match="^allocation: expected one of greedy, ilp, heuristic, got 'best'$"):
        options_for("systolic", {"allocation": "best"})
    # applied to the Program (tests/test_cosma_apply.py counts its bytes)
    assert mappers.compile(_chain(), load_arch("systolic-32x32-ws"), allocation="ilp").allocation["method"] == "ilp"
    assert mappers.compile(_chain(), load_arch("systolic-32x32-ws"), allocation="greedy").layers


@pytest.mark.parametrize("name,capacity_kib", [("resnet50", 256), ("nas", 256), ("mobilenet-v1", 512)])
def test_addresses_never_overlap_and_peak_is_at_least_the_resident_bytes(name, capacity_kib):
    from mappers.allocation.addresses import assign_addresses

    a = plan_allocation(_graph(name), capacity_kib << 10, "ilp", schedule=False)
    placements, peak = assign_addresses(a.problem, a.plan)
    size = [t.size_bytes for t in a.problem.tensors]
    for p, q in itertools.combinations(placements, 2):
        if p.first <= q.last and q.first <= p.last:  # live together: disjoint byte ranges
            assert p.offset_bytes + size[p.tensor] <= q.offset_bytes or q.offset_bytes + size[q.tensor] <= p.offset_bytes
    held = max(sum(t.size_bytes for t, r in zip(a.problem.tensors, a.plan) if s in r)
               for s in range(len(a.problem.order)))
    assert peak >= held
    assert sum(p.last - p.first + 1 for p in placements) == sum(len(r) for r in a.plan)  # every resident step placed


def test_fit_addresses_trades_traffic_for_a_placement_that_fits():
    from mappers.allocation.addresses import assign_addresses

    raw = plan_allocation(_graph("resnet50"), 256 << 10, "ilp", schedule=False)
    assert assign_addresses(raw.problem, raw.plan)[1] > 256 << 10  # fragmentation: the raw plan does not place
    fitted = plan_allocation(_graph("resnet50"), 256 << 10, "ilp", schedule=False, addresses="first-fit")
    assert assign_addresses(fitted.problem, fitted.plan)[1] <= 256 << 10
    assert raw.traffic.non_compulsory_bytes <= fitted.traffic.non_compulsory_bytes \
        < plan_allocation(_graph("resnet50"), 256 << 10, "greedy").traffic.non_compulsory_bytes
    assert not fitted.optimal
