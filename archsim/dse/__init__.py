"""Design-space exploration: ``archsim sweep``.

A sweep spec (YAML) names a base arch, axes of parameters to vary, workloads,
objectives and constraints. :func:`load_sweep` reads and validates it,
:func:`build_plan` checks it against the arch and workloads and lists the
design points (each keyed by a hash of its full configuration), and
:func:`run_sweep` evaluates the unfinished points on a local process pool or
Ray, appending each to ``<out>/results.jsonl`` as it finishes, and writes
``results.csv``, ``pareto.csv`` and ``plots/``.
"""
from archsim.dse._backends import BACKENDS, LocalBackend, RayBackend, default_workers, make_backend
from archsim.dse._evaluate import run_chunk, simulate_task, synth_figures
from archsim.dse._hash import arch_config, canonical, model_version, stable_hash
from archsim.dse._pareto import dominates, pareto_front
from archsim.dse._plan import Plan, Skipped, Task, build_plan
from archsim.dse._runner import SweepResult, default_out_dir, run_sweep
from archsim.dse._spec import (
    METRICS,
    Axis,
    Constraint,
    Objective,
    Sample,
    SweepSpec,
    WorkloadRef,
    load_sweep,
    parse_sweep,
    sweep_preset_names,
)
from archsim.dse._store import ResultStore

__all__ = [
    "BACKENDS", "METRICS", "Axis", "Constraint", "LocalBackend", "Objective", "Plan", "RayBackend",
    "ResultStore", "Sample", "Skipped", "SweepResult", "SweepSpec", "Task", "WorkloadRef",
    "arch_config", "build_plan", "canonical", "default_out_dir", "default_workers", "dominates",
    "load_sweep", "make_backend", "model_version", "parse_sweep", "pareto_front", "run_chunk",
    "run_sweep", "simulate_task", "stable_hash", "sweep_preset_names", "synth_figures",
]
