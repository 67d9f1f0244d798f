"""A template's mapper module (named on its ``Template`` entry) and arch keys.

A mapper module (``mappers.<template>``) turns graph ops into
:class:`archsim.program.LayerProgram` s for one template. It exposes::

    def make_mapper(arch: ArchSpec, options: MapOptions) -> Mapper

called once per :func:`mappers.compile`; the returned callable maps one op
(never a shape op: those are handled by the driver). It usually starts from
:func:`mappers.lower.lower_op` and may use :mod:`mappers.emit` (slot
bookkeeping, vector-op and gather emission) and :mod:`mappers.tiling`
(GEMM tiling, loop orders, traffic). The driver caches its results by
:func:`mappers.lower.op_key`, so the callable must depend only on the op's
fields, the arch and the options (never on the op's name).

The :class:`Mapper` may override ``arch_key(op) -> str | None``: a
canonical string (:func:`arch_key`) of exactly the arch fields the mapping
of ``op`` reads (commands, signature, macs, mapping dict). The driver then
caches the op's mapping by that string instead of the whole arch, so design
points that differ only in fields the op does not read share it, and stores
it in ``LayerProgram.arch_key`` for the engine's memo. It must be exact: a
field the mapping reads but the key omits gives stale results. ``None`` (the
default) means "the whole arch".

The module is named by the template's entry (``Template(mapper="mappers.<name>")``).
"""
from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from archsim.errors import MappingError


class Mapper:
    """Base class of what a mapper module's ``make_mapper(arch, options)`` returns.

    The driver (:func:`mappers.compile`) calls the hooks below; each has a
    default, so a mapper overrides only those it needs. A mapper that is a
    plain function is wrapped with :class:`FunctionMapper`.
    """

    #: element-wise classes (:data:`archsim.spec.model.OUTPUT_OPS`) the array's output path
    #: runs after a GEMM (:mod:`mappers.fusion`); the driver then passes a layer's epilogue
    #: as ``mapper(op, epilogue)``. Default: none (nothing is fused).
    output_ops: tuple[str, ...] = ()

    def __call__(self, op: Any, epilogue: Any = None) -> Any:
        """The op's :class:`archsim.program.LayerProgram` (required)."""
        raise NotImplementedError(f"{type(self).__name__} does not map ops")

    def arch_key(self, op: Any) -> str | None:
        """Canonical string of exactly the arch fields the mapping of ``op`` reads
        (see the module docstring and :func:`arch_key`). Default ``None``: the whole arch."""
        return None

    def check_graph(self, graph: Any) -> None:
        """Raise a one-line :class:`MappingError` for whole-graph limits (e.g. PIM DRAM
        capacity), before any op is mapped. Default: none."""

    def prepare_graph(self, graph: Any) -> Any:
        """The graph this mapper maps: a rewrite its options ask for (e.g. the attention
        template's cascade token pruning, which changes later layers' shapes), as a new graph;
        called before :meth:`check_graph`. Default: ``graph`` unchanged."""
        return graph


class FunctionMapper(Mapper):
    """A :class:`Mapper` made of a function ``map_op(op) -> LayerProgram`` and optional hooks."""

    def __init__(self, map_op: Any, arch_key: Any = None, check_graph: Any = None):
        self._map_op = map_op
        self._arch_key = arch_key
        self._check_graph = check_graph

    def __call__(self, op: Any, epilogue: Any = None) -> Any:
        return self._map_op(op) if epilogue is None else self._map_op(op, epilogue)

    def arch_key(self, op: Any) -> str | None:
        return None if self._arch_key is None else self._arch_key(op)

    def check_graph(self, graph: Any) -> None:
        if self._check_graph is not None:
            self._check_graph(graph)

def mapper_names() -> list[str]:
    """Templates that have a mapper (every registered template)."""
    from archsim.templates import template_names

    return template_names()


def get_mapper_module(template: str) -> ModuleType:
    """The mapper module of ``template``; a one-line MappingError if there is none."""
    from archsim.errors import SpecError
    from archsim.templates import get_template

    try:
        entry = get_template(template)
    except SpecError as err:
        raise MappingError(f"no mapper: {err}") from None
    try:
        return entry.mapper_module
    except ModuleNotFoundError as err:
        if err.name == entry.mapper:
            raise MappingError(f"mapper module {entry.mapper} for template {template!r} is not installed") from None
        raise


def arch_key(arch, paths: tuple[str, ...], **extra: Any) -> str:
    """Canonical JSON of the arch fields at ``paths`` (dotted paths into
    ``arch.to_dict()``, e.g. ``"params"``, ``"dram.latency_cycles"``) and of
    ``extra`` (JSON-able values the mapper derives from the arch, e.g. a
    buffer layout). Equal projections give equal strings."""
    d = arch.to_dict()
    out: dict[str, Any] = {}
    for path in paths:
        v = d
        for part in path.split("."):
            v = v[part]
        out[path] = v
    for k, v in extra.items():
        out["=" + k] = v
    return json.dumps(out, sort_keys=True, separators=(",", ":"))
