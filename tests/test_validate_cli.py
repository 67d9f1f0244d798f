"""``archsim validate``: table, --json, --only, --list, a one-line error for an unknown name, exit 1 on a failing claim.

The comparisons here are planted modules (monkeypatched into ``archsim.validate``),
so these tests pin the command, not any model: their expected values are the
planted claims' own numbers.
"""
from __future__ import annotations

import json
import sys
import types

import pytest

from archsim import validate
from archsim.cli import main
from archsim.validate import Claim


def _plant(monkeypatch, modules: dict[str, list[Claim]]) -> None:
    """Make ``archsim validate`` see exactly these comparisons (name -> its claims)."""
    for name, claims in modules.items():
        module = types.ModuleType(f"archsim.validate.{name}")
        module.claims = lambda claims=claims: list(claims)
        monkeypatch.setitem(sys.modules, f"archsim.validate.{name}", module)
    monkeypatch.setattr(validate, "groups", lambda: sorted(modules))


GOOD = [Claim("alpha", "speedup", ours=2.5, published=2.6, rel_tol=0.05, source="paper A, Fig. 1", unit="x"),
        Claim("alpha", "cycles", ours=20351.0, published=20351.0, rel_tol=0.0, source="tool B", unit="cycles",
              note="1/1 layers equal")]
BAD = [Claim("beta", "energy ratio", ours=1.0, published=1.4, rel_tol=0.1, source="paper C, Table 2")]


def test_table_lists_every_claim_and_exits_0(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD})
    assert main(["validate"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:7] == ["comparison", "quantity", "archsim", "published", "error", "tol", "result"]
    speed = next(line for line in out if "speedup" in line)
    # 2.5 vs 2.6: |2.5 - 2.6| / 2.6 = 3.8 %, within 5 %
    assert "2.5" in speed and "2.6" in speed and "3.8%" in speed and "5%" in speed and "pass" in speed
    cycles = next(line for line in out if "cycles" in line and "alpha" in line)
    assert "20,351" in cycles and "1/1 layers equal" in cycles  # whole numbers in full
    assert out[-1] == "2 of 2 published figures reproduced within tolerance"


def test_failing_claim_exits_1_and_says_fail(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD, "beta": BAD})
    assert main(["validate"]) == 1
    out = capsys.readouterr().out
    bad = next(line for line in out.splitlines() if "energy ratio" in line)
    assert "FAIL" in bad and "28.6%" in bad  # |1.0 - 1.4| / 1.4
    assert "2 of 3 published figures" in out


def test_only_runs_just_that_comparison(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD, "beta": BAD})
    assert main(["validate", "--only", "alpha"]) == 0  # the failing one is not run
    captured = capsys.readouterr()
    assert "beta" not in captured.out and "energy ratio" not in captured.out
    assert "validate: alpha" in captured.err and "validate: beta" not in captured.err


def test_json_is_machine_readable(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD, "beta": BAD})
    assert main(["validate", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["group"], r["name"], r["passed"]) for r in rows] == [
        ("alpha", "speedup", True), ("alpha", "cycles", True), ("beta", "energy ratio", False)]
    assert [r["status"] for r in rows] == ["pass", "pass", "FAIL"]
    first = rows[0]
    assert first["ours"] == 2.5 and first["published"] == 2.6 and first["rel_tol"] == 0.05
    assert first["rel_error"] == pytest.approx(0.1 / 2.6)
    assert first["source"] == "paper A, Fig. 1" and first["unit"] == "x"


def test_list_names_the_comparisons(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD, "beta": BAD})
    assert main(["validate", "--list"]) == 0
    assert capsys.readouterr().out.split() == ["alpha", "beta"]


def test_unknown_name_is_a_one_line_error_before_running_anything(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD})
    assert main(["validate", "--only", "alpha", "--only", "nosuch"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "nosuch" in lines[0] and "alpha" in lines[0]  # names what exists
    assert "Traceback" not in captured.err and captured.out == ""


def test_a_non_finite_value_never_passes():
    assert not Claim("g", "x", ours=float("nan"), published=1.0, rel_tol=10.0, source="s").passed
    assert Claim("g", "x", ours=0.0, published=0.0, rel_tol=0.0, source="s").passed


def test_shipped_groups_are_discovered():
    assert "scalesim" in validate.groups()  # a module adds itself by existing


EXPLAINED = [Claim("gamma", "speedup", ours=1.2, published=2.6, rel_tol=0.1, source="paper D, abstract",
                   explained="the paper's baseline is another accelerator")]


def test_an_explained_difference_shows_as_differs_and_does_not_fail(monkeypatch, capsys):
    _plant(monkeypatch, {"alpha": GOOD, "gamma": EXPLAINED})
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("gamma"))
    assert "differs" in row and "FAIL" not in row and "another accelerator" in row
    assert "2 of 3 published figures reproduced within tolerance; 1 differ" in out


def test_an_explanation_never_excuses_a_non_finite_value():
    claim = Claim("g", "x", ours=float("nan"), published=1.0, rel_tol=0.1, source="s", explained="reason")
    assert claim.status == "FAIL"
    within = Claim("g", "x", ours=1.0, published=1.0, rel_tol=0.1, source="s", explained="reason")
    assert within.status == "pass"
