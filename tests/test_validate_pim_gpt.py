"""PIM-GPT's published range (npj Unconventional Computing 2024, abstract: 41-137x speedup,
123-383x energy efficiency over a T4 on 8 GPT models) against archsim, and the T4 host-cost
calibration against PrunaAI's Tesla T4 measurements. Published numbers live in
archsim/validate/pim_gpt.py with their sources; expectations here are worked from them."""
from __future__ import annotations

import pytest

from archsim.validate import pim_gpt


def test_every_pim_gpt_claim_holds():
    claims = pim_gpt.claims()
    assert len(claims) == 7
    level = [c for c in claims if c.explained]
    # the four level claims (smallest/largest speedup and energy efficiency) carry their explanation;
    # the spreads over the models and the held-out T4 check must hold outright
    assert len(level) == 4 and all(c.status in ("pass", "differs") for c in level)
    failed = [f"{c.name}: {c.ours:.3g} vs {c.published:.3g} ({c.rel_error:.0%} > {c.rel_tol:.0%})"
              for c in claims if not c.explained and not c.passed]
    assert not failed, failed
    # the level gap stays the one docs/pim.md explains: below the paper, by less than 5x
    assert all(c.published / 5 < c.ours < c.published for c in level if not c.passed)


def test_the_paper_comparison_uses_only_the_papers_models():
    # "8 GPT models with up to 1.4 billion parameters": GPT-2 small..XL and GPT-3 small..XL
    assert pim_gpt.MODELS == ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
                              "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-xl")
    assert [r.model for r in pim_gpt.table()] == list(pim_gpt.MODELS)


def test_roofline_only_t4_misses_the_paper_by_far():
    """Planted deviation: the T4 without its host cost (the roofline-only row) gives 7-9x, not
    41-137x, and the claims say so."""
    rows = pim_gpt.table()
    assert all(6 < r.roof_speedup < 10 for r in rows)
    roofline_only = [pim_gpt.Row(r.model, r.pim_s, r.pim_j, r.roof_s, r.roof_j, r.roof_s, r.roof_j) for r in rows]
    bad = {c.name for c in pim_gpt.claims_from(roofline_only, 36.0) if not c.passed}
    assert any(n.startswith("speedup over T4, largest") for n in bad)
    assert any(n.startswith("energy eff. over T4, largest") for n in bad)


def test_host_cost_calibration_and_preset_agree():
    from archsim.spec.load import load_arch

    d = pim_gpt.calibrated_dispatch_us()
    assert load_arch("gpu-t4").params.dispatch_us == pytest.approx(d, rel=0.01)
    # SmolLM2-135M is host-bound: the step is about one host dispatch per kernel
    kernels = len(pim_gpt._t4_roofline_kernels("smollm2-135m"))
    assert kernels * d * 1e-3 == pytest.approx(pim_gpt.measured_ms("smollm2-135m"), rel=0.05)
    # the measured mean of the three cited runs: (35.61 + 37.13 + 38.99) / 3
    assert pim_gpt.measured_ms("smollm2-135m") == pytest.approx(37.243, abs=1e-3)


def test_pim_gpt_capacity_is_four_8_gb_devices():
    """Micron / Samsung 8 Gb GDDR6: 2 channels x 16 banks x 16 K rows x 2 KiB pages per device; PIM-GPT's
    8 channels are four such devices = 4 x 8 Gb = 4 GiB. GPT-3 2.7B (5.3 GB in bf16) is refused."""
    from archsim.errors import ArchsimError
    from archsim.simulation import simulate
    from archsim.spec.load import load_arch

    arch = load_arch("pim-gpt-gddr6")
    assert arch.params.capacity_bytes == 4 * 8 * 2**30 // 8
    with pytest.raises(ArchsimError, match=r"do not fit the 4\.00 GiB"):
        simulate("gpt3-2.7b", arch, phase="decode", kv_len=1024, weights="bf16", activations="bf16")
