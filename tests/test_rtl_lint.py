"""Verilator -Wall lint of every template's generated Verilog with the shipped waivers (rtl.lint).

Each run lints the Verilog the current code generates (so a datapath rewrite is checked as is):
zero warnings with the waivers, and no waiver is vacuous -- each entry covers a warning that the
raw lint reports, and removing entries brings their warnings back. A planted real truncation and a
planted undriven signal stay visible through the waivers.
"""
from __future__ import annotations

import re

import pytest

from archsim.cli import main
from archsim.errors import ToolError
from archsim.spec import load_arch
from archsim.templates.lut import conformance
from rtl.generate import design_for, write_outputs
from rtl.lint import (CATEGORY_REASONS, MODEL_REASONS, case_findings, design_waivers, lint_verilog, top_module,
                      truncation_lines, waiver_entries, waivers_for)

#: each template's small configuration (base preset, overrides)
SMALL = {
    "systolic": ("systolic-32x32-ws", {"rows": 4, "cols": 4}, None),
    # OS dataflow (If/Elif casez) with the ECP5 multiplier (+ MULT18X18D_model.v)
    "systolic_os_dsp": ("systolic-32x32-os", {"rows": 2, "cols": 2}, {"multiplier": "ecp5_dsp"}),
    "simd": ("simd-edge", {"pes": 2}, None),
    "simd_bitmod": ("simd-edge", {"pes": 2, "lane_bits": 16, "pe": "bitmod", "group_size": 16, "pipeline_cycles": 2,
                                  "formats": ["fp4_er_pos", "int8"], "weight_format": "fp4_er_pos",
                                  "activation_format": "int8"}, None),
    "simd_bitmod_fp16": ("simd-edge", {"pes": 2, "lane_bits": 16, "pe": "bitmod", "group_size": 16,
                                       "pipeline_cycles": 2, "formats": ["fp4_er_pos", "int8", "fp16"],
                                       "weight_format": "fp4_er_pos", "activation_format": "fp16"}, None),
    # the pipelined PE (accumulators > 1: packed_round int->fp, scale multiply, final add and rings), its
    # deepest lane and scale cuts on registered ECP5 DSP blocks
    "simd_pipelined": ("simd-edge", {"pes": 2, "accumulators": 2, "lane_stages": 9, "scale_stages": 11,
                                     "pipeline_cycles": 40, "formats": ["int4", "int8", "fp8_e4m3", "fp16", "posit16_1"]},
                       {"multiplier": "ecp5_dsp"}),
    "lut": (conformance.base_arch, dict(conformance.rtl_arch), None),
    # the A16 timing build's depths: lookup_interleave 16, every precompute fp32 add pipelined
    "lut_interleave16": (conformance.base_arch, {**conformance.rtl_arch, "lookup_interleave": 16,
                                                 "pipeline_cycles": 44, "precompute_pipeline_cycles": 37}, None),
    # the table register stage (pipeline 5: per-lane index registers, negated int table)
    "lut_table_register": (conformance.base_arch, {**conformance.rtl_arch, "pipeline_cycles": 5}, None),
    "pim": ("pim-gpt-gddr6", {}, None),
    # the P = 16 bank measured for 150 MHz (reused reduction adders, registered DSP blocks + their model)
    "pim_p16": ("pim-gpt-gddr6", {"column_bytes": 4, "accumulator_interleave": 16, "mac_pipeline_cycles": 26},
                {"mul": "dsp_reg", "mul_stages": 9, "add_stages": 11}),
    # a channel of 2 banks (the all-bank gather, PimChannelGather)
    "pim_channel": ("pim-gpt-gddr6", {}, {"banks": 2}),
    "attention": ("fusemax-edge", {"rows": 2, "cols": 2, "pe1d": 2}, None),
    # the pipelined 2D PE (latency2d*) and 1D lanes (latency1d: mul, add at its deepest, exp, recip)
    "attention_latency": ("fusemax-edge", {"rows": 2, "cols": 2, "pe1d": 2, "latency2d": 2, "latency2d_add": 3,
                                           "latency2d_rint": 2, "latency2d_ldexp": 1,
                                           "latency1d": {"mul": 2, "add": 12, "exp": 14, "recip": 4}}, None),
    # the 2D PE at its deepest (measured >= 150 MHz alone) with its multiplier on registered DSP blocks
    "attention_deepest_dsp": ("fusemax-edge", {"rows": 2, "cols": 2, "pe1d": 1, "latency2d": 12, "latency2d_add": 12,
                                               "latency2d_rint": 11, "latency2d_ldexp": 8}, {"multiplier": "ecp5_dsp"}),
}

_LINTED: dict[str, tuple] = {}


def _linted(template: str):
    """(Verilog text, waiver entries, raw lint, waived lint) of the template's small design, once per session."""
    if template not in _LINTED:
        base, overrides, options = SMALL[template]
        design = design_for(load_arch(base, overrides), options)
        text = design.verilog()
        extra = design_waivers(design)
        models = design.sim_sources()
        raw = lint_verilog(text, None, models)
        waived = lint_verilog(text, waivers_for(text, extra, models=tuple(models)), models)
        _LINTED[template] = (text, waiver_entries(text, extra), raw, waived)
    return _LINTED[template]


def _design_models(template: str) -> dict[str, str]:
    base, overrides, options = SMALL[template]
    return design_for(load_arch(base, overrides), options).sim_sources()


def _covers(entry, warning) -> bool:
    rule, _, line = warning
    return rule == entry.rule and (entry.lines is None or entry.lines[0] <= line <= entry.lines[1])


# ---- pure Python: the shapes the by-line WIDTHTRUNC waivers accept ---------------------------------

SNIPPET = """module top(a, c, clk);
  input [7:0] a;
  input [2:0] c;
  input clk;
  wire one;
  wire [1:0] n;
  wire z;
  wire [7:0] full;
  wire y;
  assign z = ! a;
  assign y = ! one;
  assign one = a >> c;
  assign full = a >> c;
  assign n = a + a;
  assign z = ! { one, a[3:0] };
  assign z = ! a[5];
endmodule
"""


def test_truncation_lines_accept_only_the_harmless_shapes():
    found = truncation_lines(SNIPPET)
    # multi-bit logical NOT (lines 10, 15); a 1-bit operand (11, 16) draws no warning and is not listed
    assert found["lognot"] == [10, 15]
    # a shift into a narrower result is bit_select's lowering (12); the same width (13) is not a truncation;
    # a truncating add (14) is not a shape we waive
    assert found["bit_select"] == [12]
    vlt = waivers_for(SNIPPET)
    assert vlt.startswith("`verilator_config\n")
    assert 'lint_off -rule WIDTHTRUNC -file "*top.v" -lines 12\n' in vlt
    assert "-lines 14" not in vlt
    assert 'lint_off -rule WIDTHTRUNC -file "*top.v"\n' not in vlt  # never a blanket WIDTHTRUNC
    for rule in set(CATEGORY_REASONS) - {"CASEINCOMPLETE", "CASEOVERLAP", "DECLFILENAME"}:  # once, own file, reason
        assert vlt.count(f'lint_off -rule {rule} -file "*top.v"\n') == 1
        assert f"// {rule}: " in vlt
    # no case statement, one module: no case or file-name waivers
    assert "CASEINCOMPLETE" not in vlt and "CASEOVERLAP" not in vlt and "DECLFILENAME" not in vlt
    assert "-rule DECLFILENAME" in waivers_for(SNIPPET + "module sub();\nendmodule\n")


def _case(*items: str, default: bool = False) -> str:
    body = "".join(f"      {i}:\n          q = 1'h1;\n" for i in items)
    body += "      default:\n          q = 1'h0;\n" if default else ""
    return (f"module top(c);\n  input [2:0] c;\n  reg q;\n  always @* begin\n    casez (c)\n{body}"
            "    endcase\n  end\nendmodule\n")


CASES = [
    (("3'b?1?", "3'b1??"), False, True, True),       # 3'b000 uncovered; 3'b110 matches both (Elif priority)
    (("3'b0??", "3'b1??"), False, False, False),     # complete, disjoint
    (("3'h0", "3'h1", "3'h2"), True, False, False),  # default: complete
    (("3'b??1", "3'b??0", "3'b1?0"), False, False, True),
    (("3'h0, 3'h1", "3'b01?", "3'b1??"), False, False, False),
]


@pytest.mark.parametrize("items, default, incomplete, overlap", CASES)
def test_case_findings_match_the_items(items, default, incomplete, overlap):
    found = case_findings(_case(*items, default=default))
    assert found == {"incomplete": int(incomplete), "overlap": int(overlap)}


@pytest.mark.verilog
@pytest.mark.parametrize("items, default, incomplete, overlap", CASES)
def test_case_findings_agree_with_verilator(items, default, incomplete, overlap):
    rules = lint_verilog(_case(*items, default=default), None).per_rule()
    assert (rules["CASEINCOMPLETE"], rules["CASEOVERLAP"]) == (int(incomplete), int(overlap))


# ---- Verilator on every template -------------------------------------------------------------------

@pytest.mark.verilog
@pytest.mark.parametrize("template", list(SMALL))
def test_design_is_lint_clean_and_no_waiver_is_vacuous(template):
    text, entries, raw, waived = _linted(template)
    assert waived.count == 0, f"{template}: {waived.per_rule()}\n{waived.output[:3000]}"
    assert raw.count > 0  # the raw Verilog does draw warnings: the waivers do the work
    for entry in entries:  # every entry (category or by line) covers a warning of the raw lint
        assert any(_covers(entry, w) for w in raw.warnings), f"{template}: vacuous {entry}"
    # each raw warning of the design's file is covered by some entry (Verilator agrees with our reading of
    # the text); the others are in primitive models, under MODEL_REASONS
    ours = [w for w in raw.warnings if w[1] == f"{top_module(text)}.v"]
    assert all(any(_covers(e, w) for e in entries) for w in ours)
    assert all(w[0] in MODEL_REASONS for w in raw.warnings if w not in ours)
    # removing the WIDTHTRUNC entries brings back exactly the raw WIDTHTRUNC warnings
    if raw.per_rule()["WIDTHTRUNC"]:
        fewer = "".join(e.vlt(f"*{top_module(text)}.v") + "\n" for e in entries if e.rule != "WIDTHTRUNC")
        models = tuple(sorted({w[1] for w in raw.warnings if w not in ours}))
        fewer += "".join(f'lint_off -file "*{m}"\n' for m in models)
        again = lint_verilog(text, "`verilator_config\n" + fewer, {m: _design_models(template)[m] for m in models})
        assert dict(again.per_rule()) == {"WIDTHTRUNC": raw.per_rule()["WIDTHTRUNC"]}


@pytest.mark.verilog
def test_every_category_waiver_covers_warnings_of_some_template():
    seen, seen_in_models = set(), set()
    for template in SMALL:
        text, _, raw, _ = _linted(template)
        seen |= {rule for rule, file, _ in raw.warnings if file == f"{top_module(text)}.v"}
        seen_in_models |= {rule for rule, file, _ in raw.warnings if file != f"{top_module(text)}.v"}
    assert set(CATEGORY_REASONS) <= seen, f"vacuous categories: {set(CATEGORY_REASONS) - seen}"
    assert set(MODEL_REASONS) == seen_in_models


@pytest.mark.verilog
def test_removing_any_one_waiver_of_the_systolic_design_shows_a_warning():
    text, entries, raw, _ = _linted("systolic")
    for drop in entries:
        rest = "`verilator_config\n" + "".join(e.vlt("*archsim_systolic.v") + "\n" for e in entries if e != drop)
        result = lint_verilog(text, rest)
        assert result.count > 0 and set(result.per_rule()) == {drop.rule}, drop


@pytest.mark.verilog
def test_real_truncation_and_undriven_signal_stay_visible():
    text = _linted("systolic")[0]
    cut = text.index("endmodule")  # inside the top module (the first)
    planted = (text[:cut] + "  wire [3:0] planted_trunc;\n  assign planted_trunc = {4'h0, rst, 3'h0} + 8'h1;\n"
               "  wire [3:0] planted_undriven;\n  assign tile_start_planted = planted_undriven[0];\n"
               + text[cut:])
    planted = planted.replace("module archsim_systolic(", "module archsim_systolic(tile_start_planted, ", 1)
    planted = planted.replace("  input clk;", "  output tile_start_planted;\n  wire tile_start_planted;\n"
                              "  input clk;", 1)
    result = lint_verilog(planted, waivers_for(planted))
    assert result.per_rule()["WIDTHTRUNC"] == 1 and result.per_rule()["UNDRIVEN"] == 1, result.per_rule()


@pytest.mark.verilog
def test_generate_ships_the_waivers_and_the_cli_lints(tmp_path, capsys):
    design = design_for(load_arch("systolic-32x32-ws", {"rows": 2, "cols": 2}))
    files = write_outputs(design, tmp_path)
    assert files["waivers"].name == "archsim_systolic.vlt"
    assert files["waivers"].read_text() == waivers_for(files["verilog"].read_text())
    core = files["core"].read_text()
    assert "- archsim_systolic.vlt" in core and "file_type: vlt" in core and "[lint_waivers, rtl]" in core
    assert main(["rtl", "lint", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2"]) == 0
    assert "0 warnings" in capsys.readouterr().out
    assert main(["rtl", "lint", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--no-waivers"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  PROCASSINIT +\d+$", out, re.M) and re.search(r"^  WIDTHTRUNC +\d+$", out, re.M)
    assert main(["rtl", "lint", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--wrapper", "axi"]) == 0  # the AXI wrapper's Verilog is clean with its waivers too
    assert "archsim_systolic_axi, verilator -Wall with archsim_systolic_axi.vlt: 0 warnings" in capsys.readouterr().out


@pytest.mark.verilog
def test_verilator_error_is_one_line():
    with pytest.raises(ToolError, match=r"^verilator lint of top failed: %Error: [^\n]*$"):
        lint_verilog("module top(a);\n  input a;\n  assign b = ;\nendmodule\n", None)


def test_missing_verilator_is_one_line(monkeypatch, tmp_path, capsys):
    import rtl.lint

    monkeypatch.setattr(rtl.lint.shutil, "which", lambda name: None)
    monkeypatch.setattr(rtl.lint.sys, "executable", str(tmp_path / "python"))
    assert main(["rtl", "lint", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "verilator-cli not found" in err


@pytest.mark.verilog
@pytest.mark.parametrize("lanes", [1, 4])
def test_topk_unit_is_lint_clean(capsys, lanes):
    """SpAtten's top-k unit with the shipped waivers: 0 warnings (there were 2 CMPCONST, a staging
    count compared with a value it cannot reach, at 4 lanes, and 2 ASCRANGE, a 0-bit count, at 1)."""
    rc = main(["rtl", "lint", "--arch", "spatten", "--unit", "topk", "--set", f"topk_parallelism={lanes}",
               "--depth", "8"])
    out = capsys.readouterr().out
    assert rc == 0 and "archsim_topk" in out and ": 0 warnings" in out, out
