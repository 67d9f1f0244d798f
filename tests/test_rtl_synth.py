"""Synthesis of the systolic RTL with yosys (yowasp): resource counts are sane, DSPs = MACs, cached."""
from __future__ import annotations

import re
import time

import pytest

from archsim.cli import main
from archsim.errors import ToolError
from archsim.templates.systolic import SystolicParams
from rtl.synth import synthesize

pytestmark = pytest.mark.synth


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHSIM_CACHE_DIR", str(tmp_path / "cache"))


def test_generic_2x2_counts_are_sane():
    params = SystolicParams(rows=2, cols=2, dataflow="ws", preload="serial", mult_pipeline_stages=1)
    r = synthesize(params, target="generic", options={"left_depth": 16, "top_depth": 16, "out_depth": 16})
    # per PE at least: psum (32) + product (16) + stationary weight (8) flip-flops
    assert r["ffs"] >= 4 * (32 + 16 + 8)
    assert r["luts"] > 4 * 8 * 8 // 4  # four 8x8 multipliers in 4-input LUTs, at the very least
    assert r["dsps"] == 0 and r["cells"] >= r["luts"] + r["ffs"]
    assert r["params"]["rows"] == 2


def test_ecp5_one_dsp_per_mac_and_cache(monkeypatch):
    import rtl.synth

    params = SystolicParams(rows=2, cols=3, dataflow="ws", mult_pipeline_stages=1)
    opts = {"left_depth": 16, "top_depth": 16, "out_depth": 16}
    first = synthesize(params, target="ecp5", options=opts)
    assert first["dsps"] == 2 * 3
    assert first["luts"] > 0 and first["ffs"] > 0 and first["carry"] > 0
    assert len(list(rtl.synth.cache_dir().glob("*.json"))) == 1  # the result was written to the cache

    def no_tool(name):
        raise AssertionError(f"{name} ran again: the cached result was not used")

    monkeypatch.setattr(rtl.synth, "_tool", no_tool)  # a second synthesis would now fail
    t0 = time.perf_counter()
    again = synthesize(params, target="ecp5", options=opts)
    assert again == first and time.perf_counter() - t0 < 2.0  # read from the cache


def test_ecp5_os_as_shipped_uses_one_dsp_per_mac():
    """OS, double-buffered preset, P = 0: every MAC is one MULT18X18D (its product register inside)."""
    params = SystolicParams(rows=2, cols=3, dataflow="os", preload="double_buffered", mult_pipeline_stages=0)
    r = synthesize(params, target="ecp5", options={"left_depth": 16, "top_depth": 16, "out_depth": 16})
    assert r["dsps"] == 2 * 3 and r["params"]["multiplier"] == "ecp5_dsp"


def test_errors_are_one_line():
    params = SystolicParams(rows=2, cols=2)
    with pytest.raises(ToolError, match=r"^synth target 'xilinx': expected one of ecp5, generic$"):
        synthesize(params, target="xilinx")
    with pytest.raises(ToolError, match=r"^--pnr needs --target ecp5 \(nextpnr-ecp5\)$"):
        synthesize(params, target="generic", pnr=True)


def test_cli_synth_json(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--depth", "16", "--target", "generic", "--json", str(out)]) == 0
    import json

    data = json.loads(out.read_text())
    assert data["arch"] == "systolic-32x32-ws" and data["target"] == "generic"
    assert {"luts", "ffs", "dsps", "cells"} <= set(data)
    # a table for people (issue 16): the design named by its effective parameters
    table = capsys.readouterr().out
    assert re.search(r"^design\s+systolic\[rows=2, cols=2\] \(base preset systolic-32x32-ws\)$", table, re.M)
    assert re.search(rf"^luts\s+{data['luts']:,}$", table, re.M)
    # --json - : JSON on stdout for machines (served from the synthesis cache)
    assert main(["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--depth", "16", "--target", "generic", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out) == data
