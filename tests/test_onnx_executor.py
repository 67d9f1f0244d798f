"""The value executor behind --sqnr (archsim.accuracy.executor) on real exports: its fp32 run matches
onnxruntime (the independent reference) on the operators of issue 21 -- If (Silero), LSTM, ConvTranspose,
BatchNormalization, dynamo's Shape(start, end) bias pattern, Range, com.microsoft MatMulNBits."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

CORPUS = Path(__file__).parent / "data" / "onnx"
MODELS = ["resnet18_dynamo.onnx", "silero_vad_half.onnx", "recurrent_legacy.onnx", "convtranspose_legacy.onnx",
          "quant_matmulnbits.onnx", "gpt2_dynamo_symbolic.onnx", "bn_forms_legacy.onnx", "if_loop_legacy.onnx"]


def _manifest() -> dict:
    path = CORPUS / "MANIFEST.json"
    return json.loads(path.read_text())["files"] if path.exists() else {}


@pytest.mark.parametrize("name", MODELS)
def test_fp32_executor_matches_onnxruntime(name):
    import onnx

    import workloads
    from archsim.accuracy.executor import execute, imported_feeds, onnxruntime_outputs, sqnr_db

    info = _manifest().get(name)
    if info is None:
        pytest.skip(f"{name} is not in the corpus")
    values = info.get("values") or {}
    path = str(CORPUS / name)
    graph = workloads.load(path, input_shapes={k: tuple(v) for k, v in info["inputs"].items() if k not in values},
                           input_values=values or None)
    model = onnx.load(path)
    feeds = imported_feeds(model, graph.import_report, seed=0)
    ours, _ = execute(model, feeds)
    ref = onnxruntime_outputs(model, feeds)
    for key, value in ours.items():
        assert value.shape == ref[key].shape
        assert sqnr_db(ref[key], value) > 90, f"{name}: output {key}"

