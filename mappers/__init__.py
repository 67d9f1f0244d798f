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

- ``LayerProgram.repeat`` (default 1): the layer's commands are
  ONE of ``repeat`` identical, independent iterations (conv groups, attention
  kv-head groups, batched activation matmuls); the engine multiplies the
  layer's cycles, energy and bytes by it. ``LayerProgram.macs`` is always the
  whole op's count.
- Shape ops become a LayerProgram with no commands.
- Identical layers (same op fields, arch and options) get the same
  ``signature`` and share one (immutable) command list.
- Operator fusion (:mod:`mappers.fusion`): a mapper (:class:`mappers.registry.Mapper`) with
  ``output_ops`` (the element-wise classes its array's output path runs;
  empty when the arch has none) is called ``mapper(op, epilogue)`` for a
  GEMM op with fused element-wise ops after it; those ops become layers
  without commands whose ``mapping["fused_into"]`` names the GEMM.
  ``fusion=False`` turns it off.
- Scratchpad allocation (:mod:`mappers.allocation.apply`): with ``allocation: ilp|heuristic``
  the layers follow the plan's operator order, tensors kept on chip lose their Stores and
  Loads, a ``<layer>.reload`` layer (op ``"reload"``) holds the reload Loads before a step, and
  ``Program.allocation`` summarises the plan. ``greedy`` (the default) is layer by layer.
- Layer mappings are cached by (template, op fields, options, the arch
  fields the op's mapping reads): a mapper that declares
  ``arch_key(op)`` (see :mod:`mappers.registry`) shares e.g. the mapping of
  a residual add between design points that differ only in the array shape;
  otherwise the whole arch is the key. That projection is also
  ``LayerProgram.arch_key``.
"""
from __future__ import annotations

from archsim.program import LayerProgram, Program
from mappers.lower import Lowered, Gemm, VectorWork, Gather, lower_op, op_key
from mappers.fusion import plan_fusion
from mappers.options import MapOptions, make_options
from mappers.layer import cache_stats, clear_cache, map_layer
from mappers.registry import Mapper, get_mapper_module, mapper_names



def compile(graph, arch, **options) -> Program:  # noqa: A001 - public name fixed by the design
    """Map every op of ``graph`` (in topological order) onto ``arch``.

    Parameters
    ----------
    graph : workloads Graph
        Anything with ``ops()`` (topological order) and a ``name``.
    arch : archsim.spec.ArchSpec
    **options
        :class:`mappers.options.MapOptions`: ``objective``, ``conv_lowering``
        and the template's own options (e.g. systolic ``dataflow``); they
        override the arch spec's ``options:``.

    Raises
    ------
    archsim.errors.MappingError
        Unknown option or value, or a layer that cannot fit the arch.
    """
    opts = make_options(arch, options)
    module = get_mapper_module(arch.template)
    mapper = module.make_mapper(arch, opts)
    if not isinstance(mapper, Mapper):  # its hooks are called, never probed
        raise TypeError(f"{module.__name__}.make_mapper must return a mappers.registry.Mapper "
                        f"(FunctionMapper wraps a function), got {type(mapper).__name__}")
    graph = mapper.prepare_graph(graph)  # a rewrite the mapper's options ask for (e.g. pruning)
    mapper.check_graph(graph)  # whole-graph limits, e.g. PIM DRAM capacity
    fusion = plan_fusion(graph, mapper.output_ops if opts.fusion else ())
    if opts.allocation != "greedy":  # COSMA: order, residency and eviction applied to the Program
        from mappers.allocation.apply import compile_allocated

        return compile_allocated(graph, arch, opts, module, mapper, fusion)
    layers: list[LayerProgram] = []
    for op in graph.ops():
        layers.append(map_layer(op, arch, opts, module, mapper, fusion))
    return Program(arch.name, str(getattr(graph, "name", "")), layers)


__all__ = ["compile", "clear_cache", "cache_stats", "lower_op", "op_key", "Lowered", "Gemm", "VectorWork", "Gather",
           "MapOptions", "make_options", "get_mapper_module", "mapper_names"]
