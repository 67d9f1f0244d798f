"""``archsim sweep`` end to end with the real simulator on a tiny workload; shipped sweeps."""
from __future__ import annotations

import csv
import json
import textwrap

import pytest

import archsim
from archsim.area import area_mm2
from archsim.cli import main
from archsim.dse import build_plan, load_sweep, sweep_preset_names

TINY = textwrap.dedent("""
    name: tiny_cnn
    precision: {weights: int8, activations: int8, accumulators: int32}
    input: [1, 3, 32, 32]
    layers:
      - {name: conv1, op: conv2d, out_channels: 16, kernel: 3, padding: 1}
      - {name: relu1, op: elementwise, fn: relu}
      - {name: conv2, op: conv2d, out_channels: 32, kernel: 3, padding: 1, stride: 2}
      - {name: fc, op: matmul, n: 10}
""")
SWEEP = textwrap.dedent("""
    name: tiny
    base: systolic-32x32-ws
    axes:
      rows: [8, 16]
      dataflow: [ws, os]
      buffers.*.bytes: {log2_range: [16384, 32768]}
    workloads: [tiny.yaml]
    objectives: {cycles: min, energy: min, area: min}
    constraints: ["area_mm2 <= 3"]
""")


@pytest.fixture
def sweep_file(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TINY)
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    return path


def test_cli_runs_real_simulations_and_resumes(sweep_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file), "--out", str(out), "--workers", "2", "--no-plots", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "tiny: 8 ok" in printed and "Pareto front" in printed and "8 points run, 0 reused" in printed
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}
    # independent check of one point: the same arch built by hand and simulated directly
    row = next(r for r in rows if r["rows"] == "16" and r["dataflow"] == "os" and r["buffers.*.bytes"] == "32768")
    arch = archsim.load_arch("systolic-32x32-ws", {"rows": 16, "dataflow": "os", "buffers.input.bytes": 32768,
                                                   "buffers.weight.bytes": 32768, "buffers.output.bytes": 32768})
    direct = archsim.simulate(str(tmp_path / "tiny.yaml"), arch)
    assert int(row["cycles"]) == direct.total_cycles
    assert float(row["energy_pj"]) == pytest.approx(direct.energy_pj)
    assert float(row["utilization"]) == pytest.approx(direct.utilization)
    assert float(row["edp_pj_s"]) == pytest.approx(direct.energy_pj * direct.latency_s)

    assert main(["sweep", str(sweep_file), "--out", str(out), "--no-plots", "--no-progress"]) == 0
    assert "0 points run, 8 reused" in capsys.readouterr().out
    assert len((out / "results.jsonl").read_text().splitlines()) == 8


def test_same_results_on_ray_and_local_real_simulation(sweep_file, tmp_path, capsys):
    ray = pytest.importorskip("ray")
    for backend in ("local", "ray"):
        assert main(["sweep", str(sweep_file), "--out", str(tmp_path / backend), "--backend", backend,
                     "--workers", "2", "--no-plots", "--no-progress"]) == 0
    assert not ray.is_initialized()  # a local instance started by the sweep is shut down again

    def metrics(backend):
        records = [json.loads(line) for line in (tmp_path / backend / "results.jsonl").read_text().splitlines()]
        return sorted((r["key"], r["status"], json.dumps(r["metrics"], sort_keys=True)) for r in records)

    assert metrics("ray") == metrics("local") and len(metrics("local")) == 8


def test_bad_input_is_one_line_before_any_work(sweep_file, tmp_path, capsys):
    out = tmp_path / "never"
    sweep_file.write_text(SWEEP.replace("rows: [8, 16]", "rowz: [8, 16]"))
    assert main(["sweep", str(sweep_file), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"archsim: error: {sweep_file}: axes.rowz: no such parameter in arch 'systolic-32x32-ws'; ")
    assert "\n" not in err and not out.exists()

    sweep_file.write_text(SWEEP.replace("area_mm2 <= 3", "area_mm2 <= 0.2"))
    assert main(["sweep", str(sweep_file), "--out", str(out)]) == 2
    smallest = area_mm2(archsim.load_arch("systolic-32x32-ws", {"rows": 8, "buffers.input.bytes": 16384,
                                                                "buffers.weight.bytes": 16384, "buffers.output.bytes": 16384}))
    assert capsys.readouterr().err.strip() == (
        f"archsim: error: {sweep_file}: constraints: no point can meet area_mm2 <= 0.2: "
        f"the smallest point's area is {smallest:.4g} mm2")
    assert not out.exists()
    assert main(["sweep", str(sweep_file), "--address", "x:1"]) == 2
    assert capsys.readouterr().err.strip() == "archsim: error: --address: only used with --backend ray"


@pytest.mark.parametrize("name", ["resnet50-array-dataflow-buffer", "bert-base-array-dataflow-buffer"])
def test_shipped_sweeps_plan(name, capsys):
    assert name in sweep_preset_names()
    plan = build_plan(load_sweep(name))
    assert len(plan.tasks) >= 50
    assert {dict(t.config)["dataflow"] for t in plan.tasks} == {"ws", "os", "is"}
    main(["presets"])
    assert name in capsys.readouterr().out


def test_sweep_says_what_the_area_does_not_price(sweep_file, tmp_path, capsys):
    """A SIMD ``pe_style: tpe`` point's area is the standard PE's (the area model has no term for the
    dot unit; archsim.area.area_unpriced): the sweep says so in results.csv, the summary and --dry-run,
    as ``archsim compare`` does; a standard point's cell stays empty."""
    from archsim.area import area_unpriced

    sweep_file.write_text(textwrap.dedent("""
        name: tpe
        base: simd-edge
        axes:
          pe_style: [tpe, standard]
        workloads: [tiny.yaml]
        objectives: {cycles: min, area: min}
    """))
    assert main(["sweep", str(sweep_file), "--dry-run"]) == 0
    listing = capsys.readouterr().out
    said = area_unpriced(archsim.load_arch("simd-edge", {"pe_style": "tpe"}))["pe_style"]
    assert said.startswith("tpe: not priced")
    note = f"area_mm2 of 1 of 2 points does not price pe_style {said}"
    assert listing.splitlines()[-1] == note
    assert "pe_style=tpe  area=" in listing and "mm2 (does not price pe_style)  key=" in listing
    assert sum("does not price" in line for line in listing.splitlines()) == 2  # the tpe point and the note

    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file), "--out", str(out), "--no-plots", "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == note
    rows = {r["pe_style"]: r for r in csv.DictReader(open(out / "results.csv"))}
    assert rows["tpe"]["area_unpriced"] == "pe_style" and rows["standard"]["area_unpriced"] == ""
    assert rows["tpe"]["area_mm2"] == rows["standard"]["area_mm2"]  # the same area: the tie goes to the first point
    best_area = next(line for line in printed if line.strip().startswith("area (min)"))
    assert best_area.rstrip().endswith("pe_style=tpe (area does not price pe_style)")
