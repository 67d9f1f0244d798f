"""The lazy ONNX reader (workloads/onnx_lazy.py): large embedded weights stay in the file.

- the wire reader on a hand-built ModelProto: each field's byte range is where
  protobuf serialized it (raw_data found by searching the serialized bytes);
- the lazy model equals ``onnx.load`` once its lazy tensors are read back;
- every corpus model imports to the same graph (ops with their shapes and
  MACs, edges, import report) with and without the lazy reader.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workloads.onnx_import import load_onnx
from workloads.onnx_lazy import is_lazy, load_lazy, load_model_lazily, read_lazy, wire_fields

CORPUS = Path(__file__).parent / "data" / "onnx"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())["files"]


def _model(big_elements=5000):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((big_elements // 50, 50)).astype(np.float32)
    small = np.array([1, -1], np.int64)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, w.shape[0]])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Reshape", ["h", "shape"], ["y"], name="rs")]
    graph = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(w, "w"),
                                                      numpy_helper.from_array(small, "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), w, small


def test_wire_reader_finds_raw_data_where_protobuf_wrote_it():
    model, w, small = _model()
    data = model.SerializeToString()
    top = list(wire_fields(data))
    assert [f for f, *_ in top].count(7) == 1
    _, wire, _, gs, ge = next(t for t in top if t[0] == 7)
    assert wire == 2 and data[gs:ge] == model.graph.SerializeToString()
    inits = [(vs, ve) for f, wt, _, vs, ve in wire_fields(data, gs, ge) if f == 5]
    assert len(inits) == 2
    for (vs, ve), tensor, raw in zip(inits, model.graph.initializer, (w.tobytes(), small.tobytes())):
        assert data[vs:ve] == tensor.SerializeToString()
        (rs, re_), = [(s, e) for f, wt, _, s, e in wire_fields(data, vs, ve) if f == 9]
        assert data.find(raw) == rs and re_ - rs == len(raw)  # offsets found independently by search
        assert data[rs:re_] == raw


def test_lazy_model_matches_onnx_load(tmp_path):
    model, w, small = _model()
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    lazy = load_model_lazily(str(path), 4096)
    big, kept = lazy.graph.initializer
    assert is_lazy(big, str(path)) and not big.raw_data
    assert not is_lazy(kept, str(path)) and np.array_equal(numpy_helper.to_array(kept), small)
    assert np.array_equal(read_lazy(big, str(path)), w)
    assert is_lazy(big, str(path))  # reading a value leaves the model as it is
    load_lazy(lazy, str(path))
    assert lazy.SerializeToString() == onnx.load(str(path)).SerializeToString()


def test_a_corrupt_file_falls_back(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x3a\xff\xff\xff")  # field 7, length past the end
    assert load_model_lazily(str(path), 4096) is None


def _summary(graph):
    return ([(repr(op), graph.inputs_of(op.name), op.macs()) for op in graph.ops()], graph.total_macs(),
            {k: v for k, v in graph.import_report.items()})


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_corpus_graph_is_the_same_with_and_without_lazy_weights(name):
    meta = MANIFEST[name]
    shapes = {k: tuple(v) for k, v in meta["inputs"].items()}
    values = {k: v for k, v in meta.get("values", {}).items() if len(shapes.get(k, ())) <= 1}
    kw = dict(input_shapes=shapes, input_values=values or None, unknown_ops="vector")
    lazy = _summary(load_onnx(str(CORPUS / name), lazy_weights=True, **kw))
    whole = _summary(load_onnx(str(CORPUS / name), lazy_weights=False, **kw))
    assert lazy == whole
    assert lazy[1] > 0
