"""`archsim run`'s default output folder names the run: two runs that differ in any option that
changes the reports never share a folder, and a folder archsim did not create is never written."""
from __future__ import annotations

import json
import os
from pathlib import Path

from archsim.cli import main
from archsim.cli.run import run_name

GEMM256 = str(Path(__file__).resolve().parents[1] / "archsim" / "validate" / "scalesim_reference" / "topologies" / "gemm256.csv")


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_name_spells_the_common_options():
    # written by hand from the documented scheme: <arch>-<workload>-<phase>-b<batch>-s<seq>-kv<kv>-img<px>-...
    assert run_name("systolic-32x32-ws", "gpt2", {}) == "systolic-32x32-ws-gpt2"
    assert (run_name("systolic-32x32-ws", "gpt2", {"phase": "decode", "batch": 8, "kv_len": 1023})
            == "systolic-32x32-ws-gpt2-decode-b8-kv1023")
    assert run_name("simd-edge", "resnet50", {"image_size": 160, "weights": "int4", "activations": "int8"}) \
        == "simd-edge-resnet50-img160-wint4-aint8"
    assert run_name("simd-edge", "bert-base", {"seq": 128}) == "simd-edge-bert-base-s128"


def test_run_name_hashes_the_other_options_stably():
    base = {"batch": 2}
    plain = run_name("a", "w", base)
    with_set = run_name("a", "w", {**base, "overrides": ["rows=16"]})
    other_set = run_name("a", "w", {**base, "overrides": ["rows=8"]})
    assert with_set.startswith(plain + "-") and len(with_set) == len(plain) + 1 + 8
    assert len({plain, with_set, other_set}) == 3
    # the same options in another order are the same run; None means "not given"
    assert run_name("a", "w", {"dataflow": "os", "batch": 2, "objective": None}) == \
        run_name("a", "w", {"batch": 2, "dataflow": "os"})
    assert run_name("a", "w", {"dataflow": "os"}) != run_name("a", "w", {"dataflow": "is"})
    assert run_name("a", "w", {"detailed": True}) != run_name("a", "w", {})


def test_runs_differing_in_a_template_option_keep_both_reports(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = ("run", "--arch", "scalesim-32x32-ws", "--workload", GEMM256, "--no-plots", "-q")
    assert run_cli(capsys, *base)[0] == 0
    code, out, err = run_cli(capsys, *base, "--dataflow", "os")
    assert code == 0, err
    folders = sorted(os.listdir(tmp_path / "sim_out"))
    assert len(folders) == 2 and "scalesim-32x32-ws-gemm256" in folders, folders
    other = next(f for f in folders if f != "scalesim-32x32-ws-gemm256")
    assert f"sim_out/{other}/" in out
    # 256^3 GEMM on 32x32, stall-free: WS 64 folds x (2R + C + 254) = 64 x 350; OS 64 x (R + C + 254) = 64 x 318
    ws = json.loads((tmp_path / "sim_out" / "scalesim-32x32-ws-gemm256" / "report.json").read_text())
    os_ = json.loads((tmp_path / "sim_out" / other / "report.json").read_text())
    assert ws["total_cycles"] == 64 * 350 and os_["total_cycles"] == 64 * 318
    assert os_["options"]["mapper"]["dataflow"] == "os"


def test_report_json_records_transform_and_trace_layers(capsys, tmp_path):
    out_dir = tmp_path / "r"
    code, _, err = run_cli(capsys, "run", "--arch", "scalesim-32x32-ws", "--workload", GEMM256, "--no-plots", "-q",
                           "--transform", "draco:group_width=4", "--trace-layers", "3", "--out", str(out_dir))
    assert code == 0, err
    options = json.loads((out_dir / "report.json").read_text())["options"]
    assert options["transform"] == "draco:group_width=4" and options["trace_layers"] == 3


def test_default_folder_of_the_users_own_is_refused_untouched(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "sim_out" / "scalesim-32x32-ws-gemm256-wint8-aint8"
    mine.mkdir(parents=True)
    (mine / "report.json").write_text("my notes\n")
    code, out, err = run_cli(capsys, "run", "--arch", "scalesim-32x32-ws", "--workload", GEMM256, "--weights", "int8",
                             "--activations", "int8", "--no-plots", "-q")
    assert code == 2 and "not written by archsim" in err and len(err.strip().splitlines()) == 1
    assert (mine / "report.json").read_text() == "my notes\n" and sorted(os.listdir(mine)) == ["report.json"]
