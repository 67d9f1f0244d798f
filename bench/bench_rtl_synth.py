"""ECP5 resources and Fmax of the systolic RTL (yosys synth_ecp5 + nextpnr-ecp5, 85k, out of context).

Default: the 8x8 int8 array as shipped (double-buffered preload, the ECP5 target's options:
one MULT18X18D per PE, LUT-RAM output buffer), WS and OS, with mult_pipeline_stages 0 (the
presets' default) and 1. Target: >= 150 MHz with one DSP per MAC.

Usage: python bench/bench_rtl_synth.py [--rows 8] [--cols 8] [--dataflow ws --dataflow os]
       [--preload double_buffered] [--pipe 0 --pipe 1] [--multiplier inferred] [--no-cache] [--json F]
Each place-and-route takes 3-10 minutes on a shared 2-core machine (results are cached).
"""
from __future__ import annotations

import argparse
import json
import time

from archsim.templates.systolic import SystolicParams
from rtl.synth import synthesize


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--cols", type=int, default=8)
    ap.add_argument("--dataflow", action="append", choices=["ws", "is", "os"])
    ap.add_argument("--preload", default="double_buffered", choices=["serial", "double_buffered"])
    ap.add_argument("--pipe", type=int, action="append", choices=[0, 1], help="mult_pipeline_stages")
    ap.add_argument("--multiplier", choices=["inferred", "ecp5_dsp"], help="default: the ECP5 target's choice")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="write all results as JSON")
    args = ap.parse_args()
    options = {"multiplier": args.multiplier} if args.multiplier else None
    rows = []
    for pipe in args.pipe or [0, 1]:
        for df in args.dataflow or ["ws", "os"]:
            params = SystolicParams(rows=args.rows, cols=args.cols, dataflow=df, preload=args.preload,
                                    mult_pipeline_stages=pipe)
            t0 = time.perf_counter()
            r = synthesize(params, target="ecp5", pnr=True, options=options, use_cache=not args.no_cache)
            r["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(r)
            cp = r.get("critical_path", {})
            print(f"{args.rows}x{args.cols} {df} {args.preload} P={pipe} {r['params']['multiplier']:<8} "
                  f"LUT4 {r['luts']:>5}  FF {r['ffs']:>5}  CCU2C {r['carry']:>4}  DSP {r['dsps']:>3}  "
                  f"BRAM {r['bram']:>2}  Fmax {r['fmax_mhz']:6.1f} MHz  (critical: {cp.get('from')} -> "
                  f"{cp.get('to')}, logic {cp.get('logic_ns')} ns, routing {cp.get('routing_ns')} ns; "
                  f"{r['seconds']} s)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
