"""ECP5 resources and Fmax of the PIM bank unit (yosys synth_ecp5 + nextpnr-ecp5, 85k, out of context).

Default: pim-gpt-gddr6's bank unit (16 bf16 lanes, 64 fp32 accumulators) with the default pipeline
depths; ``--set KEY=VALUE`` narrows it (e.g. ``--set column_bytes=8`` for 4 lanes, quicker to place),
``--mul-stages`` / ``--add-stages`` pick the MAC datapath's depths. ``--generic`` runs yosys's generic
4-LUT flow instead and reports the logic levels (no place and route). Prints one JSON line per run
(resources, Fmax, critical path, wall time).

Usage: python bench/bench_pim_synth.py [--arch pim-gpt-gddr6] [--set KEY=VALUE ...] [--mul-stages N]
       [--add-stages N] [--mul dsp|lut|dsp_reg] [--buffer inferred|ecp5_outreg] [--generic] [--workdir DIR] [--no-cache] [--freq MHZ] [--seed N]
"""
from __future__ import annotations

import argparse
import json
import time

from archsim.spec import load_arch
from rtl.generate import design_for
from rtl.synth import synthesize_verilog


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="pim-gpt-gddr6")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--mul-stages", type=int)
    ap.add_argument("--add-stages", type=int)
    ap.add_argument("--mul", choices=("dsp", "lut", "dsp_reg"), help="the bf16 multipliers' significand multiplier")
    ap.add_argument("--buffer", choices=("inferred", "ecp5_outreg"),
                    help="the input buffer: inferred, or DP16KD blocks with their output register")
    ap.add_argument("--generic", action="store_true", help="yosys generic flow: LUT4 count and logic levels")
    ap.add_argument("--workdir", help="keep the tools' files here")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per tool run")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed (its spread is about +-10 %%)")
    ap.add_argument("--freq", type=float, default=200.0, help="nextpnr's target clock (MHz)")
    ap.add_argument("--no-cache", action="store_true")
    args = ap.parse_args()
    arch = load_arch(args.arch, args.set)
    options = {k: v for k, v in (("mul_stages", args.mul_stages), ("add_stages", args.add_stages), ("mul", args.mul),
                                                 ("buffer", args.buffer))
               if v is not None}
    design = design_for(arch, {"top": "unit", **options})
    t0 = time.time()
    res = synthesize_verilog(design.verilog(), design.toplevel, target="generic" if args.generic else "ecp5",
                             pnr=not args.generic, use_cache=not args.no_cache, workdir=args.workdir,
                             timeout_s=args.timeout, freq_mhz=args.freq, seed=args.seed)
    cfg = design.config_dict()
    keep = ("luts", "ffs", "dsps", "bram", "lutram", "carry", "logic_levels", "levels_clock_mhz", "fmax_mhz", "pnr_seed",
            "critical_path")
    print(json.dumps({"arch": args.arch, "set": args.set, "mul_stages": cfg["mul_stages"],
                      "add_stages": cfg["add_stages"], "mac_latency": cfg["mac_latency"],
                      **{k: res.get(k) for k in keep if k in res}, "wall_s": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
