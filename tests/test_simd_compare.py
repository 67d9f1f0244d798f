"""The SIMD comparisons are against buildable designs: one fixed PE, a one-lane multi-format PE, an equal-area baseline.

Expected figures are the synthesis runs (docs/simd_rtl.md) and lane counts by hand.
"""
from __future__ import annotations

import pytest

from archsim.validate import _simd_compare as compare


def test_xrnpe_rows_are_single_buildable_pes():
    rows = compare.xrnpe_rows()
    assert set(rows) == {"reconfigurable", "largest_fixed", "multi_format"}
    largest = rows["largest_fixed"]
    assert largest.formats == ("fp4_e2m1",) and largest.cells == 7182  # the largest fixed PE synthesized
    assert largest.lanes_by_bits == {2: 0, 4: 4, 8: 0, 16: 0}  # a fixed fp4 PE: 16 // 4 lanes, nothing else
    multi = rows["multi_format"]
    assert multi.cells == 7826 and "synthesized" in multi.how and multi.ecp5 == (4698, 547, 5)
    rec = rows["reconfigurable"]
    assert rec.lanes_by_bits == {2: 8, 4: 4, 8: 2, 16: 1} and rec.ecp5[:2] == (8633, 1010)
    # per 4-bit lane product: (12,504 / 4) / (7,826 / 1)
    assert rec.per_kcell(4) / multi.per_kcell(4) == pytest.approx(4 * 7826 / 12504)


def test_mixpe_baseline_pe_count_fills_the_same_area():
    mixpe, base, pes, base_pes = compare.mixpe_designs("simd-1024", "int4", "int8", 128)
    assert mixpe["multiplier"] == "shift_add" and not mixpe["dequant"] and base["dequant"]
    assert pes == 1024 and base_pes == int(1024 * 5722 / 3366)  # synthesized cells per PE
