"""Never silent (issue 21, item 1) on real exports: after shape resolution (If folding, constant folding
rounds, onnxslim), every node of each corpus file is among the nodes lowered or the static nodes listed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

CORPUS = Path(__file__).parent / "data" / "onnx"


def _manifest() -> dict:
    path = CORPUS / "MANIFEST.json"
    return json.loads(path.read_text())["files"] if path.exists() else {}


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
