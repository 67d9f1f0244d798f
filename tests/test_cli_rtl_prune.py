"""``archsim rtl cosim --unit prune``: SpAtten's composed pruning step (rtl/attention/spatten.py: the
attention array, the probability sums and the top-k engine) driven from the CLI on random steps; bad
flags are one line."""
from __future__ import annotations

import json

import pytest

from archsim.cli import main
from cli_errors import one_line_error

SMALL = ["--arch", "spatten", "--unit", "prune", "--set", "rows=2", "--set", "cols=2", "--set", "pe1d=2",
         "--set", "exp_on=array2d", "--set", "exp_macs=4", "--set", "topk_parallelism=4", "-q"]


@pytest.mark.parametrize("argv, words", [
    (["--arch", "spatten", "--unit", "nope"], ["--unit", "'nope'", "prune", "topk"]),
    (SMALL + ["--source", "program"], ["'program'", "expected random"]),
    (SMALL + ["--depth", "4"], ["--depth", "prune", "no local tile buffers"]),
    (["--arch", "fusemax-edge", "--unit", "prune", "--set", "topk_parallelism=3"], ["topk_parallelism", "power of two"]),
])
def test_bad_flags_are_one_line(capsys, argv, words):
    one_line_error(capsys, ["rtl", "cosim", *argv, "--tiles", "1"], *words)


def test_the_unit_is_named_where_the_template_top_is_refused(capsys):
    """The spatten preset's own top cannot be built (exps on the 1D array); the error names the unit
    that can (top-k; the pruning step needs the same array as the top)."""
    one_line_error(capsys, ["rtl", "cosim", "--arch", "spatten", "--tiles", "1"], "--unit topk")


@pytest.mark.rtl
def test_cosim_random_steps_from_the_cli(capsys, tmp_path):
    """2 random steps (seed 3: one head, then two heads) exact on Icarus: values (outputs, sums, kept
    keys) and the step's cycles; the JSON lists each step's k kept keys, distinct, below its kv_len."""
    from rtl.cosim import simulator_missing_reason

    missing = simulator_missing_reason("icarus")
    if missing:
        pytest.skip(missing)
    out = tmp_path / "prune.json"
    rc = main(["rtl", "cosim", *SMALL, "--tiles", "2", "--seed", "3", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "archsim_spatten" in text and "PASS: 2/2" in text
    tiles = json.loads(out.read_text())["tiles"]
    assert len(tiles) == 2
    for t in tiles:
        assert t["values_ok"] and t["cycles_ok"], t
        fields = dict(w.split("=") for w in t["command"].split()[1:])
        kv_len, k = int(fields["L"]), int(fields["k"])
        assert len(set(t["kept"])) == k and all(0 <= j < kv_len for j in t["kept"]), t
