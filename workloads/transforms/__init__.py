"""Workload transforms: functions ``Graph -> Graph`` that rewrite a network before mapping.

A transform returns a new graph and leaves its input untouched. ``apply(graph,
"name", **params)`` runs one by name (the CLI's ``--transform``); an unknown
name or parameter is a one-line :class:`archsim.errors.WorkloadError`.

- ``draco``: DRACO's data-reuse-aware reshaping of depthwise convolutions
  (:func:`workloads.transforms.draco.draco`).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.transforms.draco import draco

TRANSFORMS: dict[str, Callable[..., Graph]] = {"draco": draco}

__all__ = ["TRANSFORMS", "apply", "apply_spec", "draco", "parse_spec"]


def apply(graph: Graph, name: str, **params) -> Graph:
    """Run transform ``name`` on ``graph`` with keyword ``params``."""
    fn = TRANSFORMS.get(name)
    if fn is None:
        raise WorkloadError(f"--transform: unknown transform {name!r}; expected one of {', '.join(TRANSFORMS)}")
    valid = [p for p in inspect.signature(fn).parameters if p != "graph"]
    for key in params:
        if key not in valid:
            raise WorkloadError(f"--transform {name}: unknown parameter {key!r}; expected one of {', '.join(valid)}")
    return fn(graph, **params)


def parse_spec(spec: str) -> tuple[str, dict[str, int]]:
    """``"draco"`` or ``"draco:group_width=4"`` -> (name, integer params)."""
    name, _, rest = spec.partition(":")
    params: dict[str, int] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not value.strip().lstrip("-").isdigit():
            raise WorkloadError(f"--transform {spec!r}: expected NAME or NAME:key=INT[,key=INT], got {item!r}")
        params[key.strip()] = int(value)
    return name.strip(), params


def apply_spec(graph: Graph, spec: str | None) -> Graph:
    """``graph`` rewritten by the transform named in ``spec`` (``--transform``); ``None``: unchanged."""
    if spec is None:
        return graph
    name, params = parse_spec(str(spec))
    return apply(graph, name, **params)
