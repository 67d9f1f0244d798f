"""``--wrapper axi`` on the LUT engine: driven only through cocotbext-axi's bus functional models
(AxiLiteMaster, AxiStreamSource, AxiStreamSink, both streams stalling now and then), operand writes
for the next tile streamed while a tile runs, cycles read from the wrapper's CYCLES register (the
engine's hardware counter), checked against archsim's models.

Expected cycles: the timing contract worked by hand here (``pre' + (steps - 1) * max(pre', look) +
look + pipeline_cycles``, ``pre' = pre + precompute_pipeline_cycles``, 0 with fused precompute).
"""
from __future__ import annotations

from math import ceil

import pytest

from archsim.spec import load_arch
from archsim.templates.lut import conformance
from archsim.templates.lut.tile import PLANES

from axi_cosim import assert_exact_from_the_counter, check_against, run_axi

#: the co-simulation build with the registered lookup and a 5-cycle precompute pipeline
OVER = {**conformance.rtl_arch, "pipeline_cycles": 4, "precompute_pipeline_cycles": 5}


def _by_hand(tile, p) -> int:
    steps = ceil(tile.m / p.tile_m) * (tile.k // p.group_k)
    pre = 0 if tile.precomputed else ceil(p.tile_m * p.table_entries / p.precompute_entries_per_cycle) + 5
    look = ceil(tile.n / p.tile_n) * PLANES[tile.weight_format]
    return pre + (steps - 1) * max(pre, look) + look + 4


@pytest.fixture(scope="module")
def axi_run(tmp_path_factory):
    arch = load_arch(conformance.base_arch, OVER)
    return arch, *run_axi(arch, tmp_path_factory.mktemp("axi"), tiles=10, seed=4)


@pytest.mark.rtl
def test_axi_wrapped_lut_is_exact_against_the_models(axi_run):
    arch, design, items, result = axi_run
    # from the CYCLES register, not the ports
    report = assert_exact_from_the_counter(design, items, result, lambda tile: _by_hand(tile, arch.params))
    assert len(report.tiles) == 10
    assert any(t.precomputed for t, _ in items) and any(not t.precomputed for t, _ in items)


@pytest.mark.rtl
def test_axi_run_fails_against_a_shallower_precompute_model(axi_run):
    """The same hardware result checked against a model whose precompute unit is one cycle shorter fails
    on every tile that builds its tables."""
    arch, design, items, result = axi_run
    report = check_against(arch.params, items, result, precompute_pipeline_cycles=4)
    assert not report.ok
    assert [not c.cycles_ok for c in report.tiles] == [not t.precomputed for t, _ in items]
