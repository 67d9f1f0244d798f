"""PIM bank unit RTL (Amaranth -> Verilog -> Icarus under cocotb, through the generic
``rtl`` plug-in) against the PIM models: the same timed RD-MAC streams, values bit-exact
(int8 and bf16) and equal cycles; and the RTL's own timing check flags a command issued
too early. Expectations come from the models (and numpy), never from the RTL."""
from __future__ import annotations

import json

import numpy as np
import pytest

from archsim.cli import main
from archsim.spec import load_arch
from archsim.templates.pim import PimParams, PimTile, plan_steps, steps_cycles
from archsim.templates.pim.commands import run_detailed
from archsim.templates.pim.fast import tile_cycles
from rtl import cosim_items, design_for, run_cosim
from rtl.cosim import run_job

pytestmark = pytest.mark.rtl

P = PimParams(channels=1, banks_per_channel=1, bank_groups=1, rows_per_bank=64, row_bytes=64, column_bytes=16,
              mac_lanes=16, mac_precision="int8", mac_pipeline_cycles=1, acc_registers=8, input_buffer_bytes=64,
              tRCD=3, tRP=3, tRAS=7, tRTP=2, tWR=4, tCCD_S=1, tCCD_L=2, tRRD=1, tFAW=6, tREFI=200, tRFC=20, tCL=3)


@pytest.fixture(scope="module", autouse=True)
def _needs_icarus():
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)


def _assert_ok(report):
    assert report.ok, "\n" + report.summary()


@pytest.fixture(scope="module")
def small_run():
    """Two int8 tiles on a small bank: (3, 40) packs 3 weight rows per DRAM row, input broadcast once;
    (10, 100) has two accumulator groups, the input reloaded per chunk and a refresh mid-stream."""
    P.validate()
    items = []
    for rows, k, ref_due in [(3, 40, 100), (10, 100, 30)]:
        rng = np.random.default_rng(rows * 7 + k)
        w = rng.integers(-128, 128, (1, rows, k))
        x = rng.integers(-128, 128, k)
        items.append((PimTile("gemv", rows=rows, k=k, banks=1, ref_due=ref_due), {"weight": w, "input": x}))
    design = design_for(P)  # the default top: the host engine
    run = run_job(design.verilog(), design.toplevel, design.make_job(items))
    return design, items, run.result


def test_bank_unit_matches_model(small_run):
    design, items, result = small_run
    report = design.check(items, result)
    _assert_ok(report)
    for (tile, ops), res, check in zip(items, result["streams"], report.tiles):
        assert res["error"] == 0, "\n".join(res["trace"])
        w, x = ops["weight"], ops["input"]
        model_values, model_cycles, _ = run_detailed(tile, P, w, x)
        rtl_values = design.rtl_values(tile, res)
        assert np.array_equal(rtl_values, model_values)
        assert np.array_equal(rtl_values[0], w[0] @ x)  # independent numpy GEMV (no int32 overflow here)
        assert check.rtl_cycles == model_cycles == tile_cycles(tile, P)


def test_a_wrong_value_is_reported(small_run):
    design, items, result = small_run
    tile, ops = items[1]
    bad = dict(ops, weight=ops["weight"].copy())
    bad["weight"][0, 4, 0] += 1  # the models now expect a different row 4
    report = design.check([items[0], (tile, bad)], result)
    assert not report.ok
    (msg,) = report.failures()
    assert msg.startswith("tile 1 (gemv rows=10 k=100 ref@30): row 4 = ") and "1 of 10 values differ" in msg


def test_bank_unit_flags_early_mac():
    design = design_for(P, {"top": "unit"})
    # ACT at 0, MAC at 2 < tRCD = 3
    job = {"driver": design.driver, "array_latency": design.array_latency(),
           "streams": [{"array": [], "tail": 4,
                        "commands": [[0, "ACT", 0, 0, 0, 0], [2, "MAC", 0, 0, 0, 0], [10, "PRE", 0, 0, 0, 0]]}]}
    res = run_job(design.verilog(), design.toplevel, job).result
    assert res["streams"][0]["error"] == 1


def test_pim_hbm2_bf16_random_tiles():
    """The shipped preset (16 bf16 lanes, fp32 adder tree and accumulators): random tiles, one with a
    refresh, rows packed / single / chunked; values compared bit for bit with the models."""
    arch = load_arch("pim-hbm2", [])
    items = cosim_items(arch.params, "random", tiles=3, seed=2, max_stream=3)
    assert {t.k > 512 for t, _ in items} == {True, False}  # chunked rows and packed rows
    assert sum(steps_cycles(plan_steps(t, arch.params), arch.params, t.ref_due)["refreshes"] for t, _ in items) >= 1
    report = run_cosim(arch, items)
    _assert_ok(report)
    assert len(report.tiles) == 3


def test_pim_hbm2_gpt2_decode_tile_from_the_mapper():
    """The first layer of GPT-2 decode compiled by the PIM mapper (q_proj: 6 rows of k = 384 per bank,
    refresh phase tREFI / 2), one bank's share, replayed on the bank unit."""
    arch = load_arch("pim-hbm2", [])
    items = cosim_items(arch.params, "program", tiles=2, seed=1, max_stream=16, arch=arch, workload="gpt2")
    assert [(t.rows, t.k, t.ref_due) for t, _ in items] == [(6, 384, arch.params.tREFI // 2)]
    _assert_ok(run_cosim(arch, items))


def test_cli_cosim_pim_hbm2(tmp_path, capsys):
    out = tmp_path / "report.json"
    rc = main(["rtl", "cosim", "--arch", "pim-hbm2", "--tiles", "2", "--max-stream", "2", "--seed", "5",
               "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "PASS: 2/2 tiles match archsim on icarus" in text
    data = json.loads(out.read_text())
    assert data["design"] == "pim" and data["ok"] and len(data["tiles"]) == 2


# ----------------------------------------------------------------------------- a channel of N banks

P4 = PimParams(channels=1, banks_per_channel=4, bank_groups=2, rows_per_bank=64, row_bytes=64, column_bytes=16,
               mac_lanes=16, mac_precision="int8", mac_pipeline_cycles=1, acc_registers=8, input_buffer_bytes=64,
               tRCD=3, tRP=3, tRAS=7, tRTP=2, tWR=4, tCCD_S=1, tCCD_L=2, tRRD=1, tRRD_L=2, tFAW=6, tREFI=200,
               tRFC=20, tCL=3)


def test_channel_of_four_banks_matches_model():
    """Four bank units in all-bank lockstep with one global buffer: every bank's rows come out of
    the channel's gather (bank-major RDACC packing), bit-exact with the detailed model and numpy,
    and the cycles equal the fast and detailed models' (refresh included)."""
    design = design_for(P4, {"banks": 4})
    assert design.toplevel == "archsim_pim_channel"
    items = design.cosim_items("random", tiles=3, seed=3, max_stream=10)
    assert {t.banks for t, _ in items} == {4} and any(t.ref_due < 1 << 40 for t, _ in items)
    report = run_cosim(P4, items, options={"banks": 4})
    _assert_ok(report)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items))
    for (tile, ops), res in zip(items, run.result["streams"]):
        w, x = ops["weight"], ops["input"]
        vals = design.rtl_values(tile, res)
        assert np.array_equal(vals, np.einsum("brk,k->br", w, x))  # numpy, every bank


@pytest.mark.slow
def test_channel_pim_hbm2_bf16():
    arch = load_arch("pim-hbm2", [])
    from rtl.generate import design_for as dfor

    design = dfor(arch, {"banks": 4})
    items = design.cosim_items("random", tiles=2, seed=4, max_stream=3)
    _assert_ok(run_cosim(arch, items, options={"banks": 4}))
