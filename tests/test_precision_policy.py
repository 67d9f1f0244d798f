"""Layer-adaptive precision policies (mappers.precision_policy) and the simd mapper applying them."""
from __future__ import annotations

import subprocess
import sys

import pytest

import mappers
import workloads
from archsim.errors import MappingError
from archsim.spec import load_arch
from mappers.precision_policy import load_policy, parse_policy

POLICY = {
    "default": {"weights": "int8", "activations": "int8"},
    "rules": [
        {"match": "*attn*", "op": "matmul", "weights": "fp8_e4m3", "activations": "fp8_e4m3"},
        {"op": "matmul", "weights": "int4", "activations": "fp8_e4m3", "group_size": 128},
    ],
}


def test_first_matching_rule_wins_and_unset_keys_keep_the_default():
    pol = parse_policy(POLICY)
    assert pol.resolve("h0.attn.qkv", "matmul", "bf16", "bf16", 0) == ("fp8_e4m3", "fp8_e4m3", 0)
    assert pol.resolve("h0.mlp.fc", "matmul", "bf16", "bf16", 0) == ("int4", "fp8_e4m3", 128)
    assert pol.resolve("h0.attn.qkv", "conv2d", "bf16", "bf16", 32) == ("int8", "int8", 32)
    assert parse_policy({"rules": []}).resolve("x", "matmul", "fp16", "int8", 0) == ("fp16", "int8", 0)


@pytest.mark.parametrize("raw, message", [
    ({"rule": []}, r"^<inline precision policy>: rule: unknown key; expected rules, default$"),
    ({"rules": [{"op": "conv"}]}, r"rules\[0\]\.op: expected one of conv2d, matmul, attention, got 'conv'$"),
    ({"rules": [{"weights": "int5"}]}, r"rules\[0\]\.weights: unknown precision 'int5'"),
    ({"rules": [{"group_size": -1}]}, r"rules\[0\]\.group_size: expected 0 or a positive integer, got -1$"),
    ({"default": {"match": "*"}}, r"default\.match: unknown key"),
    ([1, 2], r"expected a mapping with 'rules'"),
])
def test_policy_errors_are_one_line(raw, message):
    with pytest.raises(ValueError, match=message) as err:
        parse_policy(raw)
    assert "\n" not in str(err.value)


def test_policy_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("rules: [{op: conv2d, weights: int4, activations: int3x}]\n")
    with pytest.raises(ValueError, match=r"p\.yaml: rules\[0\]\.activations: unknown precision 'int3x'"):
        load_policy(str(bad))
    with pytest.raises(ValueError, match=r"cannot read the precision policy"):
        load_policy(str(tmp_path / "missing.yaml"))


def test_mapper_applies_the_policy_per_layer():
    graph = workloads.load("gpt2", seq=16)
    arch = load_arch("simd-edge")
    prog = mappers.compile(graph, arch, precision_policy=POLICY)
    fmts = {l.name: (l.weight_format, l.activation_format, l.mapping.get("group_size")) for l in prog.layers
            if l.op == "matmul"}
    assert fmts and all(v == (("fp8_e4m3", "fp8_e4m3", 0) if "attn" in k else ("int4", "fp8_e4m3", 128))
                        for k, v in fmts.items()), fmts
    tiles = [c.tile for l in prog.layers if l.op == "matmul" and "attn" not in l.name
             for c in l.commands if hasattr(c, "tile")]
    assert tiles and all(t.group_size == 128 and t.k % 128 == 0 or t.k < 128 for t in tiles)


def test_policy_in_the_arch_spec_and_illegal_pairs():
    arch = load_arch({**_spec(), "options": {"precision_policy": POLICY}})
    prog = mappers.compile(workloads.load("gpt2", seq=8), arch)
    assert any(l.weight_format == "int4" for l in prog.layers)
    narrow = load_arch({**_spec(), "params": {**_spec()["params"], "lane_bits": 8},
                        "options": {"precision_policy": {"rules": [{"op": "matmul", "weights": "fp16"}]}}})
    with pytest.raises(MappingError, match=r"cannot run fp16 x int8 .*needs more than lane_bits=8"):
        mappers.compile(workloads.load("gpt2", seq=8), narrow)


def _spec():
    import importlib.resources

    import yaml

    return yaml.safe_load((importlib.resources.files("archsim.presets.arch") / "simd-edge.yaml").read_text())


def test_cli_precision_policy(tmp_path):
    pol = tmp_path / "policy.yaml"
    pol.write_text("rules:\n  - {op: matmul, weights: int4, activations: fp8_e4m3, group_size: 64}\n")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "archsim", "run", "--arch", "simd-edge", "--workload", "gpt2",
                          "--seq", "8", "--precision-policy", str(pol), "--out", str(out), "--no-plots"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    import json

    layers = json.loads((out / "report.json").read_text())["layers"]
    assert {(l["weight_format"], l["activation_format"]) for l in layers if l["op"] == "matmul"} == \
        {("int4", "fp8_e4m3")}
    bad = subprocess.run([sys.executable, "-m", "archsim", "run", "--arch", "systolic-32x32-ws", "--workload",
                          "gpt2", "--precision-policy", str(pol), "--out", str(tmp_path / "o2")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert ("--precision-policy: template systolic has no option precision_policy (templates with it: simd)"
            in bad.stderr)
