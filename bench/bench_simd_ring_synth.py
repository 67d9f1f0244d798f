"""ECP5 resources and Fmax of the SIMD PE's interleaved fp32 accumulator alone (``InterleavedSum``: the ring
adder and its reduction tree), every input registered as bench/bench_rtl_lib_synth.py wraps a unit
(yosys synth_ecp5 + nextpnr-ecp5, 85k, out of context). The rings are the pipelined PE's timing limit
(docs/simd_rtl.md), and one ring places and routes in minutes where a whole PE takes a quarter hour.

Usage: python bench/bench_simd_ring_synth.py [--slots 11] [--seed 1] [--timeout 900] [--workdir DIR [--path]]
(``ARCHSIM_YOSYS=native`` for the Debian yosys; one run at a time on a shared machine)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amaranth.back import verilog  # noqa: E402

from bench_rtl_lib_synth import InputRegistered, critical_path_steps  # noqa: E402
from rtl.simd.accumulate import InterleavedSum  # noqa: E402
from rtl.synth import synthesize_verilog  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, default=11, help="the ring's slots A (its adder's stages)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr seed")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per tool run (yosys, nextpnr)")
    ap.add_argument("--workdir", help="keep the run's files (nextpnr report) here; no cache")
    ap.add_argument("--path", action="store_true", help="print the critical path step by step (needs --workdir)")
    args = ap.parse_args(argv)
    text = verilog.convert(InputRegistered(InterleavedSum(args.slots)), name="lib_unit", emit_src=False)
    t0 = time.perf_counter()
    r = synthesize_verilog(text, "lib_unit", target="ecp5", pnr=True, seed=args.seed, timeout_s=args.timeout,
                           workdir=args.workdir, use_cache=args.workdir is None)
    c = r.get("critical_path") or {}
    print(f"InterleavedSum({args.slots}) seed {args.seed}: LUT4 {r['luts']}  FF {r['ffs']}  DSP {r['dsps']}  "
          f"BRAM {r['bram']}  Fmax {r['fmax_mhz']:.2f} MHz  ({time.perf_counter() - t0:.0f} s; {r['tools']})")
    if c:
        print(f"  critical path {c.get('from')} -> {c.get('to')}: {c.get('logic_ns')} ns logic, "
              f"{c.get('routing_ns')} ns routing")
    if args.path and args.workdir:
        print("\n".join(critical_path_steps(Path(args.workdir) / "report.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
