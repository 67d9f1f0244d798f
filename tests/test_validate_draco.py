"""archsim validate --only draco: the published totals hold, the DRACO headline figures are
printed beside the paper's with their reason, and a planted deviation fails."""
import dataclasses

import pytest

from archsim.validate import draco


@pytest.fixture(scope="module")
def claims():
    return {c.name: c for c in draco.claims()}


def test_published_totals_pass(claims):
    for name in ("MobileNetV1 multiply-adds", "EfficientNet-B0 parameters", "EfficientNet-B0 multiply-adds"):
        assert claims[name].passed, claims[name]
        assert not claims[name].explained


def test_draco_headlines_same_direction_as_paper_and_explained(claims):
    util, latency = claims["DRACO average PE utilization gain"], claims["DRACO inference latency reduction"]
    assert util.published == 0.418 and latency.published == 0.426  # the paper's abstract
    # the sign the paper reports: DRACO raises utilization and lowers latency on the same array
    assert util.ours > 0 and 0 < latency.ours < 1
    for claim in (util, latency):
        assert claim.status in ("pass", "differs")
        assert "row-stationary" in claim.explained and "cannot model" in claim.explained


def test_depthwise_rows_of_the_table_by_hand():
    # WS on 64x64: a 3x3 depthwise tile maps K = 9 taps x N = 1 filter; DRACO g=4: 36 x 4
    base, ours = draco.run("mobilenet-v1", "ws"), draco.run("mobilenet-v1", "ws", draco.GROUP_WIDTH)
    dw_base = [r for r in base.layers if r.kind == "dw"]
    dw_ours = [r for r in ours.layers if r.kind == "dw"]
    assert len(dw_base) == len(dw_ours) == 13
    assert all(r.mapping_efficiency == pytest.approx(9 / 4096, rel=0.02) for r in dw_base)
    assert all(r.mapping_efficiency == pytest.approx(36 * 4 / 4096, rel=0.02) for r in dw_ours)
    assert {r.kind for r in base.layers} == {"conv", "dw", "pw", "fc"} and len(base.layers) == 28


def test_planted_deviation_fails(claims):
    wrong = dataclasses.replace(claims["EfficientNet-B0 parameters"], published=5.3e6 * 1.1)
    assert wrong.status == "FAIL"
