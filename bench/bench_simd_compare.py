"""SIMD PE comparisons set up best against best: XR-NPE style (reconfigurable vs one fixed PE and vs a
multi-format PE) and MixPE vs its dequantize-then-fp16 baseline at equal PE-array area.

    python bench/bench_simd_compare.py                  # both tables (a few seconds)
    python bench/bench_simd_compare.py --arch simd-edge --seq 256

Areas are synthesized PEs (archsim/templates/simd/area.py: yosys generic 4-LUT
cells, one PE, lane_bits 16, pipeline_cycles 10; ECP5 LUT4 / FF from
docs/simd_rtl.md). The MixPE rows run Llama-3-8B (prefill at --seq tokens and
decode at KV --seq) on --arch with the MixPE design's PE count and the baseline's
PE count scaled to the same PE-array area (buffers, DRAM, clock equal).
"""
from __future__ import annotations

import argparse
import time

from archsim.numerics import bits_of
from archsim.validate._simd_compare import ECP5_PC10, mixpe_vs_dequant, xrnpe_rows


def xrnpe_table() -> None:
    rows = xrnpe_rows()
    rec = rows["reconfigurable"]
    print("XR-NPE style: one PE, lane_bits 16, pipeline_cycles 10 (generic cells: yosys synth -lut 4; "
          "lane products per cycle per 1000 cells at each operand width)")
    print()
    print("| PE | generic cells | ECP5 LUT4 / FF / DSP | 2-bit | 4-bit | 8-bit | 16-bit |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows.values():
        dens = " | ".join(f"{row.lanes_by_bits[b]} ({row.per_kcell(b):.2f})" for b in (2, 4, 8, 16))
        lut, ff, dsp = row.ecp5
        print(f"| {row.label} | {row.cells:,.0f} | {lut:,} / {ff:,} / {dsp} | {dens} |")
    print()
    for key in ("largest_fixed", "multi_format"):
        other = rows[key]
        gains = ", ".join(f"{b}-bit {rec.per_kcell(b) / other.per_kcell(b):.2f}x" for b in (2, 4, 8, 16)
                          if other.per_kcell(b))
        print(f"reconfigurable / {other.label}: cells {rec.cells / other.cells:.2f}x, "
              f"ECP5 LUT4 {rec.ecp5[0] / other.ecp5[0]:.2f}x, FF {rec.ecp5[1] / other.ecp5[1]:.2f}x; "
              f"lane products per cycle per area: {gains}")
    fixed = {f: v for f, v in ECP5_PC10.items() if f != "reconfigurable"}
    lut, ff = ECP5_PC10["reconfigurable"][:2]
    print(f"ECP5 (docs/simd_rtl.md): reconfigurable {lut:,} LUT4 / {ff:,} FF = "
          f"{lut / max(v[0] for v in fixed.values()):.2f}-{lut / min(v[0] for v in fixed.values()):.2f}x the LUT4 and "
          f"{ff / max(v[1] for v in fixed.values()):.2f}-{ff / min(v[1] for v in fixed.values()):.2f}x the FFs "
          f"of one fixed PE")


def mixpe_table(arch: str, seq: int) -> None:
    print()
    print(f"MixPE vs dequantize-then-fp16 at equal PE-array area ({arch}, group 128, Llama-3-8B)")
    print()
    print("| pair | MixPE multiplier | phase | MixPE PEs (cells/PE) | baseline PEs (cells/PE) | MixPE cycles | "
          "baseline cycles | speedup | MixPE energy (uJ) | baseline energy (uJ) | energy reduction |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, a in (("int4", "int8"), ("int4", "fp16")):
        for mult in ("shift_add", "array"):
            for phase in ("prefill", "decode"):
                r = mixpe_vs_dequant(arch, w, a, 128, "llama3_8b", phase, seq, multiplier=mult)
                pair = f"W{bits_of(w)}A{bits_of(a)} ({w} x {a})"
                print(f"| {pair} | {mult} | {phase} {seq} | {r.mixpe_pes:,} ({r.mixpe_pe_cells:,.0f}) | "
                      f"{r.dequant_pes:,} ({r.dequant_pe_cells:,.0f}) | {r.mixpe_cycles:,} | {r.dequant_cycles:,} | "
                      f"{r.speedup:.2f}x | {r.mixpe_energy_pj / 1e6:,.1f} | {r.dequant_energy_pj / 1e6:,.1f} | "
                      f"{r.energy_reduction:.2f}x |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="simd-1024")
    ap.add_argument("--seq", type=int, default=512, help="prefill tokens and decode KV length")
    args = ap.parse_args()
    t0 = time.time()
    xrnpe_table()
    mixpe_table(args.arch, args.seq)
    print(f"\ntotal {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
