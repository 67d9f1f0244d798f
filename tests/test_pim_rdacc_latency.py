"""PIM RDACC latency with interleaved accumulators: when the partials' reduction (``3 + P / 2 - 1 +
log2(P) x P`` cycles: the RTL registers the command twice and reads its partial memories, then one
P-deep adder per level, reused over time) outlasts ``tCL``, the fast and detailed models charge the
extra cycles (the RDACC's data come later, and the bus turnaround to the next GBWR / WR counts from
them), and two RDACCs are ``P / 2`` cycles apart (the first level's adder takes an RDACC's ``P / 2``
pairs one a cycle); ``P = 1`` is unchanged. Expected cycles derived by hand below from
pim-gpt-gddr6's timings."""
from __future__ import annotations

import dataclasses

import pytest

from archsim.spec import load_arch
from archsim.templates.pim import PimTile, check_stream, schedule
from archsim.templates.pim.fast import tile_cycles


def gddr6(P: int):
    return dataclasses.replace(load_arch("pim-gpt-gddr6").params, accumulator_interleave=P)


def test_the_reduction_cycles_by_hand():
    """One P-deep adder per level of the pairwise sum, each reused over time. The partials are on the
    memories' read ports R = 3 cycles after the RDACC (RDACC_PARTIALS_READ_CYCLES). Level 0 takes pair
    j (partials 2j, 2j + 1) into its operand registers in cycle R + j (j = 0 .. P/2 - 1); an adder's
    result is out P cycles after its operands are taken. Level k takes its pair j (level k - 1's
    results 2j, 2j + 1) the cycle the odd one is out, so t_k(j) = t_{k-1}(2j + 1) + P, which solves to
    t_k(j) = R + 2^k (j + 1) - 1 + k P (k = 0: R + j). The sum is level L - 1's result 0 (L = log2 P),
    out at t_{L-1}(0) + P = R + 2^(L-1) - 1 + (L - 1) P + P = R + P/2 - 1 + L P:
      P = 8:  3 + 4 - 1 + 3 x 8  = 30
      P = 16: 3 + 8 - 1 + 4 x 16 = 74
    (P = 2: 3 + 0 + 2 = 5, P = 4: 3 + 1 + 8 = 12.) Level 0 holds an RDACC's pairs for P/2 cycles, so
    the next RDACC may come P/2 cycles later (level k then takes the next RDACC's pairs after this
    one's: its pairs are 2^k apart, the last at t_k(0) + P/2 - 2^k < t_k(0) + P/2)."""
    from rtl.pim.interleaved import PimInterleavedAccumulators

    by_hand = {2: 3 + 0 + 2, 4: 3 + 1 + 2 * 4, 8: 3 + 3 + 3 * 8, 16: 3 + 7 + 4 * 16}
    assert by_hand == {2: 5, 4: 12, 8: 30, 16: 74}
    assert {P: gddr6(P).rdacc_reduction_cycles for P in by_hand} == by_hand
    for P in by_hand:  # the RTL declares the same latency
        unit = PimInterleavedAccumulators("bf16", 64, 1, 6, P)
        unit._MustUse__silence = True  # built only to read its declared latency
        assert unit.read_latency == by_hand[P]
    assert gddr6(1).rdacc_reduction_cycles == 0
    assert [gddr6(P).rdacc_spacing_cycles for P in (1, 2, 4, 8, 16)] == [1, 1, 2, 4, 8]


def test_the_rdacc_latency_is_tcl_or_the_longer_reduction():
    # tCL 14; reductions (above): P 2 -> 5, P 4 -> 12, P 8 -> 30, P 16 -> 74
    assert [gddr6(P).rdacc_latency for P in (1, 2, 4, 8, 16)] == [14, 14, 14, 30, 74]
    # tRTW 13 from the data: 13 + (30 - 14) = 29 for P 8
    assert [gddr6(P).rdacc_turnaround for P in (1, 2, 4, 8)] == [13, 13, 13, 29]


@pytest.mark.parametrize("P, rdaccs, expected", [(1, (32, 33), 47), (4, (32, 34), 48), (8, (32, 36), 66)])
def test_one_burst_tile_cycles_by_hand(P, rdaccs, expected):
    """One weight row of one column (16 bf16 = 32 B) per bank, 16 banks, no refresh due.
    GBWR (1 column) @0; ACT @1 (tCCD_S after the GBWR); MAC @16 (tRCD 15); PRE @32 (tRAS 31 after
    the ACT beats MAC + tRTP = 19); the gather of 16 banks x 1 row x 4 B = 64 B = 2 RDACCs waits for
    MAC + mac_drain (16 + 14 + 1 - 1 + 1 = 31) and follows the PRE in program order: @32, then
    max(tCCD_S 1, P / 2) later: @33 (P 1), @34 (P 4), @36 (P 8).
    End: max(PRE + tRP = 47, last RDACC + rdacc_latency): 47 (P 1: 33 + 14), 48 (P 4: 34 + 14),
    66 (P 8: 36 + 30)."""
    p = gddr6(P)
    tile = PimTile("gemv", rows=1, k=16, banks=16, ref_due=1 << 40)
    cmds, detailed = schedule(tile, p)
    assert [(c.time, c.cmd) for c in cmds] == [(0, "GBWR"), (1, "ACT"), (16, "MAC"), (32, "PRE"),
                                                (rdaccs[0], "RDACC"), (rdaccs[1], "RDACC")]
    assert detailed == expected
    assert tile_cycles(tile, p) == expected


def test_a_gbwr_after_an_rdacc_waits_for_the_turnaround_from_its_data():
    """Two groups (acc_registers 64 -> 65 rows), x larger than the 2 KiB buffer (k 1040 bf16 = 2080 B),
    so the second group's first GBWR follows the first group's last RDACC: tRTW 13 after it, plus
    the reduction's 16 cycles beyond tCL at P 8."""
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
    assert gaps == {1: 13, 8: 29}


def test_the_checker_counts_the_turnaround_from_the_rdacc_data():
    stream = [(0, 0, -1, "RDACC", 0), (25, 0, -1, "GBWR", 0)]
    assert check_stream(stream, gddr6(1), ref_due=1 << 40) is None  # 25 >= tRTW 13
    v = check_stream(stream, gddr6(8), ref_due=1 << 40)  # 25 < 29
    assert v is not None and v.constraint == "tRTW" and v.index == 1
    assert check_stream([stream[0], (29, 0, -1, "GBWR", 0)], gddr6(8), ref_due=1 << 40) is None


def test_the_checker_spaces_rdaccs_by_half_the_interleave():
    assert check_stream([(0, 0, -1, "RDACC", 0), (1, 0, -1, "RDACC", 0)], gddr6(1), ref_due=1 << 40) is None
    v = check_stream([(0, 0, -1, "RDACC", 0), (3, 0, -1, "RDACC", 0)], gddr6(8), ref_due=1 << 40)  # 3 < 4
    assert v is not None and v.constraint == "rdacc_spacing" and v.index == 1
    assert check_stream([(0, 0, -1, "RDACC", 0), (4, 0, -1, "RDACC", 0)], gddr6(8), ref_due=1 << 40) is None


def test_p8_loads_on_a_tcl_14_preset():
    assert load_arch("pim-gpt-gddr6", ["accumulator_interleave=8"]).params.rdacc_latency == 30


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
