"""``archsim run --sqnr``: a tiny ONNX MLP built here, run through the CLI, its per-layer and output
SQNR checked against a numpy computation with weights / activations quantized by ml-dtypes."""
from __future__ import annotations

import csv
import json
import re
import math

import numpy as np
import pytest

from archsim.cli import main

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes")

K1, N1, N2, BATCH = 24, 32, 10, 16


def _weights():
    rng = np.random.default_rng(7)
    return (rng.standard_normal((K1, N1)).astype(np.float32) * 0.3, rng.standard_normal(N1).astype(np.float32) * 0.1,
            rng.standard_normal((N1, N2)).astype(np.float32) * 0.2)


@pytest.fixture(scope="module")
def mlp_path(tmp_path_factory):
    """x[N, 24] -> Gemm fc1 (+bias) -> Relu -> MatMul fc2 -> logits[N, 10] (a classifier)."""
    from onnx import TensorProto, helper, numpy_helper

    w1, b1, w2 = _weights()
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu1"),
             helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2")]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", K1])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", N2])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("onnx") / "mlp.onnx"
    onnx.save(model, str(path))
    return str(path)


# ----------------------------------------------------------------------------- the independent reference

FORMATS = {"fp8_e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "int4": (ml_dtypes.int4, 7.0), "int8": (np.int8, 127.0)}


def _q(kind, x, fmt, group=0):
    dtype, mx = FORMATS[fmt]
    pre = np.round if fmt.startswith("int") else (lambda v: v)  # int casts truncate: round half to even first
    if kind == "w":
        g = group or x.shape[0]
        out = np.empty(x.shape, np.float64)
        for r0 in range(0, x.shape[0], g):
            blk = x[r0:r0 + g].astype(np.float64)
            s = np.abs(blk).max(axis=0) / mx
            s = np.where(s > 0, s, 1.0)
            out[r0:r0 + g] = pre((blk / s).astype(np.float32)).astype(dtype).astype(np.float64) * s
        return out
    s = float(np.abs(x).max()) / mx
    return pre((x / s).astype(np.float32)).astype(dtype).astype(np.float64) * s


def _sqnr(ref, test):
    ref, test = np.asarray(ref, np.float64), np.asarray(test, np.float64)
    return 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - test) ** 2))


def _expected(fc1, fc2, seed=0):
    """(per-layer SQNR, output SQNR, top-1 agreement) with fc1 / fc2 at (weights, activations, group)."""
    w1, b1, w2 = _weights()
    x = np.random.default_rng(seed).standard_normal((BATCH, K1)).astype(np.float32)
    h = x @ w1 + b1
    y = np.maximum(h, 0) @ w2
    hq = (_q("a", x, fc1[1]) @ _q("w", w1, fc1[0], fc1[2]) + b1).astype(np.float32)
    yq = (_q("a", np.maximum(hq, 0), fc2[1]) @ _q("w", w2, fc2[0], fc2[2])).astype(np.float32)
    top1 = float(np.mean(np.argmax(y, 1) == np.argmax(yq, 1)))
    return {"fc1": _sqnr(h, hq), "fc2": _sqnr(y, yq)}, _sqnr(y, yq), top1


def _run(capsys, tmp_path, mlp_path, *extra):
    out = tmp_path / "run"
    code = main(["run", "--arch", "simd-edge", "--workload", mlp_path, "--batch", str(BATCH), "--out", str(out),
                 "--no-plots", "--quiet", "--sqnr", *extra])
    text, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    with open(out / "layers.csv", newline="") as fh:
        rows = {r["name"]: r for r in csv.DictReader(fh)}
    return report, rows, text


def test_sqnr_per_layer_and_output_match_numpy(capsys, tmp_path, mlp_path):
    report, rows, text = _run(capsys, tmp_path, mlp_path, "--weights", "int4", "--activations", "fp8_e4m3")
    per_layer, out_db, top1 = _expected(("int4", "fp8_e4m3", 0), ("int4", "fp8_e4m3", 0))
    layers = {l["name"]: l for l in report["layers"]}
    for name, db in per_layer.items():
        assert layers[name]["weight_format"] == "int4" and layers[name]["activation_format"] == "fp8_e4m3"
        assert layers[name]["sqnr_db"] == pytest.approx(db, abs=1e-3)
        assert float(rows[name]["sqnr_db"]) == pytest.approx(db, abs=1e-3)
    assert 5 < per_layer["fc2"] < per_layer["fc1"] < 40  # 4-bit weights: tens of dB, the error compounds
    assert "sqnr_db" not in layers["relu1"] and rows["relu1"]["sqnr_db"] == ""
    assert report["extras"]["output_sqnr_db"] == pytest.approx(out_db, abs=1e-3)
    assert report["extras"]["top1_agreement"] == pytest.approx(top1)
    assert re.search(rf"output SQNR +{out_db:.1f} dB", text), text
    shown = re.search(r"top-1 agreement with fp32 +([0-9.]+) %", text)
    assert shown and float(shown.group(1)) == pytest.approx(100 * top1, abs=0.05), text


def test_sqnr_follows_the_precision_policy_and_seed(capsys, tmp_path, mlp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - {match: fc1, weights: int4, activations: int8, group_size: 8}\n")
    report, _, _ = _run(capsys, tmp_path, mlp_path, "--weights", "int8", "--activations", "int8",
                        "--precision-policy", str(policy), "--sqnr-seed", "3")
    per_layer, out_db, _ = _expected(("int4", "int8", 8), ("int8", "int8", 0), seed=3)
    layers = {l["name"]: l for l in report["layers"]}
    assert layers["fc1"]["weight_format"] == "int4"
    for name, db in per_layer.items():
        assert layers[name]["sqnr_db"] == pytest.approx(db, abs=1e-3)
    assert report["extras"]["output_sqnr_db"] == pytest.approx(out_db, abs=1e-3)
    assert report["extras"]["sqnr_inputs"] == "standard normal, seed 3"


@pytest.mark.parametrize("argv, message", [
    (["--arch", "simd-edge", "--workload", "mobilenet_v1"], r"--sqnr: needs an \.onnx workload .*zoo graphs carry no weights"),
    (["--arch", "lut-m2n8k4-ecp5", "--workload", "MLP"], r"--sqnr: template lut does not say which formats"),
])
def test_sqnr_bad_cases_are_one_line(capsys, tmp_path, mlp_path, argv, message):
    import re

    argv = [mlp_path if a == "MLP" else a for a in argv]
    code = main(["run", *argv, "--out", str(tmp_path / "x"), "--no-plots", "--quiet", "--sqnr"])
    _, err = capsys.readouterr()
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "x").exists()


def test_missing_onnxruntime_is_one_line(capsys, tmp_path, mlp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import raises ImportError
    code = main(["run", "--arch", "simd-edge", "--workload", mlp_path, "--batch", "2", "--out", str(tmp_path / "x"),
                 "--no-plots", "--quiet", "--sqnr"])
    _, err = capsys.readouterr()
    assert code == 2 and "--sqnr: needs onnxruntime" in err and len(err.strip().splitlines()) == 1


def test_an_op_the_executor_lacks_is_one_line_and_common_ones_run(capsys, tmp_path):
    """Tanh / Sub / Div / Constant run (values vs numpy by hand); so does Where."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(2).standard_normal((8, 6)).astype(np.float32)

    def save(nodes, name):
        graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
                                  [numpy_helper.from_array(w, "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = str(tmp_path / f"{name}.onnx")
        onnx.save(model, path)
        return path

    two = helper.make_node("Constant", [], ["two"], name="two",
                           value=numpy_helper.from_array(np.array(2.0, np.float32)))
    ok = save([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), two,
               helper.make_node("Tanh", ["h"], ["t"], name="tanh"), helper.make_node("Sub", ["t", "two"], ["s"], name="sub"),
               helper.make_node("Div", ["s", "two"], ["y"], name="div")], "ok")
    code = main(["run", "--arch", "simd-edge", "--workload", ok, "--out", str(tmp_path / "ok"), "--no-plots", "--quiet",
                 "--weights", "int8", "--activations", "int8", "--sqnr"])
    _, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads((tmp_path / "ok" / "report.json").read_text())
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    h = x @ w
    hq = (_q("a", x, "int8") @ _q("w", w, "int8")).astype(np.float32)
    y, yq = (np.tanh(h) - 2) / 2, (np.tanh(hq) - 2) / 2
    assert report["extras"]["output_sqnr_db"] == pytest.approx(_sqnr(y, yq), abs=1e-3)
    assert "top1_agreement" not in report["extras"]  # 2-D, but made by a Div: not a classifier's logits

    cond = helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.array(True)))
    bad = save([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), cond,
                helper.make_node("Where", ["c", "h", "h"], ["y"], name="pick")], "bad")
    code = main(["run", "--arch", "simd-edge", "--workload", bad, "--out", str(tmp_path / "bad"), "--no-plots",
                 "--quiet", "--sqnr"])
    _, err = capsys.readouterr()
    # Where runs now (onnx's reference evaluator for the executor's non-GEMM ops); an op nothing can
    # evaluate is one line: tests/test_onnx_executor.py
    assert code == 0, err
