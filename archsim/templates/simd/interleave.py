"""The summation order of the SIMD PE's interleaved fp32 accumulators (``accumulators: A > 1``).

An accumulator over a run of ``n`` clock cycles (a group's lane steps, or a
round's group ends) keeps ``A`` fp32 partial sums, one per cycle slot: the value
arriving at cycle ``c`` (``0 <= c < n``, counted from the run's first cycle) is
added to partial ``c % A`` (``rne(p + x)``, every partial starting from
``+0.0``). At the run's end the partials are reduced by the fixed pairwise tree
(:func:`tree_sum`: (0,1), (2,3), ...) over the
``A`` cycles ``n-A .. n-1`` in that order -- entry ``k`` is the final partial of
cycle ``n-A+k``'s slot, ``+0.0`` when ``n-A+k < 0`` (a run shorter than ``A``).

This is exactly what the RTL computes (``rtl/simd/accumulate.py``): the adder is an
``A``-stage pipeline whose output feeds its own input, so ``A`` sums circulate, one
per cycle slot; the last ``A`` results are taken in arrival order. ``A = 1`` is the
plain running sum, but the templates keep their original order for ``A = 1``
(the output accumulator then starts from ``psum``); with ``A > 1`` the output is
``rne(init + reduced)`` (``init`` = ``psum`` or ``+0.0``).

Which cycle a value arrives at:
- group accumulator: the cycle sum of lane step ``s`` of a group arrives at cycle
  ``s * wb + wb - 1`` (``wb`` = cycles per step, 1 unless bit-serial); the run is
  the group's ``steps * wb`` cycles;
- output accumulator: group ``g``'s result arrives at the round cycle of the group's
  last cycle (the sum of the cycles of groups ``0..g``, minus 1); the run is the
  round's cycles.
"""
from __future__ import annotations

import numpy as np


def tree_sum(x: np.ndarray) -> np.ndarray:
    """Pairwise fp32 tree over the last axis: (0,1), (2,3), ... an odd last element passes through."""
    with np.errstate(over="ignore", invalid="ignore"):
        while x.shape[-1] > 1:
            odd = x.shape[-1] % 2
            pairs = x[..., 0:x.shape[-1] - odd:2] + x[..., 1::2][..., :x.shape[-1] // 2]
            x = np.concatenate([pairs, x[..., -1:]], axis=-1) if odd else pairs
    return x[..., 0]


def ring_sum(arrivals: list[tuple[int, np.ndarray]], n_cycles: int, accumulators: int, outputs: int) -> np.ndarray:
    """The reduced interleaved sum of ``arrivals`` (``(cycle, fp32 values (outputs,))`` in cycle order)."""
    A = accumulators
    partials = np.zeros((A, outputs), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for c, x in arrivals:
            partials[c % A] = partials[c % A] + np.asarray(x, np.float32)
    zero = np.zeros(outputs, np.float32)
    entries = [partials[c % A] if c >= 0 else zero for c in range(n_cycles - A, n_cycles)]
    return tree_sum(np.stack(entries, axis=-1))


def step_arrivals(cycle_sums: np.ndarray, cycles_per_step: int) -> list[tuple[int, np.ndarray]]:
    """Arrivals of a group's cycle sums ``(outputs, steps)``: step ``s`` at cycle ``s*wb + wb - 1``."""
    wb = cycles_per_step
    return [(s * wb + wb - 1, cycle_sums[:, s]) for s in range(cycle_sums.shape[1])]


def group_end_cycles(group_steps: list[int], cycles_per_step: int) -> list[int]:
    """Round cycle at which each group's result arrives (its last cycle)."""
    ends, total = [], 0
    for steps in group_steps:
        total += steps * cycles_per_step
        ends.append(total - 1)
    return ends
