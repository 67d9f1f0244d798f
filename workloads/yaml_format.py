"""The YAML workload format: a list of layers, each an op of workloads.ops.

Example (``workloads/examples/tiny_cnn.yaml``)::

    name: tiny_cnn
    precision: {weights: int8, activations: int8, accumulators: int32}
    input: [1, 3, 32, 32]          # shape of the graph input the first layer reads
    layers:
      - {name: conv1, op: conv2d, out_channels: 16, kernel: 3, padding: 1}
      - {name: relu1, op: elementwise, fn: relu}
      - {name: fc, op: matmul, n: 10, inputs: [relu1]}

Top-level keys: ``layers`` (required), ``name`` (default: the file's stem),
``precision`` (``weights`` / ``activations`` / ``accumulators``), ``input``
(a shape).

Layer keys: ``name`` and ``op`` (required); ``inputs`` (names of earlier
layers, ``name:k`` for output ``k`` of a split; default: the previous layer,
or the graph input for the first layer; ``[]`` reads a graph input of shape
``input_shape``, else the top-level ``input``); then the op's own fields
(those of its dataclass in :mod:`workloads.ops`). ``op`` is one of conv2d,
matmul, attention, softmax, layernorm, rmsnorm, elementwise, pool, embedding,
or a shape op: reshape (``shape``), flatten, transpose (``perm``), concat
(``axis``), split (``axis``, ``sizes``).

Shorthands for conv2d and pool: ``kernel``, ``stride``, ``dilation`` (an
integer or ``[h, w]``) and ``padding`` (an integer, ``[h, w]`` or
``[top, left, bottom, right]``).

Fields left out are inferred from the first input's shape: batch, channels
and height/width of a conv or pool (NCHW); ``batch``, ``m`` and ``k`` of a
matmul from A ``[..., m, k]`` (``batch`` = product of the dims before ``m``),
and ``n`` from B when ``weight_is_param`` is false;
``shape``, ``normalized_size`` and ``num_inputs`` of norms, softmax and
element-wise ops; ``batch``, ``seq_q``, ``seq_kv``, ``head_dim`` and
``kv_heads`` of attention (give ``heads``); ``tokens`` of an embedding.

Errors name the file, the line and the layer, e.g.
``net.yaml: line 7: layers[2] (conv2): kernel_h: expected a positive integer, got 0``.
"""
from __future__ import annotations

import dataclasses
from math import prod
from pathlib import Path

import yaml

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.ops import (Attention, Conv2d, Elementwise, Embedding, LayerNorm, MatMul, Pool, RMSNorm, ShapeOp,
                           Softmax)

OPS = {cls.kind: cls for cls in (Conv2d, MatMul, Attention, Softmax, LayerNorm, RMSNorm, Elementwise, Pool,
                                 Embedding)}
SHAPE_FNS = ("reshape", "flatten", "transpose", "concat", "split")
TOP_KEYS = ("name", "precision", "input", "layers")
PRECISION_KEYS = {"weights": "weight_precision", "activations": "act_precision", "accumulators": "acc_precision"}
_WINDOW_SHORTHANDS = ("kernel", "stride", "dilation", "padding")
_SHAPE_OP_KEYS = {"reshape": ("shape",), "flatten": (), "transpose": ("perm",), "concat": ("axis",),
                  "split": ("axis", "sizes")}


class _Fail(Exception):
    """A message about one layer; load_yaml adds the file, line and layer."""


def _int(key, value, minimum=1):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        what = "a positive integer" if minimum == 1 else "a non-negative integer"
        raise _Fail(f"{key}: expected {what}, got {value!r}")
    return value


def _shape(key, value):
    if not isinstance(value, (list, tuple)) or not value:
        raise _Fail(f"{key}: expected a list of positive integers, got {value!r}")
    return tuple(_int(f"{key}[{i}]", v) for i, v in enumerate(value))


def _pair(key, value, minimum=1):
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return _int(f"{key}[0]", value[0], minimum), _int(f"{key}[1]", value[1], minimum)
    return (_int(key, value, minimum),) * 2


def _coerce(key: str, annotation: str, value):
    """Check a field value against its dataclass annotation."""
    if annotation == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Fail(f"{key}: expected an integer, got {value!r}")
    elif annotation == "bool":
        if not isinstance(value, bool):
            raise _Fail(f"{key}: expected true or false, got {value!r}")
    elif annotation == "str":
        if not isinstance(value, str):
            raise _Fail(f"{key}: expected a string, got {value!r}")
    elif annotation.startswith("tuple[tuple"):
        if not isinstance(value, (list, tuple)):
            raise _Fail(f"{key}: expected a list of shapes, got {value!r}")
        return tuple(_shape(f"{key}[{i}]", v) for i, v in enumerate(value))
    elif annotation.startswith("tuple"):
        return _shape(key, value)
    return value


def _fields_of(cls) -> dict[str, str]:
    return {f.name: f.type for f in dataclasses.fields(cls) if f.name not in ("name", "weight_name", "source")}


def _infer(kind: str, fields: dict, shapes: list[tuple[int, ...]]) -> None:
    """Fill fields the layer left out from its inputs' shapes."""
    def need(n):
        if len(shapes) < n:
            raise _Fail(f"inputs: expected {n} input(s) with known shapes to infer the {kind} fields "
                        f"(or give them explicitly)")

    def setdefault(key, value):
        fields.setdefault(key, value)

    if kind in ("conv2d", "pool"):
        if all(k in fields for k in ("batch", "in_h", "in_w")) and ("channels" in fields or "in_channels" in fields):
            return
        need(1)
        if len(shapes[0]) != 4:
            raise _Fail(f"inputs: expected an NCHW input of 4 dims for {kind}, got {list(shapes[0])}")
        b, c, h, w = shapes[0]
        setdefault("batch", b)
        setdefault("in_channels" if kind == "conv2d" else "channels", c)
        setdefault("in_h", h)
        setdefault("in_w", w)
    elif kind == "matmul":
        if fields.get("weight_is_param", True):
            if "m" in fields and "k" in fields:
                return
            need(1)
            a = shapes[0]
            setdefault("batch", prod(a[:-2]) if len(a) > 2 else 1)
            setdefault("m", a[-2] if len(a) > 1 else 1)
            setdefault("k", a[-1])
        else:
            need(2)
            a, b = shapes[0], shapes[1]
            if len(a) < 2 or len(b) < 2:
                raise _Fail(f"inputs: expected A and B of at least 2 dims, got {list(a)} and {list(b)}")
            setdefault("batch", prod(a[:-2]))
            setdefault("m", a[-2])
            setdefault("k", a[-1])
            setdefault("n", b[-1])
    elif kind in ("softmax", "layernorm", "rmsnorm", "elementwise"):
        if "shape" not in fields:
            need(1)
            fields["shape"] = shapes[0]
        if kind in ("layernorm", "rmsnorm"):
            setdefault("normalized_size", fields["shape"][-1])
        if kind == "elementwise":
            setdefault("num_inputs", max(len(shapes), 1))
    elif kind == "attention":
        if "heads" not in fields:
            raise _Fail("heads: expected the number of heads (attention needs it to split Q)")
        for key in ("heads", "kv_heads", "head_dim", "seq_q", "seq_kv", "batch"):
            if key in fields:
                _int(key, fields[key])
        if "head_dim" in fields and "seq_q" in fields and "seq_kv" in fields:
            return
        need(2)
        q, k = shapes[0], shapes[1]
        setdefault("batch", prod(q[:-2]) if len(q) > 2 else 1)
        setdefault("seq_q", q[-2] if len(q) > 1 else 1)
        setdefault("seq_kv", k[-2] if len(k) > 1 else 1)
        if q[-1] % fields["heads"]:
            raise _Fail(f"heads: expected a divisor of Q's last dim {q[-1]}, got {fields['heads']}")
        setdefault("head_dim", q[-1] // fields["heads"])
        setdefault("kv_heads", k[-1] // fields["head_dim"])
    elif kind == "embedding":
        if "tokens" not in fields:
            need(1)
            fields["tokens"] = prod(shapes[0])


def _shape_op(fn: str, spec: dict, shapes: list[tuple[int, ...]]) -> dict:
    """Fields of a ShapeOp from the layer's own keys and its inputs' shapes."""
    if not shapes:
        raise _Fail(f"inputs: expected input(s) with known shapes for {fn}")
    x = shapes[0]
    if fn == "reshape":
        out = list(_coerce("shape", "tuple", spec["shape"])) if "shape" in spec else None
        if out is None:
            raise _Fail("shape: expected the output shape of reshape")
        outs = [tuple(out)]
    elif fn == "flatten":
        outs = [(x[0], prod(x[1:]))]
    elif fn == "transpose":
        perm = spec.get("perm", list(reversed(range(len(x)))))
        if sorted(perm) != list(range(len(x))):
            raise _Fail(f"perm: expected a permutation of 0..{len(x) - 1}, got {perm!r}")
        outs = [tuple(x[p] for p in perm)]
    elif fn == "concat":
        axis = spec.get("axis", -1)
        if not isinstance(axis, int) or not -len(x) <= axis < len(x):
            raise _Fail(f"axis: expected an axis of {list(x)}, got {axis!r}")
        axis %= len(x)
        for s in shapes[1:]:
            if len(s) != len(x) or any(a != b for i, (a, b) in enumerate(zip(s, x)) if i != axis):
                raise _Fail(f"inputs: expected shapes equal except on axis {axis}, got {list(x)} and {list(s)}")
        outs = [x[:axis] + (sum(s[axis] for s in shapes),) + x[axis + 1:]]
    else:  # split
        axis = spec.get("axis", -1)
        if not isinstance(axis, int) or not -len(x) <= axis < len(x):
            raise _Fail(f"axis: expected an axis of {list(x)}, got {axis!r}")
        axis %= len(x)
        sizes = spec.get("sizes")
        sizes = _shape("sizes", sizes) if sizes is not None else None
        if sizes is None or sum(sizes) != x[axis]:
            raise _Fail(f"sizes: expected sizes summing to {x[axis]} (axis {axis} of {list(x)}), got {sizes!r}")
        outs = [x[:axis] + (s,) + x[axis + 1:] for s in sizes]
    return {"fn": fn, "in_shapes": tuple(shapes), "out_shapes": tuple(outs)}


def _layer_lines(text: str) -> list[int]:
    """1-based line of each item of ``layers`` (best effort; [] if not found)."""
    try:
        root = yaml.compose(text)
    except (yaml.YAMLError, RecursionError):
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if getattr(key, "value", None) == "layers" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def load_yaml(path: str) -> Graph:
    """A Graph from a YAML list-of-layers workload file."""
    from archsim.inputs import load_yaml_text, read_input_text

    text = read_input_text(path, what="workload", error=WorkloadError)  # regular files only, size-capped
    doc = load_yaml_text(text, path, WorkloadError,  # YAML 1.2 scalars, nesting capped
                         syntax="invalid YAML ({problem}); expected a mapping with 'layers'")
    if not isinstance(doc, dict):
        raise WorkloadError(f"{path}: expected a mapping with a 'layers' list at the top, got {type(doc).__name__}")
    for key in doc:
        if key not in TOP_KEYS:
            raise WorkloadError(f"{path}: {key}: unknown key; expected one of {', '.join(TOP_KEYS)}")
    layers = doc.get("layers")
    if not isinstance(layers, list) or not layers:
        raise WorkloadError(f"{path}: layers: expected a non-empty list of layers")
    precision = {"weight_precision": "int8", "act_precision": "int8", "acc_precision": "int32"}
    prec = doc.get("precision") or {}
    if not isinstance(prec, dict):
        raise WorkloadError(f"{path}: precision: expected a mapping with {', '.join(PRECISION_KEYS)}")
    for key, value in prec.items():
        if key not in PRECISION_KEYS:
            raise WorkloadError(f"{path}: precision.{key}: unknown key; expected one of {', '.join(PRECISION_KEYS)}")
        precision[PRECISION_KEYS[key]] = value
    graph_input = None
    if doc.get("input") is not None:
        try:
            graph_input = _shape("input", doc["input"])
        except _Fail as err:
            raise WorkloadError(f"{path}: {err}") from None
    name = doc.get("name", Path(path).stem)
    if not isinstance(name, str):
        raise WorkloadError(f"{path}: name: expected a string, got {name!r}")
    graph = Graph(name)
    lines = _layer_lines(text)
    previous = None
    for i, spec in enumerate(layers):
        line = f"line {lines[i]}: " if i < len(lines) else ""
        label = f"layers[{i}]"
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            label += f" ({spec['name']})"
        try:
            previous = _add_layer(graph, spec, previous, graph_input, precision, i)
        except _Fail as err:
            raise WorkloadError(f"{path}: {line}{label}: {err}") from None
        except WorkloadError as err:  # from an op's check() or a shape mismatch
            raise WorkloadError(f"{path}: {line}{label}: {err}") from None
    return graph


def _add_layer(graph: Graph, spec, previous: str | None, graph_input, precision: dict, index: int) -> str:
    if not isinstance(spec, dict):
        raise _Fail(f"expected a mapping with name and op, got {spec!r}")
    spec = dict(spec)
    name = spec.pop("name", None)
    if not isinstance(name, str) or not name:
        raise _Fail("name: expected a non-empty string")
    kind = spec.pop("op", None)
    if not isinstance(kind, str) or (kind not in OPS and kind not in SHAPE_FNS):
        raise _Fail(f"op: expected one of {', '.join([*OPS, *SHAPE_FNS])}, got {kind!r}")
    # inputs and their shapes
    if "inputs" in spec:
        inputs = spec.pop("inputs")
        if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
            raise _Fail(f"inputs: expected a list of earlier layer names, got {inputs!r}")
    else:
        inputs = [previous] if previous is not None else []
    input_shape = spec.pop("input_shape", None)
    shapes = []
    for ref in inputs:
        base, _, port = ref.partition(":") if ref not in graph else (ref, "", "")
        if base not in graph:
            raise _Fail(f"inputs: {ref!r} is not an earlier layer")
        outs = graph.op(base).output_shapes()
        index_out = int(port) if port.isdigit() else 0
        if index_out >= len(outs):
            raise _Fail(f"inputs: {ref!r}: {base} has {len(outs)} output(s)")
        shapes.append(tuple(outs[index_out]))
    if not inputs:
        external = _shape("input_shape", input_shape) if input_shape is not None else graph_input
        if external is not None:
            shapes.append(external)
    if kind in SHAPE_FNS:
        allowed = set(_SHAPE_OP_KEYS[kind])
        for key in spec:
            if key not in allowed:
                raise _Fail(f"{key}: unknown key for {kind}; expected one of "
                            f"{', '.join(['name', 'op', 'inputs', 'input_shape', *sorted(allowed)])}")
        fields = _shape_op(kind, spec, shapes)
        cls = ShapeOp
    else:
        cls = OPS[kind]
        valid = _fields_of(cls)
        fields = {**precision}
        if kind in ("conv2d", "pool"):
            _window_shorthands(kind, spec, fields)
        for key, value in spec.items():
            if key not in valid:
                extra = list(_WINDOW_SHORTHANDS) if kind in ("conv2d", "pool") else []
                raise _Fail(f"{key}: unknown key for {kind}; expected one of "
                            f"{', '.join(['name', 'op', 'inputs', 'input_shape', *extra, *valid])}")
            fields[key] = _coerce(key, valid[key], value)
        _infer(kind, fields, shapes)
    op = cls(name=name, source=f"yaml:layers[{index}]", **fields)
    try:
        graph.add(op, inputs)
    except WorkloadError as err:  # the label already names the layer
        text = str(err)
        raise _Fail(text[len(name) + 2:] if text.startswith(f"{name}: ") else text) from None
    if not inputs and shapes and op.input_shapes():  # the graph input has no producer op: check its edge here
        from workloads.graph import shapes_fit

        want = tuple(op.input_shapes()[0])
        if not shapes_fit(shapes[0], want):
            source = "input_shape" if input_shape is not None else "input"
            raise _Fail(f"shape mismatch {source} -> {name}: the graph input is {list(shapes[0])} but {name} "
                        f"({kind}) expects {list(want)}")
    return name


def _window_shorthands(kind: str, spec: dict, fields: dict) -> None:
    if "kernel" in spec:
        fields["kernel_h"], fields["kernel_w"] = _pair("kernel", spec.pop("kernel"))
    if "stride" in spec:
        fields["stride_h"], fields["stride_w"] = _pair("stride", spec.pop("stride"))
    if "dilation" in spec:
        if kind != "conv2d":
            raise _Fail("dilation: only conv2d has a dilation")
        fields["dilation_h"], fields["dilation_w"] = _pair("dilation", spec.pop("dilation"))
    if "padding" in spec:
        pad = spec.pop("padding")
        if isinstance(pad, (list, tuple)) and len(pad) == 4:
            values = [_int(f"padding[{i}]", p, 0) for i, p in enumerate(pad)]
        else:
            h, w = _pair("padding", pad, 0)
            values = [h, w, h, w]
        fields["pad_top"], fields["pad_left"], fields["pad_bottom"], fields["pad_right"] = values
