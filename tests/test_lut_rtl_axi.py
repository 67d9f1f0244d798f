"""``--wrapper axi`` on the LUT engine: driven only through cocotbext-axi's bus functional models
(AxiLiteMaster, AxiStreamSource, AxiStreamSink, both streams stalling now and then), operand writes
for the next tile streamed while a tile runs, cycles read from the wrapper's CYCLES register (the
engine's hardware counter), checked against archsim's models.

Expected cycles: the timing contract worked by hand here (``pre' + (steps - 1) * max(pre', look) +
look + pipeline_cycles``, ``pre' = pre + precompute_pipeline_cycles``, 0 with fused precompute).
"""
from __future__ import annotations

import dataclasses
from math import ceil

import pytest

from archsim.spec import load_arch
from archsim.templates.lut import conformance
from archsim.templates.lut.tile import PLANES
from rtl import design_for
from rtl.cosim import run_job, simulator_missing_reason
from rtl.lib.axi_design import axi_wrapped

SIM_MISSING = simulator_missing_reason("icarus")
#: the co-simulation build with the registered lookup and a 5-cycle precompute pipeline
OVER = {**conformance.rtl_arch, "pipeline_cycles": 4, "precompute_pipeline_cycles": 5}


def _by_hand(tile, p) -> int:
    steps = ceil(tile.m / p.tile_m) * (tile.k // p.group_k)
    pre = 0 if tile.precomputed else ceil(p.tile_m * p.table_entries / p.precompute_entries_per_cycle) + 5
    look = ceil(tile.n / p.tile_n) * PLANES[tile.weight_format]
    return pre + (steps - 1) * max(pre, look) + look + 4


@pytest.fixture(scope="module")
def axi_run(tmp_path_factory):
    pytest.importorskip("cocotbext.axi")
    if SIM_MISSING:
        pytest.skip(SIM_MISSING)
    arch = load_arch(conformance.base_arch, OVER)
    design = axi_wrapped(design_for(arch))
    items = design.cosim_items("random", tiles=10, seed=4)
    job = {**design.make_job(items), "axi_backpressure": True}
    run = run_job(design.verilog(), design.toplevel, job, sim="icarus", build_dir=tmp_path_factory.mktemp("axi"))
    return arch, design, items, run.result


@pytest.mark.rtl
def test_axi_wrapped_lut_is_exact_against_the_models(axi_run):
    arch, design, items, result = axi_run
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 10
    assert any(t.precomputed for t, _ in items) and any(not t.precomputed for t, _ in items)
    for (tile, _), check in zip(items, report.tiles):
        assert check.rtl_cycles == _by_hand(tile, arch.params)  # from the CYCLES register, not the ports
        assert check.extra.get("port_cycles") is None


@pytest.mark.rtl
def test_axi_run_fails_against_a_shallower_precompute_model(axi_run):
    """The same hardware result checked against a model whose precompute unit is one cycle shorter fails
    on every tile that builds its tables."""
    arch, design, items, result = axi_run
    other = axi_wrapped(design_for(dataclasses.replace(arch.params, precompute_pipeline_cycles=4)))
    report = other.check(items, result)
    assert not report.ok
    assert [not c.cycles_ok for c in report.tiles] == [not t.precomputed for t, _ in items]
