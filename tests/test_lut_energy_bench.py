"""bench/bench_lut_energy.py end to end on one small pair (W4 x A8), run as a user runs it (its own
process): both synthesized netlists run at gate level, the LUT core's tile agrees with the models and
the baseline's accumulators with numpy."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.synth, pytest.mark.rtl]
ROOT = Path(__file__).resolve().parents[1]


def test_energy_bench_measures_w4_a8_with_gate_level_checks(tmp_path):
    if not shutil.which("iverilog"):
        pytest.skip("iverilog not installed")
    out = tmp_path / "energy.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_lut_energy.py"), "--only", "W4,A8",
                           "--tiles", "1", "--seed", "5", "--json", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [row] = json.loads(out.read_text())
    assert row["gate_level_tiles"] == 1 and row["gate_level_mismatches"] == 0, row["mismatch"]
    # the tile: m 2, k 16 (4 K-groups), n = 64 / b x 8 = 128; the baseline has 8 / b = 2 columns, so it
    # takes 4 groups x 64 column blocks = 256 words, one accumulator check each
    assert row["baseline_words"] == 4 * (128 // 2) and row["baseline_mismatches"] == 0
    assert row["macs"] == 2 * 16 * 128
    # both cores run near their peak (16 MACs/cycle at W4): the LUT core's table build and fill are small
    assert 0.8 * 16 < row["lut_macs_per_cycle"] <= 16 and 0.9 * 16 < row["mac_macs_per_cycle"] <= 16
    # energy = data toggles + the clock model's CLOCK_UNITS_PER_FF per flip-flop per cycle (rtl.power):
    # both cores toggle data, and their clock energies stand as their flip-flops x measured cycles,
    # whatever the calibration (pJ per unit) -- derived from the synthesized FF counts, not the bench
    lut, mac = row["lut"], row["mac"]
    assert 0 < lut["clock_share"] < 1 and 0 < mac["clock_share"] < 1
    clock_ratio = (lut["pj_per_mac"] * lut["clock_share"]) / (mac["pj_per_mac"] * mac["clock_share"])
    assert clock_ratio == pytest.approx(lut["ffs"] * lut["cycles"] / (mac["ffs"] * mac["cycles"]), rel=1e-6)
