"""The dataflow compiler: lowers a workload Graph onto an arch as a Program of tile commands.

Use::

    import mappers
    program = mappers.compile(graph, arch, dataflow="auto", objective="energy")

Stages (each its own module): :mod:`mappers.lower` (op -> GEMMs / vector
work / gathers, template-independent), :mod:`mappers.tiling` (GEMM tiles
that fit the buffers, loop orders, DRAM traffic in closed form),
:mod:`mappers.emit` (slots and dependencies of Load / Compute / Store /
VectorOp), and one module per template (``mappers.systolic``, ...) found
through :mod:`mappers.registry`, which picks the mapping and emits it.

Conventions of the emitted Program beyond :mod:`archsim.program`:

- ``LayerProgram.mapping["repeat"]`` (default 1): the layer's commands are
  ONE of ``repeat`` identical, independent iterations (conv groups, attention
  kv-head groups, batched activation matmuls); the engine multiplies the
  layer's cycles, energy and bytes by it. ``LayerProgram.macs`` is always the
  whole op's count.
- Shape ops become a LayerProgram with no commands.
- Identical layers (same op fields, arch and options) get the same
  ``signature`` and share one (immutable) command list.
"""
from __future__ import annotations

from archsim.program import LayerProgram, Program
from mappers.lower import Lowered, Gemm, VectorWork, Gather, lower_op, op_key
from mappers.options import MapOptions, make_options
from mappers.registry import get_mapper_module, mapper_names

_LAYER_CACHE: dict[tuple, LayerProgram] = {}
_CACHE_LIMIT = 20000


def compile(graph, arch, **options) -> Program:  # noqa: A001 - public name fixed by the design
    """Map every op of ``graph`` (in topological order) onto ``arch``.

    Parameters
    ----------
    graph : workloads Graph
        Anything with ``ops()`` (topological order) and a ``name``.
    arch : archsim.spec.ArchSpec
    **options
        See :class:`mappers.options.MapOptions`: ``conv_lowering``,
        ``objective``, ``dataflow``.

    Raises
    ------
    archsim.errors.MappingError
        Unknown option or value, or a layer that cannot fit the arch.
    """
    opts = make_options(arch, options)
    module = get_mapper_module(arch.template)
    check_graph = getattr(module, "check_graph", None)
    if check_graph is not None:  # whole-graph limits, e.g. PIM DRAM capacity
        check_graph(graph, arch)
    mapper = None
    arch_key = (module.__name__, repr(arch), opts)
    layers: list[LayerProgram] = []
    for op in graph.ops():
        if op.kind == "shape":
            layers.append(LayerProgram(op.name, op.kind, 0, [], ("shape",), {"repeat": 1}))
            continue
        key = (arch_key, op_key(op))
        cached = _LAYER_CACHE.get(key)
        if cached is None:
            if mapper is None:
                mapper = module.make_mapper(arch, opts)
            cached = mapper(op)
            if len(_LAYER_CACHE) >= _CACHE_LIMIT:
                _LAYER_CACHE.clear()
            _LAYER_CACHE[key] = cached
        layers.append(LayerProgram(op.name, cached.op, cached.macs, cached.commands,
                                   cached.signature, dict(cached.mapping)))
    return Program(arch.name, str(getattr(graph, "name", "")), layers)


def clear_cache() -> None:
    """Forget memoized layer mappings (tests; after editing a mapper)."""
    _LAYER_CACHE.clear()


__all__ = ["compile", "clear_cache", "lower_op", "op_key", "Lowered", "Gemm", "VectorWork", "Gather",
           "MapOptions", "make_options", "get_mapper_module", "mapper_names"]
