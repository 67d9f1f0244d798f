"""One ONNX graph as the importer reads it: shapes, provably static tensors, their values.

A tensor is *static* when its value is known before any input arrives: an
initializer, a ``Constant``, the ``Shape`` / ``Size`` of a tensor whose shape is
fully concrete, or the output of a deterministic node whose inputs are all
static -- counting the outer-scope tensors that its ``If`` / ``Loop`` / ``Scan``
subgraphs read. Static nodes compute shapes or constants, not activations;
the importer leaves them out of the workload and lists them in its report.
Values of static tensors are evaluated lazily (onnx's reference evaluator, one
node at a time) and only for small tensors: shape arithmetic and conditions,
never the weights.
"""
from __future__ import annotations

from math import prod

import numpy as np
import onnx
from onnx import helper, numpy_helper

from archsim.errors import WorkloadError
from workloads.onnx_lazy import is_lazy, read_lazy

#: ops whose output is random: never static even with static inputs
NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                    "Bernoulli"}
#: ops whose value is the shape of their input: static once that shape is concrete
SHAPE_READERS = {"Shape", "Size"}
#: largest tensor (elements) whose value is evaluated: shape arithmetic, masks of small models
MAX_EVAL_ELEMENTS = 1 << 20
#: static ops whose output is a view of their first input's values (see OnnxModel.param_source)
PARAM_VIEWS = {"Identity", "Cast", "Reshape", "Transpose", "Slice", "Squeeze", "Unsqueeze", "DequantizeLinear",
               "Flatten"}
_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                onnx.TensorProto.DOUBLE}


def attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def node_names(nodes) -> dict[int, str]:
    """A unique name per node (its own, else ``OpType_i``), keyed by ``id(node)``."""
    names, used = {}, set()
    for i, node in enumerate(nodes):
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        names[id(node)] = name
    return names


def vi_shape(vi) -> tuple[int, ...] | None:
    """Shape of a value_info; 0 marks a dim that is not a known positive number."""
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 0 for d in t.shape.dim)


def subgraphs(node) -> list:
    out = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out.append(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            out.extend(a.graphs)
    return out


def outer_reads(graph) -> set[str]:
    """Tensors a subgraph (and its own subgraphs) reads from the enclosing scopes."""
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    reads: set[str] = set()
    for node in graph.node:
        for x in node.input:
            if x and x not in local:
                reads.add(x)
        for sub in subgraphs(node):
            reads |= {x for x in outer_reads(sub) if x not in local}
        local.update(o for o in node.output if o)
    return reads


def node_reads(node) -> list[str]:
    """Every tensor a node reads: its inputs and what its subgraphs read from outside."""
    reads = [x for x in node.input if x]
    for sub in subgraphs(node):
        reads += sorted(outer_reads(sub))
    return reads


class OnnxModel:
    """Shapes, static tensors, producers and consumers of one (shape-inferred) ONNX graph."""

    def __init__(self, path: str, model: onnx.ModelProto, extra_shapes: dict | None = None):
        self.path = path
        self.model = model
        self.resolution_note = ""  # why shapes are still unknown, for the error that names them
        g = model.graph
        self.opsets = {imp.domain or "": imp.version for imp in model.opset_import}
        self.nodes = list(g.node)
        self.names = node_names(self.nodes)
        self.shapes: dict[str, tuple[int, ...] | None] = {}
        self.types: dict[str, int] = {}
        for vi in [*g.input, *g.value_info, *g.output]:
            self.shapes[vi.name] = vi_shape(vi)
            if vi.type.HasField("tensor_type"):
                self.types[vi.name] = vi.type.tensor_type.elem_type
        self.observed: set[str] = set()  # tensors whose shapes only an onnxruntime run on zero inputs gave
        for name, shape in (extra_shapes or {}).items():
            if self.shapes.get(name) is None or 0 in self.shapes[name]:
                self.shapes[name] = tuple(shape)
                self.observed.add(name)
        self.init: dict[str, onnx.TensorProto] = {t.name: t for t in g.initializer}
        for t in g.initializer:
            self.shapes[t.name] = tuple(t.dims)
            self.types[t.name] = t.data_type
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.nodes:
            for out in node.output:
                if out:
                    self.producer[out] = node
            for x in node_reads(node):
                self.consumers.setdefault(x, []).append(node)
        self.graph_inputs = [i.name for i in g.input if i.name not in self.init]
        self.graph_outputs = {o.name for o in g.output}
        self._values: dict[str, np.ndarray | None] = {}
        self.static: set[str] = set(self.init)
        for node in self.nodes:
            if self._node_is_static(node):
                self.static.update(o for o in node.output if o)
            if node.op_type == "Constant" or (self.is_static_node(node) and
                                              any(o and not self.concrete(o) for o in node.output)):
                for out in node.output:
                    value = self.value(out) if out else None
                    if value is not None:
                        self.shapes[out] = tuple(value.shape)
        # exporters alias equal-valued initializers with Identity (torch: ln2.weight = Identity(ln.weight))
        self.alias: dict[str, str] = {}
        for node in self.nodes:
            if node.op_type == "Identity" and node.input and node.input[0] in self.init:
                self.alias[node.output[0]] = node.input[0]

    def _node_is_static(self, node) -> bool:
        if node.op_type == "Constant":
            return True
        if node.op_type in NONDETERMINISTIC:
            return False
        if node.op_type in SHAPE_READERS:  # a shape seen on zero inputs is not provably the shape
            return self.concrete(node.input[0]) and node.input[0] not in self.observed
        if node.op_type == "CastLike":  # the second input gives only its (static) element type
            return node.input[0] in self.static
        return all(x in self.static for x in node_reads(node))

    # -- queries ---------------------------------------------------------------
    def label(self, node) -> str:
        return f"node {self.names[id(node)]} ({node.op_type})"

    def is_static_node(self, node) -> bool:
        return all(out in self.static for out in node.output if out)

    def concrete(self, tensor: str) -> bool:
        shape = self.shapes.get(tensor)
        return shape is not None and all(d > 0 for d in shape)

    def shape(self, tensor: str, node) -> tuple[int, ...]:
        """Concrete shape of ``tensor`` (a scalar is ``(1,)``); a WorkloadError naming ``node`` if unknown."""
        shape = self.shapes.get(tensor)
        if shape is None or any(d < 1 for d in shape):
            got = "unknown" if shape is None else "[" + ", ".join(str(d) if d > 0 else "?" for d in shape) + "]"
            note = f" ({self.resolution_note})" if self.resolution_note else ""
            raise WorkloadError(
                f"{self.path}: {self.label(node)}: tensor {tensor!r} has no concrete shape (got {got}) after shape "
                f"inference, simplification and an onnxruntime run{note}; bind the model's inputs with "
                f"--input-shape NAME=AxBxC / --input-value NAME=V")
        return shape or (1,)

    def elements(self, tensor: str) -> int | None:
        shape = self.shapes.get(tensor)
        return None if shape is None or any(d < 1 for d in shape) else prod(shape)

    def param_source(self, tensor: str) -> str:
        """The initializer a static tensor is a view of (itself, or through Identity / Cast / Reshape /
        Transpose / Slice / Squeeze / Unsqueeze / DequantizeLinear: a position table sliced to the
        sequence, a transposed or dequantized weight), else ''."""
        for _ in range(16):
            tensor = self.alias.get(tensor, tensor)
            if tensor in self.init:
                return tensor
            node = self.producer.get(tensor)
            if node is None or tensor not in self.static or node.op_type not in PARAM_VIEWS:
                return ""
            tensor = node.input[0]
        return ""

    def param_size(self, tensor: str) -> int:
        """Elements of the initializer (non-scalar float, or quantized and dequantized) a static tensor
        reads as a parameter, else 0."""
        source = self.param_source(tensor)
        t = self.init.get(source)
        if t is None:
            return 0
        dequantized = source != tensor and self.types.get(tensor) in _FLOAT_TYPES
        if t.data_type not in _FLOAT_TYPES and not dequantized:
            return 0
        size = prod(t.dims)
        return size if size > 1 else 0

    def only_consumer(self, tensor: str, op_type: str | tuple = ()):
        users = self.consumers.get(tensor, [])
        types = (op_type,) if isinstance(op_type, str) else op_type
        if len(users) == 1 and (not types or users[0].op_type in types) and tensor not in self.graph_outputs:
            return users[0]
        return None

    def scalar(self, tensor: str) -> float | None:
        """Value of a one-element static tensor, else None."""
        value = self.value(tensor) if tensor in self.static else None
        if value is None or value.size != 1:
            return None
        return float(value.reshape(-1)[0])

    # -- values of static tensors ----------------------------------------------
    def value(self, tensor: str) -> np.ndarray | None:
        """The value of a static tensor when it is small enough to evaluate, else None."""
        if tensor in self._values:
            return self._values[tensor]
        self._values[tensor] = None  # a guard against re-entry
        result = self._evaluate(tensor)
        self._values[tensor] = result
        return result

    def _evaluate(self, tensor: str) -> np.ndarray | None:
        if tensor in self.init:
            t = self.init[tensor]
            if prod(t.dims) > MAX_EVAL_ELEMENTS:
                return None
            if t.data_location == onnx.TensorProto.EXTERNAL and not is_lazy(t, self.path):
                return None
            try:
                return read_lazy(t, self.path) if is_lazy(t, self.path) else numpy_helper.to_array(t)
            except Exception:  # external data not loaded, or a type numpy lacks
                return None
        node = self.producer.get(tensor)
        if node is None or tensor not in self.static:
            return None
        if node.op_type == "Shape":
            shape = self.shapes[node.input[0]]
            a = attrs(node)
            start, end = a.get("start", 0), a.get("end", len(shape))
            return np.array(shape[start:end], np.int64)
        if node.op_type == "Size":
            return np.array(prod(self.shapes[node.input[0]]), np.int64)
        reads = node_reads(node)
        feeds = {}
        for x in reads:
            v = self.value(x)
            if v is None:
                return None
            feeds[x] = v
        try:
            from onnx.reference import ReferenceEvaluator

            domain = node.domain or ""
            opsets = {domain: self.opsets.get(domain, onnx.defs.onnx_opset_version())}
            if subgraphs(node):  # a static If / Loop: a one-node model whose inputs include the outer reads
                outs = ReferenceEvaluator(_one_node_model(node, feeds, self.model), opsets=None).run(None, feeds)
            else:
                outs = ReferenceEvaluator(node, opsets=opsets).run(None, feeds)
        except Exception:  # an op (or a case) the reference evaluator lacks: ask onnxruntime
            outs = _onnxruntime_node(node, feeds, self.model)
            if outs is None:
                return None
        for name, out in zip(node.output, outs):
            if name and name != tensor:
                self._values.setdefault(name, np.asarray(out))
        out = np.asarray(outs[list(node.output).index(tensor)])
        return out if out.size <= MAX_EVAL_ELEMENTS else None


def _one_node_model(node, feeds: dict, model) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype),
                                            list(np.shape(v))) for name, v in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    graph = helper.make_graph([node], "static", inputs, outputs)
    return helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)


def _onnxruntime_node(node, feeds: dict, model) -> list | None:
    """The outputs of one node run by onnxruntime on ``feeds``, else None."""
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        one = _one_node_model(node, feeds, model)
        sess = ort.InferenceSession(one.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)
    except Exception:  # onnxruntime cannot run it either: the value stays unknown
        return None
