"""Report writers: determinism, CSV columns, trace format, atomic replacement."""
from __future__ import annotations

import json
import os

import pytest

from archsim.report.result import LayerResult, SimResult
from archsim.report.writers import (
    compute_report_text,
    layers_csv_text,
    report_json_text,
    trace_json_text,
    write_reports,
)


def make_result(trace=True) -> SimResult:
    l0 = LayerResult("conv1", "conv2d", 1000, 100, 80, 20, 1000 / (16 * 100), 300, 200, 12.5,
                     {"input": 100, "output": 200}, {"input": 150, "weight": 50}, {"compute": 10.0, "dram": 2.5},
                     {"dataflow": "ws", "tile_m": 8}, mapping_efficiency=0.75, compute_utilization=1000 / (16 * 80))
    l1 = LayerResult("relu", "elementwise", 0, 10, 10, 0, 0.0, 0, 0, 1 / 3, start_cycle=100)
    r = SimResult.from_layers([l0, l1], arch_name="toy", workload_name="net", clock_mhz=500, peak_macs_per_cycle=16)
    if trace:
        r.trace = [(0, "conv1", 0, 100, 1, [("dma", 0.0, 8.0, "load", 0), ("array", 8.0, 88.0, "compute", 1)])]
        r.trace_layers = 1
    return r


def test_totals_from_layers():
    r = make_result()
    assert (r.total_cycles, r.compute_cycles, r.stall_cycles, r.macs) == (110, 90, 20, 1000)
    assert r.latency_s == pytest.approx(110 / 500e6)
    assert r.utilization == pytest.approx(1000 / (16 * 110))
    assert r.energy_pj == pytest.approx(12.5 + 1 / 3)


def test_report_json_is_deterministic_and_sorted():
    a, b = report_json_text(make_result()), report_json_text(make_result())
    assert a == b
    d = json.loads(a)
    assert list(d) == sorted(d)
    assert d["total_cycles"] == 110 and d["layers"][0]["mapping"] == {"dataflow": "ws", "tile_m": 8}
    assert d["layers"][1]["energy_pj"] == 0.3333333333  # 10 significant digits
    assert "trace" not in d


def test_layers_csv_columns():
    lines = layers_csv_text(make_result()).splitlines()
    header = lines[0].split(",")
    assert header[:7] == ["index", "name", "op", "macs", "cycles", "compute_cycles", "stall_cycles"]
    row = dict(zip(header, lines[1].split(",", len(header) - 1)))
    assert (row["name"], row["cycles"], row["dram_input_bytes"], row["dram_weight_bytes"]) == ("conv1", "100", "150", "50")
    assert len(lines) == 3


def test_layers_csv_dram_columns_sum_to_dram_bytes_with_fused_residuals():
    """On ResNet-18 with fused residual adds, each row's per-operand DRAM columns add up to ``dram_bytes``."""
    import csv
    import io

    from archsim.simulation import simulate
    from archsim.spec.load import load_arch

    result = simulate("resnet18", load_arch("systolic-32x32-ws"), trace_layers=0)
    rows = list(csv.DictReader(io.StringIO(layers_csv_text(result))))
    parts = ("dram_input_bytes", "dram_weight_bytes", "dram_output_bytes", "dram_residual_bytes")
    assert any(int(r["dram_residual_bytes"]) > 0 for r in rows)  # the fused adds read their residual
    for r in rows:
        assert sum(int(r[c]) for c in parts) == int(r["dram_bytes"]), r["name"]


def test_compute_report_matches_scalesim_layout():
    lines = compute_report_text(make_result()).splitlines()
    assert lines[0] == "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,"
    # util 1000/(16*100) = 62.5 %, compute util 1000/(16*80) = 78.125 %
    # a 100-cycle layer ends at cycle index 99, which is what SCALE-Sim reports
    assert lines[1] == "0, 99, 20, 62.5, 75, 78.125,"


def test_trace_events():
    doc = json.loads(trace_json_text(make_result()))
    ev = doc["traceEvents"]
    complete = [e for e in ev if e["ph"] == "X"]
    layer_track = [e for e in complete if e["tid"] == 0]
    assert [(e["name"], e["ts"], e["dur"]) for e in layer_track] == [("conv1", 0, 0.2), ("relu", 0.2, 0.02)]
    names = {e["args"]["name"]: e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(names) == {"layers", "dma", "array"}
    arr = [e for e in complete if e["tid"] == names["array"]]
    assert arr[0]["ts"] == pytest.approx(8 / 500) and arr[0]["dur"] == pytest.approx(80 / 500)
    assert doc["otherData"]["note"].startswith("per-command events for the first 1 of 2 layers")
    capped = json.loads(trace_json_text(make_result(), max_events=4))
    assert "capped at 4 events" in capped["otherData"]["note"]


def test_write_reports_replaces_atomically(tmp_path, monkeypatch):
    out = tmp_path / "sim_out" / "run"
    write_reports(make_result(), str(out), plots=True)
    names = sorted(os.listdir(out))
    assert names == [".archsim-output", "COMPUTE_REPORT.csv", "layers.csv", "plots", "report.json", "summary.md",
                     "trace.json"]  # .archsim-output: the marker saying archsim owns the folder
    assert sorted(os.listdir(out / "plots")) == ["layers.png", "roofline.png"]
    first = (out / "report.json").read_bytes()
    # a failing write keeps the previous folder intact and leaves no temp folder behind
    import archsim.report.writers as w

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(w, "summary_md_text", boom)
    with pytest.raises(RuntimeError):
        write_reports(make_result(), str(out), plots=False)
    assert (out / "report.json").read_bytes() == first
    assert sorted(os.listdir(tmp_path / "sim_out")) == ["run"]


def test_a_rate_extra_is_shown_per_second_not_as_a_duration():
    from archsim.report.writers import _extra

    assert _extra("tokens_per_s", 20.0) == "20 /s"  # a rate: tokens per second
    assert _extra("latency_s", 0.05) == "50 ms"  # a duration
