"""The AXI co-simulation scaffold every ``--wrapper axi`` test shares (systolic, SIMD, LUT, PIM): a
template's RTL behind :class:`rtl.lib.axi.AxiHostWrapper`, driven on Icarus only through
cocotbext-axi's bus functional models with both streams stalling now and then, and the checks
every such run must pass. What a test expects (its cycles worked by hand) stays in the test."""
from __future__ import annotations

import dataclasses

import pytest

from rtl import design_for
from rtl.cosim import run_job, simulator_missing_reason
from rtl.lib.axi_design import axi_wrapped


def run_axi(arch, build_dir, items=None, **cosim_items_kw):
    """``(design, items, result)`` of ``arch``'s RTL behind the AXI wrapper on Icarus, both streams
    stalling now and then (``axi_backpressure``): ``items``, else ``design.cosim_items("random",
    **cosim_items_kw)``. Skips without cocotbext-axi or Icarus."""
    pytest.importorskip("cocotbext.axi")
    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)
    design = axi_wrapped(design_for(arch))
    if items is None:
        items = design.cosim_items("random", **cosim_items_kw)
    job = {**design.make_job(items), "axi_backpressure": True}
    run = run_job(design.verilog(), design.toplevel, job, sim="icarus", build_dir=build_dir)
    return design, items, run.result


def assert_exact_from_the_counter(design, items, result, cycles_by_hand):
    """The run checks out against the models, and every tile's cycles -- read from the wrapper's
    CYCLES register (the engine's counter), the ports being out of sight -- equal
    ``cycles_by_hand(tile)``. Returns the report."""
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items)
    for (tile, _), check in zip(items, report.tiles):
        assert check.rtl_cycles == cycles_by_hand(tile)
        assert check.extra["port_cycles"] is None
    return report


def check_against(params, items, result, **changes):
    """The report of the same AXI run checked against the models of ``params`` with ``changes``."""
    return axi_wrapped(design_for(dataclasses.replace(params, **changes))).check(items, result)
