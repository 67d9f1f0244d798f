"""Cost of the per-tile co-simulation progress: tiles/s with and without it.

Replays the same random tiles on the systolic RTL (Icarus, built once) in
alternating runs (ABBA order, so a drifting machine load cancels): without a progress callback (the driver's ``tile_done`` is
a no-op) and with one (each tile appends a line to a file that a thread in
this process polls, feeding a tqdm bar that writes to /dev/null, forced on).
Prints, per mode, the median tiles/s over the runs (``CosimReport.run_s``,
which includes the simulator's fixed start-up) and the ratio with / without.

    python3 bench/bench_cosim_progress.py [--size 4] [--tiles 8] [--reps 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4, help="N for an N x N array")
    ap.add_argument("--tiles", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5, help="runs per mode (alternating)")
    ap.add_argument("--sim", default="icarus")
    args = ap.parse_args(argv)

    from tqdm import tqdm

    from archsim.templates.systolic import SystolicParams
    from rtl import cosim_items, run_cosim

    params = SystolicParams(rows=args.size, cols=args.size, dataflow="ws")
    items = cosim_items(params, "random", tiles=args.tiles, seed=0)
    run_cosim(params, items, sim=args.sim)  # build once, outside the timing
    rates: dict[str, list[float]] = {"without": [], "with": []}
    updates = []
    with open(os.devnull, "w") as devnull:
        for rep in range(args.reps):
            for mode in (("without", "with") if rep % 2 == 0 else ("with", "without")):  # ABBA: drift cancels
                bar = tqdm(total=len(items), file=devnull, disable=False, unit="tile")

                def progress(stage, done, total, bar=bar):
                    if stage == "run":
                        updates.append(done)
                        bar.update(done - bar.n)

                report = run_cosim(params, items, sim=args.sim, progress=progress if mode == "with" else None)
                bar.close()
                if not report.ok:
                    print(report.summary(), file=sys.stderr)
                    return 1
                rates[mode].append(len(items) / report.run_s)
    print(f"{args.size}x{args.size} systolic, {len(items)} tiles, {args.sim}, {args.reps} runs per mode "
          f"(run_s includes the simulator's start-up)")
    for mode, values in rates.items():
        print(f"  {mode:<8} progress: median {statistics.median(values):6.2f} tiles/s "
              f"(runs: {', '.join(f'{v:.2f}' for v in values)})")
    ratio = statistics.median(rates["with"]) / statistics.median(rates["without"])
    print(f"  with / without: {ratio:.3f}x  (progress reports seen: {len(updates)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
