"""User errors reach the CLI as one line on stderr with exit status 2, never a traceback."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from archsim.cli import main

PRESETS = Path(__file__).parent.parent / "archsim" / "presets"
GEMM256 = str(Path(__file__).resolve().parents[1] / "archsim" / "validate" / "scalesim_reference" / "topologies" / "gemm256.csv")


def run_error(capsys, *argv) -> str:
    """Run the CLI, expect exit status 2 and one line on stderr; return that line."""
    code = main(list(argv))
    _, err = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _arch_with_tech_lacking(tmp_path: Path, action: str) -> str:
    tech = yaml.safe_load((PRESETS / "tech" / "generic-45nm.yaml").read_text())
    tech["name"] = "no-" + action.replace(".", "-")
    del tech["energy_pj"][action]
    tech_file = tmp_path / "tech.yaml"
    tech_file.write_text(yaml.safe_dump(tech))
    arch = yaml.safe_load((PRESETS / "arch" / "scalesim-32x32-ws.yaml").read_text())
    arch["tech"] = str(tech_file)
    arch_file = tmp_path / "arch.yaml"
    arch_file.write_text(yaml.safe_dump(arch))
    return str(arch_file)


@pytest.mark.parametrize("action", ["dram_bit", "mac.int8"])
def test_run_tech_table_without_an_energy(capsys, tmp_path, action):
    arch = _arch_with_tech_lacking(tmp_path, action)
    line = run_error(capsys, "run", "--arch", arch, "--workload", GEMM256, "--out", str(tmp_path / "out"),
                     "--no-plots")
    tech = "no-" + action.replace(".", "-")
    assert re.fullmatch(
        rf"archsim: error: tech table {tech}: no energy for action '{re.escape(action)}' of template systolic; "
        r"expected one of .*\bvector\.op\b.*", line)


def test_run_unknown_set_key(capsys, tmp_path):
    line = run_error(capsys, "run", "--arch", "systolic-32x32-ws", "--workload", GEMM256, "--set", "nokey=1",
                     "--out", str(tmp_path / "out"), "--no-plots")
    assert re.fullmatch(r"archsim: error: systolic-32x32-ws\.yaml: --set nokey=1: unknown key 'nokey'; "
                        r"expected a spec key .*", line)


def test_workload_show_unknown_parameter(capsys):
    line = run_error(capsys, "workload", "show", "resnet50", "--seq", "4")
    assert re.fullmatch(r"archsim: error: resnet50: parameter 'seq_len' \(--seq\) does not apply to this model; "
                        r"its parameters: batch, image_size, .*", line)


def test_rtl_generate_bad_option(capsys, tmp_path):
    line = run_error(capsys, "rtl", "generate", "--arch", "systolic-32x32-os", "--depth", "0",
                     "--out", str(tmp_path / "rtl"))
    assert line == "archsim: error: --depth: expected a positive integer, got 0"  # was silently ignored
    assert not (tmp_path / "rtl").exists()
