"""SpAtten's cascade token and head pruning as a graph rewrite (Wang, Zhang, Han, HPCA 2021).

``token_keep[i]`` is the fraction of the sequence the ``i``-th attention layer reads (its keys;
and, in a prefill or encoder, also its queries and every op up to the next attention layer);
``head_keep[i]`` the fraction of its heads it computes. Both cascade: a token or head pruned
stays pruned, so the lists must not increase. A list shorter than the number of attention
layers repeats its last value (a longer one's extra entries name layers the graph does not have). Counts are ``max(1, floor(fraction * full))`` (the authors'
traces: 0.9 of 1024 keys = 921).

Two kinds of graph:

- **decode** (every attention has one query per sequence, as ``phase=decode``): attention
  ``i`` reads ``T_i`` of the KV cache's ``L`` tokens (a ``gather`` shape op selects them);
  the new token's projections and MLP are unchanged. The top-k engine ranks the
  cumulative importance after layer ``i`` when ``T_{i+1} < T_i``, and after the last layer
  over all ``L`` tokens to choose the ``T_0`` the next step's first layer reads (the authors'
  GPT-2 traces: ``topk=921`` at layer 11).
- **prefill / encoder** (every attention has ``seq_q == seq_kv``): tokens pruned after
  attention ``i`` leave every op up to attention ``i+1`` (projections, MLP, norms, residual
  adds: their token dimension becomes ``T_{i+1}``). There is no previous step, so the first
  layer reads every token whatever ``token_keep[0]`` says (in a decode schedule it is what the
  previous step's last top-k kept); the same list thus serves a model's prefill and decode.

A graph without attention layers is returned unchanged.

Head pruning shrinks each attention op to ``H_i`` heads (a ``gather`` of their Q/K/V columns
and a ``scatter`` of the output back to the full width, the pruned heads' columns zero); the
Q/K/V/O projections are *not* shrunk (conservative: SpAtten prunes heads inside the attention
unit). Grouped-query attention is refused for head pruning (a kv group's heads would have to
be pruned together).

Each top-k is a :class:`workloads.ops.TopK` op after its attention layer, with the additions
that accumulate the importance scores (one per probability, over heads and queries).
"""
from __future__ import annotations

from dataclasses import replace
from math import ceil, floor

from archsim.errors import WorkloadError
from workloads.graph import Graph, shapes_fit
from workloads.ops import Attention, LsbRefetch, ShapeOp, TopK


def _fractions(name: str, values, layers: int) -> list[float]:
    if values is None:
        return [1.0] * layers
    seq = [values] if isinstance(values, (int, float)) and not isinstance(values, bool) else list(values)
    if not seq:
        raise WorkloadError(f"{name}: expected a fraction or a list of fractions, got an empty list")
    for v in seq:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise WorkloadError(f"{name}: expected fractions in (0, 1], got {v!r}")
    if any(b > a for a, b in zip(seq, seq[1:])):
        raise WorkloadError(f"{name}: expected a non-increasing list (cascade: a pruned token or head "
                            f"stays pruned), got {list(seq)}")
    return (seq + [seq[-1]] * (layers - len(seq)))[:layers]  # a longer list: its layers do not exist here


def _count(fraction: float, full: int) -> int:
    return max(1, floor(fraction * full + 1e-9))


def cascade_prune(graph: Graph, token_keep=None, head_keep=None) -> Graph:
    """A copy of ``graph`` with SpAtten's cascade token and head pruning applied (module docstring)."""
    atts = [op for op in graph.ops() if op.kind == "attention"]
    if not atts:
        return graph
    n = len(atts)
    tk = _fractions("token_keep", token_keep, n)
    hk = _fractions("head_keep", head_keep, n)
    decode = all(a.seq_q == 1 for a in atts)
    if not decode and not all(a.seq_q == a.seq_kv for a in atts):
        raise WorkloadError("token_keep: cascade pruning needs self-attention with one query per sequence "
                            "(decode) or seq_q == seq_kv (prefill, encoder); this graph mixes others")
    if not decode:
        tk[0] = 1.0  # no previous step: the first layer's probabilities decide the first pruning
    if any(h < 1 for h in hk) and any(a.kv_heads != a.heads for a in atts):
        raise WorkloadError("head_keep: grouped-query attention (kv_heads < heads) cannot prune single heads")
    L = atts[0].seq_kv
    if any(a.seq_kv != L for a in atts):
        raise WorkloadError("token_keep: every attention layer must read the same sequence length")
    tokens = [_count(f, L) for f in tk]
    heads = [_count(f, a.heads) for f, a in zip(hk, atts)]
    suffix = "+spatten"
    out = Graph(graph.name + suffix)
    index = {a.name: i for i, a in enumerate(atts)}
    seen = 0  # attention layers before the current op
    for op in graph.ops():
        if op.kind == "attention":
            i = index[op.name]
            new = replace(op, seq_kv=tokens[i], heads=heads[i], kv_heads=heads[i],
                          seq_q=op.seq_q if decode else tokens[i])
        elif decode:
            new = op
        else:
            new = _with_tokens(op, L, tokens[min(seen, n - 1)], atts[0].batch)
        _add_fixed(out, new, graph, op)
        if op.kind == "attention":
            i = index[op.name]
            _add_topks(out, op, i, tokens, heads, decode, L)
            seen += 1
    return out


def _with_tokens(op, full: int, kept: int, batch: int):
    """``op`` with its token dimension ``full`` cut to ``kept`` (ops without one: unchanged)."""
    if kept == full:
        return op
    if op.kind == "matmul" and op.weight_is_param and op.batch == 1 and op.m == batch * full:
        return replace(op, m=batch * kept)
    shape = getattr(op, "shape", None)
    if op.kind != "shape" and isinstance(shape, tuple) and len(shape) >= 2 and shape[-2] == full:
        new_shape = shape[:-2] + (kept,) + shape[-1:]
        extra = {}
        if getattr(op, "in_shapes", ()):
            extra["in_shapes"] = tuple(s[:-2] + (kept,) + s[-1:] if len(s) >= 2 and s[-2] == full else s
                                       for s in op.in_shapes)
        return replace(op, shape=new_shape, **extra)
    return op


def _add_fixed(out: Graph, new, graph: Graph, old) -> None:
    """Add ``new`` with ``old``'s inputs, a ``gather`` (or, for pruned heads' outputs, ``scatter``)
    shape op on every edge whose shape the pruning changed."""
    refs = []
    want = new.input_shapes()
    for port, ref in enumerate(graph.inputs_of(old.name)):
        if ref is None:
            refs.append(None)
            continue
        producer, _, idx = ref.partition(":")
        src = out.op(producer)
        have = tuple(src.output_shapes()[int(idx) if idx else 0])
        need = tuple(want[port]) if port < len(want) else have
        if not shapes_fit(have, need):
            # a producer of lower rank (e.g. [tokens, hidden] feeding [batch, tokens, hidden]) is
            # compared with leading 1s, as shapes_fit broadcasts it
            cur = (1,) * (len(need) - len(have)) + have if len(have) < len(need) else have
            if len(cur) != len(need):
                raise WorkloadError(f"token_keep/head_keep: {old.name} input {port}: cannot prune "
                                    f"{list(have)} to {list(need)}")
            for d in (d for d in range(len(cur)) if cur[d] != need[d]):  # one shape op per pruned dim
                step = cur[:d] + (need[d],) + cur[d + 1:]
                fn = "gather" if need[d] < cur[d] else "scatter"
                ref = out.add(ShapeOp(f"{new.name}.{fn}{port}_{d}", fn=fn, in_shapes=(have,), out_shapes=(step,),
                                      act_precision=src.act_precision), [ref])
                have = cur = step
        refs.append(ref)
    out.add(new, refs)


def _add_topks(out: Graph, op: Attention, i: int, tokens: list[int], heads: list[int], decode: bool,
               full: int) -> None:
    n_layers = len(tokens)
    t, h = tokens[i], heads[i]
    adds = op.batch * h * op.seq_q * t  # one addition per probability into the cumulative score
    if i + 1 < n_layers and tokens[i + 1] < t:
        out.add(TopK(f"{op.name}.topk_tokens", n=t, k=tokens[i + 1], count=op.batch, accumulate_adds=adds,
                     act_precision=op.act_precision))
    elif decode and i + 1 == n_layers and tokens[0] < full:
        out.add(TopK(f"{op.name}.topk_tokens", n=full, k=tokens[0], count=op.batch, accumulate_adds=adds,
                     act_precision=op.act_precision))
    if i + 1 < n_layers and heads[i + 1] < h:
        out.add(TopK(f"{op.name}.topk_heads", n=h, k=heads[i + 1], count=op.batch, target="heads",
                     accumulate_adds=adds, act_precision=op.act_precision))


def lsb_refetch(graph: Graph, lsb_bits: int, fraction: float) -> Graph:
    """A copy of ``graph`` with progressive quantization's refetch after every attention layer: an
    :class:`~workloads.ops.LsbRefetch` of ``ceil(fraction * batch * heads * seq_q)`` query rows
    (rounded up: a refetch is never dropped) over the layer's keys, spread over as many heads as
    they can be (``min(rows, batch * heads)``, each fetching its K LSBs once: an upper bound on the
    bytes; in a decode step every row is its own head's). ``fraction`` is the share of rows whose
    max softmax probability falls below the threshold (data-dependent: an input here).
    ``fraction == 0`` returns ``graph`` unchanged."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
        raise WorkloadError(f"progressive_quant.requant_fraction: expected a fraction in [0, 1], got {fraction!r}")
    atts = [op for op in graph.ops() if op.kind == "attention"]
    if not atts or fraction == 0:
        return graph
    out = Graph(graph.name if graph.name.endswith("+spatten") else graph.name + "+spatten")
    for op in graph.ops():
        out.add(op, list(graph.inputs_of(op.name)))
        if op.kind == "attention":
            rows = ceil(fraction * op.batch * op.heads * op.seq_q - 1e-9)
            out.add(LsbRefetch(f"{op.name}.lsb_refetch", rows=rows, heads=min(rows, op.batch * op.heads),
                               keys=op.seq_kv, head_dim=op.head_dim,
                               lsb_bits=lsb_bits, act_precision=op.act_precision))
    return out
