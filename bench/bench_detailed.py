"""Speed of the systolic detailed (cycle-by-cycle) model, in simulated cycles per second.

Runs one long tile per dataflow on a 32x32 array (int8 x int8 -> int32) and
prints cycles/s; the target is >= 100k cycles/s.

Usage: python bench/bench_detailed.py [--rows 32] [--cols 32] [--stream 20000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from archsim.templates.systolic import SystolicParams, SystolicTile
from archsim.templates.systolic.detailed import SystolicArrayDetailed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--cols", type=int, default=32)
    ap.add_argument("--stream", type=int, default=20000, help="length of the streamed dimension")
    ap.add_argument("--repeat", type=int, default=3, help="best of N")
    args = ap.parse_args()
    R, C, S = args.rows, args.cols, args.stream
    rng = np.random.default_rng(0)
    for df in ("ws", "is", "os"):
        for P in (0, 1):
            p = SystolicParams(rows=R, cols=C, dataflow=df, mult_pipeline_stages=P)
            tile = {"ws": SystolicTile("ws", S, R, C), "is": SystolicTile("is", C, R, S),
                    "os": SystolicTile("os", R, S, C)}[df]
            ops = {"input": rng.integers(-128, 128, (tile.m, tile.k)),
                   "weight": rng.integers(-128, 128, (tile.k, tile.n))}
            best = 0.0
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                _, cycles = SystolicArrayDetailed(p).run_tile(tile, ops)
                best = max(best, cycles / (time.perf_counter() - t0))
            print(f"{df} {R}x{C} mult_pipeline_stages={P}: {cycles} cycles, {best:,.0f} cycles/s")


if __name__ == "__main__":
    main()
