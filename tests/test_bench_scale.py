"""bench/bench_scale.py's fit rule against nextpnr-ecp5's own count: its "Total LUT4s" before packing
includes a slice's LUT4s under each carry cell and each LUT RAM, so yosys' LUT4 alone understates."""
from __future__ import annotations

import bench.bench_scale as scale

# lut-m2n8k4-ecp5's all-formats build (docs/rtl.md "Scale", 2026-11-27): yosys 0.23's counts, and
# what nextpnr-ecp5 0.11.1 printed for that netlist: "Total LUT4s: 104783/83640 125%"
PRESET_COUNTS = {"luts": 86_209, "carry": 8_519, "ffs": 8_668, "dsps": 1, "bram": 46, "lutram": 256}
NEXTPNR_TOTAL_LUT4 = 104_783
# the LUT core N48 (bench_scale's "lut W2xA8 M2 N48 K4", same day): nextpnr printed "Total LUT4s: 40589/83640 48%"
N48_COUNTS = {"luts": 32_563, "carry": 3_629, "ffs": 20_424, "dsps": 1, "bram": 183, "lutram": 128}


def test_lut4_equivalents_match_nextpnrs_total():
    assert scale.lut4_equivalents(PRESET_COUNTS) == NEXTPNR_TOTAL_LUT4
    assert scale.fits(PRESET_COUNTS) == (False, "lut4 125%")
    assert scale.lut4_equivalents(N48_COUNTS) == 40_589
    assert scale.fits(N48_COUNTS) == (True, "bram 88%")  # 183 / 208 DP16KD binds, as nextpnr's 87 %


def test_lut_ram_can_tip_a_design_over_the_device():
    # 80,000 LUT4 + 2 x 1,000 CCU2C = 82,000 (98 %) fits without LUT RAM; 300 DPR16X4 add 1,800 -> 83,800
    counts = {"luts": 80_000, "carry": 1_000, "ffs": 10, "dsps": 0, "bram": 0}
    assert scale.fits(counts) == (True, "lut4 98%")
    assert scale.fits({**counts, "lutram": 300}) == (False, "lut4 100%")
    assert scale.lut4_equivalents({**counts, "lutram": 300}) == 83_800
