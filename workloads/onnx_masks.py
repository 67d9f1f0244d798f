"""Whether an exported attention's score mask is causal, read from the mask's values.

Exporters build the causal mask in different ways: torch's dynamo exporter folds it into a static
``[1, 1, S, S]`` tensor added to the scores; the TorchScript exporter of Hugging Face models combines
it with the ``attention_mask`` input (``Where`` / ``Add`` of a tensor computed from that input), so it
is not static. Either way the importer evaluates the mask tensor (static: from the graph; else one
onnxruntime run of the mask's own computation with no padding -- every ``*mask*`` input all ones,
other inputs zeros) and calls the attention causal when its masked entries are exactly the future keys:
query ``i`` of ``seq_q`` (the last ``seq_q`` of ``seq_kv`` positions) sees keys ``0 .. seq_kv - seq_q
+ i`` -- the zoo's causal attention (:meth:`workloads.ops.Attention.score_pairs`). A mask that hides
nothing is no mask; any other pattern (sliding window, padding) is not causal and is reported.
"""
from __future__ import annotations

from math import prod

import numpy as np

#: an additive mask entry at or below this hides its key (HF: finfo.min or -inf; old BERT: -10000)
MASKED_BELOW = -1e3
#: the largest mask that is evaluated (elements)
MAX_MASK_ELEMENTS = 1 << 24


def hidden_keys(kind: str, value: np.ndarray, scores_first: bool = True) -> np.ndarray:
    """Boolean array, True where the mask hides a key. ``kind``: "add" (an additive mask) or "where"
    (``Where(cond, scores, fill)`` keeps the score where ``cond``; ``scores_first=False``: the
    scores are the third input and ``cond`` marks the hidden entries)."""
    v = np.asarray(value)
    if kind == "add":
        return v.astype(np.float64) <= MASKED_BELOW
    keep = v.astype(bool)
    return ~keep if scores_first else keep


def causal_pattern(seq_q: int, seq_kv: int) -> np.ndarray:
    """True where a causal mask hides a key: key ``j`` after query ``i``'s position ``seq_kv - seq_q + i``."""
    i = np.arange(seq_q)[:, None]
    j = np.arange(seq_kv)[None, :]
    return j > seq_kv - seq_q + i


def classify(hidden: list[np.ndarray], seq_q: int, seq_kv: int) -> str:
    """"causal", "none" (nothing hidden) or "other", from every mask's hidden entries (broadcast to
    ``[..., seq_q, seq_kv]``; the union of all masks counts)."""
    union = np.zeros((seq_q, seq_kv), bool)
    for h in hidden:
        try:
            b = np.broadcast_to(h, h.shape[:-2] + (seq_q, seq_kv)) if h.ndim >= 2 else np.broadcast_to(h, (seq_q, seq_kv))
        except ValueError:
            return "other"
        flat = b.reshape(-1, seq_q, seq_kv)
        if not (flat == flat[0]).all():  # differs across batch / heads: padding, not a causal mask alone
            return "other"
        union |= flat[0]
    if not union.any():
        return "none"
    return "causal" if np.array_equal(union, causal_pattern(seq_q, seq_kv)) else "other"


def run_tensors(m, tensors: list[str]) -> dict[str, np.ndarray]:
    """Values of ``tensors`` of the model ``m`` (:class:`workloads.onnx_model.OnnxModel`): static ones
    from the graph, the rest from one onnxruntime run of their own computation with no padding
    (``*mask*`` inputs all ones, other inputs zeros, the bound shapes). Tensors it cannot evaluate are left out."""
    cache = m.__dict__.setdefault("_mask_values", {})  # one run per mask tensor (layers share it)
    out, dynamic = {t: cache[t] for t in tensors if t in cache}, []
    for t in (t for t in tensors if t not in cache):
        if t in m.static:
            v = m.value(t)
            if v is not None:
                out[t] = v
        else:
            dynamic.append(t)
    if not dynamic:
        return out
    try:
        import onnx
        import onnxruntime as ort
        from onnx import helper
    except ImportError:
        return out
    probe = _ancestors_model(m, dynamic)
    if probe is None:
        return out
    feeds = {}
    for vi in probe.graph.input:
        shape = m.shapes.get(vi.name)
        if shape is None or prod(shape) > MAX_MASK_ELEMENTS:
            return out
        dtype = helper.tensor_dtype_to_np_dtype(m.types.get(vi.name, onnx.TensorProto.FLOAT))
        feeds[vi.name] = (np.ones if "mask" in vi.name.lower() else np.zeros)(shape, dtype=dtype)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(probe.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        values = sess.run(dynamic, feeds)
    except Exception:  # noqa: BLE001 - onnxruntime raises its own types; the caller reports "unknown"
        return out
    for t, v in zip(dynamic, values):
        if np.asarray(v).size <= MAX_MASK_ELEMENTS:
            out[t] = cache[t] = np.asarray(v)
    return out


def _ancestors_model(m, tensors: list[str]):
    """A model of only the nodes ``tensors`` depend on (and the initializers they read), outputting
    ``tensors``: the mask's own computation, not the network's weights. None if it reads a subgraph."""
    import onnx
    from onnx import helper

    from workloads.onnx_model import node_reads, subgraphs

    nodes, seen, todo = [], set(), list(tensors)
    while todo:
        t = todo.pop()
        node = m.producer.get(t)
        if node is None or id(node) in seen:
            continue
        if subgraphs(node):
            return None
        seen.add(id(node))
        nodes.append(node)
        todo += [x for x in node_reads(node) if x]
    order = [n for n in m.nodes if id(n) in seen]  # the graph's (topological) order
    reads = {x for n in order for x in node_reads(n)}
    inits = [m.init[x] for x in reads if x in m.init]
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in inits):
        return None
    inputs = [vi for vi in m.model.graph.input if vi.name in reads and vi.name not in m.init]
    graph = helper.make_graph(order, "mask", inputs, [helper.make_empty_tensor_value_info(t) for t in tensors],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=list(m.model.opset_import))
    model.ir_version = m.model.ir_version
    return model
