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


@pytest.mark.parametrize("name", sorted(_manifest()))
def test_every_node_of_an_export_is_lowered_or_listed(name):
    """Shape resolution (If folding, constant folding rounds, onnxslim) may rewrite the graph, but every
    node of the file ends up either among the nodes lowered or among the static nodes listed."""
    import onnx

    from workloads.onnx_shapes import bind_inputs, resolve

    info = _manifest()[name]
    values = info.get("values") or {}
    path = str(CORPUS / name)
    original = onnx.load(path)
    model = onnx.load(path)
    bind_inputs(path, model, input_shapes={k: tuple(v) for k, v in info["inputs"].items() if k not in values},
                input_values=values, dims={}, batch=None, seq_len=None)
    m, _, static = resolve(path, model)
    kept = {o for n in m.nodes for o in n.output if o} | {o for n in static for o in n.output if o}
    lost = [n.name or n.op_type for n in original.graph.node if not any(o in kept for o in n.output if o)]
    assert lost == []
