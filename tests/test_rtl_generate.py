"""rtl generate: ports, manifest, FuseSoC core, CLI (pure Python: Amaranth only, no simulator)."""
from __future__ import annotations

import json
import re

import pytest

from archsim.spec import arch_from_params
from archsim.spec import load_arch

from archsim.cli import main
from archsim.errors import SpecError
from archsim.templates.systolic import SystolicParams
from rtl import design_for, write_outputs
from rtl.systolic import SystolicConfig

PORTS = [
    "clk", "rst", "cmd__payload", "cmd__valid", "cmd__ready", "wr__payload", "wr__valid", "wr__ready",
    "rd_addr__payload", "rd_addr__valid", "rd_addr__ready", "rd_data__payload", "rd_data__valid", "rd_data__ready",
    "busy", "done", "tile_cycles", "tiles_done", "error", "tile_start",
]


@pytest.mark.verilog
def test_port_list_is_stable_and_in_the_verilog(tmp_path):
    design = design_for(SystolicParams(rows=2, cols=3, dataflow="ws"))
    ports = {p.name: p for p in design.ports()}
    assert list(ports) == PORTS
    # buf (2) + addr (6) + data: max(lanes * lane bits, cols * acc bits)
    assert ports["wr__payload"].width == 2 + 6 + max(3 * 8, 3 * 32)
    assert ports["rd_data__payload"].width == 3 * 32
    # the command payload: dataflow (2) + m, k, n (dim bits: 64-entry buffers -> 7) + 2 flags + 3 addresses (6)
    assert ports["cmd__payload"].width == 2 + 3 * 7 + 2 + 3 * 6
    files = write_outputs(design, tmp_path)
    text = files["verilog"].read_text()
    header = re.search(r"module archsim_systolic\((.*?)\);", text, re.S).group(1)
    assert sorted(p.strip() for p in header.split(",")) == sorted(PORTS)
    for p in design.ports():
        width = f"[{p.width - 1}:0] " if p.width > 1 else ""
        assert re.search(rf"\b{'input' if p.direction == 'in' else 'output'} {re.escape(width)}{p.name};", text), p


@pytest.mark.verilog
def test_manifest_and_core(tmp_path):
    params = SystolicParams(rows=4, cols=2, dataflow="auto", preload="double_buffered", mult_pipeline_stages=1)
    files = write_outputs(design_for(params), tmp_path)
    manifest = json.loads(files["manifest"].read_text())
    assert manifest["toplevel"] == "archsim_systolic"
    assert manifest["params"]["rows"] == 4 and manifest["params"]["cols"] == 2
    assert manifest["params"]["dataflows"] == ["ws", "os", "is"]
    assert manifest["params"]["double_buffered"] is True
    assert [p["name"] for p in manifest["ports"]] == PORTS
    assert all(p["doc"] for p in manifest["ports"])
    core = files["core"].read_text()
    assert core.startswith("CAPI=2:\n")
    assert "toplevel: archsim_systolic" in core and "- archsim_systolic.v" in core


def test_config_cycles_formula_matches_the_fast_model():
    from archsim.templates.systolic import SystolicTile
    from archsim.templates.systolic.fast import SystolicModel

    for df, pre, P in [("ws", "serial", 0), ("is", "double_buffered", 1), ("os", "serial", 1)]:
        params = SystolicParams(rows=5, cols=3, dataflow=df, preload=pre, mult_pipeline_stages=P)
        cfg = SystolicConfig.from_params(params)
        model = SystolicModel(arch_from_params(params))
        tile = SystolicTile(df, 3, 2, 3, preload_hidden=pre == "double_buffered")
        assert cfg.tile_cycles(df, 3, 2, 3, tile.preload_hidden) == model.tile_cycles(tile)


@pytest.mark.verilog
def test_dataflow_builds_differ_in_hardware():
    ws = design_for(SystolicParams(rows=2, cols=2, dataflow="ws")).verilog()
    os_ = design_for(SystolicParams(rows=2, cols=2, dataflow="os")).verilog()
    assert "os_bus_0" in os_ and "os_bus_0" not in ws
    dbl = design_for(SystolicParams(rows=2, cols=2, dataflow="ws", preload="double_buffered")).verilog()

    def pe_regs(text):  # registers of PE(1, 1)'s module
        body = text.split("module \\archsim_systolic.array.pe_1_1 ")[1].split("endmodule")[0]
        return set(re.findall(r"^\s*reg (?:signed )?(?:\[[0-9:]+\] )?\\?([\w$.]+)", body, re.M))

    assert "w" in pe_regs(dbl) and "w" not in pe_regs(ws)  # the active bank exists only double-buffered


@pytest.mark.verilog
def test_cli_generate(tmp_path, capsys):
    out = tmp_path / "gen"
    assert main(["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--out", str(out)]) == 0
    assert (out / "archsim_systolic.v").exists() and (out / "archsim_systolic.core").exists()
    assert json.loads((out / "archsim_systolic.json").read_text())["params"]["rows"] == 2
    assert "archsim_systolic (20 ports)" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["rtl", "generate", "--arch", "no-such-arch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert re.match(r"^archsim: error: unknown arch 'no-such-arch'", err) and err.count("\n") == 1
    assert main(["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=0", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "rows" in err and "Traceback" not in err and err.count("\n") == 1
    assert main(["rtl", "cosim", "--arch", "systolic-32x32-ws", "--tiles", "0"]) == 2
    assert re.search(r"--tiles: expected a positive integer, got 0$", capsys.readouterr().err.strip())


def test_design_for_rejects_templates_without_rtl():
    class UnknownParams:
        pass

    with pytest.raises(SpecError, match=r"^no template takes params UnknownParams$"):
        design_for(UnknownParams())
    # the list names every template with RTL (other templates add theirs): a one-line, sorted list
    with pytest.raises(SpecError, match=r"^template 'roofline' has no RTL yet; RTL exists for: [a-z_, ]*\bpim, "
                                        r"[a-z_, ]*\bsystolic\b[a-z_, ]*$"):
        design_for(load_arch("gpu-a100"))


PIM_PORTS = [
    "clk", "rst", "row_valid", "row_cmd", "row_addr", "col_valid", "col_cmd", "col_addr", "col_acc", "col_in",
    "col_wdata", "dram_rd", "dram_row", "dram_col", "dram_rdata", "out_valid", "out_data", "ready", "busy", "error",
]


@pytest.mark.verilog
def test_cli_generate_pim_hbm2(tmp_path, capsys):
    """The PIM preset's bank (bf16) behind the host signature: Verilog, FuseSoC core and manifest, ports
    as documented; the bare unit's ports (top="unit") as documented too."""
    from rtl.lib.host import HOST_PORTS

    assert main(["rtl", "generate", "--arch", "pim-hbm2", "--out", str(tmp_path)]) == 0
    assert f"pim-hbm2: archsim_pim_host ({len(HOST_PORTS) + 1} ports)" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "archsim_pim_host.json").read_text())
    assert manifest["template"] == "pim" and manifest["toplevel"] == "archsim_pim_host"
    assert manifest["params"]["mac_precision"] == "bf16" and manifest["params"]["accumulator"] == "fp32"
    ports = {p["name"]: p for p in manifest["ports"]}
    assert list(ports) == list(HOST_PORTS) + ["run"] and all(p["doc"] for p in ports.values())
    # one 32-byte column (16 bf16 lanes) per write; 8 fp32 accumulators per RDACC column read
    assert ports["rd_data__payload"]["width"] == 8 * 32
    assert ports["wr__payload"]["width"] > 16 * 16
    text = (tmp_path / "archsim_pim_host.v").read_text()
    header = re.search(r"module archsim_pim_host\((.*?)\);", text, re.S).group(1)
    assert sorted(p.strip() for p in header.split(",")) == sorted(ports)
    core = (tmp_path / "archsim_pim_host.core").read_text()
    assert "toplevel: archsim_pim_host" in core and "16 bf16 lanes" in core
    unit = {p.name: p for p in design_for(load_arch("pim-hbm2"), {"top": "unit"}).ports()}
    assert list(unit) == PIM_PORTS and all(p.doc for p in unit.values())
    # 16 bf16 lanes per 32-byte column, 8 fp32 accumulators per RDACC, 16384 DRAM rows (4 GiB stack)
    assert unit["col_wdata"].width == unit["dram_rdata"].width == 16 * 16
    assert unit["out_data"].width == 8 * 32 and unit["row_addr"].width == 14


def test_pim_rtl_errors_are_one_line(tmp_path, capsys):
    assert main(["rtl", "generate", "--arch", "pim-hbm2", "--depth", "16", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "archsim: error: --depth: the pim RTL has no local tile buffers\n"
    # --multiplier ecp5_dsp is the bf16 datapath's registered DSP blocks; int8 products are exact (no choice)
    assert main(["rtl", "generate", "--arch", "pim-gpt-gddr6", "--set", "mac_precision=int8", "--multiplier",
                 "ecp5_dsp", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == ("archsim: error: rtl options: multiplier 'ecp5_dsp': the int8 datapath has "
                                       "exact products (no multiplier choice); it takes 'inferred'\n")
    # int8 on pim-hbm2: 32 elements per column, 16 multipliers (the models run it in two MAC cycles; the RTL not)
    assert main(["rtl", "generate", "--arch", "pim-hbm2", "--set", "mac_precision=int8", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == ("archsim: error: pim RTL: mac_lanes: the RTL needs one multiplier per "
                                       "column element (32), got 16\n")


@pytest.mark.verilog
def test_ecp5_dsp_multiplier_option():
    params = SystolicParams(rows=2, cols=2, dataflow="ws", mult_pipeline_stages=1)
    text = design_for(params, {"multiplier": "ecp5_dsp"}).verilog()
    assert len(re.findall(r"^\s*MULT18X18D #\(", text, re.M)) == 4
    assert len(re.findall(r"\.REG_OUTPUT_CLK\(\"CLK0\"\)", text)) == 4
    assert design_for(params, {"multiplier": "ecp5_dsp"}).sim_sources()  # the primitive's model for simulators
    with pytest.raises(SpecError, match=r"^rtl options: multiplier: ecp5_dsp needs a ws, is or os build, got "
                                        r"dataflow 'auto'$"):
        design_for(SystolicParams(rows=2, cols=2, dataflow="auto"), {"multiplier": "ecp5_dsp"})
    # OS and double-buffered builds use the primitive too: one per PE, the B register on its own enable
    # (the active bank) when double-buffered
    os_text = design_for(SystolicParams(rows=2, cols=3, dataflow="os", mult_pipeline_stages=1),
                         {"multiplier": "ecp5_dsp"}).verilog()
    assert len(re.findall(r"^\s*MULT18X18D #\(", os_text, re.M)) == 6
    dbl = design_for(SystolicParams(rows=2, cols=2, dataflow="ws", preload="double_buffered"),
                     {"multiplier": "ecp5_dsp"}).verilog()
    assert len(re.findall(r"\.REG_INPUTB_CE\(\"CE1\"\)", dbl)) == 4
    with pytest.raises(SpecError, match=r"^rtl options: multiplier: expected one of inferred, ecp5_dsp, got 'x'$"):
        design_for(params, {"multiplier": "x"})
    with pytest.raises(SpecError, match=r"^rtl options: left_depth: expected a positive integer, got -1$"):
        design_for(params, {"left_depth": -1})


@pytest.mark.verilog
def test_generate_with_ecp5_primitives_ships_their_model(tmp_path):
    assert main(["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--multiplier", "ecp5_dsp", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "MULT18X18D_model.v").read_text().startswith("// Behavioural model")
    core = (tmp_path / "archsim_systolic.core").read_text()
    assert "- MULT18X18D_model.v" in core and "filesets: [rtl, sim_models]" in core


def test_pim_channel_design_options():
    from archsim.errors import SpecError
    from archsim.spec.load import load_arch
    from rtl.generate import design_for

    arch = load_arch("pim-hbm2")
    d = design_for(arch, {"banks": 16})
    ports = {p.name: p.width for p in d.ports()}
    assert d.toplevel == "archsim_pim_channel"
    assert ports["dram_rdata"] == 16 * 16 * 16  # 16 banks x 16 bf16 lanes
    with pytest.raises(SpecError, match=r"banks: expected 1\.\.16"):
        design_for(arch, {"banks": 17})


def test_components_and_the_command_stream():
    """The top is built from components with wiring signatures; commands are a lib.stream."""
    from amaranth.lib import stream, wiring

    from rtl.systolic import command_layout, systolic_signature
    from rtl.systolic.array import array_signature
    from rtl.systolic.controller import controller_signature
    from rtl.systolic.pe import pe_signature

    cfg = SystolicConfig.from_params(SystolicParams(rows=2, cols=3, dataflow="ws", preload="double_buffered"))
    cmd = systolic_signature(cfg).members["cmd"]
    assert cmd.flow == wiring.In and isinstance(cmd.signature, stream.Signature)
    # the payload fields, least significant first, sum to the port width (64-entry buffers: dw 7, aw 6)
    layout = command_layout(cfg)
    assert [name for name, _ in layout] == ["dataflow", "m", "k", "n", "accumulate", "preload_hidden",
                                            "left_base", "top_base", "out_base"]
    assert layout.size == 2 + 3 * 7 + 2 + 3 * 6
    # the controller takes the same stream; the array has one registered output per column
    assert controller_signature(cfg).members["cmd"].signature == cmd.signature
    assert array_signature(cfg).members["col_q"].shape.length == 3
    assert "w" not in pe_signature(cfg).members  # PE internals are not ports
    assert "flags" not in pe_signature(cfg).members  # OS flags only in builds with OS
