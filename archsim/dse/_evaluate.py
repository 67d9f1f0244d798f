"""Worker side: evaluate tasks (simulate a design point on a workload).

Workers are long-lived (a process of the pool, or a Ray actor) and keep their
caches warm across the points they run: workload graphs are built once per
worker, the mapper's layer cache and the engine's per-layer memo (each keyed
by the layer and the arch fields it reads, so points that differ only in, say,
the array shape share their vector-only layers) live as long as the worker,
and synthesized area figures are cached on disk. Tasks are handed out in
chunks of one arch configuration (all its workloads), so a configuration's
synthesis and arch model are built once.
"""
from __future__ import annotations

import math
import os
import time
import traceback
from functools import lru_cache
from typing import Any, Callable

from archsim.cache import cache_root
from archsim.dse._hash import stable_hash
from archsim.errors import ArchsimError

Evaluate = Callable[[Any], dict]


@lru_cache(maxsize=16)
def _graph(name: str, params: tuple, path: str) -> Any:
    import workloads

    return workloads.load(path or name, **dict(params))


def simulate_task(task: Any) -> dict[str, Any]:
    """The default evaluation: ``archsim.simulate`` on the task's arch and workload."""
    import archsim

    graph = _graph(task.workload.name, task.workload.params, task.workload.path)
    result = archsim.simulate(graph, task.arch, **dict(task.simulate_options))
    energy_pj = float(result.energy_pj)
    latency_s = float(result.latency_s)
    metrics = {
        "cycles": int(result.total_cycles),
        "energy_pj": energy_pj,
        "latency_s": latency_s,
        "edp_pj_s": energy_pj * latency_s,
        "utilization": float(result.utilization),
        "area_mm2": float(task.area_mm2),
    }
    if task.area == "synth":
        metrics.update(synth_figures(task.arch, dict(task.synth)))
    return metrics


def synth_cache_dir() -> str:
    return str(cache_root() / "synth")


def synth_figures(arch: Any, options: dict[str, Any], cache_dir: str | None = None) -> dict[str, float]:
    """``rtl.synth.synthesize`` figures of ``arch``'s RTL, cached on disk by configuration.

    The cache key covers the template, its params (the RTL generator's input)
    and the synthesis options; the figures do not depend on the workload.
    """
    import json

    cache_dir = cache_dir or synth_cache_dir()
    key = stable_hash({"template": arch.template, "params": arch.params, "options": options})
    path = os.path.join(cache_dir, f"{key}.json")
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        pass
    from rtl.synth import synthesize

    raw = synthesize(arch.params, **options)
    figures = {f"synth_{k}": float(raw[k]) for k in ("luts", "ffs", "dsps", "cells") if k in raw and raw[k] is not None}
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as handle:
        json.dump(figures, handle, sort_keys=True)
    os.replace(tmp, path)  # atomic: concurrent workers never see a half-written file
    return figures


def _clean(metrics: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool):
            out[k] = v
        elif isinstance(v, int):
            out[k] = int(v)
        elif isinstance(v, float) or hasattr(v, "__float__"):
            f = float(v)
            out[k] = f if math.isfinite(f) else None
        else:
            out[k] = v
    return out


def run_chunk(evaluate: Evaluate, tasks: list[Any]) -> list[dict[str, Any]]:
    """Evaluate tasks one after another; a failing task yields an error outcome, the rest go on."""
    outcomes = []
    for task in tasks:
        start = time.perf_counter()
        try:
            metrics = _clean(evaluate(task))
            outcome = {"key": task.key, "status": "ok", "metrics": metrics, "error": ""}
        except ArchsimError as err:
            outcome = {"key": task.key, "status": "error", "metrics": {"area_mm2": task.area_mm2}, "error": f"{type(err).__name__}: {err}"}
        except Exception as err:  # noqa: BLE001 - a model bug must not stop the sweep; keep where it came from
            where = traceback.extract_tb(err.__traceback__)[-1]
            outcome = {
                "key": task.key, "status": "error", "metrics": {"area_mm2": task.area_mm2},
                "error": f"{type(err).__name__}: {err} ({os.path.basename(where.filename)}:{where.lineno})",
            }
        outcome["elapsed_s"] = round(time.perf_counter() - start, 6)
        outcomes.append(outcome)
    return outcomes
