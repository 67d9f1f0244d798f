"""Sweep spec parsing: axis forms, workloads, objectives, constraints, one-line errors."""
from __future__ import annotations

import re

import pytest

from archsim.dse import load_sweep, parse_sweep
from archsim.errors import SpecError


def spec(**extra):
    data = {"name": "s", "base": "fake-base", "axes": {"rows": [8, 16]}, "workloads": ["w1"]}
    data.update(extra)
    return data


def error(data, source="sw.yaml") -> str:
    with pytest.raises(SpecError) as info:
        parse_sweep(data, source=source)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_axis_forms_expand():
    s = parse_sweep(spec(axes={
        "rows": [8, 16, 32],
        "cols": {"log2_range": [8, 64]},
        "buffers.input.bytes": {"range": [1024, 4096, 1024]},
        "clock_mhz": {"range": [0.5, 1.0, 0.25]},
        "dataflow": {"choice": ["ws", "os"]},
        "x": {"log2_range": [1, 64, 2]},
    }))
    values = {a.key: a.values for a in s.axes}
    assert values == {
        "rows": (8, 16, 32),
        "cols": (8, 16, 32, 64),
        "buffers.input.bytes": (1024, 2048, 3072, 4096),
        "clock_mhz": (0.5, 0.75, 1.0),
        "dataflow": ("ws", "os"),
        "x": (1, 4, 16, 64),
    }
    assert s.grid_size == 3 * 4 * 4 * 3 * 2 * 4


def test_defaults_and_workload_params():
    s = parse_sweep(spec(workloads=["w1", {"name": "bert_base", "seq_len": 128}]))
    assert [o.metric for o in s.objectives] == ["cycles", "energy_pj", "area_mm2"]
    assert all(o.sense == "min" for o in s.objectives)
    assert s.workloads[1].params == (("seq_len", 128),)
    assert s.workloads[1].label == "bert_base(seq_len=128)"
    assert s.area == "model" and s.sample is None


def test_objectives_and_constraints():
    s = parse_sweep(spec(objectives=["edp", {"utilization": "max"}, "latency"],
                         constraints=["area_mm2 <= 5", "utilization>=0.5", "energy < 1e9"]))
    assert [(o.metric, o.sense) for o in s.objectives] == [("edp_pj_s", "min"), ("utilization", "max"), ("latency_s", "min")]
    assert [(c.metric, c.op, c.bound) for c in s.constraints] == [
        ("area_mm2", "<=", 5.0), ("utilization", ">=", 0.5), ("energy_pj", "<", 1e9)]
    assert s.constraints[0].holds(5.0) and not s.constraints[0].holds(5.01)
    assert not s.constraints[1].holds(None)


@pytest.mark.parametrize("data, message", [
    ({"name": "s"}, r"sw\.yaml: base: missing; a sweep needs name, base, axes and workloads"),
    (spec(colour=1), r"sw\.yaml: colour: unknown key; expected one of name, .*"),
    (spec(name="a b"), r"sw\.yaml: name: expected a name of letters, .*, got 'a b'"),
    (spec(axes={"rows": 8}), r"sw\.yaml: axes\.rows: expected a list of values, \{range: \[start, stop, step\]\}, .*got 8"),
    (spec(axes={"rows": []}), r"sw\.yaml: axes\.rows: expected at least one value"),
    (spec(axes={"rows": [8, 8]}), r"sw\.yaml: axes\.rows: expected distinct values, got \[8, 8\]"),
    (spec(axes={"rows": {"range": [8, 4, 1]}}), r"sw\.yaml: axes\.rows\.range: expected start <= stop and step > 0, got \[8, 4, 1\]"),
    (spec(axes={"rows": {"range": [8, 16]}}), r"sw\.yaml: axes\.rows\.range: expected \[start, stop, step\] numbers, got \[8, 16\]"),
    (spec(axes={"rows": {"log2_range": [8, 48]}}), r"sw\.yaml: axes\.rows\.log2_range: expected powers of two, got 48"),
    (spec(axes={"rows": {"choice": 3}}), r"sw\.yaml: axes\.rows\.choice: expected a list of values, got 3"),
    (spec(sample={"n": 0}), r"sw\.yaml: sample\.n: expected a positive integer, got 0"),
    (spec(sample=5), r"sw\.yaml: sample: expected a mapping \{n: N, seed: S\}, got 5"),
    (spec(workloads=[]), r"sw\.yaml: workloads: expected a non-empty list of names, .*"),
    (spec(workloads=["w1", "w1"]), r"sw\.yaml: workloads: w1 is listed twice"),
    (spec(workloads=["missing/file.yaml"]), r"sw\.yaml: workloads\[0\]: no such workload file 'missing/file\.yaml'"),
    (spec(objectives={"speed": "min"}), r"sw\.yaml: objectives\.speed: unknown objective; expected one of cycles, .*"),
    (spec(objectives={"cycles": "low"}), r"sw\.yaml: objectives\.cycles: expected min or max, got 'low'"),
    (spec(objectives={"luts": "min"}), r"sw\.yaml: objectives\.luts: unknown objective; .*"),
    (spec(constraints=["area is small"]), r"sw\.yaml: constraints\[0\]: expected 'metric <op> number' .*, got 'area is small'"),
    (spec(constraints=["speed <= 4"]), r"sw\.yaml: constraints\[0\]: unknown metric 'speed'; .*"),
    (spec(area="yosys"), r"sw\.yaml: area: expected 'model' or 'synth', got 'yosys'"),
    (spec(simulate={"seq_len": 4}), r"sw\.yaml: simulate\.seq_len: unknown option; expected one of detailed, weights, activations, objective, conv_lowering, fusion, allocation \(workload parameters go with the workload, .*\)"),
    (spec(set={"rows": 4}), r"sw\.yaml: axes\.rows: also given in set; a parameter is either swept or fixed"),
])
def test_errors_are_one_line(data, message):
    assert re.fullmatch(message, error(data)), error(data)


def test_synth_metrics_need_area_synth():
    s = parse_sweep(spec(area="synth", objectives={"luts": "min", "cycles": "min"}, synth={"target": "generic"}))
    assert [o.metric for o in s.objectives] == ["synth_luts", "cycles"]
    assert "synth_cells" in s.metrics


def test_load_from_file_and_yaml_errors(tmp_path):
    path = tmp_path / "my.yaml"
    path.write_text("name: mine\nbase: fake-base\naxes: {rows: [8]}\nworkloads: [w1]\n")
    assert load_sweep(str(path)).name == "mine"
    path.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match=r"^.*my\.yaml: line \d+: .*$"):
        load_sweep(str(path))
    with pytest.raises(SpecError, match=r"^unknown sweep 'no-such-sweep'; expected a sweep YAML file or one of: .*$"):
        load_sweep("no-such-sweep")
