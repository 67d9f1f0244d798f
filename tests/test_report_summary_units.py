"""The printed summaries say one thing once, with units: labels without unit suffixes, one energy
definition (background included, stated), no raw Python values, no utilization printed twice."""
from __future__ import annotations

import re

import pytest

import archsim
from archsim.report.writers import _extra, _extra_label, summary_rows


@pytest.mark.parametrize("key, value, label, text", [
    ("energy_per_token_pj", 2.9e10, "energy per token", "29 mJ"),
    ("pim_capacity_bytes", 4 * 2**30, "pim capacity", "4 GiB"),
    ("tokens_per_s", 5062.3, "tokens per second", "5062 /s"),
    ("simd_dequant", False, "simd dequant", "no"),
    ("attention_array2d_mac_utilization", 0.09925, "attention layers' 2D-array utilization", "9.93 %"),
    ("lut", {"tile": "M2 N64 K4", "symmetric": True, "peak_macs_per_cycle": 256.0}, "lut",
     "tile M2 N64 K4, symmetric yes, peak MACs per cycle 256"),
])
def test_extras_are_labelled_without_unit_suffixes_and_formatted_by_them(key, value, label, text):
    assert _extra_label(key) == label
    assert _extra(key, value) == text


def _rows(arch, workload, **kw):
    return dict(summary_rows(archsim.simulate(workload, arch, **kw)))


def _pj(text: str) -> float:
    number, unit = re.match(r"([\d.]+) (pJ|nJ|µJ|mJ|J)", text).groups()
    return float(number) * {"pJ": 1, "nJ": 1e3, "µJ": 1e6, "mJ": 1e9, "J": 1e12}[unit]


def test_pim_energy_is_one_total_and_per_token_is_of_it():
    result = archsim.simulate("gpt2", "pim-hbm2", phase="decode")
    rows = dict(summary_rows(result))
    background = result.extras["background_energy_pj"]
    assert background > 0
    total, commands, dram_background = re.fullmatch(r"(.+) \((.+) per command \+ (.+) DRAM background\)",
                                                    rows["energy"]).groups()
    assert _pj(total) == pytest.approx(result.energy_pj + background, rel=5e-3)
    assert _pj(commands) == pytest.approx(result.energy_pj, rel=5e-3)
    assert _pj(dram_background) == pytest.approx(background, rel=5e-3)
    assert result.tokens == 1
    assert rows["energy per token"] == total  # one token: the same figure, background included
    assert not any(k.endswith(("_pj", "_bytes", "_per_s")) for k in rows)
    assert "background_energy_pj" not in rows


def test_no_raw_python_values_in_a_summary():
    for arch in ("simd-edge", "lut-m2n64k4"):
        text = "\n".join(v for _, v in summary_rows(archsim.simulate("gpt2", arch, phase="decode")))
        assert not re.search(r"\bTrue\b|\bFalse\b|[{}]|\bNone\b", text), text


def test_utilization_is_not_printed_twice_for_one_figure():
    result = archsim.simulate("bert_base", "fusemax-edge", seq_len=64)
    rows = summary_rows(result)
    percents = [v for k, v in rows if "utilization" in k]
    assert all(v.endswith("%") for v in percents)
    assert len(percents) == len(set(percents))


def test_a_fixed_precision_datapath_is_stated_beside_the_workloads_formats():
    rows = _rows("fusemax-edge", "bert_base", seq_len=64)
    assert rows["precision (weights/activations)"] == ("int8/int8 (the workload's formats; the datapath computes "
                                                        "in bf16)")
    rows = _rows("systolic-32x32-ws", "resnet18")
    assert rows["precision (weights/activations)"] == "int8/int8"


@pytest.mark.parametrize("metric, value, text", [
    ("latency_s", 0.002271, "2.27 ms"),
    ("energy_pj", 3.164e9, "3.16 mJ"),
    ("area_mm2", 4.2391, "4.239 mm²"),
    ("edp_pj_s", 1.667e7, "1.667e-05 J·s"),
    ("utilization", 0.7421, "74.2 %"),
    ("cycles", 2622813.0, "2,622,813"),
])
def test_sweep_summary_values_carry_units(metric, value, text):
    from archsim.dse._outputs import metric_text

    assert metric_text(metric, value) == text
