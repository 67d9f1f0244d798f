"""SpAtten's top-k engine model (archsim.templates.attention.topk): kept indices against numpy,
cycles against a run worked out by hand, the expected cycles against quick-select's known bounds."""
from math import ceil

import numpy as np
import pytest

from archsim.templates.attention.topk import (ROUND_OVERHEAD_CYCLES, TopkTile, cycles_range, expected_run, lfsr16_step,
                                              pivot_index, select, tile_cycles)


def _numpy_topk(scores, k):
    # stable: among equal scores the lower index wins
    order = np.lexsort((np.arange(scores.size), -scores))
    return np.sort(order[:k])


@pytest.mark.parametrize("seed", range(1, 40))
def test_kept_indices_match_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    k = int(rng.integers(1, n + 1))
    scores = rng.integers(0, 50, n)  # many ties
    got = select(scores, k, int(rng.integers(1, 33)), seed)
    assert np.array_equal(got.indices, _numpy_topk(scores, k))
    assert got.threshold == np.sort(scores)[::-1][k - 1]


def test_two_rounds_worked_by_hand():
    scores = np.array([10, 30, 40, 20])
    # a seed whose first pivot is the smallest (10), then 30 first in the "greater" FIFO [30, 40, 20]
    for seed in range(1, 1 << 16):
        s1 = lfsr16_step(seed)
        s2 = lfsr16_step(s1)
        if scores[pivot_index(s1, 4)] == 10 and np.array([30, 40, 20])[pivot_index(s2, 3)] == 30:
            break
    else:
        raise AssertionError("no such seed")
    r = select(scores, 2, 2, seed)
    # fill 2, round 1 (m=4): 2+4, round 2 (m=3): 2+4 (30 is the 2nd largest: done), select 2
    assert r.rounds == 2
    assert r.cycles == 2 + (2 + ROUND_OVERHEAD_CYCLES) + (2 + ROUND_OVERHEAD_CYCLES) + 2
    assert r.compares == 4 + 4 + 3
    assert list(r.indices) == [1, 2]


def test_one_round_exactly():
    # pivot lands on the target at once: n = 4, seed such that the first pivot is the 2nd largest
    scores = np.array([10, 40, 30, 20])
    for seed in range(1, 1 << 16):
        if scores[pivot_index(lfsr16_step(seed), 4)] == 30:
            break
    r = select(scores, 2, 4, seed)
    assert r.rounds == 1
    assert r.cycles == 1 + (1 + ROUND_OVERHEAD_CYCLES) + 1  # fill + one round + select, 4 per cycle
    assert list(r.indices) == [1, 2]


def test_pivot_index_by_hand():
    assert pivot_index(0b1011_0110, 5) == 6 - 5  # mask 7: r = 6 >= 5 -> 1
    assert pivot_index(0b1011_0011, 5) == 3
    assert pivot_index(12345, 1) == 0
    assert all(0 <= pivot_index(s, m) < m for s in range(1, 300) for m in range(1, 70))


def test_keep_all_bypasses():
    assert select(np.arange(5), 5, 4).cycles == 0
    assert tile_cycles(TopkTile(100, 100), 16) == 0


@pytest.mark.parametrize("n,k,p", [(1024, 128, 16), (993, 921, 16), (256, 32, 4), (4096, 16, 16)])
def test_expected_cycles_within_quickselect_bounds(n, k, p):
    cycles, compares = expected_run(n, k, p)
    passes = 2 * ceil(n / p)
    # the first round alone compares n; random-pivot quick-select compares at most ~3.39 n on average
    assert passes + ceil(n / p) + ROUND_OVERHEAD_CYCLES <= cycles
    assert n + n <= compares <= n + 3.4 * n
    assert cycles <= passes + 3.4 * n / p + ROUND_OVERHEAD_CYCLES * 3 * np.log2(n)


def test_bad_tiles_refused():
    with pytest.raises(ValueError, match="k: expected at most"):
        TopkTile(4, 5).check(4)
    with pytest.raises(ValueError, match="topk_parallelism"):
        TopkTile(4, 2).check(0)
    with pytest.raises(ValueError, match="seed"):
        TopkTile(4, 2, 0).check(4)


@pytest.mark.parametrize("n,k,p", [(1024, 921, 16), (716, 204, 16), (300, 30, 4)])
def test_fast_cycles_are_the_mean_of_detailed_runs_on_other_scores(n, k, p):
    """The fast model charges an expectation over distinct scores; detailed runs on scores it never
    saw (other seeds, real-valued, distinct) average to it within 5 % (ties end the search sooner:
    the expectation is then an upper bound)."""
    runs = [select(np.random.default_rng(10_000 + s).normal(size=n), k, p, 1 + s % 65535).cycles
            for s in range(400)]
    assert abs(np.mean(runs) - tile_cycles(TopkTile(n, k), p)) <= 0.05 * np.mean(runs)


def test_cycles_range_by_hand_and_reached():
    """n = 4, P = 2: at least fill 2 + one round (2 + 4) + select 2 = 10; at most fill 2 + rounds over
    4, 3, 2, 1 scores (2+4, 2+4, 1+4, 1+4) + select 2 = 26. Both ends are reached by some seed."""
    assert cycles_range(TopkTile(4, 1), 2) == (10, 26)
    assert cycles_range(TopkTile(4, 4), 2) == (0, 0)
    got = {select(np.array([10, 20, 30, 40]), 1, 2, seed).cycles for seed in range(1, 1 << 12)}
    assert min(got) == 10 and max(got) == 26


def test_fast_estimate_error_per_tile_is_bounded():
    """The fast model's cycles are a data-independent estimate. Against the detailed model on 240
    random tiles (scores it never saw, n <= 300, 1 to 16 comparators): every detailed run and every
    estimate lie in cycles_range; on distinct scores the estimate is within 40 % of the tile's own
    cycles for 90 % of the tiles and within +-150 % for all (measured here: median 12 %, 90th
    percentile 28 %, worst -34 % / +102 %, mean +1.7 %); on heavily tied scores (6 values) the search
    ends sooner and the estimate over-charges (measured -8 % to +140 %, mean +38 %). Shapes repeat
    (12 of them) to keep the expected runs cheap."""
    rng = np.random.default_rng(2021)
    shapes = [(int(n), int(rng.integers(1, n)), int(2 ** rng.integers(0, 5))) for n in rng.integers(2, 300, 12)]
    distinct, tied = [], []
    for i in range(240):
        n, k, p = shapes[i % len(shapes)]
        few = i % 4 == 3
        scores = rng.integers(0, 6, n) if few else rng.normal(size=n)
        det = select(scores, k, p, int(rng.integers(1, 1 << 16))).cycles
        fast = tile_cycles(TopkTile(n, k), p)
        low, high = cycles_range(TopkTile(n, k), p)
        assert low <= det <= high and low <= fast <= high
        (tied if few else distinct).append((fast - det) / det)
    distinct, tied = np.abs(distinct), np.array(tied)
    assert np.percentile(distinct, 90) <= 0.40
    assert distinct.max() <= 1.5
    assert tied.min() >= -0.4 and tied.max() <= 2.0
