"""Co-simulation speed: wall time to replay N tiles on the systolic RTL and check them.

Default: a 4x4 int8 WS array (double-buffered preload, product register), random
tiles with streamed length up to 16, N = 8, 32, 128, on Icarus (and Verilator
with --sim verilator). Build time (Verilog -> simulator) is reported apart; the
Verilog itself is cached after the first conversion.

Usage: python bench/bench_rtl_cosim.py [--rows 4] [--cols 4] [--sim icarus|verilator] [--tiles 8 32 128]
"""
from __future__ import annotations

import argparse
import tempfile
import time

from archsim.templates.systolic import SystolicParams
from rtl import cosim_items, design_for, run_cosim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--cols", type=int, default=4)
    ap.add_argument("--dataflow", default="ws")
    ap.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    ap.add_argument("--tiles", type=int, nargs="+", default=[8, 32, 128])
    args = ap.parse_args()
    params = SystolicParams(rows=args.rows, cols=args.cols, dataflow=args.dataflow, preload="double_buffered",
                            mult_pipeline_stages=1)
    t0 = time.perf_counter()
    design_for(params).verilog()
    print(f"Verilog of {args.rows}x{args.cols} {args.dataflow}: {time.perf_counter() - t0:.1f} s (cached after the first run)")
    with tempfile.TemporaryDirectory() as build:
        for n in args.tiles:
            items = cosim_items(params, "random", tiles=n, seed=n, max_stream=16)
            t0 = time.perf_counter()
            report = run_cosim(params, items, sim=args.sim, build_dir=build)
            wall = time.perf_counter() - t0
            cycles = sum(t.rtl_cycles or 0 for t in report.tiles)
            print(f"{args.sim}: {n:>4} tiles ({cycles} array cycles): {'PASS' if report.ok else 'FAIL'} "
                  f"in {wall:.1f} s (build {report.build_s:.1f} s, simulate+check {report.run_s:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
