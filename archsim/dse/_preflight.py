"""Check a whole sweep before its first point runs.

A value that would make every point fail (a ``simulate:`` option the mapper
rejects, a precision the template cannot run, a ``synth:`` target that does
not exist, a workload that does not load) is a one-line :class:`SpecError`
here, instead of N failed points and a sweep that exits 0.
"""
from __future__ import annotations

import time
from typing import Any

from archsim.dse._plan import Plan
from archsim.dse._spec import SweepSpec
from archsim.errors import ArchsimError, SpecError

SYNTH_TARGETS = ("ecp5", "generic")
#: distinct arch configurations checked at most (the rest share their template and options)
MAX_ARCHS_CHECKED = 64
MAX_PREFLIGHT_S = 5.0


def _check_simulate_options(spec: SweepSpec, arch: Any, where: str) -> None:
    from mappers.options import make_options

    from archsim.dse._spec import SIMULATE_OPTIONS

    options = dict(spec.simulate_options)
    detailed = options.get("detailed", False)
    if not isinstance(detailed, bool):
        raise SpecError(f"{where}: simulate.detailed: expected true or false, got {detailed!r}")
    weights, acts = options.get("weights"), options.get("activations")
    if (weights is None) != (acts is None):
        raise SpecError(f"{where}: simulate: give both weights and activations, or neither")
    if weights is not None:
        from archsim.simulation import _with_precision

        try:
            _with_precision(arch, str(weights), str(acts))
        except ArchsimError as err:
            raise SpecError(f"{where}: simulate.weights/activations: {err}") from None
    mapper = {k: v for k, v in options.items() if k not in SIMULATE_OPTIONS}
    try:
        make_options(arch, mapper)
    except ArchsimError as err:
        raise SpecError(f"{where}: simulate: {err}") from None


def _check_synth(spec: SweepSpec, where: str) -> None:
    synth = dict(spec.synth)
    target = synth.get("target", "ecp5")
    if target not in SYNTH_TARGETS:
        raise SpecError(f"{where}: synth.target: expected one of {', '.join(SYNTH_TARGETS)}, got {target!r}")


def preflight(spec: SweepSpec, plan: Plan) -> None:
    """Raise :class:`SpecError` if a sweep-wide setting would make the points fail."""
    where = spec.source or spec.name
    if spec.area == "synth":
        _check_synth(spec, where)
    if not plan.tasks:
        if plan.skipped:
            reasons = sorted({s.reason for s in plan.skipped if s.status == "invalid"})
            if reasons and not any(s.status == "pruned" for s in plan.skipped):
                raise SpecError(f"{where}: every point is an invalid configuration, e.g. {reasons[0]}")
        return
    start = time.monotonic()
    seen: set[str] = set()
    for task in plan.tasks:
        key = repr((task.arch.template, getattr(task.arch, "options", None)))
        if key in seen:
            continue
        seen.add(key)
        _check_simulate_options(spec, task.arch, where)
        if len(seen) >= MAX_ARCHS_CHECKED or time.monotonic() - start > MAX_PREFLIGHT_S:
            break
    if dict(spec.simulate_options).get("weights") is not None:
        # the precision pair can depend on template params: check each distinct arch, within the budget
        for task in plan.tasks[:MAX_ARCHS_CHECKED]:
            if time.monotonic() - start > MAX_PREFLIGHT_S:
                break
            _check_simulate_options(spec, task.arch, where)


__all__ = ["preflight"]
