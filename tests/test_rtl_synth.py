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


def test_generic_reports_logic_levels():
    """--target generic: the longest register-to-register path in 4-LUT cells (yosys ltp), and the clock the
    levels-per-ns rule allows. An unpipelined multiply-add chain is deeper than a registered one."""
    from rtl.lib.units import FpMul
    from amaranth.back import verilog

    from rtl.synth import LUT4_LEVELS_PER_NS, synthesize_verilog

    levels = {}
    for stages in (1, 4):
        text = verilog.convert(FpMul("fp8_e4m3", stages), name="m", emit_src=False)
        r = synthesize_verilog(text, "m", target="generic")
        levels[stages] = r["logic_levels"]
        assert r["levels_clock_mhz"] == round(1000.0 * LUT4_LEVELS_PER_NS / r["logic_levels"], 1)
    assert 2 <= levels[4] < levels[1]


def test_generic_ltp_text_is_parsed():
    from rtl.synth import logic_levels

    text = "Longest topological path in t (length=6):\n    0: \\ra [6]\n"
    assert logic_levels(text) == {"logic_levels": 6, "levels_clock_mhz": round(10000 / 6, 1)}
    assert logic_levels("no path") == {}


def test_a_webassembly_trap_is_named(tmp_path):
    """The yowasp build's out-of-memory trap becomes one line naming the cause and the fix."""
    import sys

    from rtl.synth import run_tool

    cmd = [sys.executable, "-c", "import sys; sys.stderr.write('wasmtime._trap.Trap: error while executing at wasm "
           "backtrace:\\n    0: 0x1 - <unknown>!yosys\\n'); sys.exit(1)"]
    with pytest.raises(ToolError, match=r"^yosys failed: the WebAssembly build \(yowasp\) trapped, most likely at "
                                        r"its 4 GiB memory limit.*apt-get install -y yosys.*ARCHSIM_YOSYS=native"):
        run_tool(cmd, tmp_path, "yosys", 30)


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
    with pytest.raises(ToolError, match=r"^synth target 'xilinx': expected one of ecp5, generic, gates$"):
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


def test_native_ecp5_flow_skips_only_autoname(tmp_path, monkeypatch):
    """``ARCHSIM_YOSYS=native`` runs synth_ecp5 without its autoname step (cell names only; in Debian's
    0.23 it alone outlasted 900 s on the LUT core's A16 build): the cell counts equal those of the full
    ``synth_ecp5`` script run directly on the same Verilog."""
    import json
    import shutil
    import subprocess

    from rtl.synth import resources_from_stat, synthesize_verilog

    yosys = shutil.which("yosys")
    if not yosys:
        pytest.skip("no native yosys on PATH")
    src = ("module x(input clk, input [7:0] a, input [7:0] b, output reg [15:0] y, output reg [3:0] n = 0);\n"
           "always @(posedge clk) begin y <= a * b + y; n <= n + 4'h1; end\nendmodule\n")
    monkeypatch.setenv("ARCHSIM_YOSYS", "native")
    got = synthesize_verilog(src, "x", target="ecp5")
    assert got["tools"]["yosys"].startswith("native")
    (tmp_path / "top.v").write_text(src)
    subprocess.run([yosys, "-q", "-p", "read_verilog top.v; synth_ecp5 -top x; tee -q -o stat.json stat -json"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    full = resources_from_stat(json.loads((tmp_path / "stat.json").read_text()), "ecp5")
    assert {k: got[k] for k in full} == full
    assert full["ffs"] >= 4 and full["luts"] > 0  # at least n's register (a DSP may absorb y's) and its adder


@pytest.mark.parametrize("flow", ["yowasp", "native"])
def test_ecp5_keeps_register_copies_marked_keep(flow, monkeypatch):
    """A register copy whose output the RTL marks ``keep`` (a fan-out copy, e.g. the PIM partial memories'
    read address, one per memory) stays its own flip-flop; unmarked equal registers still merge. Counted
    by hand: two 6-bit registers with the same input are 12 flip-flops kept, 6 merged."""
    import shutil

    from rtl.synth import synthesize_verilog

    if flow == "native":
        if not shutil.which("yosys"):
            pytest.skip("no native yosys on PATH")
        monkeypatch.setenv("ARCHSIM_YOSYS", "native")
    else:
        monkeypatch.delenv("ARCHSIM_YOSYS", raising=False)

    def ffs(attr: str) -> int:
        src = (f"module x(input clk, input [5:0] d, output [5:0] q0, output [5:0] q1);\n"
               f"{attr} reg [5:0] a0 = 0;\n{attr} reg [5:0] a1 = 0;\n"
               "always @(posedge clk) begin a0 <= d; a1 <= d; end\nassign q0 = a0; assign q1 = a1;\nendmodule\n")
        return synthesize_verilog(src, "x", target="ecp5", use_cache=False)["ffs"]
    assert ffs("(* keep = 32'd1 *)") == 12
    assert ffs("") == 6


def test_a_changed_yosys_flow_is_not_served_from_the_cache(monkeypatch):
    """The cache key holds the yosys script: the same Verilog under an edited flow (say, a new ``keep``
    rule) runs yosys again instead of returning the old flow's figures; the unchanged flow is cached."""
    import rtl.synth

    src = "module cnt(input clk, output reg [3:0] q); always @(posedge clk) q <= q + 1; endmodule\n"
    first = rtl.synth.synthesize_verilog(src, "cnt", target="generic")
    assert first["ffs"] == 4
    real_script, real_tool = rtl.synth.yosys_script, rtl.synth._tool
    ran = []

    def counting_tool(name):
        ran.append(name)
        return real_tool(name)

    monkeypatch.setattr(rtl.synth, "_tool", counting_tool)
    assert rtl.synth.synthesize_verilog(src, "cnt", target="generic") == first and ran == []  # cached
    monkeypatch.setattr(rtl.synth, "yosys_script",
                        lambda top, target, **kw: real_script(top, target, **kw).replace("-lut 4", "-lut 6"))
    edited = rtl.synth.synthesize_verilog(src, "cnt", target="generic")
    assert "yosys" in ran and edited["ffs"] == 4
