"""From a sweep spec to the list of design points to run, with every check that needs no simulation.

Before any work starts this module

- loads the base arch and checks that every axis names an existing parameter
  (a bare template param like ``rows`` or a dotted spec key like
  ``buffers.input.bytes``; ``*`` in a dotted key stands for every entry, e.g.
  ``buffers.*.bytes``) and that each axis value is accepted on its own;
- loads each workload once (unknown names and bad parameters fail here);
- expands the grid (or draws the random sample), resolves each point's arch
  spec and its area, and prunes points that break an area constraint;
- rejects constraints no point can meet (e.g. ``area_mm2 <= 0.1`` below the
  smallest point's area, ``utilization > 1``).

Each (arch point, workload) pair is a :class:`Task` keyed by the hash of its
full configuration.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from archsim.dse._hash import arch_config, file_sha256, model_version, stable_hash
from archsim.dse._spec import Constraint, SweepSpec, WorkloadRef
from archsim.errors import ArchsimError, SpecError

#: metrics known before simulation (decided per point in the planner)
PLAN_METRICS = ("area_mm2",)
_MAX_POINTS = 1_000_000


@dataclass(frozen=True)
class Task:
    """One design point on one workload."""

    key: str
    index: int  # position in the sweep: arch_index * len(workloads) + workload index
    arch_index: int
    config: tuple[tuple[str, Any], ...]  # axis key (as written) -> value
    workload: WorkloadRef
    arch: Any  # resolved ArchSpec
    area_mm2: float
    area: str = "model"
    area_unpriced: tuple[tuple[str, str], ...] = ()  # parameters the area does not price: (name, what and why)
    synth: tuple[tuple[str, Any], ...] = ()
    simulate_options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A point that is not simulated: its configuration is invalid, or it breaks an area constraint."""

    index: int
    arch_index: int
    config: tuple[tuple[str, Any], ...]
    workload: WorkloadRef
    status: str  # "invalid" | "pruned"
    reason: str
    area_mm2: float | None = None
    area_unpriced: tuple[tuple[str, str], ...] = ()


@dataclass
class Plan:
    spec: SweepSpec
    tasks: list[Task] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    axis_keys: tuple[str, ...] = ()
    arch_points: int = 0


def _default_loader(base: Any, overrides: Any = ()) -> Any:
    from archsim.spec import load_arch

    return load_arch(base, overrides)


def _default_workload_check(ref: WorkloadRef) -> None:
    import workloads

    workloads.load(ref.path or ref.name, **dict(ref.params))


def _as_tree(arch: Any) -> Any:
    to_dict = getattr(arch, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    from archsim.dse._hash import canonical

    return canonical(arch)


def _expand_key(key: str, tree: dict, param_names: list[str]) -> list[str] | None:
    """Concrete override keys an axis key stands for, or None if it names nothing."""
    if "." not in key:
        if key in param_names:
            return [key]
        return [key] if key in tree and not isinstance(tree.get(key), dict) else None
    parts = key.split(".")
    paths: list[tuple[list[str], Any]] = [([], tree)]
    for part in parts:
        nxt = []
        for prefix, node in paths:
            if not isinstance(node, dict):
                continue
            if part == "*":
                nxt.extend((prefix + [k], v) for k, v in sorted(node.items()))
            elif part in node:
                nxt.append((prefix + [part], node[part]))
        paths = nxt
    found = [".".join(prefix) for prefix, node in paths if not isinstance(node, dict)]
    return found or None


def _key_parent_exists(key: str, tree: dict) -> bool:
    node: Any = tree
    for part in key.split(".")[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return isinstance(node, dict)


def build_plan(
    spec: SweepSpec,
    loader: Callable[..., Any] | None = None,
    workload_check: Callable[[WorkloadRef], None] | None = None,
    area_fn: Callable[[Any], float] | None = None,
    unpriced_fn: Callable[[Any], dict[str, str]] | None = None,
) -> Plan:
    """Check the sweep against its base arch and workloads; list its tasks.

    Each point carries its area and what that area does not price (``archsim.area.area_unpriced``,
    e.g. SIMD ``pe_style: tpe``), so the results say it next to the area as ``archsim compare`` does."""
    loader = loader or _default_loader
    workload_check = workload_check or _default_workload_check
    if area_fn is None:
        from archsim.area import area_mm2 as area_fn
    if unpriced_fn is None:
        from archsim.area import area_unpriced as unpriced_fn
    src = spec.source

    try:
        base = loader(spec.base)
    except ArchsimError as err:
        raise SpecError(f"{src}: base: {err}") from None
    tree = _as_tree(base)
    param_names = [f.name for f in dataclasses.fields(base.params)] if dataclasses.is_dataclass(base.params) else []

    def expected_keys() -> str:
        return (f"a {base.template} param ({', '.join(param_names)})" if param_names else "a template param") + \
            " or a dotted spec key such as buffers.input.bytes, dram.bytes_per_cycle, clock_mhz"

    # which concrete override keys each axis / fixed key stands for
    def concrete(where: str, key: str, sample_value: Any) -> list[str]:
        keys = _expand_key(key, tree, param_names)
        if keys is None and "*" not in key and "." in key and _key_parent_exists(key, tree):
            try:  # a spec key the loader accepts but does not keep under that name (e.g. dram.gb_per_s)
                loader(base, {key: sample_value})
                keys = [key]
            except ArchsimError:
                keys = None
        if keys is None:
            raise SpecError(f"{src}: {where}: no such parameter in arch {base.name!r}; expected {expected_keys()}")
        return keys

    fixed: dict[str, Any] = {}
    for key, value in spec.fixed:
        for k in concrete(f"set.{key}", key, value):
            fixed[k] = value
    if fixed:
        try:
            base = loader(base, fixed)
        except ArchsimError as err:
            raise SpecError(f"{src}: set: {err}") from None

    axis_keys: list[list[str]] = []
    for axis in spec.axes:
        keys = concrete(f"axes.{axis.key}", axis.key, axis.values[0])
        axis_keys.append(keys)
        for value in axis.values:
            try:
                loader(base, {k: value for k in keys})
            except ArchsimError as err:
                raise SpecError(f"{src}: axes.{axis.key}: value {value!r} rejected: {_strip(err)}") from None

    for i, ref in enumerate(spec.workloads):
        try:
            workload_check(ref)
        except ArchsimError as err:
            raise SpecError(f"{src}: workloads[{i}] ({ref.label}): {err}") from None
        except TypeError as err:  # a builder parameter the zoo model does not take
            raise SpecError(f"{src}: workloads[{i}] ({ref.label}): {err}") from None

    sizes = [len(axis.values) for axis in spec.axes]
    grid = math.prod(sizes)
    if spec.sample is not None and spec.sample.n < grid:
        rng = random.Random(spec.sample.seed)
        flat = sorted(rng.sample(range(grid), spec.sample.n))
        combos = (_decode(i, sizes) for i in flat)
    else:
        if grid > _MAX_POINTS:
            raise SpecError(f"{src}: axes: the grid has {grid} points; expected at most {_MAX_POINTS} (use sample: {{n: N, seed: S}})")
        combos = itertools.product(*(range(n) for n in sizes))

    version = model_version()
    workload_ids = [_workload_id(ref) for ref in spec.workloads]
    area_constraints = [c for c in spec.constraints if c.metric in PLAN_METRICS]
    _check_bounds(spec)

    plan = Plan(spec=spec, axis_keys=tuple(axis.key for axis in spec.axes))
    n_w = len(spec.workloads)
    best_area: float | None = None
    feasible_arch = 0
    for arch_index, combo in enumerate(combos):
        config = tuple((axis.key, axis.values[j]) for axis, j in zip(spec.axes, combo))
        overrides = {}
        for keys, (_, value) in zip(axis_keys, config):
            for k in keys:
                overrides[k] = value
        try:
            arch = loader(base, overrides)
        except ArchsimError as err:
            for w, ref in enumerate(spec.workloads):
                plan.skipped.append(Skipped(arch_index * n_w + w, arch_index, config, ref, "invalid", _strip(err)))
            continue
        area = float(area_fn(arch))
        unpriced = tuple(sorted(unpriced_fn(arch).items()))
        best_area = area if best_area is None else min(best_area, area)
        broken = [c for c in area_constraints if not c.holds(area)]
        if broken:
            for w, ref in enumerate(spec.workloads):
                plan.skipped.append(
                    Skipped(arch_index * n_w + w, arch_index, config, ref, "pruned", f"breaks {broken[0].text}", area, unpriced)
                )
            continue
        feasible_arch += 1
        arch_part = arch_config(arch)
        for w, ref in enumerate(spec.workloads):
            key = stable_hash({
                "arch": arch_part,
                "workload": workload_ids[w],
                "simulate": dict(spec.simulate_options),
                "area": {"mode": spec.area, **dict(spec.synth)},
                "model_version": version,
            })
            plan.tasks.append(Task(
                key=key, index=arch_index * n_w + w, arch_index=arch_index, config=config, workload=ref,
                arch=arch, area_mm2=area, area=spec.area, area_unpriced=unpriced, synth=spec.synth, simulate_options=spec.simulate_options,
            ))
    plan.arch_points = arch_index + 1 if grid else 0

    if not plan.tasks:
        if best_area is not None and area_constraints:
            text = " and ".join(c.text for c in area_constraints)
            raise SpecError(f"{src}: constraints: no point can meet {text}: the smallest point's area is {best_area:.4g} mm2")
        reasons = {s.reason for s in plan.skipped}
        raise SpecError(f"{src}: axes: no valid design point; e.g. {sorted(reasons)[0] if reasons else 'empty grid'}")
    return plan


def _strip(err: Exception) -> str:
    return str(err)


def _decode(flat: int, sizes: list[int]) -> tuple[int, ...]:
    """Mixed-radix digits of ``flat`` (last axis fastest, like itertools.product)."""
    digits = []
    for n in reversed(sizes):
        flat, digit = divmod(flat, n)
        digits.append(digit)
    return tuple(reversed(digits))


def _workload_id(ref: WorkloadRef) -> dict:
    ident: dict[str, Any] = {"name": ref.name if not ref.path else ref.label, "params": dict(ref.params)}
    if ref.path:
        ident["file_sha256"] = file_sha256(ref.path)
    return ident


#: physical ranges of metrics: a constraint outside them can never hold
_RANGES = {
    "utilization": (0.0, 1.0),
    "cycles": (0.0, math.inf),
    "energy_pj": (0.0, math.inf),
    "latency_s": (0.0, math.inf),
    "edp_pj_s": (0.0, math.inf),
    "area_mm2": (0.0, math.inf),
    "synth_luts": (0.0, math.inf),
    "synth_ffs": (0.0, math.inf),
    "synth_dsps": (0.0, math.inf),
    "synth_cells": (0.0, math.inf),
}


#: metrics that are always > 0 for a point that ran
_POSITIVE = ("cycles", "energy_pj", "latency_s", "edp_pj_s", "area_mm2")


def _check_bounds(spec: SweepSpec) -> None:
    for c in spec.constraints:
        lo, hi = _RANGES.get(c.metric, (-math.inf, math.inf))
        impossible = (
            (c.op == "<" and c.bound <= lo)
            or (c.op == "<=" and c.bound < lo)
            or (c.op == ">" and c.bound >= hi)
            or (c.op == ">=" and c.bound > hi)
            or (c.op == "==" and not lo <= c.bound <= hi)
            or (c.metric in _POSITIVE and c.op in ("<", "<=", "==") and c.bound <= 0)
        )
        if impossible:
            raise SpecError(
                f"{spec.source}: constraints[{c.index}]: {c.text!r} can never hold: {c.metric} is always {'> 0' if c.metric in _POSITIVE else f'within [{lo:g}, {hi:g}]'}"
            )


def feasible(metrics: dict[str, Any], constraints: tuple[Constraint, ...]) -> bool:
    return all(c.holds(metrics.get(c.metric)) for c in constraints)
