"""Values carried end to end at chosen precisions: SQNR per layer and at the output vs fp32
(onnxruntime on ONNX exports built with the onnx helper API), top-1 agreement, report.json sqnr_db."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from archsim.accuracy.executor import (Precision, attach_sqnr, execute, onnxruntime_outputs, quantize_weight,
                                       run_network, sqnr_db)
from archsim.numerics import get_format
from archsim.templates.simd.accuracy import exact_gemm
from archsim.templates.simd.onnx_nets import decoder_block_onnx, resnet_onnx

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def cnn():
    model = resnet_onnx(image_size=32, batch=8, blocks=(1, 1, 1, 1), width=8, classes=10, seed=1)
    feeds = {"image": np.random.default_rng(0).standard_normal((8, 3, 32, 32))}
    return model, feeds, onnxruntime_outputs(model, feeds)


@pytest.fixture(scope="module")
def block():
    model = decoder_block_onnx(d_model=128, heads=4, ffn=352, kv_len=15, seed=2)
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((1, 128)), "k_cache": rng.standard_normal((4, 15, 32)),
             "v_cache": rng.standard_normal((4, 15, 32))}
    return model, feeds, onnxruntime_outputs(model, feeds)


def test_sqnr_by_hand():
    # signal 1 + 4 = 5, noise 0.1^2 = 0.01 -> 10 log10(500)
    assert sqnr_db([1.0, 2.0], [1.0, 2.1]) == pytest.approx(10 * math.log10(500))
    assert sqnr_db([1.0], [1.0]) == math.inf


def test_group_weight_quantization_by_hand():
    w = np.array([[0.7], [-1.4], [0.1], [0.05]])
    codes, values, scales = quantize_weight(w, "int4", 2)
    # group 0: amax 1.4 -> s = 0.2: 0.7/0.2 = 3.5 -> 4 (ties to even), -1.4 / 0.2 = -7
    # group 1: amax 0.1 -> s = 0.1/7: 0.1 -> 7, 0.05 -> 3.5 -> 4
    assert scales[:, 0].tolist() == pytest.approx([0.2, 0.1 / 7])
    assert values[:, 0].tolist() == pytest.approx([0.8, -1.4, 0.1, 4 * 0.1 / 7])
    assert get_format("int4").decode(codes[:, 0]).tolist() == [4, -7, 7, 4]


@pytest.mark.parametrize("net", ["cnn", "block"])
def test_fp32_executor_matches_onnxruntime(net, request):
    model, feeds, ort = request.getfixturevalue(net)
    out, _ = execute(model, feeds)
    name = next(iter(out))
    assert sqnr_db(ort[name], out[name]) > 100  # both fp32; different summation orders


def test_cnn_precisions_order_and_top1(cnn):
    model, feeds, ort = cnn
    reps = {w: run_network(model, feeds, Precision(w, a, g), reference=ort, classifier=True)
            for w, a, g in (("int8", "int8", 0), ("int4", "int8", 16), ("fp4_e2m1", "fp4_e2m1", 0))}
    assert reps["int8"].output_sqnr_db > reps["int4"].output_sqnr_db > reps["fp4_e2m1"].output_sqnr_db > 0
    assert reps["int8"].output_sqnr_db > 20  # 8-bit everything: well above 4-bit
    assert reps["int8"].top1_agreement >= reps["fp4_e2m1"].top1_agreement
    assert 0 <= reps["fp4_e2m1"].top1_agreement <= 1
    per_layer = reps["int8"].layer_sqnr_db
    assert set(per_layer) >= {"conv1", "fc"} and per_layer["conv1"] > per_layer["fc"] - 20


def test_bit_exact_datapath_agrees_with_the_fast_path(cnn):
    model, feeds, ort = cnn
    for w, a, g in (("int8", "int8", 0), ("int4", "fp8_e4m3", 16), ("posit8_0", "posit8_0", 0)):
        fast = run_network(model, feeds, Precision(w, a, g), reference=ort)
        exact = run_network(model, feeds, Precision(w, a, g, exact_gemm=exact_gemm), reference=ort)
        assert exact.output_sqnr_db == pytest.approx(fast.output_sqnr_db, abs=0.05)


def test_block_policy_per_layer(block):
    from mappers.precision_policy import parse_policy

    model, feeds, ort = block
    pol = parse_policy({"rules": [{"match": "mlp.*", "weights": "int4", "group_size": 32}]})
    mixed = run_network(model, feeds, Precision("int8", "int8"), policy=pol, reference=ort)
    plain = run_network(model, feeds, Precision("int8", "int8"), reference=ort)
    assert mixed.layer_sqnr_db["attn.q"] == plain.layer_sqnr_db["attn.q"]
    assert mixed.layer_sqnr_db["mlp.up"] < plain.layer_sqnr_db["mlp.up"] - 6  # 4 fewer weight bits


def test_report_json_carries_sqnr(tmp_path, block):
    import onnx

    from archsim.report.writers import write_reports
    from archsim.simulation import simulate

    model, feeds, ort = block
    path = tmp_path / "block.onnx"
    onnx.save(model, str(path))
    result = simulate(str(path), "simd-edge", weights="int4", activations="fp8_e4m3")
    rep = run_network(model, feeds, Precision("int4", "fp8_e4m3", 0), reference=ort)
    assert attach_sqnr(result, rep.layer_sqnr_db) >= 5
    write_reports(result, str(tmp_path / "out"), plots=False)
    layers = json.loads((tmp_path / "out" / "report.json").read_text())["layers"]
    carried = {l["name"]: l["sqnr_db"] for l in layers if "sqnr_db" in l}
    assert carried["mlp.up"] == pytest.approx(rep.layer_sqnr_db["mlp.up"])
    assert all(l["weight_format"] for l in layers if l["name"] in carried)


def test_dequant_baseline_rounds_weights_to_fp16():
    from archsim.accuracy.executor import _gemm, quantize_activation

    rng = np.random.default_rng(4)
    a, w = rng.standard_normal((3, 64)), rng.standard_normal((64, 5))
    _, vw, _ = quantize_weight(w, "int4", 32)
    _, va, _ = quantize_activation(a, "int8")
    want = va @ vw.astype(np.float32).astype(np.float16).astype(np.float64)  # numpy's fp16 rounding (RNE)
    got = _gemm(a, w, Precision("int4", "int8", 32, dequant_format="fp16"), True)
    assert np.array_equal(got, want)
    assert not np.array_equal(got, va @ vw)
