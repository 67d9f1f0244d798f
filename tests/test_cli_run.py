"""`archsim run` / `archsim presets` / archsim.simulate end to end on small workloads."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

GEMM256 = str(Path(__file__).resolve().parents[1] / "archsim" / "validate" / "scalesim_reference" / "topologies" / "gemm256.csv")


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_presets_lists_every_arch_preset(capsys):
    code, out, _ = run_cli(capsys, "presets")
    assert code == 0
    for name in archsim.spec.preset_names():
        assert re.search(rf"^  {re.escape(name)} +\S", out, re.M), name
    assert re.search(r"^  tpuv1-256x256 +TPUv1-like 256x256 int8", out, re.M)
    assert "sweeps (archsim sweep NAME):" in out


@pytest.mark.parametrize("df, folds_cycles", [
    # 256^3 GEMM on 32x32, serial preload, stall-free DRAM:
    # WS/IS: 8*8 folds x (2R + C + 256 - 2) = 64 x 350; OS: 64 folds x (R + C + 256 - 2) = 64 x 318
    ("ws", 64 * 350), ("is", 64 * 350), ("os", 64 * 318),
])
def test_run_gemm_scalesim_preset(capsys, tmp_path, df, folds_cycles):
    out_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, "run", "--arch", f"scalesim-32x32-{df}", "--workload", GEMM256,
                             "--out", str(out_dir), "--no-plots")
    assert code == 0, err
    assert re.search(rf"^total cycles +{folds_cycles:,}$", out, re.M)
    report = json.loads((out_dir / "report.json").read_text())
    assert report["total_cycles"] == folds_cycles and report["stall_cycles"] == 0
    assert report["macs"] == 256 ** 3
    # SCALE-Sim 3.0.0 reports one less per layer (index of the last cycle): 22,399 / 22,399 / 20,351
    scalesim_total = {"ws": 22399, "is": 22399, "os": 20351}[df]
    # COMPUTE_REPORT.csv speaks SCALE-Sim's convention, so it diffs cleanly against SCALE-Sim's own file:
    # checked against SCALE-Sim's published figure, not against our own count minus one
    lines = (out_dir / "COMPUTE_REPORT.csv").read_text().splitlines()
    assert lines[1].startswith(f"0, {scalesim_total}, 0, ")


def test_run_default_folder_and_byte_identical_reports(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ("run", "--arch", "systolic-32x32-ws", "--workload", GEMM256, "--no-plots", "--set", "dram.bytes_per_cycle=4")
    assert run_cli(capsys, *args)[0] == 0
    (folder,) = os.listdir(tmp_path / "sim_out")  # --set: a hash of the options after the readable name
    assert re.fullmatch(r"systolic-32x32-ws-gemm256-[0-9a-f]{8}", folder), folder
    first = (tmp_path / "sim_out" / folder / "report.json").read_bytes()
    assert run_cli(capsys, *args)[0] == 0
    assert os.listdir(tmp_path / "sim_out") == [folder]
    assert (tmp_path / "sim_out" / folder / "report.json").read_bytes() == first
    report = json.loads(first)
    assert report["arch"]["dram"]["bytes_per_cycle"] == 4
    assert report["options"]["overrides"] == ["dram.bytes_per_cycle=4"]
    # at 4 B/cycle the 256 KiB of operands and results cannot keep up: stalls appear
    assert report["stall_cycles"] > 0


def test_bad_input_is_one_line_and_keeps_old_results(capsys, tmp_path):
    out_dir = tmp_path / "keep"
    out_dir.mkdir()
    (out_dir / "report.json").write_text("old")
    code, out, err = run_cli(capsys, "run", "--arch", "systolic-32x32-ws", "--workload", GEMM256,
                             "--out", str(out_dir), "--set", "rows=-4")
    assert code == 2
    assert re.fullmatch(r"archsim: error: systolic-32x32-ws\.yaml: params\.rows: expected a positive integer, got -4\n", err)
    code, out, err = run_cli(capsys, "run", "--arch", "nosuch", "--workload", GEMM256, "--out", str(out_dir))
    assert code == 2 and re.fullmatch(r"archsim: error: unknown arch 'nosuch': not a file and not a preset; expected one of .*\n", err)
    code, out, err = run_cli(capsys, "run", "--arch", "systolic-32x32-ws", "--workload", "nosuch-net", "--out", str(out_dir))
    assert code == 2 and err.startswith("archsim: error: ") and err.count("\n") == 1
    assert (out_dir / "report.json").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["keep"]


def test_simulate_api_matches_cli_and_takes_graphs():
    import workloads

    g = workloads.load(GEMM256)
    r1 = archsim.simulate(g, "scalesim-32x32-os")
    r2 = archsim.simulate(GEMM256, archsim.load_arch("scalesim-32x32-os"))
    assert r1.total_cycles == r2.total_cycles == 64 * 318
    assert isinstance(r1, archsim.SimResult) and r1.layers[0].macs == 256 ** 3
    r3 = archsim.simulate(g, "scalesim-32x32-os", overrides=["rows=16", "cols=16"])
    # 16 x 16 folds of (16 + 16 + 256 - 2) cycles
    assert r3.total_cycles == 256 * 286
    with pytest.raises(archsim.errors.WorkloadError, match=r"^workload options batch apply only to a workload given by name or path$"):
        archsim.simulate(g, "scalesim-32x32-os", batch=2)
