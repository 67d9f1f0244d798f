"""Co-simulation tiles of the top-k engine from a real workload (``archsim rtl cosim --unit topk
--source program --workload gpt2``): the token-pruning decisions SpAtten's cascade pruning makes
on a zoo transformer.

The tiles are the :class:`~archsim.templates.attention.topk.TopkTile` commands of
``mappers.compile`` of the whole workload on the arch (its ``token_keep`` / ``head_keep``: the
``n`` scores and ``k`` kept of each pruning step, e.g. GPT-2-small prefill at 128 tokens on the
``spatten`` preset: 128 -> 89, 89 -> 25, 25 -> 12). The scores are what the engine ranks, the
cumulative attention probabilities of each key: column sums of ``softmax(Q K^T / sqrt(d))`` over
the layer's heads and query rows (head pruning: the magnitude of each head's output), on seeded
random Q and K (the zoo has shapes, not activations),
in float64, then scaled to the engine's unsigned ``width``-bit scores (the largest sum to
``2^width - 1``, rounded down).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.errors import SpecError, WorkloadError

#: query rows and heads of one score draw at most (a prefill's 12 heads x 128 rows is cheap)
MAX_SCORE_ROWS = 4096


def cumulative_probabilities(rng: np.random.Generator, keys: int, rows: int, head_dim: int) -> np.ndarray:
    """Column sums of ``softmax(Q K^T / sqrt(head_dim))`` of ``rows`` random query rows against
    ``keys`` random keys (float64): SpAtten's token importance."""
    q = rng.standard_normal((rows, head_dim))
    k = rng.standard_normal((keys, head_dim))
    s = q @ k.T / np.sqrt(head_dim)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p.sum(axis=0)


def head_magnitude(rng: np.random.Generator, keys: int, head_dim: int) -> float:
    """SpAtten's head importance: the summed magnitude of one head's attention output (one query row,
    random Q, K, V)."""
    p = cumulative_probabilities(rng, keys, 1, head_dim)  # one row: its probabilities
    return float(np.abs(p @ rng.standard_normal((keys, head_dim))).sum())


def to_scores(importance: np.ndarray, width: int) -> np.ndarray:
    """Unsigned ``width``-bit scores, the largest importance at ``2^width - 1`` (order kept, ties where
    two sums round alike)."""
    top = float(importance.max())
    if top <= 0:
        return np.zeros(importance.shape, np.int64)
    return np.floor(importance / top * ((1 << width) - 1)).astype(np.int64)  # x / top: exactly 1 at the top


def program_items(arch: Any, workload: str, count: int, width: int, seed: int = 0,
                  layer: str | None = None) -> list:
    """``(TopkTile, {"scores": ...})`` of the first ``count`` pruning steps of ``workload`` compiled for
    ``arch`` (``layer``: only the top-k op of that name)."""
    import mappers
    from archsim.program import Compute
    from archsim.templates.attention.topk import TopkTile
    from workloads.zoo import build

    graph = build(workload)
    attn = {op.name: op for op in graph.ops() if op.kind == "attention"}
    program = mappers.compile(graph, arch)
    rng = np.random.default_rng(seed)
    items = []
    for lp in program.layers:
        if layer is not None and lp.name != layer:
            continue
        for cmd in lp.commands:
            if not (isinstance(cmd, Compute) and isinstance(cmd.tile, TopkTile)):
                continue
            tile = cmd.tile
            op = attn.get(lp.name.rpartition(".topk_")[0])
            heads, decode, d = (op.heads, op.seq_q == 1, op.head_dim) if op is not None else (1, True, 64)
            if lp.name.endswith("topk_heads"):  # a head's importance: the magnitude of its output
                importance = np.array([head_magnitude(rng, op.seq_kv if op is not None else 64, d)
                                       for _ in range(tile.n)])
            else:  # a prefill's queries are the kept tokens themselves
                importance = cumulative_probabilities(rng, tile.n, min(heads * (1 if decode else tile.n),
                                                                       MAX_SCORE_ROWS), d)
            items.append((tile, {"scores": to_scores(importance, width)}))
            if len(items) == count:
                return items
    if not items:
        names = [lp.name for lp in program.layers if lp.op == "topk"]
        if layer is not None:
            raise WorkloadError(f"--layer: {workload} on {arch.name} has no top-k layer {layer!r}; its top-k layers: "
                                f"{', '.join(names) or 'none'}")
        raise SpecError(f"source 'program': {workload} on {arch.name} has no top-k layer (pruning needs a transformer "
                        f"workload and an arch with token_keep / head_keep, e.g. gpt2 on spatten)")
    return items
