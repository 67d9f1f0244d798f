"""archsim presets show / diff."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from archsim.cli import main

ARCH = Path(__file__).resolve().parents[1] / "archsim" / "presets" / "arch"


def test_show_prints_the_shipped_file(capsys):
    assert main(["presets", "show", "systolic-32x32-os"]) == 0
    out = capsys.readouterr().out
    first, rest = out.split("\n", 1)
    assert first.startswith("# arch spec preset systolic-32x32-os: ") and first.endswith("systolic-32x32-os.yaml")
    assert rest == (ARCH / "systolic-32x32-os.yaml").read_text()


def test_show_a_near_miss_suggests(capsys):
    assert main(["presets", "show", "systolic-32x32"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim: error: presets: no preset named 'systolic-32x32' (did you mean 'systolic-32x32-ws'")


def test_diff_lists_exactly_the_differing_values(capsys):
    a, b = (yaml.safe_load((ARCH / f"systolic-32x32-{d}.yaml").read_text()) for d in ("ws", "os"))
    keys = set(a["params"]) | set(b["params"])  # os leaves preload at its default (serial)
    expected = {f"params.{k}" for k in keys if a["params"].get(k) != b["params"].get(k)}
    expected |= {k for k in ("name", "description") if a[k] != b[k]}
    assert expected == {"name", "description", "params.dataflow", "params.preload"}  # the files differ only there
    assert main(["presets", "diff", "systolic-32x32-ws", "systolic-32x32-os"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["key", "systolic-32x32-ws", "systolic-32x32-os"]
    keys = {line.split()[0] for line in lines[2:]}
    assert keys == expected
    row = next(line for line in lines if line.startswith("params.dataflow"))
    assert row.split() == ["params.dataflow", "ws", "os"]


def test_diff_of_a_preset_with_itself_and_of_two_kinds(capsys):
    assert main(["presets", "diff", "pim-hbm2", "pim-hbm2"]) == 0
    assert capsys.readouterr().out == "pim-hbm2 and pim-hbm2: no differences\n"
    assert main(["presets", "diff", "pim-hbm2", "generic-45nm"]) == 2
    assert "pim-hbm2 is an arch spec preset and generic-45nm a tech table preset" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["presets"], ["presets", "list"]])
def test_list_is_still_the_default(argv, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("arch specs (archsim run --arch NAME):\n")
