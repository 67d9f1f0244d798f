"""The SIMD PE array through ``--wrapper axi``: driven only by cocotbext-axi's bus functional models
(AxiLiteMaster, AxiStreamSource, AxiStreamSink, both streams stalling now and then), values and the
hardware counter's cycles checked against archsim's models and the contract's closed form by hand
(``ceil(M*N / P) * steps + pipeline_cycles``, steps summed over the K-groups)."""
from __future__ import annotations

import json

import pytest

from archsim.cli import main
from archsim.numerics import get_format
from archsim.spec import load_arch

from axi_cosim import assert_exact_from_the_counter, check_against, run_axi

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
    arch = load_arch("simd-edge", ARCH)
    return arch, *run_axi(arch, tmp_path_factory.mktemp("axi"), tiles=12, seed=3)


@pytest.mark.rtl
def test_axi_wrapped_simd_is_exact_against_the_models(axi_run):
    arch, design, items, result = axi_run
    # from the wrapper's CYCLES register (the engine's counter), not the ports
    report = assert_exact_from_the_counter(design, items, result, lambda tile: _contract_cycles(tile, arch.params))
    assert len(report.tiles) == 12


@pytest.mark.rtl
def test_axi_run_fails_against_a_different_model(axi_run):
    """The same hardware result checked against one cycle more of latency must fail on every tile."""
    arch, design, items, result = axi_run
    report = check_against(arch.params, items, result, pipeline_cycles=23)
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
