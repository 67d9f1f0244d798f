"""``rtl.synth.place_and_route``: the one nextpnr-ecp5 step of ``rtl.synth``, the attention no-share
flow and bench/bench_scale.py. nextpnr is replaced by a stand-in that records its command line and
writes a hand-made report, so the figures read from it are checked without running the tool."""
from __future__ import annotations

import json

import pytest

import rtl.synth
from archsim.errors import ToolError

# a three-step critical path: logic 0.5 + 1.25 ns, routing 2.0 ns (hand-made, as nextpnr's report.json)
REPORT = {"fmax": {"clk": {"achieved": 151.234, "constraint": 150.0}},
          "critical_paths": [{"path": [
              {"type": "logic", "delay": 0.5, "from": {"cell": "a_reg"}, "to": {"cell": "lut1"}},
              {"type": "routing", "delay": 2.0, "from": {"cell": "lut1"}, "to": {"cell": "lut2"}},
              {"type": "logic", "delay": 1.25, "from": {"cell": "lut2"}, "to": {"cell": "b_reg"}}]}],
          "utilization": {"TRELLIS_FF": {"used": 7, "available": 83640},
                          "DP16KD": {"used": 0, "available": 208}}}


def _fake_nextpnr(monkeypatch, report):
    seen: list[list[str]] = []

    def fake_run(cmd, cwd, what, timeout):
        assert what == "nextpnr-ecp5"
        seen.append(cmd)
        (cwd / "report.json").write_text(json.dumps(report))
        return ""

    monkeypatch.setattr(rtl.synth, "run_tool", fake_run)
    return seen


def test_place_and_route_reads_fmax_critical_path_and_used_resources(monkeypatch, tmp_path):
    seen = _fake_nextpnr(monkeypatch, REPORT)
    out = rtl.synth.place_and_route(tmp_path, freq_mhz=150, seed=3, timeout_s=10)
    assert out["fmax_mhz"] == 151.23 and out["pnr_seed"] == 3
    assert out["critical_path"] == {"from": "a_reg", "to": "b_reg", "logic_ns": 1.75, "routing_ns": 2.0}
    assert out["utilization"] == {"TRELLIS_FF": {"used": 7, "available": 83640}}  # unused DP16KD dropped
    cmd = seen[0]
    assert cmd[cmd.index("--seed") + 1] == "3" and cmd[cmd.index("--freq") + 1] == "150"
    assert "--out-of-context" in cmd and cmd[cmd.index("--json") + 1] == "netlist.json"


def test_place_and_route_refuses_a_report_without_a_clock(monkeypatch, tmp_path):
    _fake_nextpnr(monkeypatch, {"fmax": {}, "utilization": {}})
    with pytest.raises(ToolError, match="no clock"):
        rtl.synth.place_and_route(tmp_path)


def test_every_flow_uses_the_one_helper():
    import bench.bench_scale as scale
    import rtl.attention.synth as attention

    assert attention.place_and_route is rtl.synth.place_and_route
    assert scale.place_and_route is rtl.synth.place_and_route
