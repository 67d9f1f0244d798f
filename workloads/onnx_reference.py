"""An independent MAC count of an ONNX model, from shapes onnxruntime observes.

This module is the *second opinion* on :mod:`workloads.onnx_import`: it
shares no code with the importer and uses no shape inference. It runs the
model once in onnxruntime (zero inputs of the bound shapes, or the values
given) with every intermediate tensor exposed as a graph output, so every
shape is observed, data-dependent ones included. The body of an ``If`` is
counted for the branch its observed condition takes; a ``Loop`` body is run
again, iteration by iteration, for the trip count the model actually runs.
Each node's multiply-accumulates then follow from a closed formula on the
observed shapes (:data:`MAC_OPS`); every other op counts 0 and is listed by
type (:attr:`ReferenceCount.zero_mac_ops`), and an op type this module does
not know at all is listed apart (:attr:`ReferenceCount.unknown_ops`) so a
count never hides what it did not look at.

Conventions (the usual ones): one MAC per multiply-add of a GEMM, a
convolution or a contraction; biases, scales, zero points, normalizations,
activations, pooling and softmax are not MACs. Recurrent layers count their
gate GEMMs per step and direction (``W x_t`` and ``R h_{t-1}``).

``python -m workloads.onnx_reference model.onnx --input-shape x=1x3x32x32
--input-value sr=16000`` prints the count by op type.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

#: op types whose MACs :func:`node_macs` counts (domain-free names)
MAC_OPS = frozenset({
    "Conv", "ConvInteger", "QLinearConv", "FusedConv", "ConvTranspose",
    "Gemm", "QGemm", "MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul", "MatMulIntegerToFloat",
    "DynamicQuantizeMatMul", "MatMulNBits", "MatMulBnb4", "Einsum", "LSTM", "GRU", "RNN",
})

#: op types known to do no multiply-accumulate work (data movement, shape and
#: index computation, elementwise math, normalization, pooling, reductions,
#: quantization); anything neither here nor in MAC_OPS is reported as unknown
ZERO_MAC_OPS = frozenset({
    # shape, index, movement
    "Constant", "ConstantOfShape", "Shape", "Size", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
    "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Scatter",
    "Expand", "Tile", "Identity", "Dropout", "Cast", "CastLike", "Range", "Where", "NonZero", "TopK", "Trilu",
    "CumSum", "Pad", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "OneHot", "ArgMax", "ArgMin",
    "EyeLike", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SplitToSequence", "ConcatFromSequence",
    "SequenceInsert", "SequenceLength", "Optional", "OptionalGetElement", "OptionalHasElement", "Compress",
    "Unique", "ReverseSequence", "GridSample", "RoiAlign", "NonMaxSuppression", "If", "Loop",
    # elementwise and logic
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor", "Ceil",
    "Round", "Sign", "Mod", "Max", "Min", "Sum", "Mean", "Equal", "Less", "LessOrEqual", "Greater",
    "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf", "BitShift", "BitwiseAnd", "BitwiseOr",
    "BitwiseNot", "BitwiseXor", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Atanh",
    # activations
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "Erf",
    "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign", "Mish", "Clip", "ThresholdedRelu",
    "Shrink", "Softmax", "LogSoftmax", "Hardmax",
    # normalization
    "BatchNormalization", "InstanceNormalization", "GroupNormalization", "LayerNormalization",
    "SimplifiedLayerNormalization", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
    "RMSNormalization", "LpNormalization", "MeanVarianceNormalization", "LRN",
    # pooling and reductions
    "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool", "MaxRoiPool",
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
    # quantization (scale / zero-point arithmetic, elementwise)
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearAdd", "QLinearMul",
    "QLinearSigmoid", "QLinearLeakyRelu", "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearConcat",
    "QLinearSoftmax", "RotaryEmbedding",
})

_MAX_LOOP_ITERATIONS = 1_000_000


class ReferenceError(ValueError):
    """The reference count cannot be made (unbound input, unsupported construct)."""


@dataclass
class ReferenceCount:
    """MACs of one model run, counted from observed shapes.

    ``per_node`` maps a node's name (``If``/``Loop`` body nodes as
    ``outer/inner``; a Loop body node's MACs summed over its iterations) to
    ``(op_type, macs)``; ``nodes`` is the number of top-level graph nodes.
    """

    total_macs: int
    per_node: dict[str, tuple[str, int]]
    nodes: int
    op_counts: Counter = field(default_factory=Counter)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False)

    @property
    def macs_by_op(self) -> dict[str, int]:
        """Total MACs per op type (op types with MACs only)."""
        out: Counter = Counter()
        for op_type, macs in self.per_node.values():
            if macs:
                out[op_type] += macs
        return dict(out)

    @property
    def zero_mac_ops(self) -> dict[str, int]:
        """Executed nodes per op type that count 0 MACs (known no-MAC ops and unknown ones)."""
        return {t: n for t, n in sorted(self.op_counts.items()) if t not in MAC_OPS}

    @property
    def unknown_ops(self) -> dict[str, int]:
        """Executed nodes per op type this module does not know (counted 0; look at them)."""
        return {t: n for t, n in sorted(self.op_counts.items()) if t not in MAC_OPS and t not in ZERO_MAC_OPS}


def count_macs(path_or_model, input_shapes: dict[str, tuple[int, ...]] | None = None,
               input_values: dict | None = None) -> ReferenceCount:
    """Run the model once in onnxruntime and count MACs per node from observed shapes.

    ``input_shapes`` binds whole input shapes (whatever the dims are named);
    ``input_values`` gives input contents (a scalar fills the bound shape;
    an array sets shape and values). Inputs not given are zeros of the
    declared shape; a declared dim that is not a positive number must be bound.
    """
    model = _load(path_or_model)
    feeds = _feeds(model, input_shapes or {}, input_values or {})
    opsets = list(model.opset_import)
    per_node: dict[str, tuple[str, int]] = {}
    counts: Counter = Counter()
    shapes: dict[str, tuple[int, ...]] = {}
    _count_graph(model.graph, dict(feeds), {}, opsets, model.ir_version, "", per_node, counts, shapes,
                 top_inputs=[i for i in model.graph.input if i.name in feeds])
    total = sum(m for _, m in per_node.values())
    return ReferenceCount(total, per_node, len(model.graph.node), counts, shapes)


def node_macs(node: onnx.NodeProto, shape_of) -> int:
    """MACs of one node from observed shapes; ``shape_of(name)`` gives a tensor's shape."""
    t = node.op_type
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    ins = list(node.input)

    def sh(i: int) -> tuple[int, ...]:
        return tuple(shape_of(ins[i]))

    out = tuple(shape_of(node.output[0])) if t not in ("LSTM", "GRU", "RNN") else ()
    if t in ("Conv", "ConvInteger", "FusedConv"):
        return prod(out) * prod(sh(1)[1:])
    if t == "QLinearConv":
        return prod(out) * prod(sh(3)[1:])
    if t == "ConvTranspose":  # N*Cin*H*W * (Cout/g)*kH*kW: every input pixel scatters a kernel per output channel
        return prod(sh(0)) * prod(sh(1)[1:])
    if t in ("Gemm", "QGemm"):
        x = sh(0)
        return prod(out) * (x[0] if a.get("transA", 0) else x[1])
    if t in ("MatMul", "MatMulInteger", "QLinearMatMul", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"):
        return prod(out) * sh(0)[-1]  # numpy matmul: every output element is a K-long dot product
    if t == "FusedMatMul":
        x = sh(0)
        return prod(out) * (x[-2] if a.get("transA", 0) and len(x) > 1 else x[-1])
    if t in ("MatMulNBits", "MatMulBnb4"):
        return prod(out) * int(a["K"])
    if t == "Einsum":
        return _einsum_macs(a["equation"].decode() if isinstance(a["equation"], bytes) else a["equation"],
                            [sh(i) for i in range(len(ins))])
    if t in ("LSTM", "GRU", "RNN"):
        return _recurrent_macs(node, a, ins, shape_of)
    return 0


def _recurrent_macs(node, a: dict, ins: list[str], shape_of) -> int:
    """Gate GEMMs of LSTM/GRU/RNN: per step and direction, batch * gates*H * (input + H)."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[node.op_type]
    x = tuple(shape_of(ins[0]))
    w = tuple(shape_of(ins[1]))  # [directions, gates*H, input]
    directions, gh, input_size = w
    hidden = gh // gates
    seq, batch = (x[1], x[0]) if a.get("layout", 0) else (x[0], x[1])
    steps = seq * batch
    if len(ins) > 4 and ins[4] and shape_of.has_value(ins[4]):
        lens = np.asarray(shape_of.value(ins[4])).reshape(-1)
        steps = int(np.minimum(lens, seq).sum())
    return directions * steps * gates * hidden * (input_size + hidden)


def _einsum_macs(equation: str, shapes: list[tuple[int, ...]]) -> int:
    """Pairwise left-to-right contraction: each pair costs the product of all its index sizes."""
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ReferenceError(f"Einsum {equation!r}: {len(terms)} terms for {len(shapes)} inputs")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    ell_rank = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(spare[:ell_rank])
    sizes: dict[str, int] = {}
    letters = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            pre, post = term.split("...")
            n = len(shape) - len(pre) - len(post)
            term = pre + ell[ell_rank - n:] + post
        if len(term) != len(shape):
            raise ReferenceError(f"Einsum {equation!r}: term {term!r} does not match shape {shape}")
        for c, d in zip(term, shape):
            sizes[c] = max(sizes.get(c, 1), d)
        letters.append(term)
    if "->" in eq:
        out = rhs.replace("...", ell)
    else:  # implicit output: letters seen once, in alphabetical order, after the ellipsis
        once = Counter("".join(letters))
        out = ell + "".join(sorted(c for c in once if once[c] == 1 and c not in ell))
    if len(letters) < 2:
        return 0
    macs = 0
    cur = letters[0]
    for i in range(1, len(letters)):
        nxt = letters[i]
        union = set(cur) | set(nxt)
        macs += prod(sizes[c] for c in union)
        later = set(out).union(*[set(x) for x in letters[i + 1:]])
        cur = "".join(c for c in union if c in later)
    return macs


class _Shapes:
    """Observed tensors of one graph run (and of the scopes around it)."""

    def __init__(self, values: dict):
        self.values = values

    def __call__(self, name: str) -> tuple[int, ...]:
        if name not in self.values:
            raise ReferenceError(f"tensor {name!r} was not observed")
        return tuple(np.shape(self.values[name]))

    def has_value(self, name: str) -> bool:
        return name in self.values

    def value(self, name: str):
        return self.values[name]


def _count_graph(graph: onnx.GraphProto, feeds: dict, outer: dict, opsets, ir_version: int, prefix: str,
                 per_node: dict, counts: Counter, shapes: dict, top_inputs=None) -> dict:
    """Run ``graph`` (its inputs in ``feeds``, free names in ``outer``), count its nodes; return its values."""
    values = _run(graph, feeds, outer, opsets, ir_version, top_inputs)
    scope = {**outer, **values}
    look = _Shapes(scope)
    for i, node in enumerate(graph.node):
        name = prefix + (node.name or f"{node.op_type}_{i}")
        while name in per_node:
            name += "'"
        counts[node.op_type] += 1
        macs = node_macs(node, look)
        per_node[name] = (node.op_type, macs)
        if node.op_type == "If":
            cond = bool(np.asarray(scope[node.input[0]]).reshape(-1)[0])
            branch = _attr_graph(node, "then_branch" if cond else "else_branch")
            _count_graph(branch, {}, scope, opsets, ir_version, name + "/", per_node, counts, shapes)
        elif node.op_type == "Loop":
            _count_loop(node, scope, opsets, ir_version, name + "/", per_node, counts, shapes)
        elif node.op_type == "Scan" or any(x.type == onnx.AttributeProto.GRAPH for x in node.attribute):
            raise ReferenceError(f"node {name} ({node.op_type}): subgraph op not supported by the reference count")
    for k, v in values.items():
        if isinstance(v, np.ndarray) and (prefix + k) not in shapes:
            shapes[prefix + k] = tuple(v.shape)
    return values


def _count_loop(node, scope: dict, opsets, ir_version: int, prefix: str, per_node: dict, counts: Counter,
                shapes: dict) -> None:
    """Run a Loop's body iteration by iteration, as the runtime does, summing its nodes' MACs."""
    body = _attr_graph(node, "body")
    ins = list(node.input)
    trip = int(np.asarray(scope[ins[0]]).reshape(-1)[0]) if ins and ins[0] else None
    cond = bool(np.asarray(scope[ins[1]]).reshape(-1)[0]) if len(ins) > 1 and ins[1] else True
    carried = [scope[x] for x in ins[2:]]
    names = [i.name for i in body.input]
    it = 0
    iter_per_node: dict[str, tuple[str, int]] = {}
    while cond and (trip is None or it < trip):
        if it >= _MAX_LOOP_ITERATIONS:
            raise ReferenceError(f"node {prefix[:-1]} (Loop): more than {_MAX_LOOP_ITERATIONS} iterations")
        feeds = {names[0]: np.array(it, dtype=np.int64), names[1]: np.array(cond, dtype=bool)}
        feeds.update(zip(names[2:], carried))
        this: dict[str, tuple[str, int]] = {}
        values = _count_graph(body, feeds, scope, opsets, ir_version, prefix, this, counts, shapes)
        for k, (t, m) in this.items():
            old = iter_per_node.get(k, (t, 0))[1]
            iter_per_node[k] = (t, old + m)
        outs = [values[o.name] if o.name in values else feeds.get(o.name, scope.get(o.name)) for o in body.output]
        cond = bool(np.asarray(outs[0]).reshape(-1)[0])
        carried = outs[1:1 + len(carried)]
        it += 1
    per_node.update(iter_per_node)


def _attr_graph(node, name: str) -> onnx.GraphProto:
    for x in node.attribute:
        if x.name == name:
            return x.g
    raise ReferenceError(f"node {node.name} ({node.op_type}): no attribute {name}")


def _free_names(graph: onnx.GraphProto) -> list[str]:
    """Names a graph (or its nested subgraphs) reads but neither defines nor takes as input."""
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    free: dict[str, None] = {}
    for node in graph.node:
        for x in node.input:
            if x not in defined:
                free[x] = None
        for attr in node.attribute:
            subs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subs:
                for x in _free_names(sub):
                    if x not in defined:
                        free[x] = None
        defined.update(node.output)
    for o in graph.output:
        if o.name not in defined:
            free[o.name] = None
    return list(free)


def _run(graph: onnx.GraphProto, feeds: dict, outer: dict, opsets, ir_version: int, top_inputs=None) -> dict:
    """Values of every node output of ``graph``, from one onnxruntime run."""
    import onnxruntime as ort

    g = onnx.GraphProto()
    g.CopyFrom(graph)
    free = [x for x in _free_names(graph) if x not in feeds]
    missing = [x for x in free if x not in outer]
    if missing:
        raise ReferenceError(f"graph {graph.name!r} reads unknown tensor(s) {', '.join(missing[:5])}")
    run_feeds = dict(feeds)
    if top_inputs is None:  # a subgraph: its declared inputs get the types of the fed values
        del g.input[:]
        for name, v in feeds.items():
            g.input.append(_value_info(name, v))
    for x in free:
        g.input.append(_value_info(x, outer[x]))
        run_feeds[x] = outer[x]
    declared = {o.name for o in g.output}
    inputs = {i.name for i in g.input}
    for node in graph.node:
        for o in node.output:
            if o and o not in declared and o not in inputs:
                g.output.append(onnx.ValueInfoProto(name=o))
                declared.add(o)
    # declared output types can be loose or wrong (an exporter's guess); let the runtime infer them all
    keep = [onnx.ValueInfoProto(name=o.name) for o in g.output]
    del g.output[:]
    g.output.extend(x for x in keep if x.name not in inputs)
    if top_inputs is None:
        del g.value_info[:]
    model = helper.make_model(g, opset_imports=opsets)
    model.ir_version = ir_version
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        outs = sess.run(names, {k: v for k, v in run_feeds.items() if k in {i.name for i in sess.get_inputs()}})
    except Exception as err:  # onnxruntime raises its own exception types
        raise ReferenceError(f"onnxruntime could not run graph {graph.name!r}: {str(err)[:300]}") from None
    values = dict(zip(names, outs))
    for k, v in feeds.items():
        values.setdefault(k, v)
    for init in graph.initializer:
        values.setdefault(init.name, numpy_helper.to_array(init))
    return values


def _value_info(name: str, value) -> onnx.ValueInfoProto:
    arr = np.asarray(value)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape)


def _load(path_or_model) -> onnx.ModelProto:
    if isinstance(path_or_model, onnx.ModelProto):
        model = path_or_model
    else:
        model = onnx.load(str(path_or_model))
    if model.functions:
        from onnx import inliner
        model = inliner.inline_local_functions(model)
    return model


def _feeds(model: onnx.ModelProto, shapes: dict, values: dict) -> dict:
    """Input arrays: given values, else zeros of the bound or declared shape."""
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits or i.name in shapes or i.name in values]
    known = {i.name for i in inputs}
    extra = sorted((set(shapes) | set(values)) - known)
    if extra:
        raise ReferenceError(f"no model input named {', '.join(extra)}; inputs are {', '.join(sorted(known))}")
    feeds = {}
    unbound = []
    for vi in inputs:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise ReferenceError(f"input {vi.name}: only tensor inputs are supported")
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if vi.name in values and np.ndim(values[vi.name]) > 0:
            feeds[vi.name] = np.asarray(values[vi.name], dtype=dtype)
            continue
        if vi.name in shapes:
            shape = tuple(int(d) for d in shapes[vi.name])
        else:
            dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim]
            if any(d <= 0 for d in dims):
                unbound.append(f"{vi.name} {[d.dim_param or d.dim_value or '?' for d in tt.shape.dim]}")
                continue
            shape = tuple(dims)
        fill = values.get(vi.name, 0)
        feeds[vi.name] = np.full(shape, fill, dtype=dtype)
    if unbound:
        raise ReferenceError(f"bind the whole shape of input(s) with input_shapes: {'; '.join(unbound)}")
    return feeds


def parse_binding(text: str, what: str) -> tuple[str, str]:
    name, sep, val = text.rpartition("=")
    if not sep or not name or not val:
        raise ReferenceError(f"{what}: expected NAME=VALUE, got {text!r}")
    return name, val


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.onnx_reference", description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--input-shape", action="append", default=[], metavar="NAME=AxBxC")
    ap.add_argument("--input-value", action="append", default=[], metavar="NAME=V")
    ap.add_argument("--per-node", action="store_true", help="print every node with MACs")
    args = ap.parse_args(argv)
    try:
        shapes = {}
        for text in args.input_shape:
            name, val = parse_binding(text, "--input-shape")
            if not re.fullmatch(r"\d+(x\d+)*", val):
                raise ReferenceError(f"--input-shape {text!r}: expected NAME=AxBxC with positive integers")
            shapes[name] = tuple(int(x) for x in val.split("x"))
        values = {}
        for text in args.input_value:
            name, val = parse_binding(text, "--input-value")
            values[name] = float(val) if any(c in val for c in ".eE") else int(val)
        ref = count_macs(Path(args.model), shapes, values)
    except (ReferenceError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{args.model}: {ref.total_macs:,} MACs, {ref.nodes} top-level nodes")
    for op, macs in sorted(ref.macs_by_op.items(), key=lambda kv: -kv[1]):
        print(f"  {op:24s} {macs:>16,}")
    print("  0-MAC ops: " + ", ".join(f"{t} x{n}" for t, n in ref.zero_mac_ops.items()))
    if ref.unknown_ops:
        print("  UNKNOWN ops (counted 0): " + ", ".join(f"{t} x{n}" for t, n in ref.unknown_ops.items()))
    if args.per_node:
        for name, (t, m) in ref.per_node.items():
            if m:
                print(f"    {name:40s} {t:16s} {m:>14,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
