"""Planning a sweep: axis checks, grid and sampling, pruning, undecidable vs impossible constraints."""
from __future__ import annotations

import re

import pytest

from archsim.area import area_mm2
from archsim.dse import build_plan, parse_sweep
from archsim.errors import SpecError
from test_dse_helpers import fake_loader, no_workload_check


def plan_of(**extra):
    data = {"name": "s", "base": "fake-base", "axes": {"rows": [8, 16], "dataflow": ["ws", "os"]}, "workloads": ["w1", "w2"]}
    data.update(extra)
    return build_plan(parse_sweep(data, source="sw.yaml"), loader=fake_loader, workload_check=no_workload_check)


def plan_error(**extra) -> str:
    with pytest.raises(SpecError) as info:
        plan_of(**extra)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_grid_tasks_and_keys():
    plan = plan_of()
    assert len(plan.tasks) == 8 and not plan.skipped
    assert [t.index for t in plan.tasks] == list(range(8))
    assert [(dict(t.config)["rows"], dict(t.config)["dataflow"], t.workload.name) for t in plan.tasks[:4]] == [
        (8, "ws", "w1"), (8, "ws", "w2"), (8, "os", "w1"), (8, "os", "w2")]
    assert len({t.key for t in plan.tasks}) == 8
    assert plan.tasks[2].arch.params.dataflow == "os"
    # same configuration -> same keys in a fresh plan; another axis order -> same keys too
    again = plan_of(axes={"dataflow": ["ws", "os"], "rows": [8, 16]})
    assert {t.key for t in again.tasks} == {t.key for t in plan.tasks}


def test_wildcard_axis_sets_every_buffer():
    plan = plan_of(axes={"buffers.*.bytes": [4096, 8192]})
    assert [sorted({b.bytes for b in t.arch.buffers.values()}) for t in plan.tasks[::2]] == [[4096], [8192]]


def test_sample_is_deterministic_subset():
    axes = {"rows": {"choice": [8, 16, 32]}, "cols": {"choice": [8, 16, 32]}, "dataflow": {"choice": ["ws", "os", "is"]}}
    one = plan_of(axes=axes, sample={"n": 5, "seed": 3}, workloads=["w1"])
    two = plan_of(axes=axes, sample={"n": 5, "seed": 3}, workloads=["w1"])
    other = plan_of(axes=axes, sample={"n": 5, "seed": 4}, workloads=["w1"])
    configs = [t.config for t in one.tasks]
    assert len(configs) == len(set(configs)) == 5
    assert configs == [t.config for t in two.tasks]
    assert configs != [t.config for t in other.tasks]
    full = plan_of(axes=axes, workloads=["w1"])
    assert set(configs) <= {t.config for t in full.tasks}
    # a sample larger than the grid is the grid
    assert len(plan_of(axes=axes, sample={"n": 1000, "seed": 1}, workloads=["w1"]).tasks) == 27


def test_unknown_axis_is_one_line_before_work():
    assert re.fullmatch(
        r"sw\.yaml: axes\.rowz: no such parameter in arch 'fake-base'; expected a systolic param \(rows, cols, dataflow, .*\) "
        r"or a dotted spec key such as buffers\.input\.bytes, dram\.bytes_per_cycle, clock_mhz",
        plan_error(axes={"rowz": [8]}))
    assert re.fullmatch(r"sw\.yaml: axes\.buffers\.scratch\.bytes: no such parameter in arch 'fake-base'; .*",
                        plan_error(axes={"buffers.scratch.bytes": [8]}))


def test_bad_axis_value_and_workload():
    assert re.fullmatch(r"sw\.yaml: axes\.dataflow: value 'xs' rejected: fake-base: params\.dataflow: expected one of .*",
                        plan_error(axes={"dataflow": ["ws", "xs"]}))
    assert plan_error(workloads=["nope"]) == "sw.yaml: workloads[0] (nope): unknown workload 'nope'"
    assert plan_error(base="no-such-arch") == "sw.yaml: base: unknown arch preset 'no-such-arch'"


def test_invalid_combination_is_skipped_not_fatal():
    # 64x64 needs 4096 weight bytes: fine with 8192, invalid with 2048 (only that combination)
    plan = plan_of(axes={"rows": [8, 64], "cols": [64], "buffers.weight.bytes": [2048, 8192]}, workloads=["w1"])
    assert [(dict(s.config)["rows"], s.status) for s in plan.skipped] == [(64, "invalid")]
    assert len(plan.tasks) == 3


def test_area_constraint_prunes_and_impossible_is_error():
    areas = sorted({area_mm2(t.arch) for t in plan_of().tasks})
    cut = (areas[0] + areas[-1]) / 2
    plan = plan_of(constraints=[f"area_mm2 <= {cut}"])
    assert plan.tasks and all(t.area_mm2 <= cut for t in plan.tasks)
    assert plan.skipped and all(s.status == "pruned" and s.area_mm2 > cut for s in plan.skipped)
    assert re.fullmatch(
        r"sw\.yaml: constraints: no point can meet area_mm2 <= 0\.01: the smallest point's area is [0-9.]+ mm2",
        plan_error(constraints=["area_mm2 <= 0.01"]))
    assert f"{areas[0]:.4g}" in plan_error(constraints=["area_mm2 <= 0.01"])


@pytest.mark.parametrize("constraint, message", [
    ("utilization >= 1.5", r"sw\.yaml: constraints\[0\]: 'utilization >= 1\.5' can never hold: utilization is always within \[0, 1\]"),
    ("cycles <= 0", r"sw\.yaml: constraints\[0\]: 'cycles <= 0' can never hold: cycles is always > 0"),
    ("energy < -3", r"sw\.yaml: constraints\[0\]: 'energy < -3' can never hold: energy_pj is always > 0"),
])
def test_constraints_that_cannot_hold(constraint, message):
    assert re.fullmatch(message, plan_error(constraints=[constraint]))
