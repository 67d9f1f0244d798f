"""ONNX on the command line and in the API (issue 21, items 1, 2, 5, 6, 7): input bindings, the
report's import section and coverage line, ``workload show --check``, one-line errors, and the value
executor on the operators real exports contain (values checked against onnxruntime)."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import workloads
from archsim.cli import main
from archsim.errors import WorkloadError

F = TensorProto.FLOAT


def _w(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _cls_like(tmp_path):
    """PP-OCR cls's inputs: dims -1 and two dims both named '?'. Conv 3x3 (8 filters) + BN + ReLU +
    GlobalAveragePool + Gemm(8 -> 2)."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
             helper.make_node("Relu", ["bn"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc", transB=1)]
    inits = [_w("w", (8, 3, 3, 3)), _w("s", (8,), 1), _w("b", (8,), 2), _w("m", (8,), 3),
             numpy_helper.from_array(np.full(8, 2.0, np.float32), "v"), _w("fc", (2, 8), 4), _w("fcb", (2,), 5)]
    x = helper.make_tensor_value_info("x", F, [-1, 3, "?", "?"])
    graph = helper.make_graph(nodes, "cls", [x], [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "cls.onnx")
    onnx.save(model, path)
    return path


CLS_MACS = 48 * 192 * 8 * 27 + 16  # conv at 48x192 (BN folded), fc 8 -> 2


def test_input_shape_binds_unnamed_dims_in_the_api_and_a_sweep_specs_text(tmp_path):
    path = _cls_like(tmp_path)
    with pytest.raises(WorkloadError) as err:
        workloads.load(path)
    assert str(err.value).endswith("cls.onnx: input(s) x [-1, 3, ?, ?] have dims without a value; expected "
                                   "--input-shape NAME=AxBxC (input_shapes={'NAME': (A, B, C)}), --dim NAME=VALUE "
                                   "for named dims, or --batch / --seq for batch and sequence dims")
    assert workloads.load(path, input_shapes={"x": (1, 3, 48, 192)}).total_macs() == CLS_MACS
    assert workloads.load(path, input_shapes="x=1x3x48x192").total_macs() == CLS_MACS  # a sweep spec's scalar
    from archsim.simulation import simulate

    result = simulate(path, "systolic-32x32-ws", input_shapes={"x": (2, 3, 48, 192)})
    assert result.macs == 2 * CLS_MACS
    assert result.imported["input_shapes"] == {"x": [2, 3, 48, 192]}


@pytest.mark.parametrize("bad,message", [
    ({"x": (1, 3, 48)}, "input_shape.x: the input has 4 dims [-1, 3, ?, ?], got 3 (1x3x48)"),
    ({"x": (1, 4, 48, 192)}, "input_shape.x: dim 1 is fixed at 3 in the model, got 4"),
    ({"z": (1,)}, "input_shape.z: the model has no input 'z' (inputs: x)"),
    ("x=1x3xAx4", "input_shape.x: expected a shape AxBxC of positive integers (e.g. 1x3x48x192), got '1x3xAx4'"),
])
def test_bad_input_shapes_are_one_line(tmp_path, bad, message):
    with pytest.raises(WorkloadError) as err:
        workloads.load(_cls_like(tmp_path), input_shapes=bad)
    assert str(err.value).endswith(message) and "\n" not in str(err.value)


def test_run_writes_the_import_section_and_prints_the_coverage_line(tmp_path, capsys):
    path = _cls_like(tmp_path)
    out = tmp_path / "run"
    assert main(["run", "--arch", "systolic-32x32-ws", "--workload", path, "--input-shape", "x=1x3x48x192",
                 "--out", str(out), "--no-plots", "--quiet"]) == 0
    text = capsys.readouterr().out
    line = next(l for l in text.splitlines() if l.startswith("import "))
    assert line.split(None, 1)[1] == "lowered 6 of 6 compute nodes, 0 static nodes left out; 100.0% of MACs accounted"
    report = json.loads((out / "report.json").read_text())
    imp = report["import"]
    # six nodes lowered: the BatchNormalization is folded into the conv before it
    assert (imp["nodes"], imp["lowered"], imp["substituted"], imp["macs_accounted_fraction"]) == (6, 6, [], 1.0)
    assert imp["macs"] == report["macs"] == CLS_MACS
    assert imp["macs_by_op"] == {"Conv": 48 * 192 * 8 * 27, "Gemm": 16}
    assert "## " in (out / "summary.md").read_text() and "| import | lowered 6 of 6" in (out / "summary.md").read_text()


def test_cli_binding_errors_are_one_line(tmp_path, capsys):
    path = _cls_like(tmp_path)
    base = ["run", "--arch", "systolic-32x32-ws", "--workload", path, "--no-plots", "--quiet", "--out",
            str(tmp_path / "o")]
    assert main(base + ["--input-shape", "x=1x3xfoo"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("archsim: error: --input-shape x=1x3xfoo: expected NAME=VALUE with VALUE a shape AxBxC "
                           "(e.g. --input-shape x=1x3x48x192)")
    assert main(base + ["--input-value", "sr"]) == 2
    assert "--input-value sr: expected NAME=VALUE with a number VALUE (e.g. --input-value sr=16000)" in \
        capsys.readouterr().err
    assert main(["run", "--arch", "systolic-32x32-ws", "--workload", "resnet18", "--input-shape", "x=1x3x8x8",
                 "--out", str(tmp_path / "z")]) == 2
    assert "--input-shape: binds inputs of an ONNX model; resnet18 is not a .onnx file" in capsys.readouterr().err


def test_workload_show_check_prints_both_counts(tmp_path, capsys, monkeypatch):
    path = _cls_like(tmp_path)
    assert main(["workload", "show", path, "--input-shape", "x=1x3x48x192", "--check"]) == 0
    out = capsys.readouterr().out
    assert f"check: archsim {CLS_MACS:,} MACs; independent count (onnxruntime shapes) {CLS_MACS:,} MACs; " \
           "difference 0.00%" in out
    # a planted disagreement: the counter says 3% more -> exit 1 with the counter's breakdown
    import workloads.onnx_reference as reference

    real = reference.count_macs

    def inflated(*args, **kwargs):
        count = real(*args, **kwargs)
        count.total_macs = int(count.total_macs * 1.03)
        return count

    monkeypatch.setattr(reference, "count_macs", inflated)
    assert main(["workload", "show", path, "--input-shape", "x=1x3x48x192", "--check"]) == 1
    assert "check: FAILED: the counts differ by more than 1%" in capsys.readouterr().out


def test_node_errors_name_the_node_the_op_and_what_to_do(tmp_path):
    nodes = [helper.make_node("Einsum", ["a", "b"], ["y"], name="contract", equation="ij,kl->il")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, [3, 3]) for n in "ab"],
                              [helper.make_tensor_value_info("y", F, None)])
    path = str(tmp_path / "e.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(WorkloadError) as err:
        workloads.load(path)
    assert str(err.value).endswith("e.onnx: node contract (Einsum): equation 'ij,kl->il': index j, k summed out "
                                   "of one operand alone, not a GEMM (reduce that operand first: ReduceSum, then "
                                   "Einsum); rewrite it as MatMul/Transpose/ReduceSum")


def test_scalar_control_ops_lower_without_internal_field_names(tmp_path):
    """Silero's first node compared the scalar ``sr`` and failed with 'shape: expected a non-empty tuple'."""
    nodes = [helper.make_node("Mul", ["sr", "two"], ["s2"], name="scale_sr"),
             helper.make_node("Add", ["x", "s2"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [4]),
                                           helper.make_tensor_value_info("sr", F, [])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    path = str(tmp_path / "s.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    g = workloads.load(path)
    assert g.op("scale_sr").output_shape() == (1,)


# ----------------------------------------------------------------------------- the value executor
def test_executor_runs_batchnorm_grouped_conv_and_index_ops_like_onnxruntime(tmp_path):
    from archsim.accuracy.executor import execute, onnxruntime_outputs

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              group=2),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
             helper.make_node("Resize", ["bn", "", "scales"], ["up"], name="resize", mode="nearest"),
             helper.make_node("Pad", ["up", "pads"], ["p"], name="pad"),
             helper.make_node("Shape", ["p"], ["shp"], name="shape"),
             helper.make_node("Gather", ["shp", "two"], ["h"], name="h"),
             helper.make_node("Cast", ["h"], ["hf"], name="cast", to=F),
             helper.make_node("Div", ["p", "hf"], ["y"], name="div")]
    inits = [_w("w", (4, 2, 3, 3)), _w("s", (4,), 1), _w("b", (4,), 2), _w("m", (4,), 3),
             numpy_helper.from_array(np.full(4, 1.5, np.float32), "v"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
             numpy_helper.from_array(np.array(2, np.int64), "two")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 4, 5, 5])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(7).standard_normal((1, 4, 5, 5)).astype(np.float32)
    ours, _ = execute(model, {"x": x})
    ref = onnxruntime_outputs(model, {"x": x})["y"]
    assert ours["y"].shape == ref.shape == (1, 4, 12, 12)
    np.testing.assert_allclose(ours["y"], ref, rtol=1e-4, atol=1e-5)


def test_sqnr_runs_on_a_model_with_batchnorm(tmp_path):
    path = _cls_like(tmp_path)
    out = tmp_path / "q"
    assert main(["run", "--arch", "simd-edge", "--workload", path, "--input-shape", "x=1x3x48x192", "--out", str(out),
                 "--no-plots", "--quiet", "--weights", "int8", "--activations", "int8", "--sqnr"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["extras"]["output_sqnr_db"] > 20  # int8 weights and activations on a 2-layer net


def test_an_op_nothing_can_evaluate_is_one_line(tmp_path, capsys):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Mystery", ["h"], ["y"], name="odd", domain="com.example")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [4, 8])],
                              [helper.make_tensor_value_info("y", F, [4, 6])], [_w("w", (8, 6))],
                              value_info=[helper.make_tensor_value_info("h", F, [4, 6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    path = str(tmp_path / "odd.onnx")
    onnx.save(model, path)
    code = main(["run", "--arch", "simd-edge", "--workload", path, "--out", str(tmp_path / "o"), "--no-plots",
                 "--quiet", "--unknown-ops", "vector", "--sqnr"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--sqnr: " in err and "odd: op Mystery cannot be evaluated" in err


def test_an_input_shape_binds_the_named_dims_other_inputs_share(tmp_path):
    """Hugging Face exports: input_ids and attention_mask are both [batch, sequence]."""
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
             helper.make_node("Cast", ["mask"], ["mf"], name="cast", to=F),
             helper.make_node("Unsqueeze", ["mf", "last"], ["m3"], name="unsq"),
             helper.make_node("Mul", ["e", "m3"], ["y"], name="masked")]
    inits = [_w("table", (50, 4)), numpy_helper.from_array(np.array([-1], np.int64), "last")]
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in ("ids", "mask")]
    graph = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", F, None)], inits)
    path = str(tmp_path / "hf.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    g = workloads.load(path, input_shapes={"ids": (2, 7)})
    assert g.op("masked").output_shape() == (2, 7, 4)
    assert g.import_report["input_shapes"] == {"ids": [2, 7], "mask": [2, 7]}
    with pytest.raises(WorkloadError, match=r"dims\.sequence: 9 conflicts with the input shapes given \(sequence = 7\)"):
        workloads.load(path, input_shapes={"ids": (2, 7)}, dims={"sequence": 9})


def test_input_value_on_the_command_line_picks_the_branch(tmp_path, capsys):
    """``--input-value sr=8000`` makes Silero-style ``If(sr == 16000)`` fold to its 8 kHz branch."""
    def branch(name, w, out):
        node = helper.make_node("MatMul", ["x", w], [out], name=f"{name}_mm")
        return helper.make_graph([node], name, [], [helper.make_tensor_value_info(out, F, None)])

    nodes = [helper.make_node("Equal", ["sr", "k16"], ["cond"], name="is_16k"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=branch("then", "wa", "ya"),
                              else_branch=branch("else", "wb", "yb"))]
    inits = [numpy_helper.from_array(np.array(16000, np.int64), "k16"), _w("wa", (8, 16)), _w("wb", (8, 4))]
    ins = [helper.make_tensor_value_info("x", F, ["n", 8]), helper.make_tensor_value_info("sr", TensorProto.INT64, [])]
    graph = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", F, None)], inits)
    path = str(tmp_path / "vad.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["workload", "show", path, "--input-shape", "x=2x8", "--input-value", "sr=8000", "--check"]) == 0
    out = capsys.readouterr().out
    assert f"total: 1 ops, {2 * 8 * 4:,} MACs" in out
    assert "independent count (onnxruntime shapes) 64 MACs; difference 0.00%" in out
