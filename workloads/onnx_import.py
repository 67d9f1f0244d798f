"""ONNX models as workload graphs (``onnx`` + ``onnx.shape_inference``).

Every tensor gets a concrete shape from ONNX shape inference (with data
propagation, so ``Shape -> Gather -> Concat -> Reshape`` chains resolve);
symbolic input dims are bound with ``dims={"N": 1, ...}`` (``archsim run
--dim N=1``), and ``batch=`` / ``seq_len=`` (``--batch`` / ``--seq``) bind
the usual names (:data:`BATCH_DIM_NAMES`, :data:`SEQ_DIM_NAMES`, any case).
A symbolic input dim left unbound is one error naming every such dim.

Lowering:

- Conv (1-D or 2-D, groups, dilations, pads / auto_pad) -> :class:`Conv2d`;
  1-D convs get ``H = 1``.
- Gemm (``transA`` / ``transB`` recorded on the op) and MatMul ->
  :class:`MatMul`. B is a parameter when it is an initializer (a linear
  layer, ``batch = 1``, ``m`` = product of A's leading dims), else an
  activation (batched over the broadcast leading dims).
- Add, Sub, Mul, Div, Pow, Relu, Gelu, Sigmoid, Tanh, Erf, ... ->
  :class:`Elementwise`; a non-scalar initializer operand (a bias) counts as
  its ``const_params``.
- Softmax, LayerNormalization, and the decomposed pattern
  ``ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div [, Mul(gamma), Add(beta)]``
  (recognised as one :class:`LayerNorm`).
- MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool -> :class:`Pool`.
- Gather of rows of an initializer table by activation ids -> :class:`Embedding`.
- Flatten, Reshape, Transpose, Concat, Split, Gather, Squeeze, Unsqueeze,
  Slice, Expand -> :class:`ShapeOp`; Identity, Dropout and Cast pass their
  input through.
- Constant and Shape, and any node computed only from initializers,
  constants and shapes, are static: they compute shapes or constants, not
  activations, and are left out of the graph.

Initializers that ops read as weights are the parameters; scalar constants
(an epsilon, an exponent) are not. An op that cannot be lowered is one
:class:`WorkloadError` listing every such op type and node; with
``unknown_ops="vector"`` each becomes an :class:`Elementwise` with
``fn="vector:<OpType>"`` and its real input shapes, run on the vector unit.
"""
from __future__ import annotations

from math import prod
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.ops import Conv2d, Elementwise, Embedding, LayerNorm, MatMul, Pool, ShapeOp, Softmax

ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp",
               "Log", "Neg", "Abs", "Reciprocal", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Where",
               "Max", "Min", "Equal", "Less", "Greater", "Not", "And", "Or"}
REDUCTIONS = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}
SHAPE_OPS = {"Flatten", "Reshape", "Transpose", "Concat", "Split", "Gather", "Squeeze", "Unsqueeze", "Slice",
             "Expand", "Tile"}
PASS_THROUGH = {"Identity", "Dropout", "Cast"}
ALWAYS_STATIC = {"Constant", "Shape", "Size", "ConstantOfShape"}
POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
LOWERED = ELEMENTWISE | REDUCTIONS | SHAPE_OPS | PASS_THROUGH | POOLS | {"Conv", "Gemm", "MatMul", "Softmax",
                                                                       "LayerNormalization"}
#: symbolic dim names ``batch=`` binds (compared in lower case)
BATCH_DIM_NAMES = ("batch", "batch_size", "batchsize", "n", "b", "bs", "batch_dim")
#: symbolic dim names ``seq_len=`` binds (compared in lower case)
SEQ_DIM_NAMES = ("seq", "seq_len", "seqlen", "sequence", "sequence_length", "seq_length", "s", "t", "tokens",
                 "num_tokens", "length")
_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                onnx.TensorProto.DOUBLE}


class _Model:
    """Shapes, static tensors, producers and consumers of one ONNX graph."""

    def __init__(self, path: str, model: onnx.ModelProto):
        self.path = path
        g = model.graph
        self.nodes = list(g.node)
        self.names = _node_names(self.nodes)
        self.shapes: dict[str, tuple[int, ...] | None] = {}
        for vi in [*g.input, *g.value_info, *g.output]:
            self.shapes[vi.name] = _vi_shape(vi)
        self.init: dict[str, onnx.TensorProto] = {t.name: t for t in g.initializer}
        for t in g.initializer:
            self.shapes[t.name] = tuple(t.dims)
        self.static: set[str] = set(self.init)
        for node in self.nodes:
            inputs = [x for x in node.input if x]
            if node.op_type in ALWAYS_STATIC or all(x in self.static for x in inputs):
                self.static.update(node.output)
            if node.op_type == "Constant":
                for attr in node.attribute:
                    if attr.name == "value":
                        self.shapes[node.output[0]] = tuple(attr.t.dims)
        # exporters alias equal-valued initializers with Identity (torch: ln2.weight = Identity(ln.weight))
        self.alias: dict[str, str] = {}
        for node in self.nodes:
            if node.op_type == "Identity" and node.input[0] in self.init:
                self.alias[node.output[0]] = node.input[0]
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.nodes:
            for x in node.input:
                self.consumers.setdefault(x, []).append(node)
        self.graph_outputs = {o.name for o in g.output}

    def is_static_node(self, node) -> bool:
        return all(out in self.static for out in node.output)

    def shape(self, tensor: str, node) -> tuple[int, ...]:
        shape = self.shapes.get(tensor)
        if shape is None or any(d < 1 for d in shape):
            raise WorkloadError(
                f"{self.path}: node {self.names[id(node)]} ({node.op_type}): tensor {tensor!r} has no concrete "
                f"shape after shape inference (got {_fmt(shape)}); expected fixed dims (pass dims={{'name': value}} "
                f"for symbolic ones)")
        return shape

    def param_size(self, tensor: str) -> int:
        """Elements of an initializer that counts as a parameter (non-scalar float), else 0."""
        t = self.init.get(self.alias.get(tensor, tensor))
        if t is None or t.data_type not in _FLOAT_TYPES:
            return 0
        size = prod(t.dims)
        return size if size > 1 else 0

    def scalar(self, tensor: str) -> float | None:
        """Value of a one-element static tensor (initializer or Constant), else None."""
        if tensor in self.init:
            arr = numpy_helper.to_array(self.init[tensor])
            return float(arr.reshape(-1)[0]) if arr.size == 1 else None
        for node in self.nodes:
            if node.op_type == "Constant" and node.output[0] == tensor:
                for attr in node.attribute:
                    if attr.name == "value":
                        arr = numpy_helper.to_array(attr.t)
                        return float(arr.reshape(-1)[0]) if arr.size == 1 else None
        return None

    def only_consumer(self, tensor: str, op_type: str):
        users = self.consumers.get(tensor, [])
        if len(users) == 1 and users[0].op_type == op_type and tensor not in self.graph_outputs:
            return users[0]
        return None


def _fmt(shape) -> str:
    return "unknown" if shape is None else str(list(shape))


def _vi_shape(vi) -> tuple[int, ...] | None:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else 0 for d in t.shape.dim)


def _node_names(nodes) -> dict[int, str]:
    names, used = {}, set()
    for i, node in enumerate(nodes):
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        names[id(node)] = name
    return names


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def load_onnx(path: str, *, unknown_ops: str = "error", dims: dict[str, int] | None = None,
              batch: int | None = None, seq_len: int | None = None, seq: int | None = None,
              weight_precision: str = "int8", act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """A Graph from an ONNX file; see the module docstring for what is lowered how.

    ``dims`` binds symbolic input dims by name; ``batch`` and ``seq_len``
    (``seq`` is the same) bind those named like a batch or a sequence length.
    ``unknown_ops="vector"`` runs ops that cannot be lowered as generic vector work.
    """
    if unknown_ops not in ("error", "vector"):
        raise WorkloadError(f"{path}: unknown_ops: expected 'error' or 'vector', got {unknown_ops!r}")
    from archsim.inputs import MAX_ONNX_BYTES, max_input_bytes, read_input_bytes
    from workloads.onnx_checks import check_versions

    data = read_input_bytes(path, what="ONNX", limit=max_input_bytes(MAX_ONNX_BYTES), error=WorkloadError)
    try:
        model = onnx.load_model_from_string(data)
    except Exception as err:  # protobuf raises several types for a corrupt file
        raise WorkloadError(f"{path}: not a readable ONNX model ({type(err).__name__})") from None
    check_versions(path, model)  # workloads/onnx_checks.py
    if not model.graph.node:
        raise WorkloadError(f"{path}: the ONNX graph has no nodes; expected a model")
    _check_structure(path, model)
    if seq is not None and seq_len is not None and seq != seq_len:
        raise WorkloadError(f"{path}: seq: conflicts with seq_len={seq_len!r}")
    bound = bind_dims(path, symbolic_dims(model), dims or {}, batch, seq_len if seq_len is not None else seq)
    if bound:
        _fix_dims(path, model, bound)
    model = _infer(path, model)
    m = _Model(path, model)
    if any(m.shapes.get(out) is None or 0 in m.shapes[out]
           for n in m.nodes if not m.is_static_node(n) for out in n.output if out):
        _fold_static_shapes(path, model, m)
    fused = _find_layernorms(m)
    absorbed = {id(n) for group in fused.values() for n in group["nodes"]}
    unknown = [n for n in m.nodes
               if id(n) not in absorbed and not m.is_static_node(n) and n.op_type not in LOWERED]
    if unknown and unknown_ops == "error":
        listing = "; ".join(f"{t} ({', '.join(m.names[id(n)] for n in unknown if n.op_type == t)})"
                            for t in dict.fromkeys(n.op_type for n in unknown))
        raise WorkloadError(f"{path}: cannot lower ONNX op(s): {listing}; expected supported ops "
                            f"(or pass unknown_ops='vector', --unknown-ops vector, to run them on the vector unit)")
    precision = dict(weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    graph = Graph(Path(path).stem or model.graph.name or "onnx")
    lower = _Lowerer(m, graph, precision)
    for node in m.nodes:
        if m.is_static_node(node) or (id(node) in absorbed and id(node) not in fused):
            continue
        try:
            if id(node) in fused:
                lower.layernorm_pattern(node, fused[id(node)])
            else:
                lower.node(node)
        except WorkloadError as err:
            text = str(err)
            if not text.startswith(path):
                text = f"{path}: node {m.names[id(node)]} ({node.op_type}): {text}"
            raise WorkloadError(text) from None
        except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError) as err:
            raise WorkloadError(f"{path}: node {m.names[id(node)]} ({node.op_type}): malformed node "
                                f"({type(err).__name__}: {str(err)[:120]})") from None
    return graph


def _check_structure(path: str, model) -> None:
    """Reject what shape inference would pass silently: an unsupported opset, a cycle, a tensor
    produced twice, an input nothing produces (``onnx.checker`` is stricter than the models in the wild)."""
    import networkx as nx

    latest = onnx.defs.onnx_opset_version()
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and not 1 <= imp.version <= latest:
            raise WorkloadError(f"{path}: unsupported ONNX opset {imp.version}; expected 1 to {latest}")
    producer: dict[str, int] = {}
    nodes = list(model.graph.node)  # one wrapper per node: _node_names keys them by id()
    names = _node_names(nodes)
    for i, node in enumerate(nodes):
        for out in node.output:
            if out and out in producer:
                raise WorkloadError(f"{path}: tensor {out!r} is produced by two nodes "
                                    f"({names[id(nodes[producer[out]])]}, {names[id(node)]})")
            if out:
                producer[out] = i
    known = {t.name for t in model.graph.input} | {t.name for t in model.graph.initializer} | set(producer)
    edges = nx.DiGraph()
    for i, node in enumerate(nodes):
        edges.add_node(i)
        for inp in node.input:
            if inp and inp not in known:
                raise WorkloadError(f"{path}: node {names[id(node)]} ({node.op_type}) reads {inp!r}, which no node, "
                                    "graph input or initializer provides")
            if inp in producer:
                edges.add_edge(producer[inp], i)
    try:
        cycle = nx.find_cycle(edges)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        ring = " -> ".join(names[id(nodes[a])] for a, _ in cycle) + f" -> {names[id(nodes[cycle[0][0]])]}"
        raise WorkloadError(f"{path}: the ONNX graph has a cycle ({ring}); expected a DAG")


def _infer(path: str, model):
    try:
        return shape_inference.infer_shapes(model, data_prop=True)
    except Exception as err:
        raise WorkloadError(f"{path}: ONNX shape inference failed: {str(err).splitlines()[0]}") from None


def _fold_static_shapes(path: str, model, m: _Model) -> None:
    """Evaluate the static nodes (shape arithmetic such as ``Shape -> Slice ->
    Concat -> Reshape``) with onnx's reference evaluator, and re-run shape
    inference on a copy where they are constants; fills ``m.shapes``.

    Folded tensors only give shapes: they are not counted as parameters.
    """
    from onnx.reference import ReferenceEvaluator

    values = {name: numpy_helper.to_array(t) for name, t in m.init.items()}
    for node in m.nodes:
        if not m.is_static_node(node):
            continue
        try:
            if node.op_type == "Shape":
                shape = m.shapes.get(node.input[0])
                if shape is None or 0 in shape:
                    continue
                a = _attrs(node)
                values[node.output[0]] = np.array(shape[a.get("start", 0):a.get("end", len(shape))], np.int64)
                continue
            if not all(x in values for x in node.input if x):
                continue
            feeds = {x: values[x] for x in node.input if x}
            outs = ReferenceEvaluator(node).run(None, feeds)
            values.update(zip(node.output, outs))
        except Exception:  # leave it unfolded; a missing shape is reported later, naming the node
            continue
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    keep = [n for n in folded.graph.node if not all(o in values for o in n.output)]
    del folded.graph.node[:]
    folded.graph.node.extend(keep)
    del folded.graph.value_info[:]
    have = set(m.init)
    folded.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), k)
                                    for k, v in values.items() if k not in have)
    for vi in _infer(path, folded).graph.value_info:
        shape = _vi_shape(vi)
        if shape is not None and (m.shapes.get(vi.name) is None or 0 in m.shapes[vi.name]):
            m.shapes[vi.name] = shape


def parse_dim_args(texts, workload: str) -> dict:
    """Loader options from the CLI's ``--dim NAME=VALUE`` (repeatable) for
    ``workload``: ``{"dims": {NAME: VALUE, ...}}``, or ``{}`` when none.
    One WorkloadError for a malformed item or a workload that is not ONNX."""
    if not texts:
        return {}
    if not str(workload).lower().endswith(".onnx"):
        raise WorkloadError(f"--dim: binds symbolic dims of an ONNX model; {workload} is not a .onnx file "
                            f"(zoo models take --batch, --seq, --image-size)")
    dims: dict[str, int] = {}
    for text in texts:
        name, sep, value = str(text).partition("=")
        name = name.strip()
        try:
            number = int(value.strip())
        except ValueError:
            number = None
        if not sep or not name or number is None or number < 1:
            raise WorkloadError(f"--dim {text}: expected NAME=VALUE with a positive integer VALUE (e.g. --dim N=8)")
        if name in dims and dims[name] != number:
            raise WorkloadError(f"--dim {text}: {name} is already {dims[name]}")
        dims[name] = number
    return {"dims": dims}


def symbolic_dims(model) -> list[str]:
    """Names of the symbolic dims of the graph's inputs (initializers excluded), in order."""
    inits = {t.name for t in model.graph.initializer}
    names: dict[str, None] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param:
                names[d.dim_param] = None
    return list(names)


def bind_dims(path: str, symbolic: list[str], dims: dict, batch: int | None, seq_len: int | None) -> dict[str, int]:
    """Values of the symbolic dims: ``dims`` by name, then ``batch`` / ``seq_len``
    for the usual names. One WorkloadError for a name the model lacks, a bad
    value, a ``batch``/``seq_len`` nothing takes, or a dim left unbound."""
    have = ", ".join(symbolic) or "none"
    bound: dict[str, int] = {}
    for name, value in dims.items():
        if name not in symbolic:
            raise WorkloadError(f"{path}: dims.{name}: the model has no symbolic input dim {name!r} "
                                f"(symbolic dims: {have})")
        bound[name] = _positive_dim(path, f"dims.{name}", value)
    for key, value, names in (("batch", batch, BATCH_DIM_NAMES), ("seq_len", seq_len, SEQ_DIM_NAMES)):
        if value is None:
            continue
        value = _positive_dim(path, key, value)
        targets = [n for n in symbolic if n.lower() in names]
        if not targets:
            raise WorkloadError(f"{path}: {key}: the model has no symbolic {key} dim (symbolic dims: {have}); "
                                f"bind dims by name with --dim NAME=VALUE")
        for n in targets:
            bound.setdefault(n, value)
    missing = [n for n in symbolic if n not in bound]
    if missing:
        raise WorkloadError(f"{path}: symbolic input dim(s) {', '.join(missing)} have no value; expected "
                            f"--dim NAME=VALUE (dims={{'NAME': VALUE}}), or --batch / --seq for batch and "
                            f"sequence dims")
    return bound


def _positive_dim(path: str, key: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise WorkloadError(f"{path}: {key}: expected a positive integer, got {value!r}")
    return value


def _fix_dims(path: str, model, dims: dict[str, int]) -> None:
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in dims:
                value = dims[d.dim_param]
                if not isinstance(value, int) or value < 1:
                    raise WorkloadError(f"{path}: dims.{d.dim_param}: expected a positive integer, got {value!r}")
                d.dim_value = value


def _find_layernorms(m: _Model) -> dict[int, dict]:
    """Decomposed layernorms, keyed by id of the first ReduceMean node."""
    found = {}
    for r1 in m.nodes:
        if r1.op_type != "ReduceMean" or not r1.input or r1.input[0] in m.static:
            continue
        x = r1.input[0]
        sub = m.only_consumer(r1.output[0], "Sub")
        if sub is None or list(sub.input) != [x, r1.output[0]]:
            continue
        d = sub.output[0]
        users = m.consumers.get(d, [])
        pow_ = next((u for u in users if u.op_type == "Pow" and m.scalar(u.input[1]) == 2.0), None)
        div = next((u for u in users if u.op_type == "Div" and u.input[0] == d), None)
        if pow_ is None or div is None or len(users) != 2:
            continue
        r2 = m.only_consumer(pow_.output[0], "ReduceMean")
        add = r2 and m.only_consumer(r2.output[0], "Add")
        sqrt = add and m.only_consumer(add.output[0], "Sqrt")
        if not sqrt or div.input[1] != sqrt.output[0]:
            continue
        nodes, out, affine = [r1, sub, pow_, r2, add, sqrt, div], div.output[0], False
        mul = m.only_consumer(out, "Mul")
        if mul is not None and any(m.param_size(t) for t in mul.input if t != out):
            beta = m.only_consumer(mul.output[0], "Add")
            if beta is not None and any(m.param_size(t) for t in beta.input if t != mul.output[0]):
                nodes += [mul, beta]
                out, affine = beta.output[0], True
        found[id(r1)] = {"nodes": nodes, "input": x, "output": out, "affine": affine}
    return found


class _Lowerer:
    """Adds one graph op per ONNX node, tracking which op produces each tensor."""

    def __init__(self, m: _Model, graph: Graph, precision: dict):
        self.m, self.graph, self.precision = m, graph, precision
        self.produced: dict[str, str] = {}  # tensor -> "op" or "op:k"

    def _ref(self, tensor: str) -> str | None:
        return self.produced.get(tensor)

    def _add(self, cls, node, inputs: list[str], outputs: list[str], **fields) -> None:
        name = self.m.names[id(node)]
        op = cls(name=name, source=f"onnx:{name}", **self.precision, **fields)
        self.graph.add(op, [self._ref(t) for t in inputs])
        for k, out in enumerate(outputs):
            self.produced[out] = name if k == 0 else f"{name}:{k}"

    def _dynamic(self, node) -> list[str]:
        return [x for x in node.input if x and x not in self.m.static]

    def node(self, node) -> None:
        t = node.op_type
        if t in PASS_THROUGH:
            src = self._dynamic(node)
            if src and src[0] in self.produced:
                self.produced[node.output[0]] = self.produced[src[0]]
            return
        handler = getattr(self, f"_{t}", None)
        if handler is not None:
            return handler(node)
        if t in ELEMENTWISE:
            return self._elementwise(node)
        if t in REDUCTIONS:
            return self._vector(node, fn=t.lower().replace("reduce", "reduce_"))
        if t in SHAPE_OPS:
            return self._shape_op(node)
        if t in POOLS:
            return self._pool(node)
        return self._vector(node, fn=f"vector:{t}")  # unknown_ops="vector"

    # -- compute ops ------------------------------------------------------------
    def _Conv(self, node) -> None:
        a = _attrs(node)
        x_name, w_name = node.input[0], node.input[1]
        x, w = self.m.shape(x_name, node), self.m.shape(w_name, node)
        if len(x) == 3:  # 1-D conv: H = 1
            x, w = (x[0], x[1], 1, x[2]), (w[0], w[1], 1, w[2])
        if len(x) != 4:
            raise WorkloadError(f"input {x_name!r}: expected a 1-D or 2-D conv (3 or 4 dims), got {list(x)}")
        spatial = 2 if len(self.m.shapes[x_name]) == 4 else 1
        strides = _hw(a.get("strides"), spatial, 1)
        dilations = _hw(a.get("dilations"), spatial, 1)
        kernel = (w[2], w[3])
        pads = _pads(a, spatial, (x[2], x[3]), kernel, strides, dilations)
        if w[1] * int(a.get("group", 1)) != x[1]:
            raise WorkloadError(f"weight {w_name!r} {list(w)}: expected {x[1]} input channels in all over "
                                f"group={a.get('group', 1)}")
        self._add(Conv2d, node, [x_name], list(node.output), batch=x[0], in_channels=x[1], out_channels=w[0],
                  in_h=x[2], in_w=x[3], kernel_h=kernel[0], kernel_w=kernel[1], stride_h=strides[0],
                  stride_w=strides[1], pad_top=pads[0], pad_left=pads[1], pad_bottom=pads[2], pad_right=pads[3],
                  dilation_h=dilations[0], dilation_w=dilations[1], groups=int(a.get("group", 1)),
                  bias=len(node.input) > 2 and bool(node.input[2]), weight_name=w_name)

    def _Gemm(self, node) -> None:
        a = _attrs(node)
        ta, tb = bool(a.get("transA", 0)), bool(a.get("transB", 0))
        sa, sb = self.m.shape(node.input[0], node), self.m.shape(node.input[1], node)
        if len(sa) != 2 or len(sb) != 2:
            raise WorkloadError(f"expected 2-D Gemm operands, got {list(sa)} and {list(sb)}")
        mm, k = (sa[1], sa[0]) if ta else sa
        kb, n = (sb[1], sb[0]) if tb else sb
        if k != kb:
            raise WorkloadError(f"expected A's K ({k}) to equal B's K ({kb}) after transA={int(ta)}, "
                                f"transB={int(tb)}")
        b_param = node.input[1] in self.m.static
        has_c = len(node.input) > 2 and bool(node.input[2])
        inputs = [node.input[0]] + ([] if b_param else [node.input[1]])
        self._add(MatMul, node, inputs, list(node.output), batch=1, m=mm, k=k, n=n, transpose_a=ta,
                  transpose_b=tb, weight_is_param=b_param, bias=has_c and b_param,
                  weight_name=node.input[1] if b_param else "")

    def _MatMul(self, node) -> None:
        sa, sb = self.m.shape(node.input[0], node), self.m.shape(node.input[1], node)
        a2 = (1,) + sa if len(sa) == 1 else sa
        b2 = sb + (1,) if len(sb) == 1 else sb
        if a2[-1] != b2[-2]:
            raise WorkloadError(f"expected A's last dim to equal B's K, got {list(sa)} x {list(sb)}")
        if node.input[1] in self.m.static and len(sb) <= 2:
            self._add(MatMul, node, [node.input[0]], list(node.output), batch=1, m=prod(a2[:-1]), k=a2[-1],
                      n=b2[-1], weight_is_param=True, weight_name=node.input[1])
            return
        lead = np.broadcast_shapes(a2[:-2], b2[:-2])
        self._add(MatMul, node, [node.input[0], node.input[1]], list(node.output), batch=prod(lead), m=a2[-2],
                  k=a2[-1], n=b2[-1], weight_is_param=False)

    # -- vector ops -------------------------------------------------------------
    def _elementwise(self, node) -> None:
        dyn = self._dynamic(node)
        static = [x for x in node.input if x and x in self.m.static]
        const = sum(self.m.param_size(x) for x in static)
        names = [x for x in static if self.m.param_size(x)]
        out = self.m.shape(node.output[0], node)
        self._add(Elementwise, node, dyn, list(node.output), fn=node.op_type.lower(), shape=out,
                  num_inputs=len(dyn), const_params=const, weight_name=names[0] if len(names) == 1 else "")

    def _vector(self, node, fn: str) -> None:
        dyn = self._dynamic(node)
        out = self.m.shape(node.output[0], node)
        self._add(Elementwise, node, dyn, list(node.output), fn=fn, shape=out, num_inputs=len(dyn),
                  in_shapes=tuple(self.m.shape(x, node) for x in dyn))

    def _Softmax(self, node) -> None:
        shape = self.m.shape(node.input[0], node)
        self._add(Softmax, node, [node.input[0]], list(node.output), shape=shape,
                  axis=int(_attrs(node).get("axis", -1)))

    def _LayerNormalization(self, node) -> None:
        shape = self.m.shape(node.input[0], node)
        axis = int(_attrs(node).get("axis", -1)) % len(shape)
        scale = node.input[1] if len(node.input) > 1 else ""
        self._add(LayerNorm, node, [node.input[0]], [node.output[0]], shape=shape,
                  normalized_size=prod(shape[axis:]), affine=bool(scale and self.m.param_size(scale)),
                  weight_name=scale)

    def layernorm_pattern(self, node, group) -> None:
        shape = self.m.shape(group["input"], node)
        axes = _attrs(node).get("axes")
        if axes is None and len(node.input) > 1 and node.input[1] in self.m.init:
            axes = numpy_helper.to_array(self.m.init[node.input[1]]).tolist()
        axes = sorted(int(a) % len(shape) for a in (axes or [len(shape) - 1]))
        self._add(LayerNorm, node, [group["input"]], [group["output"]], shape=shape,
                  normalized_size=prod(shape[axes[0]:]), affine=group["affine"])

    def _pool(self, node) -> None:
        x = self.m.shape(node.input[0], node)
        if len(x) != 4:
            raise WorkloadError(f"input {node.input[0]!r}: expected NCHW (4 dims), got {list(x)}")
        mode = "max" if "Max" in node.op_type else "avg"
        if node.op_type.startswith("Global"):
            self._add(Pool, node, [node.input[0]], [node.output[0]], mode=mode, global_pool=True, batch=x[0],
                      channels=x[1], in_h=x[2], in_w=x[3])
            return
        a = _attrs(node)
        kernel = _hw(a.get("kernel_shape"), 2, 1)
        strides = _hw(a.get("strides"), 2, 1)
        pads = list(_pads(a, 2, (x[2], x[3]), kernel, strides, (1, 1)))
        want = self.m.shape(node.output[0], node)
        if a.get("ceil_mode"):  # pad the far side so floor division gives ONNX's ceil
            for axis, (size, k, s) in enumerate(zip((x[2], x[3]), kernel, strides)):
                while (size + pads[axis] + pads[axis + 2] - k) // s + 1 < want[2 + axis]:
                    pads[axis + 2] += 1
        self._add(Pool, node, [node.input[0]], [node.output[0]], mode=mode, batch=x[0], channels=x[1], in_h=x[2],
                  in_w=x[3], kernel_h=kernel[0], kernel_w=kernel[1], stride_h=strides[0], stride_w=strides[1],
                  pad_top=pads[0], pad_left=pads[1], pad_bottom=pads[2], pad_right=pads[3])

    def _shape_op(self, node) -> None:
        if node.op_type == "Gather" and node.input[0] in self.m.init and node.input[1] not in self.m.static:
            table = self.m.shape(node.input[0], node)
            if len(table) == 2 and int(_attrs(node).get("axis", 0)) == 0:
                ids = self.m.shape(node.input[1], node)
                self._add(Embedding, node, [node.input[1]], [node.output[0]], vocab=table[0], dim=table[1],
                          tokens=prod(ids), weight_name=node.input[0])
                return
        dyn = self._dynamic(node)
        outs = [o for o in node.output if o]
        self._add(ShapeOp, node, dyn, outs, fn=node.op_type.lower(),
                  in_shapes=tuple(self.m.shape(x, node) for x in dyn),
                  out_shapes=tuple(self.m.shape(o, node) for o in outs))


def _hw(values, spatial: int, default: int) -> tuple[int, int]:
    if not values:
        return (default, default)
    values = [int(v) for v in values]
    if len(values) != spatial:
        raise WorkloadError(f"expected {spatial} value(s) per spatial axis, got {values}")
    return (1, values[0]) if spatial == 1 else (values[0], values[1])


def _pads(a: dict, spatial: int, size, kernel, strides, dilations) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from ``pads`` or ``auto_pad``."""
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for n, k, s, d in zip(size, kernel, strides, dilations):
            total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
            small, big = total // 2, total - total // 2
            pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
    p = [int(v) for v in a.get("pads", [])]
    if not p or auto == "VALID":
        return (0, 0, 0, 0)
    if len(p) != 2 * spatial or min(p) < 0:
        raise WorkloadError(f"pads: expected {2 * spatial} non-negative values, got {p}")
    if spatial == 1:
        return (0, p[0], 0, p[1])
    return (p[0], p[1], p[2], p[3])
