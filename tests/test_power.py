"""rtl.power (switching activity of synthesized netlists) and the LUT core's gate-level run.

Expected values are worked out by hand (fanouts of a hand-written netlist,
toggles of a hand-written VCD, a counter's toggles in closed form) or come
from the archsim models through the shared co-simulation check.
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from rtl.power import (
    CLOCK_UNITS_PER_FF,
    Activity,
    count_activity,
    parse_netlist,
    stream_units,
    switching_units,
)

NETLIST = """/* hand-written in yosys' write_verilog -noattr style */
module m(clk, rst, a, b, y);
  input clk;
  wire clk;
  input rst;
  wire rst;
  input [1:0] a;
  wire [1:0] a;
  input b;
  wire b;
  output [1:0] y;
  reg [1:0] y = 2'h0;
  wire _0_;
  wire \\esc.n ;
  assign _0_ = 4'h8 >> { a[0], b };
  assign \\esc.n  = 8'h96 >> { a, _0_ };
  always @(posedge clk)
    if (rst) y[0] <= 1'h0;
    else y[0] <= _0_;
  always @(posedge clk)
    y[1] <= \\esc.n ;
endmodule
"""


def test_parse_netlist_counts_fanout_luts_and_flip_flops_by_hand():
    net = parse_netlist(NETLIST)
    assert net.module == "m" and net.luts == 2 and net.flip_flops == 2
    # a[0]: both LUTs (the second reads all of a); a[1]: the second LUT; b: the first LUT
    assert net.bit_fanout("a", 0) == 2 and net.bit_fanout("a", 1) == 1 and net.bit_fanout("b", 0) == 1
    # _0_: the second LUT and y[0]'s flip-flop; the escaped net: y[1]'s; rst: y[0]'s reset
    assert net.bit_fanout("_0_", 0) == 2 and net.bit_fanout("esc.n", 0) == 1 and net.bit_fanout("rst", 0) == 1
    assert net.bit_fanout("y", 0) == 0 and net.bit_fanout("clk", 0) == 0  # the clock load is counted apart


VCD = """$timescale 1ps $end
$scope module tb $end
$var reg 1 ! clk $end
$var reg 1 " measure $end
$scope module dut $end
$var wire 2 # a [1:0] $end
$var wire 1 $ _0_ $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
0"
b00 #
x$
$end
#5
1!
b11 #
#10
0!
1"
b10 #
0$
#15
1!
b01 #
1$
#20
0!
b11 #
0$
#25
1!
0"
b00 #
1$
"""


def test_count_activity_counts_bits_inside_the_gate_only(tmp_path):
    vcd = tmp_path / "a.vcd"
    vcd.write_text(VCD)
    act = count_activity(vcd, "tb.dut", "tb.measure", "tb.clk")
    # gate on from #10 to #25: a 11->10 (bit 0), 10->01 (both), 01->11 (bit 1); _0_ x->0 no, 0->1, 1->0
    assert act.toggles == {("a", 0): 2, ("a", 1): 2, ("_0_", 0): 2}
    assert act.cycles == 1  # rising edges while gated: #15 (#25's comes with the gate off)


def test_switching_units_weigh_toggles_by_load_and_add_the_clock():
    net = parse_netlist(NETLIST)
    act = Activity(toggles={("a", 0): 3, ("_0_", 0): 1, ("y", 1): 2}, cycles=10)
    units = switching_units(net, act)
    assert units["data_units"] == 3 * (1 + 2) + 1 * (1 + 2) + 2 * (1 + 0)
    assert units["clock_units"] == CLOCK_UNITS_PER_FF * 2 * 10


@pytest.mark.synth
@pytest.mark.rtl
def test_counter_netlist_toggles_in_closed_form(tmp_path):
    """A synthesized 4-bit counter counting C cycles: bit i of its register toggles C // 2**i times,
    over C clock cycles, with the clock load of its 4 flip-flops."""
    if not shutil.which("iverilog"):
        pytest.skip("iverilog not installed")
    from pathlib import Path

    from rtl.synth import synthesize_verilog

    src = ("module cnt(input clk, input rst, input en, output reg [3:0] q = 4'h0);\n"
           "always @(posedge clk) if (en) q <= q + 4'h1;\nendmodule\n")
    text = Path(synthesize_verilog(src, "cnt", target="generic", netlist=True)["netlist"]).read_text()
    assert parse_netlist(text).flip_flops == 4
    cycles = 37
    units = stream_units(text, "cnt", [("en", 1)], [[1]] * cycles + [[0]], workdir=tmp_path)
    assert units["cycles"] == cycles and units["clock_units"] == CLOCK_UNITS_PER_FF * 4 * cycles
    act = count_activity(tmp_path / "activity.vcd", "tb.dut", "tb.measure", "tb.clk")
    assert {bit: act.toggles.get(("q", bit), 0) for bit in range(4)} == {i: cycles // 2 ** i for i in range(4)}


def _lut_build():
    from archsim.templates.lut.params import LutParams
    from rtl.lut.rtl_design import LutDesign

    p = LutParams(group_k=4, tile_k=4, tile_m=2, tile_n=4, precompute_entries_per_cycle=2,
                  weight_formats=["int1", "int2"], activation_formats=["int8"], weight_format="int2",
                  activation_format="int8")
    opts = {"external_buffers": True, "act_depth": 8, "weight_depth": 16, "out_depth": 8, "table_depth": 8}
    return p, opts, LutDesign(p, opts)


@pytest.mark.synth
@pytest.mark.rtl
def test_lut_netlist_gate_level_matches_the_models_and_a_broken_lut_is_caught():
    """The synthesized LUT core (external buffers) inside the core's own buffers gives the models'
    outputs and cycles on conformance tiles; inverting one LUT that drives an accumulator bit is caught."""
    if not shutil.which("iverilog"):
        pytest.skip("iverilog not installed")
    from pathlib import Path

    from archsim.templates.lut import conformance
    from rtl.lut.gate_level import run_gate_level
    from rtl.synth import synthesize

    p, opts, design = _lut_build()
    text = Path(synthesize(p, target="generic", options=opts, netlist=True)["netlist"]).read_text()
    items = [(t, o) for t, o in conformance.sample_tiles(np.random.default_rng(3), p, 10) if design.fits(t)]
    assert len(items) >= 6
    report, units = run_gate_level(design, items, text)
    assert report.ok, report.summary()
    assert units["cycles"] > 0 and units["data_units"] > 0

    match = re.search(r"assign out_wdata\[0\] = (\d+)'h([0-9a-f]+) >>", text)
    assert match, "the netlist drives out_wdata[0] from a LUT"
    width, const = int(match.group(1)), int(match.group(2), 16)
    broken = text.replace(match.group(0), f"assign out_wdata[0] = {width}'h{const ^ ((1 << width) - 1):x} >>", 1)
    bad, _ = run_gate_level(design, items, broken)
    assert not bad.ok


@pytest.mark.synth
def test_synth_netlist_option_keeps_the_figures_and_the_cache(tmp_path, monkeypatch):
    """``netlist=True`` returns the mapped netlist beside the same figures; a result cached without its
    netlist is synthesized again once, then both come from the cache."""
    from pathlib import Path

    from rtl.synth import synthesize_verilog

    monkeypatch.setenv("ARCHSIM_CACHE_DIR", str(tmp_path / "cache"))
    src = "module x(input clk, input [3:0] a, output reg [3:0] y); always @(posedge clk) y <= a ^ {a[0], a[3:1]}; endmodule\n"
    plain = synthesize_verilog(src, "x", target="generic")
    assert "netlist" not in plain
    stages = []
    with_netlist = synthesize_verilog(src, "x", target="generic", netlist=True, progress=stages.append)
    assert stages == ["yosys"]  # the cached figures have no netlist yet
    text = Path(with_netlist["netlist"]).read_text()
    assert re.search(r"^module x\(", text, re.M) and parse_netlist(text).flip_flops == 4
    assert {k: v for k, v in with_netlist.items() if k != "netlist"} == plain
    stages.clear()
    assert synthesize_verilog(src, "x", target="generic", netlist=True, progress=stages.append) == with_netlist
    assert stages == ["cached"]


@pytest.mark.rtl
def test_a_verilog_error_is_one_line_naming_the_error(tmp_path):
    """A compile error in a bench is a one-line ToolError naming iverilog's file:line error, not a traceback."""
    if not shutil.which("iverilog"):
        pytest.skip("iverilog not installed")
    from archsim.errors import ToolError
    from rtl.power import run_icarus

    with pytest.raises(ToolError, match=r"power: iverilog failed: tb\.v:1: .*error") as err:
        run_icarus({"tb.v": "module tb; reg x = ; endmodule\n"}, "tb", tmp_path)
    assert "\n" not in str(err.value)
