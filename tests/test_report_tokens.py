"""Token rates in reports: any template, only for workloads with token embeddings."""
from __future__ import annotations

import pytest

import archsim


def test_decode_reports_tokens_per_s_on_a_systolic_array():
    r = archsim.simulate("gpt2", "systolic-32x32-ws", phase="decode", kv_len=64, batch=2)
    assert r.extras["tokens"] == 2  # one new token per sequence
    arch = archsim.load_arch("systolic-32x32-ws")
    seconds = sum(l.cycles for l in r.layers) / (arch.clock_mhz * 1e6)  # layers run back to back
    assert r.extras["tokens_per_s"] == pytest.approx(2 / seconds)
    assert r.extras["energy_per_token_pj"] == pytest.approx(sum(l.energy_pj for l in r.layers) / 2)


def test_prefill_counts_every_prompt_token():
    r = archsim.simulate("bert_base", "systolic-32x32-ws", seq_len=32, batch=3)
    assert r.extras["tokens"] == 3 * 32


def test_cnn_reports_no_token_rates():
    for arch in ("systolic-32x32-ws", "pim-hbm2"):
        r = archsim.simulate("resnet18", arch)
        assert "tokens_per_s" not in r.extras and "energy_per_token_pj" not in r.extras, arch
