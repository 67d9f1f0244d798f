"""The five command streams the checker used to accept (issue 22): each is written by hand (not by
the mapper), must be rejected with a message naming the rule, and its legal neighbour -- the same
stream moved to the limit -- must pass. Limits are worked from the datasheet figures, not read
from the checker:

HBM2 (DRAMsim3 HBM2_8Gb_x128; ``PimParams()`` defaults): CWL 4, burst 2, tWTR_S 6 -> WR -> RD of
another bank group >= 12 from the WR command; tRCD 14; CL 14, one cycle per column of 16 bf16 on
16 lanes, one pipeline stage -> an RDACC >= 14 + 1 - 1 + 1 = 15 after the last MAC; tREFI 3900,
tRASmax = 9 x tREFI = 35100; 16 banks.
GDDR6 (pim-gpt-gddr6: Samsung 8 Gb set, 1 ns cycles): tCCD_S 1; read-to-write turnaround CL 24 tCK
+ burst 1 ns + 2 tCK - CWL 6 tCK at 0.57 ns = 12.4 -> 13.
"""
from __future__ import annotations

import dataclasses

import pytest

from archsim.spec.load import load_arch
from archsim.templates.pim import PimParams, check_stream

P = PimParams()
GDDR6 = load_arch("pim-gpt-gddr6").params


def rejected(stream, p, rule, index, **kw):
    v = check_stream(stream, p, **kw)
    assert v is not None, f"{rule}: the illegal stream was accepted"
    assert v.constraint == rule and v.index == index, str(v)
    assert str(v).startswith(f"{rule} violated by command {index} ")
    return v


def test_write_to_read_across_bank_groups_inside_twtr_s():
    # bank 0 is in group 0, bank 4 in group 1; WR at 14, RD of the other group 11 cycles later (< 12)
    illegal = [(0, 0, 0, "ACT", 1), (6, 0, 4, "ACT", 1), (14, 0, 0, "WR", 1), (25, 0, 4, "RD", 1)]
    v = rejected(illegal, P, "tWTR_S", 3)
    assert "another bank group" in v.message and "need 12" in v.message
    legal = [(0, 0, 0, "ACT", 1), (6, 0, 4, "ACT", 1), (14, 0, 0, "WR", 1), (26, 0, 4, "RD", 1)]
    assert check_stream(legal, P) is None
    # the same-group limit stays tWTR_L's (14 from the WR): 26 is too early there
    same_group = [(0, 0, 0, "ACT", 1), (6, 0, 1, "ACT", 1), (14, 0, 0, "WR", 1), (26, 0, 1, "RD", 1)]
    rejected(same_group, P, "tWTR", 3)


def test_per_bank_refreshes_all_to_bank_0_are_not_a_refresh():
    # the first REF is due at 3900 and may be postponed 8 intervals: any command after 35100 needs it;
    # 144 REFPBs (9 x 16) all to bank 0 leave banks 1..15 unrefreshed
    all_bank0 = [(160 * i, 0, 0, "REFPB", 0) for i in range(144)]
    v = rejected(all_bank0 + [(35101, 0, 0, "ACT", 1)], P, "tREFI", 144)
    assert "bank 1 refreshed 0 times" in v.message
    v = check_stream(all_bank0, P, end=35101)
    assert v is not None and v.constraint == "tREFI"
    # legal neighbour: one REFPB to each of the 16 banks (tRREFD 8 apart) is one refresh
    one_round = [(8 * b, 0, b, "REFPB", 0) for b in range(16)]
    assert check_stream(one_round + [(35101, 0, 0, "ACT", 1)], P) is None


def test_input_buffer_write_one_cycle_after_an_accumulator_read():
    # GDDR6: tCCD_S = 1 let a GBWR follow an RDACC by one cycle; the data bus must turn around (13)
    v = rejected([(0, 0, -1, "RDACC", 0), (1, 0, -1, "GBWR", 0)], GDDR6, "tRTW", 1)
    assert "GBWR 1 cycles after a RD / RDACC" in v.message
    assert check_stream([(0, 0, -1, "RDACC", 0), (13, 0, -1, "GBWR", 0)], GDDR6) is None
    # the same turnaround holds before an ordinary WR
    rejected([(0, 0, 0, "ACT", 1), (14, 0, -1, "RDACC", 0), (20, 0, 0, "WR", 1)], P, "tRTW", 2)


def test_accumulator_read_before_the_last_macs_data_land():
    illegal = [(0, 0, -1, "ACT", 1), (14, 0, -1, "MAC", 1), (16, 0, -1, "RDACC", 0)]
    v = rejected(illegal, P, "mac_drain", 2)
    assert "RDACC 2 cycles after the last MAC" in v.message
    # the last MAC's data are in the accumulators 15 cycles after it
    assert check_stream([(0, 0, -1, "ACT", 1), (14, 0, -1, "MAC", 1), (28, 0, -1, "RDACC", 0)], P) is not None
    assert check_stream([(0, 0, -1, "ACT", 1), (14, 0, -1, "MAC", 1), (29, 0, -1, "RDACC", 0)], P) is None


def test_row_held_open_past_tras_max():
    # the first REF is due at 10000 here, so the refresh deadline (41200) does not mask the rule
    late = [(0, 0, 0, "ACT", 1), (35101, 0, 0, "PRE", 1)]
    v = rejected(late, P, "tRASmax", 1, ref_due=10000)
    assert "35101 cycles > tRASmax 35100" in v.message
    assert check_stream([(0, 0, 0, "ACT", 1), (35100, 0, 0, "PRE", 1)], P, ref_due=10000) is None
    # any later command of the channel exposes it, and so does the end of the stream
    rejected([(0, 0, 0, "ACT", 1), (35101, 0, 4, "ACT", 1)], P, "tRASmax", 1, ref_due=10000)
    v = check_stream([(0, 0, 0, "ACT", 1)], P, ref_due=10000, end=35101)
    assert v is not None and v.constraint == "tRASmax"
    assert check_stream([(0, 0, 0, "ACT", 1)], P, ref_due=10000, end=35100) is None


def test_new_timings_are_validated():
    with pytest.raises(ValueError, match=r"^tWTR_S: expected <= tWTR \(14\), got 15$"):
        dataclasses.replace(P, tWTR_S=15).validate()
    with pytest.raises(ValueError, match=r"^tRASmax: expected at least one row burst"):
        dataclasses.replace(P, tRASmax=100).validate()


def test_scheduler_turns_the_bus_around_after_a_gather():
    """Two accumulator groups (65 rows > 64 accumulators) of an input too long for the 2 KiB buffer
    (k = 2048 bf16 = 4 KiB): the second group's GBWRs follow the first group's RDACCs, and the
    first of them waits exactly tRTW (14 on HBM2) -- the bound binds; the checker accepts the stream."""
    from archsim.templates.pim import PimTile, schedule

    tile = PimTile("gemv", rows=65, k=2048, banks=16, ref_due=10**6)
    cmds, cycles = schedule(tile, P)
    pairs = [(a.time, b.time) for a, b in zip(cmds, cmds[1:]) if a.cmd == "RDACC" and b.cmd == "GBWR"]
    assert pairs and all(tb - ta >= P.tRTW for ta, tb in pairs)
    assert any(tb - ta == P.tRTW for ta, tb in pairs)
    assert check_stream(cmds, P, ref_due=tile.ref_due, end=cycles) is None
