"""``archsim validate --only cosma``: the COSMA claims agree with the paper's figures within
their tolerance, and a planted deviation is caught."""
from __future__ import annotations

import dataclasses

import pytest

from archsim.validate import groups, run

pytest.importorskip("highspy")


@pytest.fixture(scope="module")
def claims():
    return run("cosma")


def test_cosma_claims_pass(claims):
    assert "cosma" in groups()
    assert len(claims) == 4
    for c in claims:
        if c.name.startswith("real pipeline"):
            # the Programs' bytes: within tolerance, or outside it for the stated setup differences
            assert c.status in ("pass", "differs") and "half the buffer" in c.explained
            assert c.note.startswith("ILP Program <= greedy's in every row: True")
        else:
            assert c.passed, f"{c.name}: ours {c.ours} vs published {c.published} (tol {c.rel_tol})"
        assert "arXiv:2311.18246" in c.source
    assert [c.published for c in claims] == [84.0, 85.0, 84.0, 1.0]  # the paper's abstract


def test_the_claims_use_plans_that_fit_their_addresses(claims):
    # the paper's ILP chooses addresses, so its plans always fit: so do the claims' plans
    assert claims[0].name.startswith("ILP with addresses") and claims[3].name.startswith("ILP with addresses")
    assert claims[0].note.endswith("plans placed by the address ILP: 16 of 16")


def test_a_planted_deviation_fails(claims):
    c = claims[0]
    wrong = dataclasses.replace(c, ours=c.published * (1 - 2 * c.rel_tol - 0.01), explained="")
    assert not wrong.passed
    assert wrong.status == "FAIL"
