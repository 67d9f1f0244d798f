"""archsim vs SCALE-Sim v3 on the same topology, in one run: cycles of both and the speed ratio.

    python bench/bench_vs_scalesim.py [--topology vit_s] [--array 32] [--dataflow ws] [--venv /tmp/scalesim-venv]

SCALE-Sim runs in its own venv (``python3 -m venv /tmp/scalesim-venv &&
/tmp/scalesim-venv/bin/pip install scalesim==3.0.0 "numpy<2.3"``), in its
default stall-free mode, with ``save_disk_space=True`` (no trace files: its
fastest setting). archsim runs the matching ``scalesim-<N>x<N>-<df>`` preset.
Both are timed as whole processes-worth of work: SCALE-Sim's subprocess wall
time, and ``archsim.simulate`` cold (caches cleared, imports excluded).
SCALE-Sim's "Total Cycles" is the index of each layer's last cycle, one less
than archsim's cycle count; the table compares them in SCALE-Sim's convention.

SCALE-Sim's cost grows with its per-cycle demand matrices: a ResNet on a
32x32 array takes it tens of minutes and >10 GB, so the default is the ViT-S
GEMM topology.
"""
from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import archsim
import mappers
from archsim.engine import clear_cache

HERE = Path(__file__).resolve().parent
TOPOLOGIES = HERE.parent / "archsim" / "validate" / "scalesim_reference" / "topologies"


def _scalesim_runner():
    spec = importlib.util.spec_from_file_location("scalesim_reference", HERE / "scalesim_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run_one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="vit_s", help="a topology in archsim/validate/scalesim_reference/topologies")
    ap.add_argument("--array", type=int, default=32, help="square array size (32 or 128 have presets)")
    ap.add_argument("--dataflow", choices=["os", "ws", "is"], default="ws")
    ap.add_argument("--venv", type=Path, default=Path("/tmp/scalesim-venv"))
    args = ap.parse_args()
    topo = TOPOLOGIES / f"{args.topology}.csv"
    preset = f"scalesim-{args.array}x{args.array}-{args.dataflow}"

    mappers.clear_cache()
    clear_cache()
    t0 = time.perf_counter()
    result = archsim.simulate(str(topo), preset)
    archsim_s = time.perf_counter() - t0
    ours = [layer.cycles - 1 for layer in result.layers]  # SCALE-Sim's last-cycle-index convention

    if not (args.venv / "bin" / "python").exists():
        raise SystemExit(f"no SCALE-Sim venv at {args.venv}; see this script's docstring")
    run_one = _scalesim_runner()
    t0 = time.perf_counter()
    theirs = run_one(args.venv, topo, args.array, args.array, args.dataflow)
    scalesim_s = time.perf_counter() - t0

    print(f"{args.topology} on {args.array}x{args.array} {args.dataflow.upper()} ({preset})")
    print(f"{'layer':<16} {'archsim':>12} {'SCALE-Sim':>12}")
    for (name, their_cycles), our_cycles in zip(theirs, ours):
        mark = "" if our_cycles == their_cycles else "  <-- differs"
        print(f"{name:<16} {our_cycles:>12,} {their_cycles:>12,}{mark}")
    same = sum(a == b for a, (_, b) in zip(ours, theirs))
    print(f"total            {sum(ours):>12,} {sum(c for _, c in theirs):>12,}   "
          f"({same}/{len(theirs)} layers equal)")
    print(f"time: archsim {archsim_s:.3f} s, SCALE-Sim {scalesim_s:.1f} s -> archsim is "
          f"{scalesim_s / archsim_s:,.0f}x faster")


if __name__ == "__main__":
    main()
