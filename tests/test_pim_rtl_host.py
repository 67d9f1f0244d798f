"""The PIM bank unit behind the shared host signature (rtl/pim/host_engine.py): co-simulated
directly on the host ports and through the AXI wrapper (cocotbext-axi's bus functional models
only), values bit-exact with the models and the tile cycles read from the hardware counter.

Expected cycles: the fast model's closed form (``archsim.templates.pim.fast.tile_cycles``) and the
detailed command replay, both independent of the RTL; on the direct host the counter must also
equal the cycles measured on the ports (``run`` .. ``done``)."""
from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from archsim.cli import main
from archsim.errors import SpecError
from archsim.templates.pim.fast import tile_cycles
from rtl import design_for
from rtl.cosim import run_job, simulator_missing_reason
from rtl.lib.host import implements_host

from axi_cosim import assert_exact_from_the_counter, run_axi
from test_pim_rtl import P

SIM_MISSING = simulator_missing_reason("icarus")


def test_default_top_implements_the_host_signature():
    design = design_for(P)
    comp = design.component()
    comp._MustUse__silence = True
    assert design.toplevel == "archsim_pim_host" and design.has_cycle_counter
    assert implements_host(comp.signature)
    unit = design_for(P, {"top": "unit"})
    assert unit.toplevel == "archsim_pim_bank" and not unit.has_cycle_counter
    with pytest.raises(SpecError, match="top: expected one of unit, host"):
        design_for(P, {"top": "chip"})


@pytest.fixture(scope="module")
def direct_run(tmp_path_factory):
    if SIM_MISSING:
        pytest.skip(SIM_MISSING)
    design = design_for(P)
    items = design.cosim_items("random", tiles=6, seed=11, max_stream=6)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim="icarus",
                  build_dir=tmp_path_factory.mktemp("pimhost"))
    return design, items, run.result


@pytest.mark.rtl
def test_host_engine_counter_equals_ports_and_models(direct_run):
    design, items, result = direct_run
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()
    for (tile, ops), check in zip(items, report.tiles):
        assert check.extra["hw_cycles"] == check.extra["port_cycles"] == tile_cycles(tile, P)
        vals = design.rtl_values(tile, result["streams"][check.index])
        assert np.array_equal(vals[0], ops["weight"][0] @ ops["input"])  # numpy (no int32 overflow here)


@pytest.mark.rtl
def test_host_engine_run_fails_against_a_slower_model(direct_run):
    """The same hardware counts checked against a bank with a longer tRP must fail on cycles."""
    design, items, result = direct_run
    other = design_for(dataclasses.replace(P, tRP=P.tRP + 1))
    report = other.check(items, result)
    assert not report.ok and sum(not t.cycles_ok for t in report.tiles) >= 3


@pytest.mark.rtl
def test_axi_wrapped_pim_is_exact_against_the_models(tmp_path):
    design, items, result = run_axi(P, tmp_path, tiles=3, seed=1, max_stream=4)  # both streams stall now and then
    # read from the wrapper's CYCLES register (the engine's counter); the ports are not visible
    assert_exact_from_the_counter(design, items, result, lambda tile: tile_cycles(tile, P))


@pytest.mark.verilog
def test_generate_wrapper_axi_for_pim(tmp_path, capsys):
    out = tmp_path / "gen"
    assert main(["rtl", "generate", "--arch", "pim-gpt-gddr6", "--wrapper", "axi", "--out", str(out)]) == 0
    text = (out / "archsim_pim_host_axi.v").read_text()
    # 16 bf16 lanes: a write entry (one column) is 256 bits; an RDACC column 8 x 32 bits
    assert re.search(r"input \[255:0\] s_axis_tdata;", text) and re.search(r"output \[255:0\] m_axis_tdata;", text)
    manifest = json.loads((out / "archsim_pim_host_axi.json").read_text())
    assert manifest["params"]["wrapper"] == "axi"


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.long
def test_pim_gpt_gddr6_1000_random_tiles_on_verilator(tmp_path):
    """The shipped pim-gpt-gddr6 bank (16 bf16 lanes, default pipeline depths) behind the host engine:
    1000 random tiles (rows <= 2, k up to three DRAM rows, refresh at random points) bit- and
    cycle-exact, cycles from the hardware counter (~10 min: a 5 min Verilator build, 5 min run)."""
    from archsim.spec import load_arch
    from rtl import run_cosim

    reason = simulator_missing_reason("verilator")
    if reason:
        pytest.skip(reason)
    arch = load_arch("pim-gpt-gddr6", [])
    items = design_for(arch).cosim_items("random", tiles=1000, seed=23, max_stream=2)
    report = run_cosim(arch, items, sim="verilator", build_dir=str(tmp_path))
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 1000 and all(t.extra["hw_cycles"] == t.extra["port_cycles"] for t in report.tiles)


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.long
def test_pim_p16_unit_1000_random_tiles_on_verilator(tmp_path):
    """The P = 16 bank measured for 150 MHz (docs/rtl.md, PIM timing: pim-gpt-gddr6 with 2 bf16 lanes,
    ``accumulator_interleave`` 16, ``mac_pipeline_cycles`` 26, ``dsp_reg`` 9 / add 11, the input buffer
    ``ecp5_outreg``) behind the host
    engine: 1000 random tiles (rows <= 4: gathers of several RDACCs, each P / 2 = 8 cycles apart, through
    the reused reduction adders) bit- and cycle-exact against both models, cycles from the counter."""
    from archsim.spec import load_arch
    from rtl import run_cosim

    reason = simulator_missing_reason("verilator")
    if reason:
        pytest.skip(reason)
    arch = load_arch("pim-gpt-gddr6", ["column_bytes=4", "accumulator_interleave=16", "mac_pipeline_cycles=26"])
    options = {"mul": "dsp_reg", "mul_stages": 9, "add_stages": 11, "buffer": "ecp5_outreg"}
    items = design_for(arch, options).cosim_items("random", tiles=1000, seed=23, max_stream=4)
    report = run_cosim(arch, items, sim="verilator", options=options, build_dir=str(tmp_path))
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 1000 and all(t.extra["hw_cycles"] == t.extra["port_cycles"] for t in report.tiles)


def test_a_tile_too_big_for_the_engine_is_one_line():
    from archsim.templates.pim import PimTile

    design = design_for(P)
    tile = PimTile("gemv", rows=200, k=192, banks=1)
    ops = {"weight": np.ones((1, 200, 192), np.int64), "input": np.ones(192, np.int64)}
    with pytest.raises(SpecError, match=r"^pim host engine: tile 0 \(gemv rows=200 k=192\) needs cmd_depth \d+, "
                                        r"the engine holds 1024"):
        design.make_job([(tile, ops)])


def test_random_tiles_are_sized_to_the_host_engine():
    """`archsim rtl cosim --arch pim-gpt-gddr6 --tiles 3` drew tiles the engine refused (cmd_depth 1904 >
    1024): the random source now shrinks a tile that does not fit (rows, then k, halved); tiles that fit
    are drawn as before."""
    from archsim.spec import load_arch
    from archsim.templates.pim import PimTile
    from rtl.pim.sources import cosim_items

    arch = load_arch("pim-gpt-gddr6", [])
    design = design_for(arch)
    # hand count, one row of one column: GBWR @0, ACT @1, MAC @16, PRE @32, RDACC @32 -> 4 issue cycles
    # + the end entry; one DRAM row, one staged input column, one RDACC (1 bank x 1 row x 4 B)
    assert design.host_needs(PimTile("gemv", rows=1, k=16, banks=1)) == \
        {"cmd_depth": 5, "array_rows": 1, "staging_cols": 1, "out_depth": 1}
    unsized = [t for t, _ops in cosim_items(arch.params, "random", tiles=3, seed=0)]
    sized = [t for t, _ops in design.cosim_items("random", tiles=3, seed=0)]
    assert not all(design.host_fits(t) for t in unsized)  # the CLI's case: a tile too big
    for before, after in zip(unsized, sized):
        assert design.host_fits(after)
        if design.host_fits(before):
            assert after == before
        else:
            assert after.rows <= before.rows and after.k <= before.k
    design.make_job(design.cosim_items("random", tiles=3, seed=0))  # no refusal


def test_random_tiles_fit_with_their_refresh_point():
    """The refresh point is drawn after the sizing; a REF adds command entries, so a tile sized without
    it could overflow the engine (the P = 16 1000-tile run's tile 800: cmd_depth 1025 > 1024). Planted
    capacity: only tiles without a refresh due, or of at most 8 elements, fit."""
    from rtl.pim.sources import random_tiles

    def fits(t):
        return t.ref_due >= 1 << 40 or t.k <= 8

    tiles = random_tiles(P, 40, np.random.default_rng(3), max_stream=2, fits=fits)
    assert any(t.ref_due < 1 << 40 for t in tiles)  # the case is drawn
    assert all(fits(t) for t in tiles)
