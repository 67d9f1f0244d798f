"""Sanity check of the ASIC presets' clocks: the critical path of each preset's own RTL in 4-input
LUT levels (``archsim rtl synth --target generic``: yosys ``synth -flatten -lut 4`` + ``ltp -noff``)
against the clock the preset claims, by the rule ``rtl.synth.LUT4_LEVELS_PER_NS`` (10 LUT4 levels
per ns; its source is in docs/rtl.md, "Lint" section's neighbour "logic levels").

Each preset is synthesized at a reduced size that keeps its datapath (the PE, lane, bank unit or
table unit the preset describes, with the preset's formats and pipeline depths): the path through
one datapath element does not grow with the array, while the array-level muxes and counters grow
by about one level per doubling, so the reduced size is stated beside each row and the verdict is
a bound from below on the full design's levels. An order-of-magnitude check, not a sign-off.

Flows: ``rtl.synth.synthesize_verilog`` (target generic) for every template but attention, whose
array runs yosys' generic flow without the SAT ``share`` pass (``rtl.attention.synth``: with it the
pass does not finish); the LUT core maps its shifters first (``premap_shifts``, as
bench/bench_lut_synth.py does). ``--native`` runs Debian's yosys 0.23 (``ARCHSIM_YOSYS=native``:
faster, no 4 GiB limit; its LUT mapping differs a little from the pinned YoWASP 0.70's).

Usage: python bench/bench_clock_claims.py [--only PRESET ...] [--native] [--timeout 900] [--json F]
"""
from __future__ import annotations

import argparse
import json
import os
import time

from archsim.spec import load_arch
from rtl.generate import design_for, target_options
from rtl.synth import LUT4_LEVELS_PER_NS, _tool_version, synthesize_verilog

#: preset -> the reduced size synthesized (overrides of its params), keeping its datapath
REDUCED = {
    "systolic-32x32-ws": {"rows": 4, "cols": 4},
    "systolic-32x32-os": {"rows": 4, "cols": 4},
    "systolic-128x128-ws": {"rows": 4, "cols": 4},
    "systolic-16x16-os-tpe": {"rows": 4, "cols": 4},
    "tpuv1-256x256": {"rows": 4, "cols": 4},
    "scalesim-32x32-ws": {"rows": 4, "cols": 4},
    "scalesim-32x32-os": {"rows": 4, "cols": 4},
    "scalesim-32x32-is": {"rows": 4, "cols": 4},
    "scalesim-128x128-ws": {"rows": 4, "cols": 4},
    "scalesim-128x128-os": {"rows": 4, "cols": 4},
    "scalesim-128x128-is": {"rows": 4, "cols": 4},
    "simd-edge": {"pes": 1},
    "simd-1024": {"pes": 1},
    "bitmod-simd": {"pes": 1},
    # all 15 W x A pairs at tile_n 8 (480 s) and ternary x {int8, fp16, bf16} at tile_n 2 (600 s) did
    # not finish: the default pair alone, ternary x int8 (a bound from below: the A16 modes add the
    # fp32 precompute and accumulate paths)
    "lut-m2n64k4": {"tile_n": 2, "weight_formats": ["ternary"], "activation_formats": ["int8"]},
    "lut-baseline-mac-2x128-a8": {"cols": 8},
    "lut-baseline-mac-2x128-a16": {"cols": 8},
    "fusemax-edge": {"rows": 1, "cols": 1, "pe1d": 1},
    "fusemax-cloud": {"rows": 1, "cols": 1, "pe1d": 1},
    "spatten": {"cols": 1, "pe1d": 1},
    "pim-gpt-gddr6": {},
    "pim-gddr6": {},
    "pim-hbm2": {},
}


def check(preset: str, timeout_s: float) -> dict:
    overrides = REDUCED[preset]
    arch = load_arch(preset, {k: v for k, v in overrides.items()})
    # the design's own choice for the flow: the PIM unit without the host engine's DRAM-array memory
    design = design_for(arch, target_options(arch, "generic"))
    t0 = time.perf_counter()
    if arch.template == "attention":  # yosys' share pass does not finish on the attention array
        from rtl.attention.synth import synthesize_no_share

        res = synthesize_no_share(design.verilog(), design.toplevel, "generic", timeout_s=timeout_s)
        res["tools"] = {"yosys": _tool_version("yosys")}
    else:
        res = synthesize_verilog(design.verilog(), design.toplevel, target="generic", timeout_s=timeout_s,
                                 premap_shifts=arch.template == "lut")
    levels = res.get("logic_levels")
    allowed_mhz = res.get("levels_clock_mhz")
    return {"preset": preset, "reduced": overrides, "clock_mhz": arch.clock_mhz, "luts": res.get("luts"),
            "logic_levels": levels, "levels_clock_mhz": allowed_mhz,
            "claim_passes": bool(allowed_mhz and allowed_mhz >= arch.clock_mhz),
            "wall_s": round(time.perf_counter() - t0, 1), "tools": res.get("tools")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=sorted(REDUCED), help="presets to check (default: all)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per yosys run")
    ap.add_argument("--native", action="store_true", help="Debian's native yosys (ARCHSIM_YOSYS=native)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    if args.native:
        os.environ["ARCHSIM_YOSYS"] = "native"
    print(f"rule: {LUT4_LEVELS_PER_NS:g} LUT4 levels per ns (rtl.synth.LUT4_LEVELS_PER_NS)")
    print(f"{'preset':28s} {'reduced to':28s} {'claim MHz':>9s} {'LUT4':>7s} {'levels':>6s} "
          f"{'rule MHz':>8s} {'verdict':>8s} {'wall s':>7s}")
    rows = []
    for preset in args.only or list(REDUCED):
        try:
            row = check(preset, args.timeout)
        except Exception as err:  # noqa: BLE001 - one preset's failure is a row, the rest still run
            print(f"{preset:28s} failed: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
            continue
        rows.append(row)
        reduced = ",".join(f"{k}={v}" for k, v in row["reduced"].items()) or "as shipped (one bank unit)"
        verdict = "passes" if row["claim_passes"] else "FAILS"
        print(f"{preset:28s} {reduced:28s} {row['clock_mhz']:9g} {row['luts'] or 0:7d} "
              f"{row['logic_levels'] or 0:6d} {row['levels_clock_mhz'] or 0:8g} {verdict:>8s} {row['wall_s']:7.1f}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
