"""Co-simulation throughput on Icarus and Verilator: tiles/s of the systolic RTL.

For each simulator and array size: build the design once (Verilog ->
simulator; Verilator compiles C++), then replay N random int8 WS tiles
(streamed length up to 16) and check them against archsim's models. Prints
the build time and, per run, tiles/s and RTL cycles/s of the simulate+check
part (``CosimReport.run_s``, which includes a fixed start-up of the
simulator and cocotb), the marginal tiles/s between the smallest and largest
tile count (start-up removed), and the Verilator/Icarus ratio of it.

    python3 bench/bench_cosim_sims.py [--sizes 4 8] [--tiles 64 256] [--sims icarus verilator]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8], help="N for N x N arrays")
    ap.add_argument("--tiles", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--sims", nargs="+", default=["icarus", "verilator"])
    args = ap.parse_args(argv)

    from archsim import fmt
    from archsim.templates.systolic import SystolicParams
    from rtl import cosim_items, design_for, run_cosim
    from rtl.cosim import simulator_missing_reason

    rows, rates = [], {}
    for n in args.sizes:
        params = SystolicParams(rows=n, cols=n, dataflow="ws", preload="double_buffered")
        design_for(params).verilog()  # convert once; not part of either simulator's time
        for sim in args.sims:
            missing = simulator_missing_reason(sim)
            if missing:
                print(f"{sim}: skipped ({missing})")
                continue
            with tempfile.TemporaryDirectory() as build:
                t0 = time.perf_counter()
                first = run_cosim(params, cosim_items(params, "random", tiles=4, seed=1, max_stream=16), sim=sim,
                                  build_dir=build)
                build_s = first.build_s
                for count in args.tiles:
                    items = cosim_items(params, "random", tiles=count, seed=count, max_stream=16)
                    report = run_cosim(params, items, sim=sim, build_dir=build)
                    cycles = sum(t.rtl_cycles or 0 for t in report.tiles)
                    rate = count / report.run_s
                    rates[(n, sim, count)] = (rate, report.run_s)
                    rows.append([f"{n}x{n}", sim, f"{build_s:.1f} s", count, "PASS" if report.ok else "FAIL",
                                 f"{report.run_s:.2f} s", f"{rate:,.0f}", f"{cycles / report.run_s:,.0f}"])
                    print(fmt.table([rows[-1]]), flush=True)
                del t0, first
    print()
    print(fmt.table(rows, header=["array", "simulator", "build", "tiles", "result", "run", "tiles/s", "cycles/s"]))
    lo, hi = min(args.tiles), max(args.tiles)
    for n in args.sizes:
        marginal = {}
        for sim in args.sims:
            a, b = rates.get((n, sim, lo)), rates.get((n, sim, hi))
            if a and b and hi > lo and b[1] > a[1]:
                marginal[sim] = (hi - lo) / (b[1] - a[1])
                print(f"{n}x{n} {sim}: {marginal[sim]:,.0f} tiles/s marginal ({lo} -> {hi} tiles, start-up removed)")
        if len(marginal) == 2 and "icarus" in marginal and "verilator" in marginal:
            print(f"{n}x{n}: Verilator {marginal['verilator'] / marginal['icarus']:.1f}x Icarus's marginal tiles/s")
    return 0 if all(r[4] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
