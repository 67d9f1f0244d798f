"""PIM template: params validation, hand-worked DRAM command timing, the
independent checker (one deliberate violation per constraint), and the fast
model equal to the command-level model on random tiles (refresh included)."""
from __future__ import annotations

import dataclasses
import random
import re

import pytest

from archsim.templates.pim import PimParams, PimTile, check_stream, plan_steps, schedule, steps_cycles
from archsim.templates.pim.fast import burst_cycles

P = PimParams()  # HBM2-like defaults: tRCD 14, tRP 14, tRAS 34, tRTP 4, tWR 22, tCCD 2/4, tRRD 4, tFAW 30


def times(tile, p=P):
    cmds, cycles = schedule(tile, p)
    return [(c.time, c.cmd) for c in cmds], cycles


# ----------------------------------------------------------------------------- params


@pytest.mark.parametrize("change, message", [
    ({"tRAS": 10}, r"^tRAS: expected >= tRCD \(14\).*got 10$"),
    ({"tCCD_L": 1}, r"^tCCD_L: expected >= tCCD_S \(2\), got 1$"),
    ({"tFAW": 60}, r"^tFAW: expected <= tRC = tRAS \+ tRP \(48\), got 60$"),
    ({"tREFI": 200}, r"^tREFI: expected > tRFC \(260\), got 200$"),
    ({"bank_groups": 3}, r"^bank_groups: expected a divisor of banks_per_channel \(16\), got 3$"),
    ({"mac_precision": "fp8"}, r"^mac_precision: expected one of int8, bf16, got 'fp8'$"),
    ({"tRCD": 0}, r"^tRCD: expected a positive integer, got 0$"),
])
def test_params_reject_impossible_timings(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(P, **change).validate()


def test_spec_loader_reports_one_line():
    from archsim.errors import SpecError
    from archsim.spec.load import load_arch

    with pytest.raises(SpecError, match=r"params\.tRAS: expected >= tRCD") as err:
        load_arch("pim-hbm2", overrides=["tRAS=5"])
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- hand-worked sequences


def test_single_column_gemv_by_hand():
    # GBWR@0; ACT waits tCCD_S after the buffer write: 2; MAC at 2+tRCD=16;
    # PRE at max(ACT+tRAS=36, MAC+tRTP=20)=36; 16 banks x 1 fp32 acc = 64 B -> 2 RDACC at 36, 38
    # (>= MAC+tCL+1=31 and not before the PRE); end = max(PRE+tRP=50, 38+tCL=52).
    seq, cycles = times(PimTile("gemv", rows=1, k=16, banks=16))
    assert seq == [(0, "GBWR"), (2, "ACT"), (16, "MAC"), (36, "PRE"), (36, "RDACC"), (38, "RDACC")]
    assert cycles == 52


def test_write_burst_by_hand():
    # 64 bf16 = 128 B = 4 WR: ACT@0, WR at 14, 18, 22, 26 (same bank: tCCD_L=4),
    # PRE at max(tRAS=34, 26+tWR=48)=48, end 48+tRP=62.
    seq, cycles = times(PimTile("write", rows=1, k=64, banks=16))
    assert seq == [(0, "ACT"), (14, "WR"), (18, "WR"), (22, "WR"), (26, "WR"), (48, "PRE")]
    assert cycles == 62


def test_refresh_before_activate_by_hand():
    # REF due at cycle 1: GBWR@0, then before the ACT (earliest 2) a REF at 2; ACT waits tRFC: 262;
    # MAC 276; PRE 296; RDACC 296, 298; end max(310, 312) = 312.
    seq, cycles = times(PimTile("gemv", rows=1, k=16, banks=16, ref_due=1))
    assert seq == [(0, "GBWR"), (2, "REF"), (262, "ACT"), (276, "MAC"), (296, "PRE"), (296, "RDACC"),
                   (298, "RDACC")]
    assert cycles == 312


def test_full_row_burst_by_hand():
    # 32 columns at tCCD_L=4: last MAC at 14 + 31*4 = 138, PRE at 142, next ACT at 156.
    assert burst_cycles(32, P) == (142, 156)


# ----------------------------------------------------------------------------- checker

BASE = [(0, 0, 0, "ACT", 5), (14, 0, 0, "RD", 5), (34, 0, 0, "PRE", 5), (48, 0, 0, "ACT", 6)]

VIOLATIONS = {
    "order": ([(10, 0, 0, "ACT", 1), (5, 0, 4, "ACT", 1)], 1),
    "bus": ([(0, 0, 0, "ACT", 1), (0, 0, 4, "ACT", 1)], 1),
    "state": ([(0, 0, 0, "RD", 1)], 0),
    "tRCD": ([(0, 0, 0, "ACT", 5), (13, 0, 0, "RD", 5)], 1),
    "tRAS": ([(0, 0, 0, "ACT", 5), (33, 0, 0, "PRE", 5)], 1),
    "tRP": ([(0, 0, 0, "ACT", 5), (34, 0, 0, "PRE", 5), (47, 0, 0, "ACT", 6)], 2),
    "tRTP": ([(0, 0, 0, "ACT", 5), (31, 0, 0, "RD", 5), (34, 0, 0, "PRE", 5)], 2),
    "tWR": ([(0, 0, 0, "ACT", 5), (14, 0, 0, "WR", 5), (35, 0, 0, "PRE", 5)], 2),
    "tCCD_L": ([(0, 0, 0, "ACT", 1), (6, 0, 1, "ACT", 1), (18, 0, 0, "RD", 1), (21, 0, 1, "RD", 1)], 3),
    "tCCD_S": ([(0, 0, 0, "ACT", 1), (4, 0, 4, "ACT", 1), (18, 0, 0, "RD", 1), (19, 0, 4, "RD", 1)], 3),
    "tRRD": ([(0, 0, 0, "ACT", 1), (3, 0, 4, "ACT", 1)], 1),
    "tFAW": ([(0, 0, 0, "ACT", 1), (4, 0, 4, "ACT", 1), (8, 0, 8, "ACT", 1), (12, 0, 12, "ACT", 1),
              (16, 0, 1, "ACT", 1)], 4),
    "tRFC": ([(0, 0, -1, "REF", 0), (259, 0, 0, "ACT", 1)], 1),
    # constraints added for issue 14 (P: tRRD_L 6, tWTR 14, tRTW 14, tRCDWR 14, tPPD 1, 2-cycle ACT,
    # tRFCpb 160, tRREFD 8)
    "act_bus": ([(0, 0, 0, "ACT", 1), (1, 0, 4, "PRE", 1)], 1),
    "tRRD_L": ([(0, 0, 0, "ACT", 1), (5, 0, 3, "ACT", 1)], 1),
    "tWTR": ([(0, 0, 0, "ACT", 1), (14, 0, 0, "WR", 1), (27, 0, 0, "RD", 1)], 2),
    "tRTW": ([(0, 0, 0, "ACT", 1), (14, 0, 0, "RD", 1), (27, 0, 0, "WR", 1)], 2),
    "tRCDWR": ([(0, 0, 0, "ACT", 1), (13, 0, 0, "WR", 1)], 1),
    "tRFCpb": ([(0, 0, 3, "REFPB", 0), (159, 0, 3, "ACT", 1)], 1),
    "tRREFD": ([(0, 0, 3, "REFPB", 0), (7, 0, 4, "REFPB", 0)], 1),
}


def test_checker_accepts_a_legal_stream():
    assert check_stream(BASE, P) is None
    # the same stream shifted to the legal limits of tCCD_L / tCCD_S / tRRD / tFAW / tRFC
    legal = [(0, 0, 0, "ACT", 1), (4, 0, 4, "ACT", 1), (8, 0, 8, "ACT", 1), (12, 0, 12, "ACT", 1),
             (30, 0, 1, "ACT", 1), (30, 0, 0, "RD", 1), (32, 0, 4, "RD", 1), (34, 0, 8, "RD", 1),
             (38, 0, 0, "RD", 1), (44, 0, 1, "RD", 1)]
    assert check_stream(legal, P) is None
    assert check_stream([(0, 0, -1, "REF", 0), (260, 0, 0, "ACT", 1)], P) is None


@pytest.mark.parametrize("name", sorted(VIOLATIONS))
def test_checker_catches_each_violation(name):
    stream, index = VIOLATIONS[name]
    v = check_stream(stream, P)
    assert v is not None and v.constraint == name and v.index == index
    assert v.time == stream[index][0]
    assert re.match(rf"^{name} violated by command {index} ", str(v))


def test_checker_rejects_the_three_illegal_streams_of_issue_14():
    """Each passed the checker before issue 14: WR -> RD 4 cycles apart, RD -> WR 4 cycles apart,
    two ACTs to one bank group 4 cycles apart (HBM2: tWTR_L 8 + WL 4 + burst 2 = 14, read-to-write
    turnaround CL 14 + burst 2 + 2 - WL 4 = 14, tRRD_L 6; DRAMsim3 HBM2_8Gb_x128)."""
    wr_rd = [(0, 0, 0, "ACT", 1), (14, 0, 0, "WR", 1), (18, 0, 0, "RD", 1)]
    rd_wr = [(0, 0, 0, "ACT", 1), (14, 0, 0, "RD", 1), (18, 0, 0, "WR", 1)]
    acts = [(0, 0, 0, "ACT", 1), (4, 0, 1, "ACT", 1)]
    assert [check_stream(s, P).constraint for s in (wr_rd, rd_wr, acts)] == ["tWTR", "tRTW", "tRRD_L"]
    # and at the legal distances they pass
    assert check_stream([(0, 0, 0, "ACT", 1), (14, 0, 0, "WR", 1), (28, 0, 0, "RD", 1)], P) is None
    assert check_stream([(0, 0, 0, "ACT", 1), (14, 0, 0, "RD", 1), (28, 0, 0, "WR", 1)], P) is None
    assert check_stream([(0, 0, 0, "ACT", 1), (6, 0, 1, "ACT", 1)], P) is None


def test_checker_per_bank_refresh_and_ppd():
    p = dataclasses.replace(P, tPPD=3)
    v = check_stream([(0, 0, 0, "ACT", 1), (4, 0, 4, "ACT", 1), (34, 0, 0, "PRE", 1), (36, 0, 4, "PRE", 1)], p)
    assert v is not None and v.constraint == "tPPD" and v.index == 3
    assert check_stream([(0, 0, 0, "ACT", 1), (4, 0, 4, "ACT", 1), (38, 0, 0, "PRE", 1), (41, 0, 4, "PRE", 1)],
                        p) is None
    v = check_stream([(0, 0, 3, "ACT", 1), (10, 0, 3, "REFPB", 0)], P)
    assert v is not None and v.constraint == "state"
    # 16 REFPBs count as the one REF due: none is late at the first deadline
    p1 = dataclasses.replace(P, max_postponed_refreshes=1)
    pbs = [(8 * i, 0, i, "REFPB", 0) for i in range(16)]
    assert check_stream(pbs + [(7900, 0, 0, "ACT", 1)], p1) is None
    assert check_stream(pbs[:15] + [(7900, 0, 0, "ACT", 1)], p1).constraint == "tREFI"


def test_checker_catches_missing_refresh():
    p = dataclasses.replace(P, max_postponed_refreshes=1)
    # REF 1 is due at 3900 and may be postponed one interval: any command after 7800 without it is late
    ok = [(0, 0, 0, "ACT", 1), (7800, 0, 0, "PRE", 1)]
    assert check_stream(ok, p) is None
    late = [(0, 0, 0, "ACT", 1), (7801, 0, 0, "PRE", 1)]
    v = check_stream(late, p)
    assert v is not None and v.constraint == "tREFI" and v.index == 1
    v = check_stream(ok, p, end=8000)
    assert v is not None and v.constraint == "tREFI"


def test_checker_all_bank_act_fills_the_faw_window():
    v = check_stream([(0, 0, 0, "ACT", 1), (4, 0, -1, "ACT", 2)], P)
    assert v is not None and v.constraint == "state"  # bank 0 is open: an all-bank ACT is illegal
    v = check_stream([(0, 0, 4, "ACT", 1), (20, 0, 4, "PRE", 1), (24, 0, 0, "ACT", 1)], P)
    assert v is not None and v.constraint == "tRAS"
    v = check_stream([(0, 0, -1, "ACT", 1), (34, 0, -1, "PRE", 1), (48, 0, 0, "ACT", 2),
                      (52, 0, 4, "ACT", 2)], P)
    assert v is None
    v = check_stream([(0, 0, 4, "ACT", 1), (34, 0, 4, "PRE", 1), (35, 0, -1, "ACT", 2)], P)
    assert v is not None and v.constraint == "tRP"


# ----------------------------------------------------------------------------- fast == detailed


def random_params(rng: random.Random) -> PimParams:
    while True:
        tRCD = rng.randint(3, 20)
        tRP = rng.randint(3, 20)
        tRAS = tRCD + rng.randint(0, 25)
        tCCD_S = rng.randint(1, 3)
        p = PimParams(
            channels=rng.choice([1, 2, 4]), banks_per_channel=rng.choice([4, 8, 16]), bank_groups=rng.choice([1, 2, 4]),
            rows_per_bank=1024, row_bytes=rng.choice([256, 512, 1024]), column_bytes=rng.choice([16, 32]),
            mac_lanes=rng.choice([4, 8, 16]), mac_precision=rng.choice(["int8", "bf16"]),
            mac_pipeline_cycles=rng.randint(0, 3), acc_registers=rng.choice([4, 16, 64]),
            input_buffer_bytes=rng.choice([1024, 2048, 4096]),
            tRCD=tRCD, tRP=tRP, tRAS=tRAS, tRTP=rng.randint(1, 8), tWR=rng.randint(4, 30),
            tCCD_S=tCCD_S, tCCD_L=min(tRCD, tCCD_S + rng.randint(0, 3)), tRRD=rng.randint(1, 6),
            tFAW=rng.randint(6, tRAS + tRP), tREFI=rng.randint(1200, 3000), tRFC=rng.randint(50, 300),
            tCL=rng.randint(1, 20), max_postponed_refreshes=rng.randint(1, 8),
            tRCDWR=rng.randint(1, tRCD), tWTR=rng.randint(1, 20), tRTW=rng.randint(1, 20), tPPD=rng.randint(1, 4),
            tWTR_S=1,
            act_bus_cycles=rng.choice([1, 2]), tRFCpb=rng.randint(10, 50), tRREFD=rng.randint(1, 10),
        )
        p.tWTR_S = rng.randint(1, p.tWTR)
        p.tRRD = min(p.tRRD, p.tFAW)
        p.tRRD_L = min(p.tRRD + rng.randint(0, 3), p.tFAW)
        try:
            p.validate()
            return p
        except ValueError:
            continue


def random_tile(rng: random.Random, p: PimParams) -> PimTile:
    banks = rng.randint(1, p.banks_per_channel)
    kind = rng.random()
    if kind < 0.15:
        return PimTile("write", rows=rng.randint(1, 20), k=rng.randint(1, p.row_bytes // p.element_bytes),
                       banks=banks, ref_due=rng.randint(0, 3000))
    if kind < 0.35:
        ce = p.column_elements
        k = rng.randint(1, min(p.row_columns * ce, p.acc_registers // ce * ce or ce))
        if -(-k // ce) * ce > p.acc_registers:
            k = ce
        rows = rng.randint(1, 40)
        nin = banks * rows
        if nin * p.element_bytes > p.input_buffer_bytes:
            rows = max(1, p.input_buffer_bytes // p.element_bytes // banks)
        if -(-k // ce) * ce <= p.acc_registers:
            return PimTile("gemv", rows=rows, k=k, banks=banks, mode="axpy", ref_due=rng.randint(0, 3000))
    return PimTile("gemv", rows=rng.randint(1, 90), k=rng.randint(1, 3000), banks=banks,
                   ref_due=rng.randint(0, 3000))


def test_fast_equals_detailed_on_random_tiles():
    rng = random.Random(5)
    refreshed = 0
    for _ in range(60):
        p = random_params(rng)
        tile = random_tile(rng, p)
        cmds, cycles = schedule(tile, p)
        fast = steps_cycles(plan_steps(tile, p), p, tile.ref_due)
        assert fast["cycles"] == cycles, (tile, p)
        assert fast["refreshes"] == sum(c.cmd == "REF" for c in cmds)
        refreshed += fast["refreshes"] > 0
        v = check_stream(cmds, p, ref_due=tile.ref_due, end=cycles)
        assert v is None, (str(v), tile, p)
    assert refreshed >= 10  # the sample exercises refresh


def test_preset_tiles_fast_equals_detailed():
    from archsim.spec.load import load_arch

    for name in ("pim-hbm2", "pim-gddr6"):
        arch = load_arch(name)
        model = arch.model()
        for tile in (PimTile("gemv", rows=12, k=768, banks=16, ref_due=1950),
                     PimTile("gemv", rows=25, k=6400, banks=16, ref_due=100),
                     PimTile("gemv", rows=48, k=64, banks=16, in_elements=768, ref_due=1950),
                     PimTile("gemv", rows=64, k=64, banks=16, mode="axpy", ref_due=1000),
                     PimTile("write", rows=12, k=64, banks=16, ref_due=10)):
            assert model.tile_cycles(tile) == model.detailed_tile_cycles(tile)
