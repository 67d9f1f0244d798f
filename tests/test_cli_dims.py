"""CLI: ONNX dims (``--dim NAME=VALUE``, ``--batch`` / ``--seq``), unknown ONNX
ops (``--unknown-ops``), and ``--set`` reaching every key the docs use.

Expected MACs are worked out by hand from the models built here.
"""
from __future__ import annotations

import glob
import os
import re
import shlex

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import workloads
from archsim.cli import main
from archsim.errors import SpecError, WorkloadError
from archsim.spec import load_arch

F = TensorProto.FLOAT
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _save(tmp_path, graph, name):
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def _mlp(tmp_path, batch="N"):
    """x[batch, 784] -> Gemm(784 -> 32, transB) -> Relu -> Gemm(32 -> 10, transB): 784*32 + 32*10 MACs per row."""
    w1 = numpy_helper.from_array(np.zeros((32, 784), np.float32), "w1")
    w2 = numpy_helper.from_array(np.zeros((10, 32), np.float32), "w2")
    nodes = [helper.make_node("Gemm", ["x", "w1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w2"], ["y"], name="fc2", transB=1)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, [batch, 784])],
                          [helper.make_tensor_value_info("y", F, None)], [w1, w2])
    return _save(tmp_path, g, "mlp.onnx")


def _block(tmp_path):
    """x[batch, seq, 16] -> MatMul(16 -> 8) -> LRN-free Softsign (unsupported): batch*seq*16*8 MACs."""
    w = numpy_helper.from_array(np.zeros((16, 8), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
             helper.make_node("Softsign", ["h"], ["y"], name="odd")]
    g = helper.make_graph(nodes, "blk", [helper.make_tensor_value_info("x", F, ["batch_size", "sequence_length", 16])],
                          [helper.make_tensor_value_info("y", F, None)], [w])
    return _save(tmp_path, g, "blk.onnx")


PER_ROW = 784 * 32 + 32 * 10


def test_workload_show_binds_dim(tmp_path, capsys):
    path = _mlp(tmp_path)
    assert main(["workload", "show", path, "--dim", "N=4"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^fc1\s+matmul\s+1x4x784\s+1x4x32\b", out, re.M), out
    assert f"{4 * PER_ROW:,} MACs" in out


def test_unbound_symbolic_dim_is_one_line(tmp_path, capsys):
    path = _mlp(tmp_path)
    assert main(["workload", "show", path]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert re.search(r"mlp\.onnx: symbolic input dim\(s\) N have no value; expected --dim NAME=VALUE", err), err


def test_batch_binds_the_batch_name(tmp_path):
    path = _mlp(tmp_path)
    assert workloads.load(path, batch=3).total_macs() == 3 * PER_ROW
    assert workloads.load(path, dims={"N": 5}, batch=3).total_macs() == 5 * PER_ROW  # --dim wins


def test_batch_and_seq_bind_usual_names(tmp_path):
    path = _block(tmp_path)
    g = workloads.load(path, batch=2, seq_len=7, unknown_ops="vector")
    assert g.total_macs() == 2 * 7 * 16 * 8
    assert workloads.load(path, batch=2, seq=7, unknown_ops="vector").total_macs() == 2 * 7 * 16 * 8


def test_run_with_dim_and_unknown_ops(tmp_path, capsys):
    path = _block(tmp_path)
    argv = ["run", "--arch", "systolic-32x32-ws", "--workload", path, "--no-plots", "--batch", "2", "--seq", "7"]
    assert main(argv + ["--out", str(tmp_path / "a")]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot lower ONNX op(s): Softsign (odd)" in err and "--unknown-ops vector" in err
    assert main(argv + ["--out", str(tmp_path / "b"), "--unknown-ops", "vector"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"MACs\s+1,792\b", out), out  # 2 * 7 * 16 * 8
    assert main(["run", "--arch", "systolic-32x32-ws", "--workload", _mlp(tmp_path), "--no-plots", "--dim", "N=2",
                 "--out", str(tmp_path / "c")]) == 0
    assert re.search(rf"MACs\s+{2 * PER_ROW:,}\b", capsys.readouterr().out)


@pytest.mark.parametrize("argv, message", [
    (["--dim", "N"], r"--dim N: expected NAME=VALUE with a positive integer VALUE"),
    (["--dim", "N=0"], r"--dim N=0: expected NAME=VALUE"),
    (["--dim", "M=3"], r"mlp\.onnx: dims\.M: the model has no symbolic input dim 'M' \(symbolic dims: N\)"),
    (["--seq", "8", "--dim", "N=1"], r"mlp\.onnx: seq_len: the model has no symbolic seq_len dim"),
])
def test_bad_dims_are_one_line(tmp_path, capsys, argv, message):
    assert main(["workload", "show", _mlp(tmp_path), *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and re.search(message, err), err


def test_dim_on_a_zoo_model_is_an_error(capsys):
    assert main(["workload", "show", "resnet18", "--dim", "N=2"]) != 0
    assert "--dim: binds symbolic dims of an ONNX model; resnet18 is not a .onnx file" in capsys.readouterr().err


# ----------------------------------------------------------------------------- --set reaches the docs' keys


def _doc_commands():
    """(file, arch, [--set values]) of every `archsim ... --arch X ... --set K=V` in README and docs/."""
    found = []
    for path in [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]:
        text = open(path, encoding="utf-8").read().replace("\\\n", " ")  # shell line continuations
        for line in text.splitlines():
            if "archsim " not in line or "--set" not in line or "--arch" not in line:
                continue
            cmd = line[line.index("archsim "):].split("`")[0]
            cmd = re.sub(r"(?<!=)\[[^\]]*\]", "", cmd)  # optional parts: [--sim verilator], not KEY=[a,b] lists
            words = shlex.split(cmd)
            arch = words[words.index("--arch") + 1]
            if arch.isupper():  # a placeholder in a usage line (--arch SPEC), not a command to run
                continue
            sets = [words[i + 1] for i, w in enumerate(words) if w in ("--set", "--set-a", "--set-b")]
            found.append((os.path.basename(path), arch, sets))
    return found


def test_docs_have_set_commands():
    assert len(_doc_commands()) >= 4


@pytest.mark.parametrize("where, arch, sets", _doc_commands())
def test_every_documented_set_loads(where, arch, sets):
    load_arch(arch, overrides=sets)


@pytest.mark.parametrize("key", ["buffers.input.bytes=65536", "buffers.*.bytes=65536", "buffers.*.bytes=64 KiB",
                                 "dram.bytes_per_cycle=16", "dram.gb_per_s=68", "clock_mhz=800",
                                 "vector_unit.lanes=8", "rows=16", "dataflow=os", "scalesim_compat=true",
                                 "fusion=false", "output_ops=[relu]"])
def test_readme_and_sweep_keys(key):
    load_arch("systolic-32x32-ws", overrides=[key])


def test_star_sets_every_buffer():
    arch = load_arch("systolic-32x32-ws", overrides=["buffers.*.bytes=65536", "buffers.*.banks=4"])
    assert {b.bytes for b in arch.buffers.values()} == {65536}
    assert {b.banks for b in arch.buffers.values()} == {4}
    assert set(arch.buffers) == {"input", "weight", "output"}


def test_sweep_presets_axes_reach_set():
    from archsim.dse import load_sweep

    for path in glob.glob(os.path.join(ROOT, "archsim", "presets", "sweeps", "*.yaml")):
        spec = load_sweep(path)
        for axis in spec.axes:
            load_arch(spec.base, overrides=[f"{axis.key}={axis.values[0]}"])


def test_unknown_buffer_names_the_ones_there():
    with pytest.raises(SpecError, match=r"^systolic-32x32-ws\.yaml: --set buffers\.unified\.bytes=1: no buffer "
                                        r"'unified'; this arch has input, output, weight$"):
        load_arch("systolic-32x32-ws", overrides=["buffers.unified.bytes=1"])


def test_dims_api_errors(tmp_path):
    with pytest.raises(WorkloadError, match=r"dims\.N: expected a positive integer, got 'x'"):
        workloads.load(_mlp(tmp_path), dims={"N": "x"})
