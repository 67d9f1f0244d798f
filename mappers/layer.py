"""One op's LayerProgram, memoized (:func:`map_layer`): the step :func:`mappers.compile` and the
allocation pass (:mod:`mappers.allocation.apply`) share, with the layer-mapping cache it keeps."""
from __future__ import annotations

from archsim.errors import MappingError
from archsim.program import LayerProgram
from archsim.templates.base import compute_formats
from mappers.lower import op_key
from mappers.options import MapOptions
from mappers.registry import Mapper

_LAYER_CACHE: dict[tuple, LayerProgram] = {}
_CACHE_LIMIT = 20000


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
