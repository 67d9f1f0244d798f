"""ECP5 resources and Fmax of the systolic RTL (yosys synth_ecp5 + nextpnr-ecp5, 85k, out of context).

Default: the 8x8 int8 array as shipped (double-buffered preload, the ECP5 target's options:
one MULT18X18D per PE, LUT-RAM output buffer), WS and OS, with mult_pipeline_stages 0 (the
presets' default) and 1. Target: >= 150 MHz with one DSP per MAC.

``--wrap`` (repeatable) picks what surrounds the design: ``none`` (the bare engine; out of context
nextpnr does not time paths from its input ports or to its output ports), ``regs`` (every port
behind a register, rtl/lib/port_regs.py: Fmax includes the port paths) or ``axi`` (the AXI wrapper
of ``archsim rtl generate --wrapper axi``).

Usage: python bench/bench_rtl_synth.py [--rows 8] [--cols 8] [--dataflow ws --dataflow os]
       [--preload double_buffered] [--pipe 0 --pipe 1] [--multiplier inferred] [--wrap none --wrap regs --wrap axi]
       [--no-cache] [--json F]
Each place-and-route takes 3-10 minutes on a shared 2-core machine (results are cached).
"""
from __future__ import annotations

import argparse
import json
import time

from archsim.templates.systolic import SystolicParams
from rtl.generate import design_for, target_options
from rtl.synth import synthesize_verilog

WRAPS = ("none", "regs", "axi")


def wrapped_verilog(params, options, wrap: str) -> tuple[str, str, dict]:
    """(Verilog, top module, configuration) of the design of ``params`` inside ``wrap``."""
    design = design_for(params, {**target_options(params, "ecp5"), **(options or {})})
    if wrap == "axi":
        from rtl.lib.axi_design import axi_wrapped

        design = axi_wrapped(design)
    if wrap == "regs":
        from rtl.lib.port_regs import port_regs_top

        return (*port_regs_top(design), design.config_dict())
    return design.verilog(), design.toplevel, design.config_dict()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--cols", type=int, default=8)
    ap.add_argument("--dataflow", action="append", choices=["ws", "is", "os"])
    ap.add_argument("--preload", default="double_buffered", choices=["serial", "double_buffered"])
    ap.add_argument("--pipe", type=int, action="append", choices=[0, 1], help="mult_pipeline_stages")
    ap.add_argument("--multiplier", choices=["inferred", "ecp5_dsp"], help="default: the ECP5 target's choice")
    ap.add_argument("--wrap", action="append", choices=WRAPS, help="none (default), regs or axi")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per tool run")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="write all results as JSON")
    args = ap.parse_args()
    options = {"multiplier": args.multiplier} if args.multiplier else None
    rows = []
    for pipe in args.pipe or [0, 1]:
        for df, wrap in [(df, w) for df in args.dataflow or ["ws", "os"] for w in args.wrap or ["none"]]:
            params = SystolicParams(rows=args.rows, cols=args.cols, dataflow=df, preload=args.preload,
                                    mult_pipeline_stages=pipe)
            t0 = time.perf_counter()
            verilog, top, config = wrapped_verilog(params, options, wrap)
            r = synthesize_verilog(verilog, top, target="ecp5", pnr=True, use_cache=not args.no_cache,
                                   timeout_s=args.timeout)
            r["params"], r["wrap"] = config, wrap
            r["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(r)
            cp = r.get("critical_path", {})
            print(f"{args.rows}x{args.cols} {df} {args.preload} P={pipe} {r['params']['multiplier']:<8} wrap={wrap:<4} "
                  f"LUT4 {r['luts']:>5}  FF {r['ffs']:>5}  CCU2C {r['carry']:>4}  DSP {r['dsps']:>3}  "
                  f"BRAM {r['bram']:>2}  Fmax {r['fmax_mhz']:6.1f} MHz  (critical: {cp.get('from')} -> "
                  f"{cp.get('to')}, logic {cp.get('logic_ns')} ns, routing {cp.get('routing_ns')} ns; "
                  f"{r['seconds']} s)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
