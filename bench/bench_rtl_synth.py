"""ECP5 resources and Fmax of the systolic RTL (yosys synth_ecp5 + nextpnr-ecp5, 85k, out of context).

Default: the 8x8 int8 weight-stationary array, once with inferred multipliers and
no product register (the naive array), once with the product register, and once
with MULT18X18D primitives using their input and output registers (what
``synthesize(target="ecp5")`` picks). Target: >= 150 MHz with one DSP per MAC.

Usage: python bench/bench_rtl_synth.py [--rows 8] [--cols 8] [--only ecp5_dsp] [--no-cache]
Each place-and-route takes a few minutes on a shared 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import time

from archsim.templates.systolic import SystolicParams
from rtl.synth import synthesize

VARIANTS = {
    "naive": ({"multiplier": "inferred"}, 0),
    "product_reg": ({"multiplier": "inferred"}, 1),
    "ecp5_dsp": ({"multiplier": "ecp5_dsp"}, 1),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--cols", type=int, default=8)
    ap.add_argument("--dataflow", default="ws")
    ap.add_argument("--only", choices=list(VARIANTS), action="append")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="write all results as JSON")
    args = ap.parse_args()
    rows = []
    for name in args.only or list(VARIANTS):
        options, pipe = VARIANTS[name]
        params = SystolicParams(rows=args.rows, cols=args.cols, dataflow=args.dataflow, preload="serial",
                                mult_pipeline_stages=pipe)
        t0 = time.perf_counter()
        r = synthesize(params, target="ecp5", pnr=True, options=options, use_cache=not args.no_cache)
        r["variant"], r["seconds"] = name, round(time.perf_counter() - t0, 1)
        rows.append(r)
        cp = r.get("critical_path", {})
        print(f"{args.rows}x{args.cols} {args.dataflow} {name:<12} LUT4 {r['luts']:>5}  FF {r['ffs']:>5}  "
              f"CCU2C {r['carry']:>4}  DSP {r['dsps']:>3}  BRAM {r['bram']:>2}  Fmax {r['fmax_mhz']:6.1f} MHz  "
              f"(critical: {cp.get('from')} -> {cp.get('to')}, logic {cp.get('logic_ns')} ns, "
              f"routing {cp.get('routing_ns')} ns; {r['seconds']} s)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
