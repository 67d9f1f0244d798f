"""Reports state the formats the hardware computes in (issue 10 item 6), through the
model's ``compute_formats`` hook, not the graph's formats when the hardware differs."""
from __future__ import annotations

import archsim
import workloads


def _mac_layers(result):
    return [l for l in result.layers if l.macs and l.weight_format]


def test_pim_layers_report_the_banks_format_not_the_graphs():
    g = workloads.load("gpt2", phase="decode", kv_len=16)
    assert {op.weight_precision for op in g.ops() if op.params()} == {"int8"}  # the zoo default
    arch = archsim.load_arch("pim-gpt-gddr6")
    r = archsim.simulate(g, arch)
    # the preset's banks multiply in bf16 (its YAML says mac_precision: bf16)
    assert arch.to_dict()["params"]["mac_precision"] == "bf16"
    formats = {(l.weight_format, l.activation_format) for l in _mac_layers(r)}
    assert formats == {("bf16", "bf16")}


def test_systolic_layers_report_the_arrays_precision():
    r = archsim.simulate("gpt2", "systolic-32x32-ws", phase="decode", kv_len=16, weights="int16", activations="int8")
    assert {(l.weight_format, l.activation_format) for l in _mac_layers(r)} == {("int16", "int8")}


def test_roofline_runs_the_graphs_formats():
    r = archsim.simulate("gpt2", "gpu-t4", phase="decode", kv_len=16, weights="fp16", activations="fp16")
    assert {(l.weight_format, l.activation_format) for l in _mac_layers(r)} == {("fp16", "fp16")}
