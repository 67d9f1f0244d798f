"""The LUT controller's components on their own (amaranth.sim): the command decoder and the three
counters of the lookup sequencer. Expected values by hand from the lookup order of
rtl/lut/design.py: a tile runs row_blocks x groups steps (K-group fastest); a step's slot lasts
max(lookups, table build) cycles; a lookup is a (column block, bit plane) pair, block-major in
the weight buffer (block b's plane q at b * planes + q), blocks interleaved in batches of D.
"""
from __future__ import annotations

from rtl.lut.config import AFMT, WFMT
from rtl.lut.design import LutConfig
from rtl.lut.sequencer import BlockWalker, LutCommandDecoder, SlotTimer, StepWalker
from tests.sim_trace import cycles_where, trace


def _cfg(interleave: int = 1) -> LutConfig:
    # K = 4 symmetric: 8 entries, M = 2 rows, 8 a cycle: 2 build cycles + 2 precompute stages = 4
    return LutConfig(tile_m=2, tile_n=4, group_k=4, symmetric=True, entries_per_cycle=8,
                     weight_formats=tuple(WFMT), activation_formats=("int8",), pipeline_cycles=4,
                     precompute_latency=2, lookup_interleave=interleave)


def _decode(dut, rows=1, groups=1, cols=1, wfmt="int1", afmt="int8", pre=0):
    return [(dut.row_blocks, rows), (dut.groups, groups), (dut.col_blocks, cols), (dut.wfmt, WFMT[wfmt]),
            (dut.afmt, AFMT[afmt]), (dut.precomputed, pre)]


def test_decoder_limits_and_refusals():
    dut = LutCommandDecoder(_cfg())
    cases = [  # command, (ok, planes, look_w, slot_m1)
        (dict(cols=5, wfmt="int3"), (1, 3, 15, 14)),           # 15 lookups > 4 build cycles
        (dict(cols=1, wfmt="int1"), (1, 1, 1, 3)),             # the table build (4) is longer
        (dict(cols=1, wfmt="int1", pre=1), (1, 1, 1, 0)),      # precomputed: no build
        (dict(cols=42, wfmt="int3"), (1, 3, 126, 125)),        # 126 weight entries <= 128
        (dict(cols=43, wfmt="int3"), (0, 3, 129, 128)),        # 129 > 128: refused
        (dict(cols=5, afmt="fp16"), (0, 1, 5, 4)),             # fp16 not built
        (dict(cols=1, rows=0), (0, 1, 1, 3)),                  # zero dimension
        (dict(cols=1, groups=65), (0, 1, 1, 3)),               # more steps than the 64 tables / activations
    ]
    seen = trace(dut, len(cases), lambda t: _decode(dut, **cases[t][0]),
                 {"ok": dut.ok, "planes": dut.planes, "look_w": dut.look_w, "slot_m1": dut.slot_m1})
    assert [(seen["ok"][t], seen["planes"][t], seen["look_w"][t], seen["slot_m1"][t])
            for t in range(len(cases))] == [want for _, want in cases]


def test_decoder_pads_the_last_batch_of_interleaved_blocks():
    dut = LutCommandDecoder(_cfg(interleave=4))
    seen = trace(dut, 1, lambda t: _decode(dut, cols=5, wfmt="int3"), {"look": dut.look, "look_w": dut.look_w})
    assert (seen["look"][0], seen["look_w"][0]) == (8 * 3, 5 * 3)  # 5 blocks -> 2 batches of 4


def test_slot_timer_waits_for_the_first_table_then_times_two_slots():
    dut = SlotTimer(_cfg())
    drive = {0: [(dut.take, 1), (dut.pre, 4), (dut.precomputed, 0), (dut.look, 3), (dut.slot_m1, 4),
                 (dut.last_step, 0)],
             1: [(dut.take, 0), (dut.running, 1)], 10: [(dut.last_step, 1)]}
    seen = trace(dut, 16, lambda t: drive.get(t), {"issue": dut.issue, "sc": dut.sc, "restart": dut.restart,
                                                    "step_adv": dut.step_adv, "last": dut.last_issue,
                                                    "starting": dut.starting, "advance": dut.advance,
                                                    "seq": dut.seq})
    # taken in 0; the build waits 4 cycles (1-4, lookups start next cycle: starting in 4); slots of
    # 5 cycles from 5 and 10, 3 lookups each; the second step is the last
    assert cycles_where(seen["starting"]) == [4]
    assert cycles_where(seen["issue"]) == [5, 6, 7, 10, 11, 12]
    assert [seen["sc"][t] for t in (5, 6, 7, 8, 9, 10)] == [0, 1, 2, 3, 4, 0]
    assert cycles_where(seen["restart"]) == [9] and cycles_where(seen["step_adv"]) == [9]
    assert cycles_where(seen["advance"]) == [9]
    assert cycles_where(seen["last"]) == [12] and cycles_where(seen["seq"]) == list(range(5, 13))


def _walk(interleave, planes, col_blocks, issues, w_base=0, sc=0):
    dut = BlockWalker(_cfg(interleave))
    drive = {0: [(dut.take, 1), (dut.planes, planes), (dut.col_blocks, col_blocks), (dut.w_base, w_base),
                 (dut.sc, sc)], 1: [(dut.take, 0), (dut.issue, 1)], 1 + issues: [(dut.issue, 0)]}
    seen = trace(dut, 2 + issues, lambda t: drive.get(t), {"q": dut.q, "nb": dut.nb, "ok": dut.blk_ok,
                                                            "last": dut.plane_last, "w": dut.w_addr})
    return [tuple(seen[k][t] for k in ("nb", "q", "ok", "last", "w")) for t in range(1, 1 + issues)]


def test_block_walker_without_interleave_walks_planes_then_blocks():
    # 2 planes: (block, plane) = (0,0) (0,1) (1,0) (1,1) (2,0); w_addr = w_base + the slot's cycle
    assert _walk(1, planes=2, col_blocks=3, issues=5, w_base=10, sc=3) == [
        (0, 0, 1, 0, 13), (0, 1, 1, 1, 13), (1, 0, 1, 0, 13), (1, 1, 1, 1, 13), (2, 0, 1, 0, 13)]


def test_block_walker_interleaves_four_blocks_and_pads_the_last_batch():
    # D = 4, 2 planes, 5 blocks: blocks 0-3 plane 0, 0-3 plane 1, then 4-7 plane 0 (5-7 padding)
    got = _walk(4, planes=2, col_blocks=5, issues=12)
    assert [(nb, q) for nb, q, *_ in got] == [(b, q) for q in (0, 1) for b in range(4)] + [(b, 0) for b in range(4, 8)]
    assert [ok for _, _, ok, _, _ in got] == [1] * 9 + [0] * 3
    assert [w for *_, w in got] == [nb * 2 + q for nb, q, *_ in got]  # block-major: b * planes + q


def test_step_walker_walks_groups_then_row_blocks():
    dut = StepWalker(_cfg())
    drive = {0: [(dut.take, 1), (dut.groups, 2), (dut.row_blocks, 2), (dut.col_blocks, 3), (dut.look_w, 6)],
             1: [(dut.take, 0)], 2: [(dut.step_adv, 1)], 3: [(dut.step_adv, 0)], 4: [(dut.step_adv, 1)],
             5: [(dut.step_adv, 0)], 6: [(dut.step_adv, 1)], 7: [(dut.step_adv, 0)]}
    names = ("s", "w_base", "o_base", "g_first", "g_wrap", "last_step", "next_last")
    seen = trace(dut, 9, lambda t: drive.get(t), {k: getattr(dut, k) for k in names})
    # steps (row block, group) = (0,0) (0,1) (1,0) (1,1), each seen from cycles 1, 3, 5, 7:
    # weight base + 6 per group, output base + 3 column blocks per row block
    steps = [tuple(seen[k][t] for k in names) for t in (1, 3, 5, 7)]
    assert steps == [(0, 0, 0, 1, 0, 0, 0), (1, 6, 0, 0, 1, 0, 0), (2, 0, 3, 1, 0, 0, 1), (3, 6, 3, 0, 1, 1, 0)]
