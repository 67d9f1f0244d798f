"""``archsim validate --only scalesim``: every SCALE-Sim figure reproduced exactly, and a planted deviation caught.

The published figures are SCALE-Sim 3.0.0's own output (archsim/validate/scalesim_reference,
bench/scalesim_reference.py); the totals pinned below are the ones recorded with
that run in /work/shared/scalesim_topologies/README.md (SCALE-Sim's output, not archsim's).
"""
from __future__ import annotations

import shutil

import pytest

from archsim.errors import ArchsimError
from archsim.validate import scalesim


@pytest.fixture(scope="module")
def claims():
    return scalesim.claims()


def test_every_scalesim_claim_passes(claims):
    assert len(claims) == 21  # 4 topologies x {32, 128} x 3 dataflows, Resnet50 at 128 only
    failed = [(c.name, c.ours, c.published) for c in claims if not c.passed]
    assert not failed
    for c in claims:
        layers = c.note.split()[0].split("/")
        assert layers[0] == layers[1], c.note  # every layer equal, not just the sum


@pytest.mark.parametrize("name, scalesim_total", [
    ("gemm256 32x32 OS", 20351), ("gemm256 32x32 WS", 22399), ("gemm256 128x128 OS", 2039),
    ("vit_s 32x32 OS", 352781), ("vit_s 32x32 IS", 380249), ("Resnet18 32x32 WS", 2519815),
    ("Resnet18 128x128 WS", 417628),
])
def test_published_figures_are_scalesims(claims, name, scalesim_total):
    claim = next(c for c in claims if c.name.startswith(name + " "))
    assert claim.published == scalesim_total


def test_a_planted_deviation_fails(tmp_path):
    data = tmp_path / "ref"
    shutil.copytree(scalesim.REFERENCE_DIR, data)
    path = data / "gemm256.csv"
    lines = path.read_text().splitlines()
    row = lines.index("32,32,os,GEMM256,20351")
    lines[row] = "32,32,os,GEMM256,20352"  # one cycle more than SCALE-Sim printed
    path.write_text("\n".join(lines) + "\n")
    by_name = {c.name: c for c in scalesim.claims(data)}
    assert not by_name["gemm256 32x32 OS total cycles"].passed
    assert by_name["gemm256 32x32 OS total cycles"].note == "0/1 layers equal"
    assert by_name["gemm256 32x32 WS total cycles"].passed


def test_missing_reference_data_is_a_clear_error(tmp_path):
    with pytest.raises(ArchsimError, match="no SCALE-Sim reference data"):
        scalesim.claims(tmp_path)
