"""Run a sweep: plan, skip finished points, evaluate the rest on a backend, write the outputs."""
from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from archsim.dse._backends import make_backend
from archsim.dse._evaluate import Evaluate, simulate_task
from archsim.dse._hash import model_version, stable_hash
from archsim.dse._outputs import (
    columns, front_by_workload, summary_table, unpriced_cell, unpriced_notes, write_csv, write_plots,
)
from archsim.dse._lock import SweepLock
from archsim.dse._plan import Plan, Task, build_plan, feasible
from archsim.dse._preflight import preflight
from archsim.dse._spec import SweepSpec
from archsim.dse._store import ResultStore
from archsim.outputs import OutputDir


@dataclass
class SweepResult:
    """What a finished (or interrupted) sweep produced."""

    out_dir: Path
    rows: list[dict]
    fronts: dict[str, list[dict]]
    summary: str
    ran: int = 0  # points evaluated by this run
    reused: int = 0  # points found finished in results.jsonl
    elapsed_s: float = 0.0
    plots: list[Path] = field(default_factory=list)

    def failure_summary(self, top: int = 3) -> str:
        """The most common errors of failed points: ``"2 x RuntimeError: ...; 1 x ..."``."""
        reasons: dict[str, int] = {}
        for row in self.rows:
            if row["status"] == "error":
                reason = " ".join(str(row.get("error") or "unknown error").split())[:160]
                reasons[reason] = reasons.get(reason, 0) + 1
        ranked = sorted(reasons.items(), key=lambda kv: -kv[1])[:top]
        return "; ".join(f"{n} x {text}" for text, n in ranked)

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for row in self.rows:
            out[row["status"]] += 1
        return dict(out)


#: what a sweep writes (a folder holding only these and plots/*.png is a sweep's from before the marker)
SWEEP_FILES = ("results.jsonl", "results.csv", "pareto.csv")


def default_out_dir(spec: SweepSpec) -> Path:
    return Path("sim_out") / spec.name


def chunk_tasks(tasks: list[Task]) -> list[list[Task]]:
    """One chunk per arch configuration (all its workloads), in sweep order.

    With ``area: synth`` one chunk per RTL configuration (template params)
    instead, so one worker synthesizes each design once and the others never
    wait on or repeat it.
    """
    chunks: dict[Any, list[Task]] = {}
    for task in sorted(tasks, key=lambda t: t.index):
        group = stable_hash([task.arch.template, task.arch.params]) if task.area == "synth" else task.arch_index
        chunks.setdefault(group, []).append(task)
    return list(chunks.values())


def run_sweep(
    spec: SweepSpec,
    out_dir: str | Path | None = None,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    evaluate: Evaluate | None = None,
    plan: Plan | None = None,
    progress: bool = True,
    plots: bool = True,
    retry_errors: bool = False,
    log: Callable[[str], Any] | None = None,
) -> SweepResult:
    """Run every unfinished point of ``spec`` and write results.csv, pareto.csv, plots/.

    ``evaluate(task) -> metrics`` defaults to running ``archsim.simulate``;
    tests inject their own. Points already in ``<out>/results.jsonl`` (same
    configuration hash) are not run again; with ``retry_errors`` the failed
    ones are.
    """
    log = log or (lambda text: print(text, file=sys.stderr))
    start = time.perf_counter()
    plan = plan or build_plan(spec)
    runner = make_backend(backend, workers, address)
    if evaluate is None:
        preflight(spec, plan)  # a sweep-wide setting that fails every point: one error now
    out = Path(out_dir) if out_dir is not None else default_out_dir(spec)
    owned = OutputDir(out, "sweep", legacy=SWEEP_FILES)  # never a folder holding the user's own files
    evaluate = evaluate or simulate_task
    by_key = {task.key: task for task in plan.tasks}
    version = model_version()

    ran = 0
    with SweepLock(owned), ResultStore(owned.own("results.jsonl")) as store:
        if store.skipped:
            lines = ", ".join(str(n) for n, _ in store.skipped[:5]) + (", ..." if len(store.skipped) > 5 else "")
            log(f"{store.path}: skipped {len(store.skipped)} unreadable line(s) ({lines}; first {store.skipped[0][1]}); "
                "they stay in the file, and their points run again")
        todo = [t for t in plan.tasks if t.key not in store or (retry_errors and store.records[t.key]["status"] != "ok")]
        reused = len(plan.tasks) - len(todo)
        if reused:
            log(f"resuming {spec.name}: {reused} of {len(plan.tasks)} points already in {store.path}")
        if plan.skipped:
            pruned = sum(1 for s in plan.skipped if s.status == "pruned")
            invalid = len(plan.skipped) - pruned
            log(f"{spec.name}: not simulated: {pruned} points pruned by area constraints, {invalid} invalid configurations")

        bar = None
        if todo:
            from tqdm import tqdm

            tqdm.monitor_interval = 0  # no monitor thread: workers are forked
            bar = tqdm(total=len(todo), desc=spec.name, unit="pt", file=sys.stderr, disable=not progress,
                       dynamic_ncols=True, smoothing=0.1)
        errors = 0
        interrupted = False
        stream = runner.run(evaluate, chunk_tasks(todo))
        try:
            for outcomes in stream:
                for outcome in outcomes:
                    task = by_key[outcome["key"]]
                    record = {
                        "key": task.key,
                        "index": task.index,
                        "workload": task.workload.label,
                        "config": dict(task.config),
                        "status": outcome["status"],
                        "metrics": outcome["metrics"],
                        "error": outcome["error"],
                        "elapsed_s": outcome["elapsed_s"],
                        "model_version": version,
                    }
                    store.append(record)
                    ran += 1
                    errors += outcome["status"] != "ok"
                if bar is not None:
                    bar.update(len(outcomes))
                    if errors:
                        bar.set_postfix(errors=errors, refresh=False)
        except (KeyboardInterrupt, SystemExit):
            interrupted = True
            if bar is not None:
                bar.close()
                bar = None
            stream.close()  # ends the workers now
            log(f"{spec.name}: stopped after {ran} of {len(todo)} points; the finished ones are kept in "
                f"{store.path}; run the same command again to resume")
            raise
        finally:
            stream.close()
            if bar is not None:
                bar.close()
            result = _finish(spec, plan, store, owned, plots and not interrupted)
            result.ran, result.reused = ran, reused
            result.elapsed_s = time.perf_counter() - start
    return result


def _finish(spec: SweepSpec, plan: Plan, store: ResultStore, out: OutputDir, plots: bool) -> SweepResult:
    rows = collect_rows(spec, plan, store)
    fronts = front_by_workload(rows, spec)
    front_keys = {r["key"] for front in fronts.values() for r in front}
    for row in rows:
        row["on_front"] = row["key"] in front_keys
    cols = columns(spec, plan.axis_keys)
    write_csv(out, "results.csv", rows, cols)
    write_csv(out, "pareto.csv", [r for front in fronts.values() for r in front], cols)
    written = write_plots(out, rows, fronts) if plots else []
    summary = summary_table(spec, rows, fronts, plan.axis_keys, unpriced_notes(plan.tasks + plan.skipped))
    return SweepResult(out_dir=out.path, rows=rows, fronts=fronts, summary=summary, plots=written)


def collect_rows(spec: SweepSpec, plan: Plan, store: ResultStore) -> list[dict]:
    """One row per point of the current plan that is finished or skipped, in sweep order."""
    rows = []
    for task in plan.tasks:
        record = store.records.get(task.key)
        if record is None:
            continue  # not run (interrupted)
        metrics = record.get("metrics") or {}
        row = {"index": task.index, "workload": task.workload.label, **dict(task.config)}
        row.update({"status": record["status"], **metrics})
        row["area_mm2"] = metrics.get("area_mm2", task.area_mm2)
        row["area_unpriced"] = unpriced_cell(task.area_unpriced)
        row["feasible"] = record["status"] == "ok" and feasible(row, spec.constraints)
        row.update({"error": record.get("error", ""), "elapsed_s": record.get("elapsed_s"), "key": task.key})
        rows.append(row)
    for skipped in plan.skipped:
        rows.append({
            "index": skipped.index, "workload": skipped.workload.label, **dict(skipped.config),
            "status": skipped.status, "area_mm2": skipped.area_mm2, "area_unpriced": unpriced_cell(skipped.area_unpriced),
            "feasible": False, "error": skipped.reason,
            "key": "",
        })
    rows.sort(key=lambda r: r["index"])
    return rows
