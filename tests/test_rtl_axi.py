"""``--wrapper axi``: the systolic engine behind AXI4-Lite registers and AXI4-Stream data ports,
driven only through cocotbext-axi's bus functional models (AxiLiteMaster, AxiStreamSource,
AxiStreamSink), checked against archsim's models.

Expected cycles: the timing contract by hand (preload R unless hidden or OS, plus the streamed
length, plus R + C - 2 + P); values from archsim's models (numpy).
"""
from __future__ import annotations

import json
import re

import pytest

from archsim.cli import main
from archsim.spec import load_arch
from rtl.lib.axi import CYCLES_DEPTH

from axi_cosim import assert_exact_from_the_counter, check_against, run_axi

ARCH = ["rows=2", "cols=2", "dataflow=auto", "preload=double_buffered", "mult_pipeline_stages=1"]


def _contract_cycles(tile, R, C, P):
    preload = 0 if tile.dataflow == "os" or tile.preload_hidden else R
    streamed = {"ws": tile.m, "is": tile.n, "os": tile.k}[tile.dataflow]
    return preload + streamed + R + C - 2 + P


@pytest.fixture(scope="module")
def axi_run(tmp_path_factory):
    arch = load_arch("systolic-32x32-ws", ARCH)
    # more tiles than the CYCLES queue holds: the driver splits them into batches of at most its depth;
    # both streams stall now and then (the bus models' pause generators): results wait in the engine
    return arch, *run_axi(arch, tmp_path_factory.mktemp("axi"), tiles=CYCLES_DEPTH + 4, seed=2, max_stream=4)


@pytest.mark.rtl
def test_axi_wrapped_systolic_is_exact_against_the_models(axi_run):
    arch, design, items, result = axi_run
    # the cycles are read from the wrapper's CYCLES register (the engine's counter), not the ports
    report = assert_exact_from_the_counter(design, items, result, lambda tile: _contract_cycles(tile, 2, 2, 1))
    assert len(report.tiles) == CYCLES_DEPTH + 4
    assert {t.dataflow for t, _ in items} == {"ws", "os", "is"}


@pytest.mark.rtl
def test_axi_run_fails_against_a_different_model(axi_run):
    """The same hardware result checked against a model with one pipeline stage fewer must fail."""
    arch, design, items, result = axi_run
    report = check_against(arch.params, items, result, mult_pipeline_stages=0)
    assert not report.ok and all(not t.cycles_ok for t in report.tiles)


@pytest.mark.verilog
def test_generate_wrapper_axi_ports_and_manifest(tmp_path, capsys):
    out = tmp_path / "gen"
    assert main(["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--wrapper", "axi", "--out", str(out)]) == 0
    assert "archsim_systolic_axi (27 ports)" in capsys.readouterr().out
    text = (out / "archsim_systolic_axi.v").read_text()
    header = re.search(r"module archsim_systolic_axi\((.*?)\);", text, re.S).group(1)
    ports = {p.strip() for p in header.split(",")}
    for name in ("s_axil_awaddr", "s_axil_wdata", "s_axil_bresp", "s_axil_araddr", "s_axil_rdata",
                 "s_axis_tdata", "s_axis_tvalid", "s_axis_tready", "m_axis_tdata", "m_axis_tlast", "clk", "rst"):
        assert name in ports
    # 2x2 int8 / int32: a write entry is max(2 * 8, 2 * 32) = 64 bits, a result entry 2 * 32 bits
    assert re.search(r"input \[63:0\] s_axis_tdata;", text) and re.search(r"output \[63:0\] m_axis_tdata;", text)
    manifest = json.loads((out / "archsim_systolic_axi.json").read_text())
    assert manifest["params"]["wrapper"] == "axi" and len(manifest["ports"]) == 27


@pytest.mark.verilog
def test_wrapper_none_is_the_default_and_axi_needs_the_host_interface(tmp_path, capsys):
    assert main(["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2",
                 "--out", str(tmp_path / "plain")]) == 0
    assert (tmp_path / "plain" / "archsim_systolic.v").exists()
    capsys.readouterr()
    # a PIM channel (banks > 1) is the bare bank units' ports, not the host signature
    assert main(["rtl", "generate", "--arch", "pim-gpt-gddr6", "--banks", "2", "--wrapper", "axi",
                 "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "--wrapper axi: the pim RTL's top does not implement the host interface" in err
    assert len(err.strip().splitlines()) == 1
