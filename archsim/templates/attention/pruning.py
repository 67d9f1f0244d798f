"""SpAtten's pruning step on the attention array, composed: attention of ``heads`` heads, the
cumulative attention probability of every key (the column sums of the softmax over the heads and
query rows) and the top-k engine keeping ``k`` of the keys -- the models of the composed RTL
(:mod:`rtl.attention.spatten`), values bit for bit and cycles exactly.

How the array exposes the probabilities: its result port carries ``P.V``, never ``P``. A FLAT
tile with ``V`` one-hot on ``d`` keys (``V[j, e] = 1`` if ``j == off + e``) returns
``P[:, off:off + d]`` exactly (every other product is +0, and adding +0 or multiplying by 1 is
exact in fp32), with the softmax scale of the real head dim ``d``. So per head the array runs the
output tile (``V`` itself) and ``ceil(L / d)`` **probability passes** (the same Q and K, so the same
probabilities), and an accumulator adds each pass's result rows, row by row, into the key's fp32
sum. This costs ``ceil(L / d)`` extra FLAT tiles per head: SpAtten's own datapath accumulates the
probabilities as its softmax produces them, at no extra cycles; the array would need a probability
output to do that (the hook is described in ``docs/attention.md``).

The top-k engine then ranks the sums by their fp32 bit patterns (non-negative floats order like
their patterns, so the ranking is exact), ``k`` of ``kv_len`` with the tile's pivot ``seed``.

Cycles (every command of the step counted while the hardware is busy; the host's operand writes
and result reads between commands are not part of the step): per engine tile its contract cycles
(:func:`archsim.templates.attention.tile.tile_cycles`) plus :data:`FLAT_CAPTURE_CYCLES` (the
array's capture of the result rows after ``done``) and :data:`ARRAY_HANDOFF_CYCLES` (the wrapper
sees the array idle); a probability pass then reads its ``q_rows``
result rows, a row per cycle, and adds the last one a cycle later (:data:`ACC_TAIL_CYCLES`); the
select then starts the engine (:data:`TOPK_START_CYCLES`) and runs the top-k
(:func:`archsim.templates.attention.topk.select`: fill, rounds, select pass), plus the engine's
done cycle (:data:`TOPK_DONE_CYCLES`). Nothing overlaps: each phase waits for the previous one's
result (the RTL's sequence).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

import numpy as np

from archsim.templates.attention import topk
from archsim.templates.attention.tile import AttentionTile

F32 = np.float32
#: cycles the array stays busy after a FLAT tile's ``done`` (it captures the result rows)
FLAT_CAPTURE_CYCLES = 1
#: the wrapper's cycle that sees the array idle after a command (then it reads, or takes the next one)
ARRAY_HANDOFF_CYCLES = 1
#: cycles after a probability pass's last result-row request until its sum is added
ACC_TAIL_CYCLES = 1
#: cycles of the select command before the top-k engine's fill (its start)
TOPK_START_CYCLES = 1
#: the top-k engine's done cycle, after its counted cycles
TOPK_DONE_CYCLES = 1


@dataclass(frozen=True, slots=True)
class PruneTile:
    """One pruning step: ``heads`` FLAT attention tiles of ``q_rows`` queries against ``kv_len`` keys
    (head dim ``head_dim``), the keys' probabilities summed over heads and rows, ``k`` keys kept
    (top-k with pivot seed ``seed``)."""

    q_rows: int
    kv_len: int
    head_dim: int
    heads: int
    k: int
    seed: int = 1

    unit = "prune"

    def attention_tile(self) -> AttentionTile:
        return AttentionTile("flat", self.q_rows, self.kv_len, self.head_dim)

    def topk_tile(self) -> topk.TopkTile:
        return topk.TopkTile(self.kv_len, self.k, self.seed)

    @property
    def probability_passes(self) -> int:
        """Probability passes per head: ``ceil(kv_len / head_dim)``."""
        return ceil(self.kv_len / self.head_dim)

    def check(self, params) -> None:
        self.attention_tile().check(params)
        if isinstance(self.heads, bool) or not isinstance(self.heads, int) or self.heads < 1:
            raise ValueError(f"heads: expected a positive integer, got {self.heads!r}")
        if not 1 <= self.k < self.kv_len:
            raise ValueError(f"k: expected 1 <= k < kv_len = {self.kv_len} (a pruning step drops a key), got {self.k}")
        self.topk_tile().check(max(1, params.topk_parallelism))


def one_hot_values(kv_len: int, head_dim: int, offset: int) -> np.ndarray:
    """The ``V`` of a probability pass: ``V[j, e] = 1`` where ``j == offset + e`` (bf16-exact)."""
    v = np.zeros((kv_len, head_dim), F32)
    for e in range(head_dim):
        if offset + e < kv_len:
            v[offset + e, e] = 1
    return v


@dataclass(frozen=True)
class PruneResult:
    """``out`` (heads, q_rows, head_dim) fp32 attention outputs; ``importance`` (kv_len,) fp32 sums;
    ``kept`` the kept key indices, ascending; ``cycles`` of the step (the top-k's from ``run``)."""

    out: np.ndarray
    importance: np.ndarray
    kept: np.ndarray
    cycles: int


def scores_of(importance: np.ndarray) -> np.ndarray:
    """The top-k engine's scores: the sums' fp32 bit patterns (order-preserving for values >= +0)."""
    return np.asarray(importance, F32).view(np.uint32).astype(np.int64)


def run(model, tile: PruneTile, operands: dict, detailed: bool = True) -> PruneResult:
    """The step on ``model`` (an :class:`~archsim.templates.attention.model.AttentionModel`):
    ``operands`` ``q`` (heads, q_rows, d), ``k`` and ``v`` (heads, kv_len, d), bf16 values in fp32.
    ``detailed``: the top-k's exact cycles on these scores; else its kept indices only (the fast
    model's closed-form select) and ``cycles`` the fast model's estimate of the top-k."""
    p = model.params
    tile.check(p)
    at = tile.attention_tile()
    q, k, v = (np.asarray(operands[n], F32) for n in ("q", "k", "v"))
    outs, acc = [], np.zeros(tile.kv_len, F32)
    for h in range(tile.heads):
        outs.append(np.asarray(model.tile_values(at, {"q": q[h], "k": k[h], "v": v[h]}), F32))
        for b in range(tile.probability_passes):
            off = b * tile.head_dim
            probs = np.asarray(model.tile_values(at, {"q": q[h], "k": k[h],
                                                      "v": one_hot_values(tile.kv_len, tile.head_dim, off)}), F32)
            width = min(tile.head_dim, tile.kv_len - off)
            for i in range(tile.q_rows):  # the accumulator adds a result row per cycle, in order
                acc[off:off + width] = (acc[off:off + width] + probs[i, :width]).astype(F32)
    scores = scores_of(acc)
    if detailed:
        sel = topk.select(scores, tile.k, p.topk_parallelism, tile.seed)
        kept, topk_cycles = sel.indices, sel.cycles
    else:
        kept, topk_cycles = topk.kept_indices(scores, tile.k), topk.tile_cycles(tile.topk_tile(), p.topk_parallelism)
    return PruneResult(np.stack(outs), acc, np.asarray(kept, np.int64), attention_cycles(model, tile) + topk_cycles
                       + TOPK_START_CYCLES + TOPK_DONE_CYCLES)


def attention_cycles(model, tile: PruneTile) -> int:
    """Cycles of the step before the select: per head the output tile and the probability passes
    (each a FLAT tile plus the capture), the passes' result-row reads and their last add."""
    engine = model.tile_cycles(tile.attention_tile()) + FLAT_CAPTURE_CYCLES + ARRAY_HANDOFF_CYCLES
    passes = tile.probability_passes
    return tile.heads * ((1 + passes) * engine + passes * (tile.q_rows + ACC_TAIL_CYCLES))


def fast_cycles(model, tile: PruneTile) -> int:
    """The fast model's cycles of the step: the top-k's expected cycles
    (:func:`archsim.templates.attention.topk.tile_cycles`), the rest exact (data-independent)."""
    tile.check(model.params)
    return (attention_cycles(model, tile) + topk.tile_cycles(tile.topk_tile(), model.params.topk_parallelism)
            + TOPK_START_CYCLES + TOPK_DONE_CYCLES)


def cycles_range(model, tile: PruneTile) -> tuple[int, int]:
    """The step's cycles over every possible set of sums: the top-k's range
    (:func:`archsim.templates.attention.topk.cycles_range`) plus the data-independent rest."""
    tile.check(model.params)
    low, high = topk.cycles_range(tile.topk_tile(), model.params.topk_parallelism)
    rest = attention_cycles(model, tile) + TOPK_START_CYCLES + TOPK_DONE_CYCLES
    return low + rest, high + rest


def step_values(result: PruneResult) -> np.ndarray:
    """One comparable int64 vector of a step: the attention outputs' fp32 bit patterns, the keys'
    probability sums' fp32 bit patterns, then the kept key indices (what the RTL is compared on)."""
    def bits(x):
        return np.asarray(x, F32).view(np.uint32).astype(np.int64).ravel()

    return np.concatenate([bits(result.out), bits(result.importance), np.asarray(result.kept, np.int64)])


def split_values(tile: PruneTile, values) -> PruneResult:
    """The inverse of :func:`step_values` (``cycles`` 0): outputs (heads, q_rows, head_dim) and sums
    as fp32, the kept indices as int64."""
    values = np.asarray(values, np.int64)
    n_out = tile.heads * tile.q_rows * tile.head_dim
    as_f32 = values[:n_out + tile.kv_len].astype(np.uint32).view(F32)
    return PruneResult(as_f32[:n_out].reshape(tile.heads, tile.q_rows, tile.head_dim), as_f32[n_out:],
                       values[n_out + tile.kv_len:], 0)

