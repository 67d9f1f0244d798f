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

from archsim.errors import MappingError
from archsim.program import LayerProgram, Program
from archsim.templates.base import compute_formats
from mappers.lower import Lowered, Gemm, VectorWork, Gather, lower_op, op_key
from mappers.fusion import plan_fusion
from mappers.options import MapOptions, make_options
from mappers.registry import Mapper, get_mapper_module, mapper_names

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


def map_layer(op, arch, opts: MapOptions, module, mapper: Mapper, fusion) -> LayerProgram:
    """The LayerProgram of one ``op`` by ``mapper`` (``module``'s, for ``arch``), memoized;
    ``fusion`` (:func:`mappers.fusion.plan_fusion`) says which ops run in a GEMM's output path
    (an epilogue that does not fit is dropped from it: those ops then run unfused)."""
    stats = _STATS
    if op.kind == "shape":
        return LayerProgram(op.name, op.kind, 0, [], ("shape",), {}, "")
    into = fusion.fused_into.get(op.name)
    if into is not None:  # runs in the output path of an earlier GEMM layer
        return LayerProgram(op.name, op.kind, 0, [], ("fused",), {"fused_into": into}, "",
                            activation_format=str(getattr(op, "act_precision", "") or ""))
    epilogue = fusion.epilogues.get(op.name)
    name = module.__name__
    ak = mapper.arch_key(op)
    key = (name, _whole_arch_key(arch) if ak is None else ak, opts, op_key(op))
    if epilogue is not None:
        key += (epilogue.classes, epilogue.residual, epilogue.out_precision)
    cached = _LAYER_CACHE.get(key)
    if cached is None:
        stats["misses"] += 1
        if epilogue is not None:
            try:
                cached = mapper(op, epilogue)
            except MappingError:  # e.g. no room for the residual tiles: run the ops unfused
                for fused in epilogue.ops:
                    del fusion.fused_into[fused]
                key = key[:-3]
                cached = _LAYER_CACHE.get(key)
        if cached is None:
            cached = mapper(op)
        cached.arch_key = ak
        if len(_LAYER_CACHE) >= _CACHE_LIMIT:
            _LAYER_CACHE.clear()
        _LAYER_CACHE[key] = cached
    else:
        stats["hits"] += 1
    # token lookups count the tokens a run processes (tokens/s in reports)
    tokens = int(op.tokens) if op.kind == "embedding" else 0
    weights, acts = compute_formats(arch.model(), *_formats(op))
    return LayerProgram(op.name, cached.op, cached.macs, cached.commands, cached.signature,
                        cached.mapping, ak, repeat=cached.repeat, tokens=tokens,
                        weight_format=cached.weight_format or weights,
                        activation_format=cached.activation_format or acts,
                        internal_bytes=cached.internal_bytes)


_STATS = {"hits": 0, "misses": 0}


def _whole_arch_key(arch) -> tuple:
    """The whole arch as a cache key, for ops the mapper does not project (its repr, built once)."""
    got = arch.__dict__.get("_whole_key")
    if got is None:
        got = ("*", repr(arch))
        object.__setattr__(arch, "_whole_key", got)
    return got


def _formats(op) -> tuple[str, str]:
    """(weight format, activation format) of an op. An op whose second operand
    is an activation too (attention, activation x activation matmul) has the
    activation format for both; an op without MACs or parameters has no
    weight format."""
    acts = str(getattr(op, "act_precision", "") or "")
    if op.params():
        return str(getattr(op, "weight_precision", "") or ""), acts
    return (acts if op.macs() else ""), acts


def clear_cache() -> None:
    """Forget memoized layer mappings and reset :func:`cache_stats` (tests; after editing a mapper)."""
    _LAYER_CACHE.clear()
    _STATS["hits"] = _STATS["misses"] = 0


def cache_stats() -> dict[str, int]:
    """Layer-mapping cache counters since the last :func:`clear_cache`:
    ``hits`` and ``misses`` (ops mapped), ``size`` (cached mappings)."""
    return {"hits": _STATS["hits"], "misses": _STATS["misses"], "size": len(_LAYER_CACHE)}


__all__ = ["compile", "clear_cache", "cache_stats", "lower_op", "op_key", "Lowered", "Gemm", "VectorWork", "Gather",
           "MapOptions", "make_options", "get_mapper_module", "mapper_names"]
