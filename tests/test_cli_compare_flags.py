"""``archsim compare`` takes the workload / fusion flags of ``archsim run`` (one shared argparse
helper) and passes them to both archs: its per-arch cycles equal those of separate
``archsim run`` calls with the same flags, and ONNX dims / unknown ops behave as in ``run``.

The ONNX models are built here with onnx.helper; expected MACs are worked out by hand.
"""
from __future__ import annotations

import json
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from archsim.cli import build_parser, main

F = TensorProto.FLOAT
PER_ROW = 64 * 32 + 32 * 16  # MACs of one row through the MLP below


def _save(tmp_path, graph, name):
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def _mlp(tmp_path, batch="N", odd=False):
    """x[batch, 64] -> Gemm(64 -> 32, bias) -> Relu -> Gemm(32 -> 16) [-> Softsign, unsupported]."""
    w1 = numpy_helper.from_array(np.zeros((32, 64), np.float32), "w1")
    b1 = numpy_helper.from_array(np.zeros((32,), np.float32), "b1")
    w2 = numpy_helper.from_array(np.zeros((16, 32), np.float32), "w2")
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w2"], ["y" if not odd else "z"], name="fc2", transB=1)]
    if odd:
        nodes.append(helper.make_node("Softsign", ["z"], ["y"], name="odd"))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, [batch, 64])],
                          [helper.make_tensor_value_info("y", F, None)], [w1, b1, w2])
    return _save(tmp_path, g, "odd.onnx" if odd else "mlp.onnx")


def _run_cycles(capsys, tmp_path, arch, workload, *flags) -> int:
    """Total cycles printed by ``archsim run`` (its own table, parsed)."""
    out_dir = tmp_path / f"run-{arch}-{len(list(tmp_path.iterdir()))}"
    assert main(["run", "--arch", arch, "--workload", workload, "--no-plots", "-q", "--out", str(out_dir),
                 *flags]) == 0
    m = re.search(r"^total cycles\s+([\d,]+)$", capsys.readouterr().out, re.M)
    assert m
    return int(m.group(1).replace(",", ""))


def _compare(capsys, tmp_path, archs, workload, *flags) -> dict:
    out = tmp_path / f"cmp-{len(list(tmp_path.iterdir()))}.json"
    argv = ["compare", "--arch", archs[0], "--arch", archs[1], "--workload", workload, "--json", str(out), *flags]
    assert main(argv) == 0, capsys.readouterr().err
    table = capsys.readouterr().out
    cmp = json.loads(out.read_text())
    assert re.search(rf"^cycles \(per run\)\s+{cmp['a']['cycles']:,}\s+{cmp['b']['cycles']:,}( \[.*\])?$", table, re.M), table
    return cmp


ARCHS = ("systolic-32x32-ws", "systolic-32x32-os")


def test_no_fusion_gives_the_cycles_of_run_no_fusion(tmp_path, capsys):
    cmp = _compare(capsys, tmp_path, ARCHS, "resnet18", "--no-fusion", "--image-size", "64")
    assert cmp["options"]["fusion"] is False
    for side, arch in zip("ab", ARCHS):
        unfused = _run_cycles(capsys, tmp_path, arch, "resnet18", "--no-fusion", "--image-size", "64")
        fused = _run_cycles(capsys, tmp_path, arch, "resnet18", "--image-size", "64")
        assert cmp[side]["cycles"] == unfused
        assert unfused > fused  # the flag reached the arch: separate vector passes cost cycles
    fused_cmp = _compare(capsys, tmp_path, ARCHS, "resnet18", "--image-size", "64")
    assert "fusion" not in fused_cmp["options"]
    assert fused_cmp["a"]["cycles"] < cmp["a"]["cycles"]


def test_symbolic_batch_onnx_needs_dim(tmp_path, capsys):
    path = _mlp(tmp_path)
    argv = ["compare", "--arch", ARCHS[0], "--arch", ARCHS[1], "--workload", path]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert re.search(r"mlp\.onnx: symbolic input dim\(s\) N have no value; expected --dim NAME=VALUE", err), err

    cmp = _compare(capsys, tmp_path, ARCHS, path, "--dim", "N=8")
    assert cmp["options"]["dims"] == {"N": 8}
    for side, arch in zip("ab", ARCHS):
        assert cmp[side]["cycles"] == _run_cycles(capsys, tmp_path, arch, path, "--dim", "N=8")
    bigger = _compare(capsys, tmp_path, ARCHS, path, "--dim", "N=64")
    assert bigger["a"]["cycles"] > cmp["a"]["cycles"]  # the bound value reached the workload


def test_batch_binds_the_symbolic_batch(tmp_path, capsys):
    path = _mlp(tmp_path, batch="batch_size")
    cmp = _compare(capsys, tmp_path, ARCHS, path, "--batch", "4")
    assert cmp["a"]["cycles"] == _run_cycles(capsys, tmp_path, ARCHS[0], path, "--batch", "4")
    assert main(["workload", "show", path, "--batch", "4"]) == 0
    assert f"{4 * PER_ROW:,} MACs" in capsys.readouterr().out


def test_unknown_ops_pass_through(tmp_path, capsys):
    path = _mlp(tmp_path, odd=True)
    argv = ["compare", "--arch", ARCHS[0], "--arch", ARCHS[1], "--workload", path, "--dim", "N=4"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot lower ONNX op(s): Softsign (odd)" in err and "--unknown-ops vector" in err
    cmp = _compare(capsys, tmp_path, ARCHS, path, "--dim", "N=4", "--unknown-ops", "vector")
    assert cmp["b"]["cycles"] == _run_cycles(capsys, tmp_path, ARCHS[1], path, "--dim", "N=4",
                                             "--unknown-ops", "vector")


def _options(command: str) -> dict[str, tuple]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {s: (a.dest, a.help, a.default, a.choices) for a in sub._actions for s in a.option_strings}


@pytest.mark.parametrize("flag", ["--batch", "--seq", "--phase", "--kv-len", "--image-size", "--dim",
                                  "--unknown-ops", "--no-fusion", "--weights", "--activations"])
def test_compare_and_run_share_the_flag(flag):
    assert _options("compare")[flag] == _options("run")[flag]
