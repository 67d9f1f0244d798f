"""bench/bench_lut_energy.py end to end on one small pair (W4 x A8): both synthesized netlists run at
gate level, the LUT core's tiles agree with the models and the baseline's accumulators with numpy."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.synth, pytest.mark.rtl]


def test_energy_bench_measures_w4_a8_with_gate_level_checks(tmp_path):
    if not shutil.which("iverilog"):
        pytest.skip("iverilog not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import bench_lut_energy as bench
    from archsim.spec.load import load_tech
    from rtl.power import calibration_pj_per_unit

    pj_per_unit = calibration_pj_per_unit(load_tech().energy_pj["mult.int8"])
    row = bench.measure("W4", "int4", "A8", "int8", tiles=1, seed=5, pj_per_unit=pj_per_unit)
    assert row["gate_level_tiles"] == 1 and row["gate_level_mismatches"] == 0, row["mismatch"]
    # the tile: m 2, k 16 (4 K-groups), n = 64 / b x 8 = 128; the baseline has 8 / b = 2 columns, so it
    # takes 4 groups x 64 column blocks = 256 words, one accumulator check each
    assert row["baseline_words"] == 4 * (128 // 2) and row["baseline_mismatches"] == 0
    assert row["macs"] == 2 * 16 * 128
    # both cores run near their peak (16 MACs/cycle at W4): the LUT core's table build and fill are small
    assert 0.8 * 16 < row["lut_macs_per_cycle"] <= 16 and 0.9 * 16 < row["mac_macs_per_cycle"] <= 16
    assert row["lut"]["pj_per_mac"] > 0 and row["mac"]["pj_per_mac"] > 0
