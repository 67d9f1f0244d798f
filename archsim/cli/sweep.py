"""``archsim sweep``: design-space exploration over an arch's parameters.

Example::

    archsim sweep resnet50-array-dataflow-buffer            # a shipped sweep, by name
    archsim sweep my_sweep.yaml --workers 2 --out sim_out/mine
    archsim sweep my_sweep.yaml --backend ray --address ray://head:10001

Each finished point is appended to ``<out>/results.jsonl`` as it completes, so
an interrupted sweep resumes where it stopped when run again; at the end the
command writes ``results.csv``, ``pareto.csv`` and ``plots/`` and prints the
best point per objective. The sweep spec format is in ``docs/sweeps.md``.
"""
from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="explore a design space: run a sweep spec, write results, the Pareto front and plots",
        description="Run every design point of a sweep spec (a YAML file or a shipped sweep name; see "
        "`archsim presets`) on a local process pool or Ray. Finished points are appended to "
        "<out>/results.jsonl, so rerunning an interrupted sweep resumes it.",
    )
    p.add_argument("spec", metavar="SPEC.yaml|NAME", help="sweep spec file or shipped sweep name")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="local process pool (default) or Ray (pip install 'archsim[ray]')")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes / Ray actors (default: the cores available)")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster to join (with --backend ray; default: start a local one)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: sim_out/<sweep name>)")
    p.add_argument("--retry-errors", action="store_true", help="run again the points that failed in an earlier run")
    p.add_argument("--dry-run", action="store_true", help="check the spec and list the points; run nothing")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", "-q", "--quiet", action="store_true", dest="no_progress",
                   help="no progress bar on stderr (it shows only on a terminal anyway)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from archsim.dse import build_plan, default_out_dir, load_sweep, make_backend, run_sweep
    from archsim.dse._outputs import unpriced_cell, unpriced_notes

    spec = load_sweep(args.spec)
    make_backend(args.backend, args.workers, args.address)  # option errors before any work
    plan = build_plan(spec)
    if args.out is not None and not args.out.strip():
        from archsim.outputs import OutputError

        raise OutputError("--out: expected a folder name, got an empty one")
    out = args.out or default_out_dir(spec)
    if args.dry_run:
        print(f"sweep {spec.name}: {len(plan.tasks)} points to simulate "
              f"({plan.arch_points} arch points x {len(spec.workloads)} workloads, {len(plan.skipped)} not simulated)")
        for task in plan.tasks:
            config = " ".join(f"{k}={v}" for k, v in task.config)
            unpriced = f" (does not price {unpriced_cell(task.area_unpriced)})" if task.area_unpriced else ""
            print(f"  {task.index:>5}  {task.workload.label:<24} {config}  area={task.area_mm2:.4g} mm2{unpriced}  key={task.key}")
        for skipped in plan.skipped:
            config = " ".join(f"{k}={v}" for k, v in skipped.config)
            print(f"  {skipped.index:>5}  {skipped.workload.label:<24} {config}  {skipped.status}: {skipped.reason}")
        for line in unpriced_notes(plan.tasks + plan.skipped):
            print(line)
        return 0
    result = run_sweep(
        spec, out, backend=args.backend, workers=args.workers, address=args.address, plan=plan,
        progress=not args.no_progress and sys.stderr.isatty(), plots=not args.no_plots,
        retry_errors=args.retry_errors,
    )
    print(result.summary)
    print()
    print(f"{result.ran} points run, {result.reused} reused from results.jsonl, {result.elapsed_s:.1f} s; "
          f"results in {result.out_dir}/ (results.csv, pareto.csv, plots/)")
    failed = result.counts.get("error", 0)
    if failed:
        total = sum(result.counts.values())
        print(f"archsim: error: {failed} of {total} points failed ({result.failure_summary()}); details in results.csv; "
              "rerun with --retry-errors to try them again", file=sys.stderr)
        return 1
    return 0
