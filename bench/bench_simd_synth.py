"""Synthesis of the SIMD PE: one reconfigurable PE (every format, lanes 1x16 .. 8x2) versus
fixed-precision PEs of the same peak throughput (one datapath per format), on ECP5 and
yosys' generic 4-LUT flow, with Fmax from nextpnr-ecp5.

    python bench/bench_simd_synth.py                 # every format, ECP5 + generic + nextpnr
    python bench/bench_simd_synth.py --no-pnr        # resources only (faster)
    python bench/bench_simd_synth.py --formats int8 fp8_e4m3 --json out.json
    python bench/bench_simd_synth.py --no-fixed --targets ecp5 --keep-dir sim_out/pe   # keep netlist + logs,
                                                     # print the critical path step by step with its nets

Each design is one PE module ``archsim_simd_pe`` (rtl/simd/design.py) generated
from ``SimdParams(pes=1, lane_bits=16, formats=...)``: the reconfigurable PE has
every supported format on both sides (121 weight x activation modes); a fixed PE
has one format (``L = 16 // bits`` lanes, the reconfigurable PE's peak in that
format). Both carry the same group-scale path (int64 -> fp32, x scale, fp32 output
accumulator). Figures: LUT4 / TRELLIS_FF / MULT18X18D from ``synth_ecp5``, cells
and 4-LUTs from ``synth -flatten -lut 4``, Fmax post-route (LFE5U-85F, out of
context, seed 1). Results are cached by rtl/synth.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from archsim.templates.simd.params import SUPPORTED_FORMATS, SimdParams  # noqa: E402
from rtl.simd.design import PE_TOP, SimdConfig, SimdRtlOptions, pe_verilog  # noqa: E402
from rtl.synth import synthesize_verilog  # noqa: E402


def pe_params(formats: list[str], lane_bits: int = 16, multiplier: str = "array",
              pipeline_cycles: int = 4, dequant: bool = False, accumulators: int = 1,
              lane_stages: int = 0, rtl_multiplier: str = "dsp", scale_stages: int = 0) -> SimdParams:
    f = formats[0]
    return SimdParams(pes=1, lane_bits=lane_bits, formats=list(formats), multiplier=multiplier,
                      weight_format=f, activation_format=f, pipeline_cycles=pipeline_cycles, dequant=dequant,
                      accumulators=accumulators, lane_stages=lane_stages, rtl_multiplier=rtl_multiplier,
                      scale_stages=scale_stages)


def synth_pe(params: SimdParams, pnr: bool, targets=("ecp5", "generic"), dsp_blocks: str = "inferred",
             timeout_s: float = 3600.0, seed: int = 1, keep_dir: Path | None = None) -> dict:
    cfg = SimdConfig.from_params(params, SimdRtlOptions(multiplier=dsp_blocks))
    v = pe_verilog(cfg)
    t0 = time.perf_counter()
    kept = {"workdir": keep_dir, "use_cache": False} if keep_dir else {}
    ecp5 = (synthesize_verilog(v, PE_TOP, target="ecp5", pnr=pnr, timeout_s=timeout_s, seed=seed, **kept)
            if "ecp5" in targets else {})
    generic = synthesize_verilog(v, PE_TOP, target="generic") if "generic" in targets else {}
    return {"modes": len(cfg.modes), "lanes": cfg.max_lanes, "cuts": list(cfg.cuts), "ecp5": ecp5, "generic": generic,
            "seconds": round(time.perf_counter() - t0, 1)}


def critical_path_steps(report_json: Path) -> list[str]:
    """nextpnr's worst path of each clock (``--report`` JSON) one step a line: the step's kind and delay, the
    cell/port it leaves and enters, and for a routing step the net's name (yosys keeps the RTL's wire names:
    they say which unit the path is in)."""
    lines = []
    for path in json.loads(report_json.read_text()).get("critical_paths", []):
        lines.append(f"{path.get('from', '?')} -> {path.get('to', '?')}:")
        for step in path.get("path", []):
            src, dst = step.get("from", {}), step.get("to", {})
            net = f" net {step['net']}" if step.get("net") else ""
            lines.append(f"  {step['type']:<9} {step['delay']:6.3f} ns  {src.get('cell')}.{src.get('port')} -> "
                         f"{dst.get('cell')}.{dst.get('port')}{net}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", nargs="+", default=list(SUPPORTED_FORMATS),
                    help="formats of the fixed PEs (the reconfigurable PE has all of them)")
    ap.add_argument("--multiplier", default="array", choices=("array", "shift_add", "bit_serial"))
    ap.add_argument("--pipeline-cycles", type=int, default=4, dest="pipeline_cycles",
                    help="the PEs' pipeline_cycles (> 4 adds register stages, rtl/simd/design.py; default 4)")
    ap.add_argument("--accumulators", type=int, default=1,
                    help="interleaved fp32 partial sums (> 1: the pipelined PE, rtl/simd/pipelined.py; "
                         "--pipeline-cycles must cover its latency)")
    ap.add_argument("--lane-stages", type=int, default=0, dest="lane_stages",
                    help="register stages in each lane's multiply-and-round (pipelined PE only)")
    ap.add_argument("--rtl-multiplier", default="dsp", choices=("dsp", "lut"), dest="rtl_multiplier",
                    help="the pipelined PE's significand multipliers: DSP blocks or fabric")
    ap.add_argument("--scale-stages", type=int, default=0, dest="scale_stages",
                    help="register stages of the group-scale multiply (pipelined PE; 0: min(A, its most))")
    ap.add_argument("--dsp-blocks", default="inferred", choices=("inferred", "ecp5_dsp"), dest="dsp_blocks",
                    help="the pipelined PE's DSP products: inferred, or MULT18X18D instances with their "
                         "registers (what archsim rtl synth --target ecp5 builds)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per tool run (yosys, nextpnr)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr seed")
    ap.add_argument("--dequant", action="store_true",
                    help="dequantize-then-fp16 baseline PEs (weights x scale -> fp16 per lane, then an fp16 MAC)")
    ap.add_argument("--no-pnr", action="store_true", help="skip nextpnr (no Fmax)")
    ap.add_argument("--no-fixed", action="store_true", help="only the reconfigurable PE")
    ap.add_argument("--only-fixed", action="store_true", help="only the fixed-precision PEs")
    ap.add_argument("--targets", nargs="+", default=["ecp5", "generic"], choices=("ecp5", "generic"))
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep-dir", type=Path, dest="keep_dir",
                    help="keep each ECP5 run's files (top.v, netlist.json, yosys.log, nextpnr.log, report.json) "
                         "in DIR/<label> (bypasses the cache) and print its critical path step by step")
    args = ap.parse_args(argv)
    pnr = not args.no_pnr

    rows = []
    designs = [] if args.only_fixed else [("reconfigurable", list(args.formats))]
    if not args.no_fixed:
        designs += [(f"fixed {f}", [f]) for f in args.formats]
    for label, formats in designs:
        if args.multiplier == "bit_serial":
            formats_ok = [f for f in formats if f.startswith("int")] or formats
        else:
            formats_ok = formats
        try:
            r = synth_pe(pe_params(formats_ok, multiplier=args.multiplier, pipeline_cycles=args.pipeline_cycles,
                                   dequant=args.dequant, accumulators=args.accumulators,
                                   lane_stages=args.lane_stages, rtl_multiplier=args.rtl_multiplier,
                                   scale_stages=args.scale_stages),
                         pnr, args.targets, args.dsp_blocks, args.timeout, args.seed,
                         args.keep_dir / label.replace(" ", "_") if args.keep_dir else None)
        except ValueError as err:
            print(f"{label}: {err}", file=sys.stderr)
            continue
        r["label"], r["formats"] = label, formats_ok
        rows.append(r)
        print(f"  done {label:<22} ({r['seconds']} s)", file=sys.stderr)

    head = (f"{'PE':<22} {'modes':>5} {'lanes':>5} {'LUT4':>7} {'FF':>6} {'DSP':>4} {'CCU2C':>6} "
            f"{'Fmax MHz':>8} {'gen cells':>9} {'gen LUT4':>8}")
    print(f"SIMD PE synthesis ({args.multiplier} multiplier{', dequant' if args.dequant else ''}, lane_bits 16, pipeline_cycles {args.pipeline_cycles}, "
          f"accumulators {args.accumulators}, lane_stages {args.lane_stages}, scale_stages {args.scale_stages}, "
          f"{args.rtl_multiplier} multipliers ({args.dsp_blocks} DSP blocks), "
          f"one PE): ECP5 synth_ecp5"
          + (" + nextpnr-ecp5 (LFE5U-85F, out of context)" if pnr else "") + "; yosys generic synth -lut 4")
    print(head)
    print("-" * len(head))
    for r in rows:
        e, g = r["ecp5"], r["generic"]
        fmax = f"{e['fmax_mhz']:.1f}" if "fmax_mhz" in e else "-"
        print(f"{r['label']:<22} {r['modes']:>5} {r['lanes']:>5} {e.get('luts', '-'):>7} {e.get('ffs', '-'):>6} "
              f"{e.get('dsps', '-'):>4} {e.get('carry', '-'):>6} {fmax:>8} {g.get('cells', '-'):>9} "
              f"{g.get('luts', '-'):>8}")
        if "critical_path" in e:
            print(f"    critical path: {e['critical_path']}")
        if args.keep_dir and pnr and "ecp5" in args.targets:
            report = args.keep_dir / r["label"].replace(" ", "_") / "report.json"
            print("\n".join(f"    {line}" for line in critical_path_steps(report)))
    fixed = [r for r in rows if r["label"].startswith("fixed")]
    recon = next((r for r in rows if r["label"] == "reconfigurable"), None)
    if fixed and recon and all(r["ecp5"] for r in rows) and "luts" in recon["ecp5"]:
        # against one fixed PE (what a design would build instead), never against the sum of all of them
        largest = max(fixed, key=lambda r: r["ecp5"]["luts"])
        lut = [recon["ecp5"]["luts"] / max(1, r["ecp5"]["luts"]) for r in fixed]
        ff = [recon["ecp5"]["ffs"] / max(1, r["ecp5"]["ffs"]) for r in fixed]
        print(f"reconfigurable / largest fixed PE ({largest['label']}): "
              f"LUT4 {recon['ecp5']['luts'] / max(1, largest['ecp5']['luts']):.2f}x; against one fixed PE: "
              f"LUT4 {min(lut):.2f}-{max(lut):.2f}x, FF {min(ff):.2f}-{max(ff):.2f}x")
        for r in fixed:
            print(f"reconfigurable / {r['label']}: LUT4 {recon['ecp5']['luts'] / max(1, r['ecp5']['luts']):.2f}x, "
                  f"FF {recon['ecp5']['ffs'] / max(1, r['ecp5']['ffs']):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
