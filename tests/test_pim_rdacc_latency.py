"""PIM RDACC latency with interleaved accumulators: when the partials' reduction (``3 + log2(P) x P``
cycles: the RTL registers the command twice and reads its partial memories, then log2(P) levels of
P-deep adders) outlasts ``tCL``, the fast and detailed models charge the extra cycles (the RDACC's data come
later, and the bus turnaround to the next GBWR / WR counts from them); ``P = 1`` and reductions that
fit ``tCL`` are unchanged. Expected cycles derived by hand below from pim-gpt-gddr6's timings."""
from __future__ import annotations

import dataclasses

import pytest

from archsim.spec import load_arch
from archsim.templates.pim import PimTile, check_stream, schedule
from archsim.templates.pim.fast import tile_cycles


def gddr6(P: int):
    return dataclasses.replace(load_arch("pim-gpt-gddr6").params, accumulator_interleave=P)


def test_the_rdacc_latency_is_tcl_or_the_longer_reduction():
    # tCL 14; reductions: P 2 -> 3 + 1 x 2 = 5, P 4 -> 3 + 2 x 4 = 11, P 8 -> 3 + 3 x 8 = 27,
    # P 16 -> 3 + 4 x 16 = 67
    assert [gddr6(P).rdacc_reduction_cycles for P in (1, 2, 4, 8, 16)] == [0, 5, 11, 27, 67]
    assert [gddr6(P).rdacc_latency for P in (1, 2, 4, 8, 16)] == [14, 14, 14, 27, 67]
    # tRTW 13 from the data: 13 + (27 - 14) = 26 for P 8
    assert [gddr6(P).rdacc_turnaround for P in (1, 2, 4, 8)] == [13, 13, 13, 26]


@pytest.mark.parametrize("P, expected", [(1, 47), (4, 47), (8, 60)])
def test_one_burst_tile_cycles_by_hand(P, expected):
    """One weight row of one column (16 bf16 = 32 B) per bank, 16 banks, no refresh due.
    GBWR (1 column) @0; ACT @1 (tCCD_S after the GBWR); MAC @16 (tRCD 15); PRE @32 (tRAS 31 after
    the ACT beats MAC + tRTP = 19); the gather of 16 banks x 1 row x 4 B = 64 B = 2 RDACCs waits for
    MAC + mac_drain (16 + 14 + 1 - 1 + 1 = 31) and follows the PRE in program order: @32, @33.
    End: max(PRE + tRP = 47, last RDACC + rdacc_latency): 33 + 14 = 47 (P 1, 4), 33 + 27 = 60 (P 8)."""
    p = gddr6(P)
    tile = PimTile("gemv", rows=1, k=16, banks=16, ref_due=1 << 40)
    cmds, detailed = schedule(tile, p)
    assert [(c.time, c.cmd) for c in cmds] == [(0, "GBWR"), (1, "ACT"), (16, "MAC"), (32, "PRE"),
                                                (32, "RDACC"), (33, "RDACC")]
    assert detailed == expected
    assert tile_cycles(tile, p) == expected


def test_a_gbwr_after_an_rdacc_waits_for_the_turnaround_from_its_data():
    """Two groups (acc_registers 64 -> 65 rows), x larger than the 2 KiB buffer (k 1040 bf16 = 2080 B),
    so the second group's first GBWR follows the first group's last RDACC: tRTW 13 after it, plus
    the reduction's 13 cycles beyond tCL at P 8."""
    gaps = {}
    for P in (1, 8):
        p = gddr6(P)
        tile = PimTile("gemv", rows=65, k=1040, banks=1, ref_due=1 << 40)
        cmds, cycles = schedule(tile, p)
        assert check_stream([c.as_tuple() for c in cmds], p, ref_due=1 << 40, end=cycles) is None
        last_rdacc = max(i for i, c in enumerate(cmds) if c.cmd == "RDACC" and i < len(cmds) - 1
                         and any(d.cmd == "GBWR" for d in cmds[i:]))
        nxt = next(c for c in cmds[last_rdacc:] if c.cmd == "GBWR")
        gaps[P] = nxt.time - cmds[last_rdacc].time
        assert tile_cycles(tile, p) == cycles
    assert gaps == {1: 13, 8: 26}


def test_the_checker_counts_the_turnaround_from_the_rdacc_data():
    stream = [(0, 0, -1, "RDACC", 0), (25, 0, -1, "GBWR", 0)]
    assert check_stream(stream, gddr6(1), ref_due=1 << 40) is None  # 25 >= tRTW 13
    v = check_stream(stream, gddr6(8), ref_due=1 << 40)  # 25 < 26
    assert v is not None and v.constraint == "tRTW" and v.index == 1
    assert check_stream([stream[0], (26, 0, -1, "GBWR", 0)], gddr6(8), ref_due=1 << 40) is None


def test_p8_loads_on_a_tcl_14_preset():
    assert load_arch("pim-gpt-gddr6", ["accumulator_interleave=8"]).params.rdacc_latency == 27


@pytest.mark.parametrize("P", [8, 16])
def test_fast_equals_detailed_and_the_checker_accepts_when_the_reduction_outlasts_tcl(P):
    import random

    p = gddr6(P)
    rng = random.Random(P)
    for _ in range(12):  # rows over one or two groups, x fitting the buffer or chunked, refresh anywhere
        tile = PimTile("gemv", rows=rng.randint(1, 80), k=rng.randint(1, 3000), banks=rng.choice([1, 16]),
                       ref_due=rng.randint(0, 3000))
        cmds, cycles = schedule(tile, p)
        assert tile_cycles(tile, p) == cycles, tile
        assert check_stream([c.as_tuple() for c in cmds], p, ref_due=tile.ref_due, end=cycles) is None, tile
