"""``archsim validate --only lut``: every LUT claim agrees with the papers' figure, and a planted
deviation is caught."""
from __future__ import annotations

import dataclasses

from archsim.validate import groups, run


def test_lut_claims_pass():
    assert "lut" in groups()
    claims = run("lut")
    assert len(claims) >= 2
    for c in claims:
        assert c.passed, f"{c.name}: ours {c.ours} vs published {c.published} (tol {c.rel_tol})"
        assert "arXiv" in c.source


def test_a_planted_deviation_fails():
    c = run("lut")[1]
    wrong = dataclasses.replace(c, ours=c.published * (1 + 2 * c.rel_tol + 0.01))
    assert not wrong.passed
