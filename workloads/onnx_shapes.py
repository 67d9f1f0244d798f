"""Concrete shapes for an ONNX graph, resolved the way the ecosystem resolves them.

1. Bind the inputs: ``input_shapes`` (a whole shape per input, whatever its
   dims are called: named, ``?``, ``-1`` or unnamed), ``input_values`` (a
   control input replaced by a constant, e.g. Silero VAD's ``sr``), ``dims``
   (named dims), ``batch`` / ``seq_len`` (the usual names).
2. ``onnx.shape_inference`` with data propagation; then every ``If`` whose
   condition is now a known constant is replaced by the branch it takes.
3. Where dims are still unknown (a data-dependent Reshape, an ``If`` left),
   simplify with onnxslim (onnxsim as the fallback), which constant-folds
   Shape subgraphs and ``If`` on constant conditions.
4. Where shapes still depend on data, run the graph once in onnxruntime on
   zero inputs of the bound shapes and read every intermediate shape.
"""
from __future__ import annotations

import contextlib
import io
from math import prod

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from archsim.errors import WorkloadError
from workloads.onnx_model import OnnxModel, subgraphs

#: symbolic dim names ``batch=`` binds (compared in lower case)
BATCH_DIM_NAMES = ("batch", "batch_size", "batchsize", "n", "b", "bs", "batch_dim")
#: symbolic dim names ``seq_len=`` binds (compared in lower case)
SEQ_DIM_NAMES = ("seq", "seq_len", "seqlen", "sequence", "sequence_length", "seq_length", "s", "t", "tokens",
                 "num_tokens", "length")
#: dim names that are not names: each such dim needs --input-shape
ANONYMOUS_DIMS = ("", "?", "-1", "unk", "unknown")


# ----------------------------------------------------------------------------- parsing the bindings
def parse_bindings(value, key: str, path: str, parse_value) -> dict:
    """``{NAME: value}`` from a dict, or from text ``"NAME=V[,NAME=V]"`` / a list of ``NAME=V``
    (the CLI's repeatable flags and a sweep spec's scalar parameters)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        items = list(value.items())
    else:
        texts = value.replace(";", ",").split(",") if isinstance(value, str) else list(value)
        items = []
        for text in texts:
            name, sep, v = str(text).partition("=")
            if not sep or not name.strip():
                raise WorkloadError(f"{path}: {key}: expected NAME=VALUE, got {text!r}")
            items.append((name.strip(), v.strip()))
    out = {}
    for name, v in items:
        parsed = parse_value(v)
        if parsed is None:
            raise WorkloadError(f"{path}: {key}.{name}: {_EXPECTED.get(parse_value, 'expected a positive integer')}, got {v!r}")
        if name in out and out[name] != parsed:
            raise WorkloadError(f"{path}: {key}.{name}: bound twice ({out[name]!r} and {parsed!r})")
        out[str(name)] = parsed
    return out


def shape_value(v):
    """``(2, 3, 48)`` from ``"2x3x48"``, ``[2, 3, 48]`` or ``7`` (``()`` / ``"scalar"``: a scalar);
    None if not positive integers."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        v = [v]
    if isinstance(v, str):
        v = v.lower().replace("*", "x").split("x") if v.strip() not in ("", "()", "[]", "scalar") else []
    try:
        dims = tuple(int(str(d).strip()) for d in v)
    except (TypeError, ValueError):
        return None
    return dims if all(d > 0 for d in dims) else None  # () is a scalar


def scalar_value(v):
    """A number from ``"16000"``, ``16000`` or ``0.5``; None if not a number."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    try:
        return int(str(v))
    except ValueError:
        try:
            return float(str(v))
        except ValueError:
            return None


def dim_value(v):
    """A positive integer from ``"8"`` or ``8``; None otherwise."""
    if isinstance(v, bool):
        return None
    try:
        number = int(str(v).strip()) if not isinstance(v, int) else v
    except ValueError:
        return None
    return number if number > 0 else None


_EXPECTED = {shape_value: "expected a shape AxBxC of positive integers (e.g. 1x3x48x192)",
             scalar_value: "expected a number (e.g. 16000)", dim_value: "expected a positive integer"}


# ----------------------------------------------------------------------------- binding the inputs
def symbolic_dims(model) -> list[str]:
    """Names of the named symbolic dims of the graph's inputs (initializers excluded), in order."""
    inits = {t.name for t in model.graph.initializer}
    names: dict[str, None] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param.strip() not in ANONYMOUS_DIMS:
                names[d.dim_param] = None
    return list(names)


def _dim_text(d) -> str:
    if d.HasField("dim_value"):
        return str(d.dim_value)  # a 0 or negative one is shown as it is
    return d.dim_param if d.HasField("dim_param") and d.dim_param else "?"


def bind_inputs(path: str, model, *, input_shapes: dict, input_values: dict, dims: dict,
                batch: int | None, seq_len: int | None) -> None:
    """Give every graph input a concrete shape (in place); one WorkloadError naming what is left unbound."""
    inits = {t.name for t in model.graph.initializer}
    inputs = {vi.name: vi for vi in model.graph.input if vi.name not in inits}
    have = ", ".join(inputs) or "none"
    for key, table in (("input_shape", input_shapes), ("input_value", input_values)):
        for name in table:
            if name not in inputs:
                raise WorkloadError(f"{path}: {key}.{name}: the model has no input {name!r} (inputs: {have})")
    for name, value in input_values.items():
        _input_to_constant(path, model, inputs[name], value, input_shapes.get(name))
    inputs = {vi.name: vi for vi in model.graph.input if vi.name not in inits and vi.name not in input_values}
    learned: dict[str, int] = {}
    for name, shape in input_shapes.items():
        if name not in inputs:
            continue
        t = inputs[name].type.tensor_type
        declared = list(t.shape.dim) if t.HasField("shape") else None
        if declared is not None and len(declared) != len(shape):
            raise WorkloadError(f"{path}: input_shape.{name}: the input has {len(declared)} dims "
                                f"[{', '.join(_dim_text(d) for d in declared)}], got {len(shape)} "
                                f"({'x'.join(map(str, shape))})")
        for i, size in enumerate(shape):
            if declared is not None and declared[i].HasField("dim_value") and declared[i].dim_value > 0 \
                    and declared[i].dim_value != size:
                raise WorkloadError(f"{path}: input_shape.{name}: dim {i} is fixed at {declared[i].dim_value} "
                                    f"in the model, got {size}")
            param = declared[i].dim_param.strip() if declared is not None and declared[i].HasField("dim_param") else ""
            if param and param not in ANONYMOUS_DIMS:  # a named dim: the other inputs that use it get it too
                if learned.setdefault(param, size) != size:
                    raise WorkloadError(f"{path}: input_shape.{name}: dim {param!r} is {learned[param]} in another "
                                        f"input's shape, got {size}")
        t.shape.Clear()
        for size in shape:
            t.shape.dim.add().dim_value = size
    symbolic = symbolic_dims(model)
    bound = bind_dims(path, symbolic, dims, batch, seq_len, check_missing=False)
    for param, size in learned.items():
        if bound.setdefault(param, size) != size:
            raise WorkloadError(f"{path}: dims.{param}: {bound[param]} conflicts with the input shapes given "
                                f"({param} = {size})")
    unbound, anonymous = [], False
    for vi in inputs.values():
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            unbound.append(f"{vi.name} [unknown rank]")
            continue
        for d in t.shape.dim:
            if d.HasField("dim_param") and d.dim_param in bound:
                d.dim_value = bound[d.dim_param]
        missing = [d for d in t.shape.dim if not (d.HasField("dim_value") and d.dim_value > 0)]
        anonymous |= any(not d.HasField("dim_param") or d.dim_param.strip() in ANONYMOUS_DIMS for d in missing)
        if missing:
            unbound.append(f"{vi.name} [{', '.join(_dim_text(d) for d in t.shape.dim)}]")
    if unbound and not anonymous:
        bind_dims(path, symbolic, dims, batch, seq_len)  # the named dims left: one error naming them
    if unbound:
        raise WorkloadError(f"{path}: input(s) {'; '.join(unbound)} have dims without a value; expected "
                            f"--input-shape NAME=AxBxC (input_shapes={{'NAME': (A, B, C)}}), --dim NAME=VALUE for "
                            f"named dims, or --batch / --seq for batch and sequence dims")


def _input_to_constant(path: str, model, vi, value, shape) -> None:
    """Replace graph input ``vi`` by an initializer filled with ``value`` (its declared or bound shape)."""
    t = vi.type.tensor_type
    if shape is None:
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in t.shape.dim] if t.HasField("shape") else []
        if any(d < 1 for d in dims):
            raise WorkloadError(f"{path}: input_value.{vi.name}: the input has unbound dims; give its shape too "
                                f"(--input-shape {vi.name}=AxB)")
        shape = tuple(dims)
    try:
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
    except Exception:
        dtype = np.float32
    array = np.full(shape, value, dtype=dtype)
    model.graph.initializer.append(numpy_helper.from_array(array, vi.name))
    keep = [i for i in model.graph.input if i.name != vi.name]
    del model.graph.input[:]
    model.graph.input.extend(keep)


def bind_dims(path: str, symbolic: list[str], dims: dict, batch: int | None, seq_len: int | None,
              check_missing: bool = True) -> dict[str, int]:
    """Values of the named symbolic dims: ``dims`` by name, then ``batch`` / ``seq_len`` for the usual
    names. One WorkloadError for a name the model lacks, a bad value, a ``batch``/``seq_len`` nothing
    takes, or (``check_missing``) a dim left unbound."""
    have = ", ".join(symbolic) or "none"
    bound: dict[str, int] = {}
    for name, value in dims.items():
        if name not in symbolic:
            raise WorkloadError(f"{path}: dims.{name}: the model has no symbolic input dim {name!r} "
                                f"(symbolic dims: {have})")
        bound[name] = positive_dim(path, f"dims.{name}", value)
    for key, value, names in (("batch", batch, BATCH_DIM_NAMES), ("seq_len", seq_len, SEQ_DIM_NAMES)):
        if value is None:
            continue
        value = positive_dim(path, key, value)
        targets = [n for n in symbolic if n.lower() in names]
        if not targets:
            raise WorkloadError(f"{path}: {key}: the model has no symbolic {key} dim (symbolic dims: {have}); "
                                f"bind dims by name with --dim NAME=VALUE")
        for n in targets:
            bound.setdefault(n, value)
    missing = [n for n in symbolic if n not in bound]
    if check_missing and missing:
        raise WorkloadError(f"{path}: symbolic input dim(s) {', '.join(missing)} have no value; expected "
                            f"--dim NAME=VALUE (dims={{'NAME': VALUE}}), or --batch / --seq for batch and "
                            f"sequence dims")
    return bound


def positive_dim(path: str, key: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise WorkloadError(f"{path}: {key}: expected a positive integer, got {value!r}")
    return value


# ----------------------------------------------------------------------------- resolving
#: initializers above this many elements are given to shape inference as typed inputs, without data
SKELETON_MIN_ELEMENTS = 4096


def infer(path: str, model):
    """``model`` with the shapes ONNX shape inference (with data propagation) finds. Inference runs on a
    skeleton whose large initializers are typed inputs without data, so weights are neither serialized
    nor copied (a BERT-base export's 440 MB)."""
    big = [t for t in model.graph.initializer
           if prod(t.dims) > SKELETON_MIN_ELEMENTS or t.data_location == onnx.TensorProto.EXTERNAL]
    target = model
    if big:
        g = model.graph
        skeleton = onnx.ModelProto(ir_version=max(model.ir_version, 4), producer_name=model.producer_name)
        skeleton.opset_import.extend(model.opset_import)
        skeleton.functions.extend(model.functions)
        sg = skeleton.graph
        sg.name = g.name
        sg.node.extend(g.node)
        sg.output.extend(g.output)
        sg.value_info.extend(g.value_info)
        names = {t.name for t in big}
        sg.initializer.extend(t for t in g.initializer if t.name not in names)
        sg.input.extend(i for i in g.input if i.name not in names)
        sg.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in big)
        target = skeleton
    try:
        inferred = shape_inference.infer_shapes(target, data_prop=True)
    except Exception as err:
        raise WorkloadError(f"{path}: ONNX shape inference failed: {str(err).splitlines()[0]}") from None
    if not big:
        return inferred
    del model.graph.value_info[:]
    model.graph.value_info.extend(inferred.graph.value_info)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    return model


def weights_loaded(model) -> bool:
    """False when initializers live in external files that were not loaded (a graph-only import)."""
    return not any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def unresolved(m: OnnxModel) -> list:
    """Dynamic nodes with an output of unknown shape, and If / Loop / Scan nodes left."""
    return [n for n in m.nodes if not m.is_static_node(n) and
            (subgraphs(n) or any(o and not m.concrete(o) for o in n.output))]


def resolve(path: str, model, load_weights=None) -> tuple[OnnxModel, list[str], list]:
    """The shape-resolved graph of a bound model, the steps that were needed, and the provably static
    nodes of every round (what the import leaves out, whether or not a later round folded them away)."""
    steps: list[str] = []
    for vi in [*model.graph.output, *model.graph.value_info]:  # a declared -1 (paddle2onnx) is unknown, not a size
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value <= 0:
                d.Clear()
    model = infer(path, model)
    seen: dict[str, onnx.NodeProto] = {}  # static nodes of every round, by their first output

    def note(mm: OnnxModel) -> OnnxModel:  # a stub per node (op type, name, outputs): the model changes
        for n in mm.nodes:
            if mm.is_static_node(n) and any(n.output):
                key = next(o for o in n.output if o)
                if key not in seen:
                    seen[key] = helper.make_node(n.op_type, [], list(n.output), name=n.name, domain=n.domain)
        return mm

    m = _fold_ifs(path, model, steps, OnnxModel(path, model), note)
    for _ in range(8):  # each round's shapes can make more Shape nodes static
        folded = fold_constants(m) if unresolved(m) else None
        if folded is None:
            break
        steps.append("constants folded")
        m = _fold_ifs(path, infer(path, folded), steps, note=note)
    if unresolved(m) and not weights_loaded(m.model) and load_weights is not None:
        load_weights(m.model)
        model = m.model
    if unresolved(m) and weights_loaded(model) and _inputs_small(model):
        simplified = simplify(model)
        if simplified is not None:
            tool, model = simplified
            steps.append(tool)
            model = infer(path, model)
            m = _fold_ifs(path, model, steps, note=note)
    if unresolved(m) and weights_loaded(m.model):
        observed, error = onnxruntime_shapes(path, m.model)
        if observed:
            steps.append("onnxruntime")
            # shapes seen on zero inputs are data-dependent: they size the ops, but a Shape of them is not
            # static, so nothing (an If's condition, a Reshape's target) is folded on them
            m = OnnxModel(path, m.model, extra_shapes={k: v.shape for k, v in observed.items()})
        else:
            m.resolution_note = f"the onnxruntime run on zero inputs failed: {error}"
    dynamic = {o for n in m.nodes if not m.is_static_node(n) for o in n.output if o}
    note(m)
    return m, steps, [n for key, n in seen.items() if key not in dynamic]


def _inputs_small(model) -> bool:
    inits = {t.name for t in model.graph.initializer}
    return all(prod(d.dim_value for d in vi.type.tensor_type.shape.dim) <= MAX_PROBE_ELEMENTS
               for vi in model.graph.input if vi.name not in inits)


def fold_constants(m: OnnxModel):
    """The model (changed in place) with the static nodes whose small values are known made initializers
    (so shape inference sees them, e.g. a Loop's result); None when there is nothing to fold."""
    values = {}
    for node in m.nodes:
        if m.is_static_node(node) and node.op_type not in ("Constant",) and node.output[0] not in m.init:
            outs = [m.value(o) for o in node.output if o]
            if all(v is not None for v in outs):
                values.update({o: v for o, v in zip([o for o in node.output if o], outs)})
    if not values:
        return None
    model = m.model  # changed in place: a copy would duplicate the weights (``m`` is not used again)
    keep = [_copy_node(n) for n in model.graph.node if not all(o in values for o in n.output if o)]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), k) for k, v in values.items())
    _drop_partial_value_info(model)
    return model


def _drop_partial_value_info(model) -> None:
    """Forget value_info entries with unknown dims, so that shape inference fills them afresh (it keeps
    an existing ``unk__0`` dim rather than refine it)."""
    keep = [vi for vi in model.graph.value_info if vi.type.tensor_type.HasField("shape") and
            all(d.HasField("dim_value") and d.dim_value > 0 for d in vi.type.tensor_type.shape.dim)]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)


#: largest input (elements) the onnxruntime shape probe and the simplifiers are run on
MAX_PROBE_ELEMENTS = 1 << 28

#: most Loop iterations unrolled (all Loops of a model together)
MAX_UNROLLED_ITERATIONS = 4096


def _fold_ifs(path: str, model, steps: list[str], m: OnnxModel | None = None, note=None) -> OnnxModel:
    """Replace each If whose condition is a known constant by its branch, and unroll each Loop whose
    trip count and condition are known constants, until none is left."""
    m = m or OnnxModel(path, model)
    if note is not None:
        note(m)
    unrolled = 0
    for _ in range(64):
        chosen, loops = {}, {}
        for node in m.nodes:
            if m.is_static_node(node):
                continue
            if node.op_type == "If" and node.input[0] in m.static:
                cond = m.value(node.input[0])
                if cond is not None and cond.size == 1:
                    chosen[id(node)] = bool(cond.reshape(-1)[0])
            if node.op_type == "Loop" and node.input[0] and all(x in m.static for x in node.input[:2] if x):
                trips = m.value(node.input[0])
                cond = m.value(node.input[1]) if node.input[1] else np.array(True)
                if trips is not None and trips.size == 1 and cond is not None and cond.size == 1:
                    loops[id(node)] = int(trips.reshape(-1)[0]) if bool(cond.reshape(-1)[0]) else 0
        if not chosen and not loops:
            return m
        unrolled += sum(loops.values())
        if unrolled > MAX_UNROLLED_ITERATIONS:
            raise WorkloadError(f"{path}: Loop: {unrolled} iterations to unroll; archsim unrolls at most "
                                f"{MAX_UNROLLED_ITERATIONS} (bind a smaller trip count with --input-value)")
        if chosen:
            steps.append(f"If x{len(chosen)} folded")
        if loops:
            steps.append(f"Loop x{len(loops)} unrolled ({sum(loops.values())} iterations)")
        model = infer(path, inline_ifs(m, chosen, loops))
        m = OnnxModel(path, model)
        if note is not None:
            note(m)
        _check_loop_conditions(path, m)
    return m


def _check_loop_conditions(path: str, m: OnnxModel) -> None:
    """An unrolled Loop is right only if its body's condition stayed true: it must be a known constant."""
    for node in m.nodes:
        if node.op_type == "Identity" and node.name.endswith("/loop_condition"):
            value = m.value(node.input[0]) if node.input[0] in m.static else None
            if value is None or not bool(np.asarray(value).reshape(-1)[0]):
                loop = node.name.rsplit("/", 2)[0]
                raise WorkloadError(f"{path}: node {loop} (Loop): its condition depends on the input data (it "
                                    f"may stop early); archsim unrolls a Loop only when its condition is constant")


def _renamed_copies(body_nodes, prefix: str, rename: dict[str, str]) -> list:
    """Copies of a subgraph's nodes for inlining: names prefixed, tensors renamed by ``rename``
    (also where a nested subgraph reads them)."""
    out = []
    for inner in body_nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(inner)
        copy.name = prefix + (inner.name or inner.op_type)
        copy.input[:] = [rename.get(x, x) for x in inner.input]
        copy.output[:] = [rename.get(x, x) for x in inner.output]
        _rename_subgraph_reads(copy, rename)
        out.append(copy)
    return out


def inline_ifs(m: OnnxModel, chosen: dict[int, bool], loops: dict[int, int] | None = None):
    """The model (changed in place; ``m`` is not used again) where each If in ``chosen`` (id -> condition)
    is replaced by its branch, and each Loop in ``loops`` (id -> trip count) by that many copies of its body."""
    model = m.model
    g = model.graph
    nodes = []
    used = {o for n in m.nodes for o in n.output} | {i.name for i in g.input} | set(m.init)
    loops = loops or {}
    for node in m.nodes:
        if id(node) in loops:
            nodes += _unroll_loop(m, node, loops[id(node)], g)
            continue
        if id(node) not in chosen:
            nodes.append(_copy_node(node))
            continue
        a = {x.name: x for x in node.attribute}
        branch = a["then_branch" if chosen[id(node)] else "else_branch"].g
        prefix = m.names[id(node)] + "/"
        rename = {}
        for t in branch.initializer:
            rename[t.name] = prefix + t.name if t.name in used else t.name
            copy = onnx.TensorProto()
            copy.CopyFrom(t)
            copy.name = rename[t.name]
            g.initializer.append(copy)
        for inner in branch.node:
            for o in inner.output:
                if o:
                    rename[o] = prefix + o if o in used else o
        nodes += _renamed_copies(branch.node, prefix, rename)
        for out, bout in zip(node.output, branch.output):
            if out:
                nodes.append(helper.make_node("Identity", [rename.get(bout.name, bout.name)], [out],
                                              name=f"{prefix}{out}"))
    del g.node[:]
    g.node.extend(nodes)
    _drop_partial_value_info(model)
    return model


def _copy_node(node) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    return copy


def _unroll_loop(m: OnnxModel, node, trips: int, g) -> list:
    """``trips`` renamed copies of a Loop's body: iteration i reads the constant i and the state
    iteration i-1 carried out; scan outputs are stacked along a new axis 0."""
    body = next(a.g for a in node.attribute if a.name == "body")
    base = m.names[id(node)]
    carried_in = [x for x in node.input[2:]]
    n_carried = len(carried_in)
    opset = m.opsets.get("", 13)
    state = list(carried_in)
    scans: list[list[str]] = [[] for _ in body.output[1 + n_carried:]]
    out_nodes = []
    for i in range(trips):
        prefix = f"{base}/iter{i}/"
        rename = {}
        iter_name = prefix + "iteration"
        g.initializer.append(numpy_helper.from_array(np.array(i, np.int64), iter_name))
        rename[body.input[0].name] = iter_name
        if len(body.input) > 1:
            rename[body.input[1].name] = node.input[1] if node.input[1] else _true(g, prefix)
        for vi, src in zip(body.input[2:], state):
            rename[vi.name] = src
        for t in body.initializer:
            copy = onnx.TensorProto()
            copy.CopyFrom(t)
            copy.name = rename[t.name] = prefix + t.name
            g.initializer.append(copy)
        for inner in body.node:
            for o in inner.output:
                if o:
                    rename[o] = prefix + o
        out_nodes += _renamed_copies(body.node, prefix, rename)
        cond_out = rename.get(body.output[0].name, body.output[0].name)
        out_nodes.append(helper.make_node("Identity", [cond_out], [prefix + "loop_condition"],
                                          name=prefix + "loop_condition"))
        state = [rename.get(o.name, o.name) for o in body.output[1:1 + n_carried]]
        for k, o in enumerate(body.output[1 + n_carried:]):
            scans[k].append(rename.get(o.name, o.name))
    outs = list(node.output)
    for out, src in zip(outs[:n_carried], state):
        if out:
            out_nodes.append(helper.make_node("Identity", [src], [out], name=f"{base}/{out}"))
    axes = f"{base}/axes0"
    if opset >= 13 and any(scans):
        g.initializer.append(numpy_helper.from_array(np.array([0], np.int64), axes))
    for k, out in enumerate(outs[n_carried:]):
        if not out or not scans[k]:
            continue
        stacked = []
        for i, src in enumerate(scans[k]):
            name = f"{base}/scan{k}_{i}"
            if opset >= 13:
                out_nodes.append(helper.make_node("Unsqueeze", [src, axes], [name], name=name))
            else:
                out_nodes.append(helper.make_node("Unsqueeze", [src], [name], name=name, axes=[0]))
            stacked.append(name)
        out_nodes.append(helper.make_node("Concat", stacked, [out], name=f"{base}/{out}", axis=0))
    return out_nodes


def _true(g, prefix: str) -> str:
    name = prefix + "true"
    g.initializer.append(numpy_helper.from_array(np.array(True), name))
    return name


def _rename_subgraph_reads(node, rename: dict) -> None:
    for sub in subgraphs(node):
        for inner in sub.node:
            inner.input[:] = [rename.get(x, x) for x in inner.input]
            _rename_subgraph_reads(inner, rename)


#: onnxslim passes left out: only its constant folding and shape inference are wanted. Fusion renames and
#: merges ops, and dead-node / common-subexpression elimination and weight tying would remove work the
#: exported graph does (and the independent count counts)
SLIM_SKIPPED = ["graph_fusion", "dead_node_elimination", "subexpression_elimination", "weight_tying"]


def simplify(model) -> tuple[str, object] | None:
    """(tool, simplified model) from onnxslim, else onnxsim; None when neither manages."""
    quiet = io.StringIO()
    try:
        import onnxslim

        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            out = onnxslim.slim(model, skip_optimizations=SLIM_SKIPPED)
        if isinstance(out, onnx.ModelProto) and out.graph.node:
            return "onnxslim", out
    except Exception:  # a tool's failure only means the next step must resolve the shapes
        pass
    try:
        import onnxsim

        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            out, ok = onnxsim.simplify(model)
        if ok:
            return "onnxsim", out
    except Exception:
        pass
    return None


def onnxruntime_shapes(path: str, model) -> tuple[dict[str, np.ndarray], str]:
    """Every tensor from one onnxruntime run on zero inputs (the bound shapes; the importer reads their
    shapes and types), and why not ({}, reason) when it cannot run."""
    try:
        import onnxruntime as ort
    except ImportError:
        return {}, "onnxruntime is not installed"
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    have = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        for out in node.output:
            if out and out not in have:
                probe.graph.output.append(helper.make_empty_tensor_value_info(out))
                have.add(out)
    feeds = {}
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        if prod(shape) > MAX_PROBE_ELEMENTS:
            return {}, f"input {vi.name} {shape} is too large to run ({prod(shape):,} elements)"
        feeds[vi.name] = np.zeros(shape, dtype=helper.tensor_dtype_to_np_dtype(t.elem_type))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(probe.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        outs = sess.run(names, feeds)
    except Exception as err:  # onnxruntime raises its own types
        import re

        text = re.sub(r"^\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*", "", str(err).replace("\n", " "))
        return {}, text.strip()[:160]
    return {n: v for n, v in zip(names, outs) if isinstance(v, np.ndarray)}, ""
