"""Properties (hypothesis): any YAML value in any key of any shipped arch spec gives a valid spec or a
one-line SpecError; the same for a workload layer key; ONNX node attributes of any shape.

Never another exception, never a multi-line message. The keys come from the
presets the registry ships, so a new template's presets are covered as they
arrive. The value goes through YAML text (what a user writes), so YAML 1.2
scalars and the nesting cap are part of the property.
"""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from archsim.errors import ArchsimError
from fuzz.corpus import _preset_raw, arch_presets

PRESETS = arch_presets()


def _paths(doc, path=()):
    out = [path] if path else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, path + (k,))
    return out


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["1:30", "yes", "off", "0x10", "0o17", "1e400", "256 KiB", "-0", ".nan", "~", "ws", "int8"]),
)
yaml_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(preset=st.sampled_from(PRESETS), data=st.data(), value=yaml_values)
def test_any_yaml_value_in_any_spec_key_is_a_spec_or_a_one_line_error(tmp_path_factory, preset, data, value):
    from archsim.spec import load_arch

    raw = _preset_raw(preset)
    path = data.draw(st.sampled_from(_paths(raw)), label="key")
    doc = copy.deepcopy(raw)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    spec = tmp_path_factory.mktemp("p") / "arch.yaml"
    spec.write_text(yaml.safe_dump(doc, allow_unicode=True))
    try:
        arch = load_arch(str(spec))
    except ArchsimError as err:
        text = str(err)
        assert "\n" not in text and text.startswith(str(spec)), text
        assert len(text) < 2000
    else:
        assert arch.template == raw["template"]


@pytest.mark.parametrize("text, expected", [
    ("1:30", "1:30"), ("yes", "yes"), ("off", "off"), ("010", 10), ("0x1f", 31), ("0o17", 15), ("1e3", 1000.0),
    (".inf", float("inf")), ("-.inf", float("-inf")), ("~", None), ("true", True), ("2024-01-01", "2024-01-01"),
])
def test_yaml_12_scalars(text, expected):
    """YAML 1.1 would read 1:30 as 90, yes/off as booleans, 010 as 8 and a date as a date."""
    from archsim.inputs import load_yaml_text

    assert load_yaml_text(f"v: {text}\n", "t.yaml")["v"] == expected


TINY = Path(__file__).resolve().parent.parent / "workloads" / "examples" / "tiny_cnn.yaml"
TINY_DOC = yaml.safe_load(TINY.read_text())
LAYER_KEYS = sorted({(i, k) for i, layer in enumerate(TINY_DOC["layers"]) for k in layer} |
                    {(i, k) for i in range(len(TINY_DOC["layers"]))
                     for k in ("in_channels", "kernel_h", "stride", "inputs", "shape", "n", "k")})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(LAYER_KEYS), value=yaml_values)
def test_any_yaml_value_in_any_layer_key_is_a_graph_or_a_one_line_error(tmp_path_factory, where, value):
    """Every edge is shape-checked: a value either builds a consistent graph or is a WorkloadError."""
    import workloads

    doc = copy.deepcopy(TINY_DOC)
    doc["layers"][where[0]][where[1]] = value
    path = tmp_path_factory.mktemp("w") / "w.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    try:
        graph = workloads.load(str(path))
    except ArchsimError as err:
        text = str(err)
        assert "\n" not in text and text.startswith(str(path)) and len(text) < 2000, text
    else:
        for producer, consumer, data in graph.nx.edges(data=True):  # every edge fits its consumer's input
            for _, port in data["ports"]:
                assert workloads.shapes_fit(data["shape"], graph.op(consumer).input_shapes()[port])


small_ints = st.integers(-3, 40)
ONNX_OPS = ["Conv", "MaxPool", "AveragePool", "Gemm", "MatMul"]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(pads=st.lists(small_ints, max_size=5), strides=st.lists(small_ints, max_size=3),
       dilations=st.lists(small_ints, max_size=3), group=st.integers(-1, 5), kernel=st.integers(0, 12),
       cin=st.integers(1, 6), weight_cin=st.integers(1, 6), size=st.integers(1, 12), op=st.sampled_from(ONNX_OPS))
def test_any_conv_pool_gemm_attributes_give_a_graph_or_a_workload_error(
        tmp_path_factory, pads, strides, dilations, group, kernel, cin, weight_cin, size, op):
    """ONNX nodes built with the helper API, attributes of any length and sign: never another exception."""
    import workloads

    attrs: dict = {}
    if pads:
        attrs["pads"] = pads
    if strides:
        attrs["strides"] = strides
    if dilations and op == "Conv":
        attrs["dilations"] = dilations
    if group != -1 and op == "Conv":
        attrs["group"] = group
    k = max(kernel, 1)
    if op == "Conv":
        inits = [numpy_helper.from_array(np.ones((4, weight_cin, k, k), np.float32), "w")]
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)]
    elif op in ("MaxPool", "AveragePool"):
        inits = []
        nodes = [helper.make_node(op, ["x"], ["y"], kernel_shape=[kernel, kernel], **attrs)]
    else:
        inits = [numpy_helper.from_array(np.ones((weight_cin * size, 3), np.float32), "w")]
        nodes = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node(op, ["f", "w"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("o") / "m.onnx"
    path.write_bytes(model.SerializeToString())
    try:
        workloads.load(str(path))
    except ArchsimError as err:
        assert "\n" not in str(err)
