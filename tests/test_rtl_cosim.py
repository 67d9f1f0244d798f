"""Co-simulation of the systolic RTL against archsim's fast and detailed models (cocotb + Icarus).

Expected values and cycles come from archsim's models (numpy matmul and the
closed form / cycle-by-cycle model), never from the RTL. Arrays are small
(<= 4x4) and tiles few, so the whole file stays around a minute on Icarus.
``SIM=verilator`` runs the same tests on Verilator (opt-in; C++ builds are slow).
"""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from archsim.cli import main
from archsim.spec import load_arch
from archsim.templates.systolic import SystolicParams, SystolicTile
from rtl import cosim_items, design_for, run_cosim
from rtl.cosim import run_job, simulator_missing_reason

pytestmark = pytest.mark.rtl

SIM = os.environ.get("SIM", "icarus")
SIM_MISSING = simulator_missing_reason(SIM)
needs_icarus = pytest.mark.skipif(SIM_MISSING is not None, reason=SIM_MISSING or "")


def _assert_ok(report):
    assert report.ok, "\n" + report.summary()


# one config per line: every dataflow, both preload modes, both multiplier pipelines, non-square arrays
CONFIGS = [
    ("ws", "serial", 0, 3, 4),
    ("ws", "double_buffered", 1, 4, 3),
    ("is", "double_buffered", 0, 2, 4),
    ("is", "serial", 1, 4, 2),
    ("os", "serial", 1, 4, 2),
    ("os", "serial", 0, 2, 3),
    ("auto", "double_buffered", 1, 3, 4),
]


@needs_icarus
@pytest.mark.parametrize("dataflow,preload,pipe,rows,cols", CONFIGS,
                         ids=[f"{d}-{p}-P{s}-{r}x{c}" for d, p, s, r, c in CONFIGS])
def test_random_tiles_match_models(dataflow, preload, pipe, rows, cols):
    params = SystolicParams(rows=rows, cols=cols, dataflow=dataflow, preload=preload, mult_pipeline_stages=pipe)
    items = cosim_items(params, "random", tiles=9 if dataflow == "auto" else 6, seed=rows * 7 + cols + pipe,
                        max_stream=10)
    report = run_cosim(params, items, sim=SIM)
    _assert_ok(report)
    assert len(report.tiles) == len(items)
    if preload == "double_buffered":
        hidden = [t for t, (tile, _) in zip(report.tiles, items) if tile.preload_hidden]
        assert hidden, "the random source should produce hidden-preload tiles"
        # queued back to back: a hidden tile starts the cycle after its predecessor's last cycle
        assert all(t.extra["gap_before"] == 0 for t in hidden if t.extra["gap_before"] is not None)


@needs_icarus
def test_resnet50_and_gpt2_tiles():
    """First folds of ResNet-50 conv1 (im2col 12544x147x64) and GPT-2 c_attn (1x768x2304)."""
    params = SystolicParams(rows=4, cols=4, dataflow="ws", preload="double_buffered", mult_pipeline_stages=1)
    items = cosim_items(params, "resnet50", tiles=3, seed=1, max_stream=12)
    assert [t.k for t, _ in items] == [4, 4, 4] and items[1][0].accumulate and items[1][0].preload_hidden
    items += cosim_items(params, "gpt2", tiles=3, seed=2)
    assert items[3][0].m == 1
    _assert_ok(run_cosim(params, items, sim=SIM))


@needs_icarus
@pytest.mark.parametrize("rows,cols,dataflow,pipe", [(1, 1, "ws", 0), (1, 1, "ws", 1), (2, 1, "is", 0)])
def test_k_chain_accumulates_in_place_back_to_back(rows, cols, dataflow, pipe):
    """GPT-2 decode folds (m = 1): each tile accumulates onto the previous one's results in the
    output buffer, one or two cycles after it on a 1x1 array (the read-modify-write forwarding)."""
    params = SystolicParams(rows=rows, cols=cols, dataflow=dataflow, preload="double_buffered",
                            mult_pipeline_stages=pipe)
    items = cosim_items(params, "gpt2", tiles=5, seed=4, max_stream=3)
    assert all(ops.get("chain") for _, ops in items[1:])
    report = run_cosim(params, items, sim=SIM)
    _assert_ok(report)
    assert [t.extra.get("gap_before") for t in report.tiles[1:]] == [0, 0, 0, 0]


@needs_icarus
def test_tiles_from_the_mapper_program():
    """Tiles of mappers.compile(ResNet-50 conv1) on a 4x4 version of a shipped preset."""
    arch = load_arch("systolic-32x32-os", ["rows=4", "cols=3"])
    items = cosim_items(arch.params, "program", tiles=3, seed=3, max_stream=8, arch=arch, workload="resnet50")
    assert len(items) == 3 and all(t.dataflow == "os" for t, _ in items)
    _assert_ok(run_cosim(arch, items, sim=SIM))


@needs_icarus
@pytest.mark.parametrize("dataflow,preload,pipe", [("ws", "double_buffered", 1), ("is", "serial", 0),
                                                   ("os", "double_buffered", 1)])
def test_ecp5_dsp_multiplier_variant(dataflow, preload, pipe):
    """The Verilog that is synthesized for ECP5 (MULT18X18D primitives with their registers) runs
    the same tiles, with the primitive's behavioural model."""
    params = SystolicParams(rows=3, cols=4, dataflow=dataflow, preload=preload, mult_pipeline_stages=pipe)
    items = cosim_items(params, "random", tiles=6, seed=11 + pipe, max_stream=8)
    _assert_ok(run_cosim(params, items, sim=SIM, options={"multiplier": "ecp5_dsp"}))


@needs_icarus
def test_wrap_at_accumulator_width():
    """int16 operands into an int32 accumulator wrap like the model (extreme values, accumulate)."""
    params = SystolicParams(rows=2, cols=2, dataflow="ws", input_precision="int16", weight_precision="int16",
                            acc_precision="int32")
    tile = SystolicTile("ws", 3, 2, 2, accumulate=True)
    big = np.full((3, 2), -32768, dtype=np.int64)
    ops = {"input": big, "weight": np.full((2, 2), -32768, dtype=np.int64),
           "psum": np.full((3, 2), 2**31 - 1, dtype=np.int64)}
    _assert_ok(run_cosim(params, [(tile, ops)], sim=SIM))


@pytest.fixture(scope="module")
def ws_run():
    """One run whose raw result the honesty tests re-check against wrong expectations."""
    if SIM_MISSING:
        pytest.skip(SIM_MISSING)
    params = SystolicParams(rows=3, cols=2, dataflow="ws", mult_pipeline_stages=1)
    items = cosim_items(params, "random", tiles=3, seed=5, max_stream=6)
    design = design_for(params)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim=SIM)
    return params, items, run.result


def test_a_wrong_value_is_reported_with_tile_pe_and_cycle(ws_run):
    params, items, result = ws_run
    assert design_for(params).check(items, result).ok
    tile, ops = items[1]
    bad = dict(ops, weight=ops["weight"].copy())
    bad["weight"][0, 1] += 1  # the model now expects a different out[:, 1]
    report = design_for(params).check([items[0], (tile, bad), items[2]], result)
    assert not report.ok
    (msg,) = report.failures()
    R, P = params.rows, params.mult_pipeline_stages
    assert msg.startswith(f"tile 1 ({tile.dataflow} m={tile.m} k={tile.k} n={tile.n}")
    # out[0, 1] leaves PE(R-1, 1) in tile cycle L + 0 + (R-1) + 1 + P with L = R (serial preload)
    assert "out[0,1] = " in msg and f"presented by PE({R - 1},1) in tile cycle {R + R - 1 + 1 + P}" in msg
    # the summary shows the detailed model's line trace around that cycle
    text = report.summary()
    assert "model line trace of tile 1 around that cycle:" in text and f"t={R + R - 1 + 1 + P:5d}" in text


def test_a_wrong_cycle_count_is_reported(ws_run):
    params, items, result = ws_run
    other = dataclasses.replace(params, mult_pipeline_stages=0)  # the models now say one cycle less
    report = design_for(other).check(items, result)
    assert not report.ok
    fails = report.failures()
    assert len(fails) == len(items)
    t = items[0][0]
    want = 2 * params.rows + params.cols + t.m - 2
    assert fails[0] == (f"tile 0 (ws m={t.m} k={t.k} n={t.n}{' acc' if t.accumulate else ''}): "
                        f"cycles rtl={want + 1} fast={want} detailed={want}")


@needs_icarus
def test_cli_cosim_with_waves_and_json(tmp_path, capsys):
    out = tmp_path / "report.json"
    rc = main(["rtl", "cosim", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=3", "--tiles", "3",
               "--waves", "--json", str(out), "--build-dir", str(tmp_path / "build"), "--sim", SIM])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert f"PASS: 3/3 tiles match archsim on {SIM}" in text
    data = json.loads(out.read_text())
    assert data["ok"] and len(data["tiles"]) == 3
    assert data["waves"] and os.path.getsize(data["waves"]) > 0
