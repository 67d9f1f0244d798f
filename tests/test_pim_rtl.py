"""PIM bank unit RTL (Amaranth -> Verilog -> Icarus under cocotb) against the
command-level model: the same timed RD-MAC stream, values bit-exact and equal
cycles; and the RTL's own timing check flags a command issued too early."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.templates.pim import PimParams, PimTile

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


@pytest.mark.parametrize("rows, k, ref_due", [
    (3, 40, 100),    # 3 columns per weight row (one per DRAM row), input broadcast once
    (10, 100, 30),   # two accumulator groups, input reloaded per chunk, a refresh mid-stream
])
def test_bank_unit_matches_model(rows, k, ref_due):
    from rtl.pim import cosim_tile

    P.validate()
    rng = np.random.default_rng(rows * 7 + k)
    w = rng.integers(-128, 128, (1, rows, k))
    x = rng.integers(-128, 128, k)
    res = cosim_tile(PimTile("gemv", rows=rows, k=k, banks=1, ref_due=ref_due), P, w, x)
    assert res.error == 0, "\n".join(res.trace)
    assert np.array_equal(res.rtl_values, res.model_values)
    assert np.array_equal(res.rtl_values[0], w[0] @ x)  # independent numpy GEMV (no int32 overflow here)
    assert res.rtl_cycles == res.model_cycles


def test_bank_unit_flags_early_mac():
    from rtl.cosim.harness import run_job
    from rtl.pim.design import bank_verilog

    # ACT at 0, MAC at 2 < tRCD = 3
    job = {"driver": "rtl.pim.driver:drive", "load": [], "tail": 4,
           "commands": [[0, "ACT", 0, 0, 0, 0], [2, "MAC", 0, 0, 0, 0], [10, "PRE", 0, 0, 0, 0]]}
    res = run_job(bank_verilog(P), "pim_bank", job).result
    assert res["error"] == 1
