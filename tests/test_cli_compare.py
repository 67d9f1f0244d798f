"""``archsim compare``: refuses mixed precisions in one line, states them loudly when allowed,
and its table / JSON ratios equal the ratios of two independent runs."""
from __future__ import annotations

import json

import pytest

from archsim.cli import main
from archsim.simulation import simulate

BASE = ["compare", "--arch", "pim-gpt-gddr6", "--arch", "gpu-t4", "--workload", "gpt2", "--phase", "decode",
        "--kv-len", "64"]


def test_refuses_mixed_precision_in_one_line(capsys):
    assert main(BASE) == 2  # the PIM computes in bf16, the T4 runs the graph's default int8
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith("archsim: error: compare: pim-gpt-gddr6 computes in bf16/bf16")
    assert "gpu-t4 in int8/int8" in err and "--allow-mixed-precision" in err


def test_mixed_precision_allowed_is_stated_loudly(capsys, tmp_path):
    out = tmp_path / "cmp.json"
    assert main(BASE + ["--weights", "fp16", "--activations", "fp16", "--allow-mixed-precision",
                        "--json", str(out)]) == 0
    text = capsys.readouterr()
    assert text.out.startswith("WARNING: MIXED PRECISION")
    assert "NOT A LIKE-FOR-LIKE" in text.out and "mixed-precision" in text.err
    assert json.loads(out.read_text())["mixed_precision"] is True


def test_like_for_like_ratios_match_independent_runs(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    args = ["compare", "--arch", "pim-hbm2", "--arch", "gpu-a100", "--workload", "gpt2", "--phase", "decode",
            "--kv-len", "64", "--weights", "bf16", "--activations", "bf16", "--set-b", "kernel_overhead_us=0",
            "--json", str(out)]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "WARNING" not in table and "latency per token (ms)" in table
    cmp = json.loads(out.read_text())
    opts = dict(phase="decode", kv_len=64, weights="bf16", activations="bf16")
    a = simulate("gpt2", "pim-hbm2", **opts)
    b = simulate("gpt2", "gpu-a100", overrides=["kernel_overhead_us=0"], **opts)
    tps_a, tps_b = 1 / a.latency_s, 1 / b.latency_s  # one token per decode step
    e_a = (a.energy_pj + a.extras["background_energy_pj"]) * 1e-12
    e_b = b.energy_pj * 1e-12
    assert cmp["a"]["tokens_per_s"] == pytest.approx(tps_a)
    assert cmp["ratios_a_over_b"]["tokens_per_s"] == pytest.approx(tps_a / tps_b)
    assert cmp["ratios_a_over_b"]["latency_per_token_s"] == pytest.approx(tps_b / tps_a)
    assert cmp["ratios_a_over_b"]["energy_per_token_j"] == pytest.approx(e_a / e_b)
    assert cmp["ratios_a_over_b"]["utilization"] == pytest.approx(a.utilization / b.utilization)
    assert cmp["a"]["precision"] == cmp["b"]["precision"] == {"weights": "bf16", "activations": "bf16"}


def test_needs_two_archs(capsys):
    assert main(["compare", "--arch", "gpu-t4", "--workload", "gpt2"]) == 2
    assert "expected --arch twice" in capsys.readouterr().err
