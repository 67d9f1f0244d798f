"""The top-k engine's components on their own (amaranth.sim): pivot picker, lane comparators, zero
eliminator, select-pass tie-break and score buffers. Four lanes of 8-bit scores (lane j of a row
at bits 8j), a 16-score capacity (5 count bits, 4 rows); expected values worked out by hand."""
from __future__ import annotations

from archsim.templates.attention.topk import lfsr16_step, pivot_index
from rtl.attention.topk_units import Compactor, LaneCompare, PivotPicker, ScoreBuffers, TieSelect
from tests.sim_trace import trace


def _row(*scores):
    return sum(v << (8 * j) for j, v in enumerate(scores))


def test_pivot_picker_steps_the_lfsr_and_folds_the_index():
    dut = PivotPicker(5)
    # 0x000F: feedback bit0 ^ bit2 ^ bit3 ^ bit5 = 1 ^ 1 ^ 1 ^ 0 = 1 -> 0x0007 | 0x8000 = 0x8007;
    # 5 scores: r = 0x8007 & 7 = 7 >= 5 -> 2.  0x0001: -> 0x8000, r = 0 -> 0
    cases = [(0x000F, 5, 0x8007, 2), (0x0001, 5, 0x8000, 0)]
    # and the model's functions (independent Python) on a sweep of states and partition sizes
    cases += [(s, c, lfsr16_step(s), pivot_index(lfsr16_step(s), c))
              for s in (0xACE1, 0x1234, 0xFFFF, 0x8001) for c in (1, 2, 3, 7, 8, 16)]
    seen = trace(dut, len(cases), lambda t: [(dut.state, cases[t][0]), (dut.count, cases[t][1])],
                 {"lfsr": dut.lfsr, "pidx": dut.pidx})
    assert list(zip(seen["lfsr"], seen["pidx"])) == [(lf, p) for _, _, lf, p in cases]


def test_lane_compare_masks_lanes_past_the_partition():
    dut = LaneCompare(4, 8, 5)
    # row of scores 4..7 = 5, 9, 7, 7 against pivot 7, partition of 7 scores: index 7 is not one
    seen = trace(dut, 1, lambda t: [(dut.data, _row(5, 9, 7, 7)), (dut.pivot, 7), (dut.first, 4), (dut.count, 7)],
                 {"lt": dut.lt, "gt": dut.gt, "eq": dut.eq})
    assert (seen["lt"][0], seen["gt"][0], seen["eq"][0]) == (0b0001, 0b0010, 0b0100)


def test_tie_select_keeps_the_larger_and_the_first_ties():
    dut = TieSelect(4, 8, 5, 3)
    # row 1 (scores 4..7) = 7, 9, 7, 7 of n = 7, pivot 7: 9 is kept; ties in index order
    drive = [[(dut.data, _row(7, 9, 7, 7)), (dut.pivot, 7), (dut.row, 1), (dut.n, 7), (dut.ties_left, t)]
             for t in (0, 1, 5)]
    seen = trace(dut, 3, lambda t: drive[t], {"keep": dut.keep, "taken": dut.taken})
    assert list(zip(seen["keep"], seen["taken"])) == [(0b0010, 0), (0b0011, 1), (0b0111, 2)]


def test_compactor_packs_selected_lanes_in_order_and_flushes_the_rest():
    dut = Compactor(4, 8, 2)
    drive = {0: [(dut.append, 1), (dut.data, _row(10, 11, 12, 13)), (dut.sel, 0b0101)],
             1: [(dut.data, _row(20, 21, 22, 23)), (dut.sel, 0b1110)],
             2: [(dut.append, 0), (dut.flush, 1)], 3: [(dut.flush, 0), (dut.clear, 1)], 4: [(dut.clear, 0)]}
    seen = trace(dut, 5, lambda t: drive.get(t), {"en": dut.wr_en, "addr": dut.wr_addr, "data": dut.wr_data,
                                                   "total": dut.total})
    # row 1 stages 10, 12; row 2 adds 21, 22, 23: a full row 10 12 21 22 is written at 0, 23 stays
    assert seen["en"][:2] == [0, 1] and (seen["addr"][1], seen["data"][1]) == (0, _row(10, 12, 21, 22))
    # the flush writes the partial row at 1 (lane 0 = 23; the others are don't-care)
    assert seen["en"][2] == 1 and seen["addr"][2] == 1 and seen["data"][2] & 0xFF == 23
    assert seen["total"] == [0, 2, 5, 5, 0]


def test_score_buffers_rotate_the_partition_roles():
    dut = ScoreBuffers(4, 4, 8, 2)
    x, y, z = _row(1, 2, 3, 4), _row(5, 6, 7, 8), _row(9, 10, 11, 12)
    drive = {0: [(dut.fill_en, 1), (dut.fill_addr, 0), (dut.fill_data, x)],
             # src 0: the less side writes buffer 1, the more side buffer 2
             1: [(dut.fill_en, 0), (dut.src, 0), (dut.less_en, 1), (dut.less_addr, 1), (dut.less_data, y),
                 (dut.more_en, 1), (dut.more_addr, 1), (dut.more_data, z), (dut.rd_addr, 0)],
             2: [(dut.less_en, 0), (dut.more_en, 0), (dut.rd_addr, 1)], 3: [(dut.src, 1)], 4: [(dut.src, 2)]}
    seen = trace(dut, 5, lambda t: drive.get(t), {"rd": dut.rd_data, "orig": dut.orig_data,
                                                   "less_dst": dut.less_dst, "more_dst": dut.more_dst})
    # a read returns the entry as it was in the cycle of its address (no write-through): the fill of
    # cycle 0 is read in 2 (address in 1)
    assert seen["rd"][2] == x and seen["orig"][1:3] == [0, x]
    # address 1 from cycle 2 (every buffer reads it; src picks one): buffer 1 holds the less row, 2 the more row
    assert (seen["rd"][3], seen["rd"][4]) == (y, z)
    assert [(seen["less_dst"][t], seen["more_dst"][t]) for t in (1, 3, 4)] == [(1, 2), (2, 0), (0, 1)]
