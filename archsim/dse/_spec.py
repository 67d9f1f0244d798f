"""Sweep spec: YAML -> validated :class:`SweepSpec` (no arch or simulator needed).

A sweep spec looks like::

    name: resnet50-array-dataflow-buffer
    description: array size x dataflow x buffer size on ResNet-50
    base: systolic-32x32-ws          # arch preset name or arch YAML path
    set: {clock_mhz: 800}            # optional fixed overrides applied to every point
    axes:                            # parameter -> values (bare = template param, dotted = spec key)
      rows: [16, 32, 64]
      cols: {log2_range: [16, 64]}   # powers of two, both ends included
      dataflow: {choice: [ws, os, is]}
      buffers.*.bytes: {range: [65536, 262144, 65536]}   # start, stop (included), step
    sample: {n: 20, seed: 1}         # optional: N random points of the grid instead of all
    workloads: [resnet50, {name: bert_base, seq_len: 128}]
    objectives: {cycles: min, energy: min, area: min}
    constraints: ["area_mm2 <= 5", "utilization >= 0.5"]
    area: model                      # or "synth": also synthesize the RTL (cached)

Every error is a one-line :class:`SpecError` naming the file, the key and
what was expected.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any


from archsim.errors import SpecError

#: metric column -> default sense; every record of a finished point has these
METRICS: dict[str, str] = {
    "cycles": "min",
    "energy_pj": "min",
    "latency_s": "min",
    "edp_pj_s": "min",
    "area_mm2": "min",
    "utilization": "max",
}
#: metrics that exist only with ``area: synth``
SYNTH_METRICS: dict[str, str] = {
    "synth_luts": "min",
    "synth_ffs": "min",
    "synth_dsps": "min",
    "synth_cells": "min",
}
#: names a user may write -> metric column
METRIC_ALIASES: dict[str, str] = {
    "cycles": "cycles",
    "total_cycles": "cycles",
    "energy": "energy_pj",
    "energy_pj": "energy_pj",
    "latency": "latency_s",
    "latency_s": "latency_s",
    "edp": "edp_pj_s",
    "edp_pj_s": "edp_pj_s",
    "area": "area_mm2",
    "area_mm2": "area_mm2",
    "utilization": "utilization",
    "luts": "synth_luts",
    "ffs": "synth_ffs",
    "dsps": "synth_dsps",
    "cells": "synth_cells",
    "synth_luts": "synth_luts",
    "synth_ffs": "synth_ffs",
    "synth_dsps": "synth_dsps",
    "synth_cells": "synth_cells",
}
_TOP_KEYS = (
    "name", "description", "base", "set", "axes", "sample", "workloads",
    "objectives", "constraints", "area", "synth", "simulate",
)
#: keyword options of archsim.simulate any sweep may set (the workload is passed as a built graph);
#: the base arch's template adds its own mapper options (mappers.options.option_names)
SIMULATE_OPTIONS = ("detailed", "weights", "activations")
_CONSTRAINT_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|==|<|>)\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_WORKLOAD_FILE_SUFFIXES = (".yaml", ".yml", ".onnx", ".csv")


def _mapper_option_names(base: str) -> tuple[str, ...]:
    """Mapper options of the base arch's template (the common ones if it does not load:
    that error is reported where the base is loaded)."""
    from mappers.options import COMMON_OPTIONS, option_names

    try:
        from archsim.spec import load_arch

        return option_names(load_arch(base).template)
    except Exception:  # noqa: BLE001 - the base's own error comes later, with its file name
        return COMMON_OPTIONS


@dataclass(frozen=True)
class Axis:
    """One swept parameter: ``key`` as written (``rows``, ``buffers.*.bytes``) and its values."""

    key: str
    values: tuple
    kind: str = "list"  # list | range | log2_range | choice


@dataclass(frozen=True)
class WorkloadRef:
    """A workload of the sweep: a zoo name or a file path, with builder parameters."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    path: str = ""  # absolute path when the workload is a file

    @property
    def label(self) -> str:
        base = Path(self.name).stem if self.path else self.name
        if not self.params:
            return base
        return base + "(" + ",".join(f"{k}={v}" for k, v in self.params) + ")"


@dataclass(frozen=True)
class Objective:
    metric: str  # metric column, e.g. "energy_pj"
    sense: str  # "min" | "max"
    written: str = ""  # as written in the spec, e.g. "energy"


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str
    bound: float
    text: str
    index: int = 0

    def holds(self, value: float | None) -> bool:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return {
            "<=": value <= self.bound,
            "<": value < self.bound,
            ">=": value >= self.bound,
            ">": value > self.bound,
            "==": value == self.bound,
        }[self.op]


@dataclass(frozen=True)
class Sample:
    n: int
    seed: int = 0


@dataclass(frozen=True)
class SweepSpec:
    name: str
    base: str
    axes: tuple[Axis, ...]
    workloads: tuple[WorkloadRef, ...]
    objectives: tuple[Objective, ...]
    constraints: tuple[Constraint, ...] = ()
    fixed: tuple[tuple[str, Any], ...] = ()  # the ``set:`` overrides
    sample: Sample | None = None
    area: str = "model"  # "model" | "synth"
    synth: tuple[tuple[str, Any], ...] = ()  # keyword arguments of rtl.synth.synthesize
    simulate_options: tuple[tuple[str, Any], ...] = ()
    description: str = ""
    source: str = "<sweep>"  # file path or "preset:<name>"
    base_dir: str = ""  # directory relative paths are resolved against

    @property
    def grid_size(self) -> int:
        return math.prod(len(axis.values) for axis in self.axes)

    @property
    def metrics(self) -> tuple[str, ...]:
        extra = tuple(SYNTH_METRICS) if self.area == "synth" else ()
        return tuple(METRICS) + extra


# ----------------------------------------------------------------------------- loading

_PRESET_PACKAGE = "archsim.presets.sweeps"


def sweep_preset_names() -> list[str]:
    """Names of the sweeps shipped in ``archsim/presets/sweeps/``."""
    folder = resources.files(_PRESET_PACKAGE)
    return sorted(
        entry.name.rsplit(".", 1)[0]
        for entry in folder.iterdir()
        if entry.name.endswith((".yaml", ".yml"))
    )


def load_sweep(name_or_path: str | os.PathLike) -> SweepSpec:
    """Read a sweep spec from a file path or a shipped preset name."""
    text_name = str(name_or_path)
    path = Path(text_name)
    if os.path.lexists(text_name) and (text_name not in sweep_preset_names() or os.sep in text_name):
        from archsim.inputs import read_input_text

        text = read_input_text(text_name, what="sweep spec", error=SpecError)  # regular files only, size-capped
        return parse_sweep(_load_yaml(text, text_name), source=text_name, base_dir=str(path.resolve().parent))
    if text_name in sweep_preset_names():
        folder = resources.files(_PRESET_PACKAGE)
        for suffix in (".yaml", ".yml"):
            entry = folder / f"{text_name}{suffix}"
            if entry.is_file():
                return parse_sweep(_load_yaml(entry.read_text(), f"preset:{text_name}"), source=f"preset:{text_name}")
    if path.suffix in (".yaml", ".yml") or os.sep in text_name:
        raise SpecError(f"{text_name}: no such file")
    names = ", ".join(sweep_preset_names()) or "(none shipped)"
    raise SpecError(f"unknown sweep {text_name!r}; expected a sweep YAML file or one of: {names}")


def _load_yaml(text: str, source: str) -> Any:
    from archsim.inputs import load_yaml_text

    return load_yaml_text(text, source, SpecError)  # YAML 1.2 scalars, nesting capped


# ----------------------------------------------------------------------------- parsing


def parse_sweep(data: Any, source: str = "<sweep>", base_dir: str = "") -> SweepSpec:
    """Validate a sweep spec mapping (as read from YAML) into a :class:`SweepSpec`."""

    def fail(key: str, expected: str, got: Any = ..., ) -> SpecError:
        tail = "" if got is ... else f", got {got!r}"
        return SpecError(f"{source}: {key}: expected {expected}{tail}")

    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping with keys name, base, axes, workloads, got {type(data).__name__}")
    for key in data:
        if key not in _TOP_KEYS:
            raise SpecError(f"{source}: {key}: unknown key; expected one of {', '.join(_TOP_KEYS)}")
    for key in ("name", "base", "axes", "workloads"):
        if key not in data:
            raise SpecError(f"{source}: {key}: missing; a sweep needs name, base, axes and workloads")

    name = data["name"]
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise fail("name", "a name of letters, digits, '_', '-', '.' (it names the output folder)", name)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail("description", "a string", description)
    base = data["base"]
    if not isinstance(base, str) or not base:
        raise fail("base", "an arch preset name or an arch YAML path", base)
    if base_dir and base.endswith((".yaml", ".yml")) and not os.path.isabs(base):
        candidate = os.path.join(base_dir, base)
        if os.path.exists(candidate):
            base = candidate

    fixed = data.get("set", {}) or {}
    if not isinstance(fixed, dict):
        raise fail("set", "a mapping of parameter -> value", fixed)
    for key, value in fixed.items():
        _check_key(f"set.{key}", key, source)
        if isinstance(value, (dict, list)):
            raise fail(f"set.{key}", "a single value", value)

    axes_data = data["axes"]
    if not isinstance(axes_data, dict) or not axes_data:
        raise fail("axes", "a non-empty mapping of parameter -> values", axes_data)
    axes = tuple(_parse_axis(str(key), value, source) for key, value in axes_data.items())
    for axis in axes:
        if axis.key in fixed:
            raise SpecError(f"{source}: axes.{axis.key}: also given in set; a parameter is either swept or fixed")

    sample = None
    if "sample" in data and data["sample"] is not None:
        sample_data = data["sample"]
        if not isinstance(sample_data, dict) or set(sample_data) - {"n", "seed"} or "n" not in sample_data:
            raise fail("sample", "a mapping {n: N, seed: S}", sample_data)
        n = sample_data["n"]
        seed = sample_data.get("seed", 0)
        if not _is_int(n) or n < 1:
            raise fail("sample.n", "a positive integer", n)
        if not _is_int(seed):
            raise fail("sample.seed", "an integer", seed)
        sample = Sample(n=n, seed=seed)

    workloads = _parse_workloads(data["workloads"], source, base_dir)

    area = data.get("area", "model")
    if area not in ("model", "synth"):
        raise fail("area", "'model' or 'synth'", area)
    synth = data.get("synth", {}) or {}
    if not isinstance(synth, dict) or set(synth) - {"target", "pnr"}:
        raise fail("synth", "a mapping with keys target, pnr", synth)
    if synth and area != "synth":
        raise SpecError(f"{source}: synth: only used with 'area: synth'")
    if "pnr" in synth and not isinstance(synth["pnr"], bool):
        raise fail("synth.pnr", "true or false", synth["pnr"])
    if "target" in synth and not isinstance(synth["target"], str):
        raise fail("synth.target", "a target name", synth["target"])

    metrics = dict(METRICS, **(SYNTH_METRICS if area == "synth" else {}))
    objectives = _parse_objectives(data.get("objectives"), source, metrics)
    constraints = _parse_constraints(data.get("constraints"), source, metrics)

    simulate_options = data.get("simulate", {}) or {}
    if not isinstance(simulate_options, dict):
        raise fail("simulate", "a mapping of simulate() options", simulate_options)
    allowed = SIMULATE_OPTIONS + _mapper_option_names(base)
    for key in simulate_options:
        if key not in allowed:
            raise SpecError(f"{source}: simulate.{key}: unknown option; expected one of {', '.join(allowed)} "
                            "(workload parameters go with the workload, e.g. {name: bert_base, seq_len: 128})")

    return SweepSpec(
        name=name,
        base=base,
        axes=axes,
        workloads=workloads,
        objectives=objectives,
        constraints=constraints,
        fixed=tuple(fixed.items()),
        sample=sample,
        area=area,
        synth=tuple(sorted(synth.items())),
        simulate_options=tuple(sorted(simulate_options.items())),
        description=description,
        source=source,
        base_dir=base_dir,
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_key(where: str, key: Any, source: str) -> None:
    if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
        raise SpecError(f"{source}: {where}: expected a parameter name (bare like 'rows' or dotted like 'buffers.input.bytes'), got {key!r}")


def _parse_axis(key: str, value: Any, source: str) -> Axis:
    where = f"axes.{key}"
    _check_key(where, key, source)
    if isinstance(value, list):
        values, kind = value, "list"
    elif isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("range", "log2_range", "choice"):
        kind, arg = next(iter(value.items()))
        where = f"{where}.{kind}"
        if kind == "choice":
            if not isinstance(arg, list):
                raise SpecError(f"{source}: {where}: expected a list of values, got {arg!r}")
            values = arg
        elif kind == "range":
            if not isinstance(arg, list) or len(arg) != 3 or not all(_is_number(v) for v in arg):
                raise SpecError(f"{source}: {where}: expected [start, stop, step] numbers, got {arg!r}")
            start, stop, step = arg
            if step <= 0 or stop < start:
                raise SpecError(f"{source}: {where}: expected start <= stop and step > 0, got {arg!r}")
            count = int(math.floor((stop - start) / step + 1e-9)) + 1
            if count > 100_000:
                raise SpecError(f"{source}: {where}: expected at most 100000 values, got {count}")
            if all(_is_int(v) for v in arg):
                values = [start + i * step for i in range(count)]
            else:
                values = [round(start + i * step, 12) for i in range(count)]
        else:  # log2_range
            if not isinstance(arg, list) or len(arg) not in (2, 3) or not all(_is_int(v) and v > 0 for v in arg):
                raise SpecError(f"{source}: {where}: expected [start, stop] powers of two (optionally a third item: exponent step), got {arg!r}")
            start, stop = arg[0], arg[1]
            step = arg[2] if len(arg) == 3 else 1
            for v in (start, stop):
                if v & (v - 1):
                    raise SpecError(f"{source}: {where}: expected powers of two, got {v}")
            if stop < start:
                raise SpecError(f"{source}: {where}: expected start <= stop, got {arg!r}")
            lo, hi = start.bit_length() - 1, stop.bit_length() - 1
            values = [1 << e for e in range(lo, hi + 1, step)]
    else:
        raise SpecError(
            f"{source}: {where}: expected a list of values, {{range: [start, stop, step]}}, "
            f"{{log2_range: [start, stop]}} or {{choice: [...]}}, got {value!r}"
        )
    if not values:
        raise SpecError(f"{source}: {where}: expected at least one value")
    for v in values:
        if isinstance(v, (dict, list)) or v is None:
            raise SpecError(f"{source}: {where}: expected scalar values, got {v!r}")
    if len(set(map(repr, values))) != len(values):
        raise SpecError(f"{source}: {where}: expected distinct values, got {values!r}")
    return Axis(key=key, values=tuple(values), kind=kind)


def _parse_workloads(data: Any, source: str, base_dir: str) -> tuple[WorkloadRef, ...]:
    if isinstance(data, (str, dict)):
        data = [data]
    if not isinstance(data, list) or not data:
        raise SpecError(f"{source}: workloads: expected a non-empty list of names, paths or {{name: ..., param: value}}, got {data!r}")
    refs = []
    for i, item in enumerate(data):
        where = f"workloads[{i}]"
        if isinstance(item, str):
            name, params = item, {}
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            params = {k: v for k, v in item.items() if k != "name"}
            name = item["name"]
            for k, v in params.items():
                if not isinstance(k, str) or isinstance(v, (dict, list)) or v is None:
                    raise SpecError(f"{source}: {where}.{k}: expected a scalar parameter value, got {v!r}")
        else:
            raise SpecError(f"{source}: {where}: expected a workload name, a path or {{name: ..., param: value}}, got {item!r}")
        path = ""
        if name.endswith(_WORKLOAD_FILE_SUFFIXES) or os.sep in name:
            candidate = name if os.path.isabs(name) or not base_dir else os.path.join(base_dir, name)
            if not os.path.isfile(candidate):
                raise SpecError(f"{source}: {where}: no such workload file {name!r}")
            path = os.path.abspath(candidate)
        refs.append(WorkloadRef(name=name, params=tuple(sorted(params.items())), path=path))
    labels = [ref.label for ref in refs]
    for label in labels:
        if labels.count(label) > 1:
            raise SpecError(f"{source}: workloads: {label} is listed twice")
    return tuple(refs)


def _parse_objectives(data: Any, source: str, metrics: dict[str, str]) -> tuple[Objective, ...]:
    if data is None:
        data = {"cycles": "min", "energy": "min", "area": "min"}
    items: list[tuple[str, Any]] = []
    if isinstance(data, dict):
        items = list(data.items())
    elif isinstance(data, list):
        for i, entry in enumerate(data):
            if isinstance(entry, str):
                items.append((entry, None))
            elif isinstance(entry, dict) and len(entry) == 1:
                items.append(next(iter(entry.items())))
            else:
                raise SpecError(f"{source}: objectives[{i}]: expected a metric name or {{metric: min|max}}, got {entry!r}")
    else:
        raise SpecError(f"{source}: objectives: expected a mapping of metric -> min|max, got {data!r}")
    if not items:
        raise SpecError(f"{source}: objectives: expected at least one objective")
    objectives = []
    for written, sense in items:
        metric = METRIC_ALIASES.get(str(written))
        if metric is None or metric not in metrics:
            allowed = ", ".join(k for k, v in METRIC_ALIASES.items() if v in metrics and k in ("cycles", "energy", "latency", "edp", "area", "utilization", "luts", "ffs", "dsps", "cells"))
            raise SpecError(f"{source}: objectives.{written}: unknown objective; expected one of {allowed}")
        if sense is None:
            sense = metrics[metric]
        if sense not in ("min", "max"):
            raise SpecError(f"{source}: objectives.{written}: expected min or max, got {sense!r}")
        if any(o.metric == metric for o in objectives):
            raise SpecError(f"{source}: objectives.{written}: given twice")
        objectives.append(Objective(metric=metric, sense=sense, written=str(written)))
    return tuple(objectives)


def _parse_constraints(data: Any, source: str, metrics: dict[str, str]) -> tuple[Constraint, ...]:
    if data is None:
        return ()
    if isinstance(data, str):
        data = [data]
    if not isinstance(data, list):
        raise SpecError(f"{source}: constraints: expected a list like ['area_mm2 <= 5', 'utilization >= 0.5'], got {data!r}")
    constraints = []
    for i, text in enumerate(data):
        match = _CONSTRAINT_RE.match(text) if isinstance(text, str) else None
        if match is None:
            raise SpecError(f"{source}: constraints[{i}]: expected 'metric <op> number' with <op> one of <=, <, >=, >, ==, got {text!r}")
        written, op, bound = match.groups()
        metric = METRIC_ALIASES.get(written)
        if metric is None or metric not in metrics:
            raise SpecError(f"{source}: constraints[{i}]: unknown metric {written!r}; expected one of {', '.join(metrics)}")
        constraints.append(Constraint(metric=metric, op=op, bound=float(bound), text=text.strip(), index=i))
    return tuple(constraints)
