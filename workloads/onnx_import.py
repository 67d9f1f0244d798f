"""ONNX models as workload graphs: every node lowered with its MACs, or listed.

Shapes (:mod:`workloads.onnx_shapes`): the inputs are bound by
``input_shapes={"x": (1, 3, 48, 192)}`` (``--input-shape x=1x3x48x192``, any
dims: named, ``?``, ``-1`` or unnamed), ``input_values={"sr": 16000}``
(``--input-value``: a control input becomes a constant, so the ``If`` it
decides folds), ``dims={"N": 1}`` (``--dim``) and ``batch=`` / ``seq_len=``
(``--batch`` / ``--seq``, the usual names, :data:`BATCH_DIM_NAMES`,
:data:`SEQ_DIM_NAMES`); then ONNX shape inference, ``If`` on constant
conditions replaced by their branch, onnxslim (onnxsim as fallback), and an
onnxruntime run on zero inputs where shapes still depend on data.

Lowering (:mod:`workloads.onnx_ops`): Conv / ConvTranspose / Gemm / MatMul /
Einsum and the quantized forms (QDQ pairs, MatMulInteger, QLinearConv,
QLinearMatMul, MatMulNBits) are GEMMs; MatMul-Softmax-MatMul is the zoo's
Attention op; BatchNormalization folds into the Conv/Gemm before it (else a
vector op); LSTM / GRU / RNN are per-step gate GEMMs chained by the
recurrence; the rest are vector or free shape ops. Nodes that are provably
static (:mod:`workloads.onnx_model`) compute shapes or constants and are
left out, and listed.

Never silent: the graph carries ``import_report`` (``nodes``, ``lowered``,
``substituted``, ``dropped_static``, ``macs_accounted_fraction``, ...), which
``archsim run`` writes to report.json's ``import`` section and summarises in
one coverage line. A node archsim cannot lower is one WorkloadError listing
every such node, unless ``unknown_ops="vector"`` (``--unknown-ops vector``):
then each runs as ``Elementwise(fn="vector:<OpType>")`` with its real shapes,
and the report names it, its MACs not counted. An ``If`` / ``Loop`` whose
condition depends on data is an error naming the inputs that decide it.
"""
from __future__ import annotations

import os
from math import prod
from pathlib import Path

import onnx
from onnx import numpy_helper

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.onnx_lazy import load_lazy, load_model_lazily
from workloads.onnx_model import OnnxModel, node_names, subgraphs
from workloads.onnx_ops import LOWERED, Lowerer
from workloads.onnx_shapes import (BATCH_DIM_NAMES, SEQ_DIM_NAMES, bind_dims, bind_inputs, dim_value,
                                   SKELETON_MIN_ELEMENTS, parse_bindings, resolve, scalar_value, shape_value,
                                   symbolic_dims, weights_loaded)

__all__ = ["load_onnx", "parse_dim_args", "parse_onnx_args", "symbolic_dims", "bind_dims",
           "BATCH_DIM_NAMES", "SEQ_DIM_NAMES"]

_node_names = node_names  # the accuracy executor names layers the same way


def load_onnx(path: str, *, unknown_ops: str = "error", dims=None, input_shapes=None, input_values=None,
              batch: int | None = None, seq_len: int | None = None, seq: int | None = None,
              weight_precision: str = "int8", act_precision: str = "int8", acc_precision: str = "int32",
              lazy_weights: bool = True) -> Graph:
    """A Graph from an ONNX file; see the module docstring for what is lowered how.

    ``dims`` binds named symbolic dims, ``input_shapes`` whole input shapes,
    ``input_values`` control inputs (each a dict, or ``"NAME=V,NAME=V"`` text as a
    sweep spec writes it); ``batch`` and ``seq_len`` (``seq`` is the same) bind
    dims named like a batch or a sequence length. ``unknown_ops="vector"`` runs
    ops that cannot be lowered as generic vector work (and lists them). ``lazy_weights`` leaves large
    embedded weights in the file until a value is needed (:mod:`workloads.onnx_lazy`); the graph is the same.
    """
    if unknown_ops not in ("error", "vector"):
        raise WorkloadError(f"{path}: unknown_ops: expected 'error' or 'vector', got {unknown_ops!r}")
    from archsim.inputs import MAX_ONNX_BYTES, max_input_bytes, read_input_bytes
    from workloads.onnx_checks import check_versions

    limit = max_input_bytes(MAX_ONNX_BYTES)
    model = None
    if lazy_weights and os.path.isfile(path) and os.path.getsize(path) <= limit:
        model = load_model_lazily(path, SKELETON_MIN_ELEMENTS)  # large embedded weights left in the file
    if model is None:
        data = read_input_bytes(path, what="ONNX", limit=limit, error=WorkloadError)
        try:
            model = onnx.load_model_from_string(data)
        except Exception as err:  # protobuf raises several types for a corrupt file
            raise WorkloadError(f"{path}: not a readable ONNX model ({type(err).__name__})") from None
        del data  # the parsed model holds its own copy of the weights
    check_versions(path, model)  # workloads/onnx_checks.py
    if not model.graph.node:
        raise WorkloadError(f"{path}: the ONNX graph has no nodes; expected a model")
    _check_structure(path, model)
    if seq is not None and seq_len is not None and seq != seq_len:
        raise WorkloadError(f"{path}: seq: conflicts with seq_len={seq_len!r}")
    nodes_in_file = _count_nodes(model.graph)
    values = parse_bindings(input_values, "input_value", path, scalar_value)
    bind_inputs(path, model, input_shapes=parse_bindings(input_shapes, "input_shape", path, shape_value),
                input_values=values,
                dims=parse_bindings(dims, "dims", path, lambda v: v if isinstance(v, int) else dim_value(v)),
                batch=batch, seq_len=seq_len if seq_len is not None else seq)
    inits = {t.name for t in model.graph.initializer}
    bound = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph.input
             if vi.name not in inits}
    bound.update({name: list(numpy_helper.to_array(t).shape) for t in model.graph.initializer
                  for name in values if t.name == name})
    m, steps, static = resolve(path, model, load_weights=lambda mm: _load_external_data(path, mm))
    precision = dict(weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    graph = Graph(Path(path).stem or model.graph.name or "onnx")
    report = _lower(path, m, graph, precision, unknown_ops, steps, nodes_in_file, static)
    graph.import_report = {**report, "input_shapes": bound, "input_values": values}
    return graph


def _count_nodes(graph) -> int:
    return sum(1 + sum(_count_nodes(g) for g in subgraphs(n)) for n in graph.node)


def _load_external_data(path: str, model) -> None:
    """Load external weights, when shapes need them (onnxslim / onnxruntime) and they are small enough
    to hold; a graph whose external weights are large is imported without its weights."""
    from archsim.inputs import MAX_ONNX_BYTES, max_input_bytes

    load_lazy(model, path)  # embedded weights left in the file: it was within the size limit
    if weights_loaded(model):
        return
    base = Path(path).parent
    total = 0
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            total += int(info.get("length", 0) or 0) or prod(t.dims) * 4
    if 0 < total <= max_input_bytes(MAX_ONNX_BYTES) // 4:
        try:
            onnx.external_data_helper.load_external_data_for_model(model, str(base))
        except Exception:  # a missing or unreadable data file: import the graph alone
            pass


def _lower(path: str, m: OnnxModel, graph: Graph, precision: dict, unknown_ops: str, steps: list,
           nodes_in_file: int, static: list) -> dict:
    """Lower every dynamic node into ``graph``; returns the import report."""
    fused = _find_layernorms(m)
    absorbed = {id(n) for group in fused.values() for n in group["nodes"]}
    dynamic = [n for n in m.nodes if not m.is_static_node(n)]
    branching = [n for n in dynamic if subgraphs(n)]
    if branching:
        raise WorkloadError(_branch_error(path, m, branching[0]))
    unknown = [n for n in dynamic if id(n) not in absorbed and n.op_type not in LOWERED]
    if unknown and unknown_ops == "error":
        raise WorkloadError(f"{path}: cannot lower ONNX op(s): {_listing(m, unknown)}; expected supported ops "
                            f"(or pass unknown_ops='vector', --unknown-ops vector, to run them on the vector unit)")
    lower = Lowerer(m, graph, precision)
    per_node: dict[int, int] = {}
    for node in dynamic:
        if id(node) in lower.absorbed or (id(node) in absorbed and id(node) not in fused):
            continue
        lower.node_macs = 0
        try:
            if id(node) in fused:
                lower.layernorm_pattern(node, fused[id(node)])
            else:
                lower.node(node)
        except WorkloadError as err:
            text = str(err)
            if not text.startswith(path):
                text = f"{path}: {m.label(node)}: {text}"
            raise WorkloadError(text) from None
        except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError) as err:
            raise WorkloadError(f"{path}: {m.label(node)}: malformed node ({type(err).__name__}: "
                                f"{str(err)[:120]}); expected a node as the ONNX spec defines it") from None
        per_node[id(node)] = lower.node_macs
    substituted = []
    for t in dict.fromkeys(n.op_type for n in unknown):
        group = [n for n in unknown if n.op_type == t]
        substituted.append({"op": t, "count": len(group), "macs": None,
                            "nodes": [m.names[id(n)] for n in group]})
    macs_by_op: dict[str, int] = {}
    for node in dynamic:
        if per_node.get(id(node)):
            macs_by_op[node.op_type] = macs_by_op.get(node.op_type, 0) + per_node[id(node)]
    dropped = [{"op": t, "count": sum(1 for n in static if n.op_type == t)}
               for t in dict.fromkeys(n.op_type for n in static)]
    return {
        "file": str(path),
        "nodes_in_file": nodes_in_file,
        "nodes": len(dynamic) + len(static),  # lowered + substituted + dropped_static
        "lowered": len(dynamic) - len(unknown),
        "substituted": substituted,
        "dropped_static": dropped,
        "macs": graph.total_macs(),
        "macs_by_op": macs_by_op,  # by the ONNX op type whose node made them (an attention pattern: MatMul)
        "macs_accounted_fraction": None if unknown else 1.0,
        "shape_resolution": ["onnx shape inference", *steps],
        "weight_formats": lower.weight_formats,
        # causal: the MACs of the unmasked pairs only, as the zoo counts them; other / unknown masks are
        # counted dense (every query-key pair), an upper bound
        "attention_masks": lower.attention_masks,
    }


def _listing(m: OnnxModel, nodes) -> str:
    return "; ".join(f"{t} ({', '.join(m.names[id(n)] for n in nodes if n.op_type == t)})"
                     for t in dict.fromkeys(n.op_type for n in nodes))


def _branch_error(path: str, m: OnnxModel, node) -> str:
    """One line for an If / Loop / Scan that could not be folded: the graph inputs that decide it."""
    deciding = node.input[:1] if node.op_type == "If" else node.input[:2]
    roots: list[str] = []
    seen, todo = set(), [x for x in deciding if x and x not in m.static]
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in m.graph_inputs:
            roots.append(t)
        elif t in m.producer:
            todo += [x for x in m.producer[t].input if x and x not in m.static]
    what = {"If": "its condition", "Loop": "its trip count or condition"}.get(node.op_type, "its body")
    if m.resolution_note:
        what += f" ({m.resolution_note})"
    hint = (f"bind {', '.join(sorted(roots))} with --input-value NAME=V or --input-shape NAME=AxB so that it "
            "folds" if roots else "archsim folds If / Loop only when they are constant; export the model "
            "without data-dependent control flow")
    return f"{path}: {m.label(node)}: {what} depends on the input data; {hint}"


def parse_onnx_args(workload: str, dims=(), input_shapes=(), input_values=()) -> dict:
    """Loader options from the CLI's repeatable ``--dim``, ``--input-shape``, ``--input-value``:
    ``{"dims": {...}, "input_shapes": {...}, "input_values": {...}}`` (the ones given).
    One WorkloadError for a malformed item or a workload that is not ONNX."""
    out = {}
    for flag, key, texts, parse in (("--dim", "dims", dims, dim_value),
                                    ("--input-shape", "input_shapes", input_shapes, shape_value),
                                    ("--input-value", "input_values", input_values, scalar_value)):
        if not texts:
            continue
        if not str(workload).lower().endswith(".onnx"):
            what = "symbolic dims" if flag == "--dim" else "inputs"
            raise WorkloadError(f"{flag}: binds {what} of an ONNX model; {workload} is not a .onnx file "
                                f"(zoo models take --batch, --seq, --image-size)")
        table = {}
        for text in texts:
            name, sep, value = str(text).partition("=")
            name = name.strip()
            parsed = parse(value.strip()) if sep else None
            if not name or parsed is None:
                what = {"--dim": "a positive integer VALUE (e.g. --dim N=8)",
                        "--input-shape": "VALUE a shape AxBxC (e.g. --input-shape x=1x3x48x192)",
                        "--input-value": "a number VALUE (e.g. --input-value sr=16000)"}[flag]
                raise WorkloadError(f"{flag} {text}: expected NAME=VALUE with {what}")
            if name in table and table[name] != parsed:
                raise WorkloadError(f"{flag} {text}: {name} is already {table[name]}")
            table[name] = parsed
        out[key] = table
    return out


def parse_dim_args(texts, workload: str) -> dict:
    """``--dim NAME=VALUE`` items as ``{"dims": {...}}`` (see :func:`parse_onnx_args`)."""
    return parse_onnx_args(workload, dims=texts)


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
    succ: dict[int, set[int]] = {i: set() for i in range(len(nodes))}
    indegree = [0] * len(nodes)
    for i, node in enumerate(nodes):
        for inp in node.input:
            if inp and inp not in known:
                raise WorkloadError(f"{path}: node {names[id(node)]} ({node.op_type}) reads {inp!r}, which no node, "
                                    "graph input or initializer provides")
            if inp in producer and i not in succ[producer[inp]]:
                succ[producer[inp]].add(i)
                indegree[i] += 1
    ready = [i for i, d in enumerate(indegree) if d == 0]  # Kahn's algorithm: linear in the graph
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for j in succ[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    cycle = None
    if done < len(nodes):  # name one cycle among the nodes left
        left = {i for i, d in enumerate(indegree) if d > 0}
        edges = nx.DiGraph((i, j) for i in left for j in succ[i] if j in left)
        cycle = nx.find_cycle(edges)
    if cycle:
        ring = " -> ".join(names[id(nodes[a])] for a, _ in cycle) + f" -> {names[id(nodes[cycle[0][0]])]}"
        raise WorkloadError(f"{path}: the ONNX graph has a cycle ({ring}); expected a DAG")



def _find_layernorms(m: OnnxModel) -> dict[int, dict]:
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
