"""Sweep throughput: design points per minute for ResNet-50 on the local backend.

Runs a random sample of the shipped ``resnet50-array-dataflow-buffer`` sweep
(every point a distinct arch: array shape x dataflow x buffer size) into a
temporary folder with a fresh results file, and prints points per minute of
the run phase (workers evaluating points) and of the whole command (planning
included), and the workers' CPU time per point (what the rate would be on
otherwise idle cores; the machine is often shared)::

    python bench/bench_sweep.py [--points 60] [--workers 2] [--seed 1]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from archsim.dse import Sample, build_plan, load_sweep, run_sweep  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=60, help="points sampled from the sweep (default 60)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sweep", default="resnet50-array-dataflow-buffer")
    args = parser.parse_args(argv)

    spec = load_sweep(args.sweep)
    spec = dataclasses.replace(spec, sample=Sample(n=args.points, seed=args.seed), constraints=())
    start = time.perf_counter()
    children_cpu = _children_cpu_s()
    plan = build_plan(spec)
    planned = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        result = run_sweep(spec, out, plan=plan, workers=args.workers, plots=False, progress=False, log=lambda _: None)
    end = time.perf_counter()
    worker_cpu = _children_cpu_s() - children_cpu  # pool workers are reaped at the end of the run
    points = result.ran
    run_s = end - planned
    errors = result.counts.get("error", 0)
    print(f"sweep {spec.name}: {points} points ({errors} failed) on {args.workers} workers")
    print(f"plan: {planned - start:.2f} s; run: {run_s:.2f} s")
    print(f"design points per minute: {60 * points / run_s:.0f} (run phase), "
          f"{60 * points / (end - start):.0f} (including planning)")
    if points and worker_cpu > 0:
        per_point = worker_cpu / points
        print(f"worker CPU per point: {per_point * 1e3:.0f} ms -> {60 * args.workers / per_point:.0f} points per minute "
              f"on {args.workers} otherwise idle cores (load average now {os.getloadavg()[0]:.1f})")
    return 0


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
