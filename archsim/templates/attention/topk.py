"""SpAtten's top-k engine: quick-select with ``P`` parallel comparators (Wang, Zhang, Han,
"SpAtten", HPCA 2021, Sec. IV; the authors' hardware ``QuickSelect.scala`` / ``TopK.scala`` and
their latency models ``TopKLatencyModel.scala`` and ``simulator/src/bert.cpp``, mit-han-lab/spatten).

The engine keeps the ``k`` largest of ``n`` importance scores and returns their indices in
ascending order (token order is preserved, so pruned K/V rows are simply skipped). It runs:

1. **fill**: the scores stream into FIFO 0, ``P`` per cycle: ``ceil(n / P)`` cycles;
2. **rounds** of quick-select: the current partition (``m`` scores) is compared with a pivot,
   ``P`` per cycle, and split by two zero eliminators into a "less" and a "greater" FIFO;
   a round costs ``ceil(m / P) + ROUND_OVERHEAD_CYCLES`` (comparator stage, zero eliminator
   and FIFO write latencies, then the decision state: bert.cpp's ``+1+1+1`` and ``+1``). The
   round that lands the target rank on the pivot's run of equal values ends the search;
3. **select**: one more pass over the scores, ``P`` per cycle, keeps those above the k-th
   largest value and, among those equal to it, the lowest indices until ``k`` are kept:
   ``ceil(n / P)`` cycles.

``k == n`` bypasses the engine (0 cycles, nothing pruned).

Pivot: the hardware picks the first score of a pseudo-randomly chosen row of the current
partition (``RandomPivot``: a hash of a row counter masked to the next power of two). The model
uses a 16-bit maximal-length Fibonacci LFSR (taps 16, 14, 13, 11; seeded per tile, never 0)
stepped once per round; the pivot is the score at :func:`pivot_index` ``(lfsr, m)`` of the
partition in FIFO order (the masked draw, minus ``m`` when it lands past the end: no divider).
Deterministic, so the detailed model and an RTL implementation agree cycle for cycle on the same
scores and seed.

The number of rounds depends on the scores. The fast model has no scores, so its cycles are an
*estimate*, data-independent by design: the mean of :data:`EXPECTED_RUNS` runs on distinct
pseudo-random scores with seeds ``1..EXPECTED_RUNS`` -- the method of the authors' own
``TopKLatencyModel.scala`` (mean of 100 seeded runs). The detailed model charges the exact cycles
of the tile's own scores, and the RTL equals it cycle for cycle. Both lie within the
data-independent range :func:`cycles_range` (one round at least; at worst every round drops only
the pivot). The values (the kept indices) do not depend on the pivots: the fast model computes
them in closed form (:func:`kept_indices`), equal to the detailed model's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import ceil

import numpy as np

#: cycles a quick-select round adds to its ``ceil(m / P)`` compare cycles
ROUND_OVERHEAD_CYCLES = 4
#: runs averaged by the fast model's expected cycles
EXPECTED_RUNS = 256


@dataclass(frozen=True, slots=True)
class TopkTile:
    """Keep the ``k`` largest of ``n`` importance scores (unit ``topk``); ``seed`` seeds the pivot LFSR."""

    n: int
    k: int
    seed: int = 1

    unit = "topk"

    def check(self, parallelism: int) -> None:
        for key in ("n", "k", "seed"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.k > self.n:
            raise ValueError(f"k: expected at most n = {self.n} scores kept, got {self.k}")
        if self.seed >= 1 << 16:
            raise ValueError(f"seed: expected a 16-bit LFSR seed in 1..65535, got {self.seed}")
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"topk_parallelism: expected a positive integer, got {parallelism!r}")


def lfsr16_step(state: int) -> int:
    """Next state of the 16-bit maximal-length Fibonacci LFSR x^16 + x^14 + x^13 + x^11 + 1."""
    bit = ((state >> 0) ^ (state >> 2) ^ (state >> 3) ^ (state >> 5)) & 1
    return (state >> 1) | (bit << 15)


def pivot_index(state: int, m: int) -> int:
    """Index of the pivot among ``m`` scores for LFSR ``state``: ``r = state & (2^ceil(log2 m) - 1)``,
    then ``r - m`` if ``r >= m`` (``r < 2m``, so one subtraction; uniform enough, as the hardware's)."""
    r = state & ((1 << (m - 1).bit_length()) - 1)
    return r - m if r >= m else r


@dataclass(frozen=True)
class TopkResult:
    """Indices kept (ascending), the k-th largest score, the engine's cycles and rounds, and its
    comparisons (each round's and the select pass's)."""

    indices: np.ndarray
    threshold: int | float
    cycles: int
    rounds: int
    compares: int


def select(scores, k: int, parallelism: int, seed: int = 1) -> TopkResult:
    """Run the engine on ``scores`` (1-D; integers or floats), keeping ``k`` (detailed model)."""
    scores = np.asarray(scores)
    n = int(scores.size)
    TopkTile(n, k, seed).check(parallelism)
    if k == n:
        return TopkResult(np.arange(n), scores.min(), 0, 0, 0)
    cycles = ceil(n / parallelism)  # fill
    part = scores.copy()
    target = n - k  # ascending rank of the k-th largest score
    state, rounds, compares = seed, 0, n
    while True:
        m = part.size
        rounds += 1
        compares += m
        cycles += ceil(m / parallelism) + ROUND_OVERHEAD_CYCLES
        state = lfsr16_step(state)
        pivot = part[pivot_index(state, m)]
        less, greater = part[part < pivot], part[part > pivot]
        equal = m - less.size - greater.size
        if target < less.size:
            part = less
        elif target < less.size + equal:
            break
        else:
            target -= less.size + equal
            part = greater
    cycles += ceil(n / parallelism)  # select pass
    return TopkResult(_select_pass(scores, pivot, k), pivot.item(), cycles, rounds, compares)


def _select_pass(scores: np.ndarray, threshold, k: int) -> np.ndarray:
    """The select pass: indices above ``threshold``, then the lowest-index ties, ascending."""
    above = np.flatnonzero(scores > threshold)
    ties = np.flatnonzero(scores == threshold)[: k - above.size]
    return np.sort(np.concatenate([above, ties]))


def kept_indices(scores, k: int) -> np.ndarray:
    """Fast model's values: the indices the engine keeps (ascending), without running quick-select:
    the k-th largest score is read off a sort, then the select pass."""
    scores = np.asarray(scores)
    if k == scores.size:
        return np.arange(scores.size)
    return _select_pass(scores, np.sort(scores)[scores.size - k], k)


def cycles_range(tile: TopkTile, parallelism: int) -> tuple[int, int]:
    """Data-independent (lowest, highest) cycles of ``tile`` over all scores and seeds: fill and
    select ``2 ceil(n/P)`` plus one round ``ceil(n/P) + 4`` at least; at most a round for every
    partition size ``n, n-1, ..., 1`` (each round drops at least the pivot from the partition).
    ``(0, 0)`` for the ``k == n`` bypass."""
    tile.check(parallelism)
    n, p = tile.n, parallelism
    if tile.k == n:
        return 0, 0
    passes = 2 * ceil(n / p)
    worst = sum(ceil(m / p) + ROUND_OVERHEAD_CYCLES for m in range(1, n + 1))
    return passes + ceil(n / p) + ROUND_OVERHEAD_CYCLES, passes + worst


def tile_cycles(tile: TopkTile, parallelism: int) -> int:
    """Fast model: expected cycles of ``tile`` (its scores unknown; an estimate, see the module
    docstring and :func:`cycles_range`)."""
    tile.check(parallelism)
    return expected_run(tile.n, tile.k, parallelism)[0]


def tile_actions(tile: TopkTile, parallelism: int) -> dict[str, int]:
    """Fast model: the expected run's comparisons (action ``topk.compare``)."""
    tile.check(parallelism)
    compares = expected_run(tile.n, tile.k, parallelism)[1]
    return {"topk.compare": compares} if compares else {}


@lru_cache(maxsize=4096)
def expected_run(n: int, k: int, parallelism: int) -> tuple[int, int]:
    """(cycles, comparisons): means over :data:`EXPECTED_RUNS` seeded runs on distinct scores,
    each rounded to an integer."""
    if k == n:
        return 0, 0
    cycles = compares = 0
    for seed in range(1, EXPECTED_RUNS + 1):
        run = select(np.random.default_rng(seed).permutation(n), k, parallelism, seed)
        cycles += run.cycles
        compares += run.compares
    return round(cycles / EXPECTED_RUNS), round(compares / EXPECTED_RUNS)
