"""Benchmark: ResNet-50 on the systolic-32x32-ws preset, end to end.

Prints wall time (cold: imports + workload + mapping + engine; warm: a second
run served by the mapper's and engine's memos), total cycles and peak memory.
Targets: < 0.5 s for the engine part, < 500 MB peak RSS.

    python3 bench/bench_resnet50.py [--arch NAME] [--workload NAME]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="systolic-32x32-ws")
    ap.add_argument("--workload", default="resnet50")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    import archsim
    import mappers
    import workloads
    from archsim.engine import clear_cache, run_program

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    result = archsim.simulate(args.workload, args.arch)
    t_cold = time.perf_counter() - t1

    # the parts separately, engine memo cleared so it simulates every distinct layer again
    arch = archsim.load_arch(args.arch)
    t2 = time.perf_counter()
    graph = workloads.load(args.workload)
    t3 = time.perf_counter()
    program = mappers.compile(graph, arch)
    t4 = time.perf_counter()
    clear_cache()
    run_program(program, arch)
    t5 = time.perf_counter()
    run_program(program, arch)
    t6 = time.perf_counter()

    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"{args.workload} on {args.arch}")
    print(f"  imports                  {t_import:8.3f} s")
    print(f"  simulate() cold          {t_cold:8.3f} s  (workload + mapping + engine)")
    print(f"  workload build           {t3 - t2:8.3f} s")
    print(f"  mapping (memoized)       {t4 - t3:8.3f} s")
    print(f"  engine, cold memo        {t5 - t4:8.3f} s  ({sum(len(l.commands) for l in program.layers):,} commands, "
          f"{len(program.layers)} layers)")
    print(f"  engine, warm memo        {t6 - t5:8.3f} s")
    print(f"  total cycles             {result.total_cycles:,}")
    print(f"  utilization              {100 * result.utilization:.2f} %")
    print(f"  peak RSS                 {rss_kib / 1024:8.1f} MB")
    ok = (t5 - t4) < 0.5 and rss_kib / 1024 < 500
    print("  targets (engine < 0.5 s, RSS < 500 MB):", "met" if ok else "MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
