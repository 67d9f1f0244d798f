"""The SIMD PE array through ``--wrapper axi``: driven only by cocotbext-axi's bus functional models
(AxiLiteMaster, AxiStreamSource, AxiStreamSink, both streams stalling now and then), values and the
hardware counter's cycles checked against archsim's models and the contract's closed form by hand
(``ceil(M*N / P) * steps + pipeline_cycles``, steps summed over the K-groups)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from archsim.cli import main
from archsim.numerics import get_format
from archsim.spec import load_arch
from rtl import design_for
from rtl.cosim import run_job, simulator_missing_reason
from rtl.lib.axi_design import axi_wrapped

SIM_MISSING = simulator_missing_reason("icarus")
#: the pipelined PE (interleaved accumulators), 2 PEs, a few formats (a small build)
ARCH = {"pes": 2, "accumulators": 2, "pipeline_cycles": 22, "formats": ["int4", "int8", "fp8_e4m3", "bf16"],
        "weight_format": "int8", "activation_format": "int8"}


def _contract_cycles(tile, params) -> int:
    lanes = params.lane_bits // max(get_format(tile.weight_format).bits, get_format(tile.activation_format).bits)
    G = tile.group_size
    lens = [tile.k] if G == 0 else [min(G, tile.k - s) for s in range(0, tile.k, G)]
    return -(-(tile.m * tile.n) // params.pes) * sum(-(-n // lanes) for n in lens) + params.pipeline_cycles


@pytest.fixture(scope="module")
def axi_run(tmp_path_factory):
    pytest.importorskip("cocotbext.axi")
    if SIM_MISSING:
        pytest.skip(SIM_MISSING)
    arch = load_arch("simd-edge", ARCH)
    design = axi_wrapped(design_for(arch))
    items = design.cosim_items("random", tiles=12, seed=3)
    job = {**design.make_job(items), "axi_backpressure": True}
    run = run_job(design.verilog(), design.toplevel, job, sim="icarus", build_dir=tmp_path_factory.mktemp("axi"))
    return arch, design, items, run.result


@pytest.mark.rtl
def test_axi_wrapped_simd_is_exact_against_the_models(axi_run):
    arch, design, items, result = axi_run
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 12
    for (tile, _), check in zip(items, report.tiles):
        # from the wrapper's CYCLES register (the engine's counter), not the ports
        assert check.rtl_cycles == _contract_cycles(tile, arch.params)
        assert check.extra.get("port_cycles") is None


@pytest.mark.rtl
def test_axi_run_fails_against_a_different_model(axi_run):
    """The same hardware result checked against one cycle more of latency must fail on every tile."""
    arch, design, items, result = axi_run
    other = axi_wrapped(design_for(dataclasses.replace(arch.params, pipeline_cycles=23)))
    report = other.check(items, result)
    assert not report.ok and all(not t.cycles_ok for t in report.tiles)


@pytest.mark.verilog
def test_generate_wrapper_axi_for_simd(tmp_path, capsys):
    out = tmp_path / "gen"
    sets = [x for k, v in ARCH.items() if k != "formats" for x in ("--set", f"{k}={v}")]
    assert main(["rtl", "generate", "--arch", "simd-edge", *sets, "--set", "formats=[int4,int8]",
                 "--wrapper", "axi", "--out", str(out)]) == 0
    manifest = json.loads((out / "archsim_simd_axi.json").read_text())
    assert manifest["params"]["wrapper"] == "axi"
    names = {p["name"] for p in manifest["ports"]}
    assert {"s_axil_awaddr", "s_axis_tdata", "m_axis_tdata", "clk", "rst"} <= names
