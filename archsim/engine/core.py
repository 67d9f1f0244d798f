"""The event engine: runs a :class:`~archsim.program.Program` against unit timelines.

Timing rules (the Program contract, :mod:`archsim.program`):

- a command starts when every command in its ``deps`` has finished **and** its
  unit is free; each unit runs its commands in list order;
- ``Load`` / ``Store`` (unit ``"dma"``: one DRAM channel shared by loads and
  stores) occupy the channel for ``nbytes / dram.bytes_per_cycle`` cycles and
  finish ``dram.latency_cycles`` after that (the channel is free again as soon
  as the bytes are through: transfers pipeline behind the latency);
- ``Compute`` takes ``model.tile_cycles(tile)`` cycles on its unit (the
  detailed model's ``detailed_tile_cycles`` with ``detailed=True``);
- ``VectorOp`` takes ``ceil(elements * reads_per_element * cycles_per_op[op] / lanes)``;
- layers run one after another (a barrier between layers).

Because units are in-order and deps point to earlier commands, one pass over
the list in order is an exact discrete-event simulation: a command's start is
``max(unit free time, finish of its deps)``. DMA times are fractional cycles
(bandwidths need not divide sizes); a layer's cycles are rounded up once.

Units have a kind (the model's ``units``: compute, vector, dma, bank) and
the engine accounts time by kind: per layer it reports total cycles, compute
cycles (busy time of the busiest compute-kind unit; for a layer with no
Compute command, of the busiest vector-kind unit, e.g. the PIM ASIC), stall
cycles (total - compute), busy cycles and utilization per unit, SRAM and
DRAM bytes per operand and energy from the tech table. A command on a unit
the model does not declare is an error.

Memo
----
Layer results (timing and energy of one iteration) are memoized by
:func:`memo_key`: ``(layer.signature, layer.arch_key, <the arch fields the
engine reads for the layer's kinds of commands>, detailed)``. The signature
and the mapper's ``arch_key`` determine the command list; the engine's own
reads depend on which command kinds the layer has:

- ``Load`` / ``Store``: the DRAM bandwidth and latency, the buffers (SRAM
  pJ/byte by operand) and the tech table (DRAM and SRAM energy);
- ``VectorOp``: the vector unit and the tech table (``vector.op``);
- ``Compute``: the template's model, which is built from the whole arch, so
  the whole :meth:`~archsim.spec.ArchSpec.identity`.

A layer with only Loads, Stores and VectorOps (ReLU, pooling, residual adds,
norms, gathers) is thus shared by design points that differ in the array,
the clock or anything else it does not read. A layer whose mapper gives no
``arch_key`` (``None``) is keyed by the whole identity. :func:`memo_stats`
counts hits and misses.
"""
from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any, Callable

from archsim.errors import SpecError
from archsim.program import Compute, Load, LayerProgram, Program, Store, VectorOp
from archsim.report.result import LayerResult, SimResult
from archsim.templates.base import UNIT_KINDS

_EPS = 1e-9
_CACHE: OrderedDict = OrderedDict()
_CACHE_LIMIT = 50_000
#: (signature, arch_key) -> the command kinds of that layer (what memo_key projects the arch on)
_KINDS: dict = {}
_STATS = {"hits": 0, "misses": 0}
#: command kinds whose timing and energy ArchContext.projection knows field by field
_PROJECTED_KINDS = frozenset((Load, Store, VectorOp))


def clear_cache() -> None:
    """Forget memoized layer timings and reset :func:`memo_stats` (tests, benchmarks)."""
    _CACHE.clear()
    _KINDS.clear()
    _STATS["hits"] = _STATS["misses"] = 0


def memo_stats() -> dict[str, int]:
    """Layer memo counters since the last :func:`clear_cache`: ``hits``,
    ``misses`` (layers scheduled; layers without a signature are not
    counted), ``size`` (memoized layer results)."""
    return {"hits": _STATS["hits"], "misses": _STATS["misses"], "size": len(_CACHE)}


class LayerTiming:
    """What one iteration of a layer costs (memoized; independent of the layer's name)."""

    __slots__ = (
        "cycles", "compute_cycles", "dma_busy", "vector_busy", "dram_bytes", "sram_bytes",
        "actions", "vector_lane_cycles", "tiles", "pe_fraction_sum", "intervals", "commands", "unit_busy",
    )

    def __init__(self):
        self.cycles = 0
        self.compute_cycles = 0
        self.dma_busy = 0.0
        self.vector_busy = 0
        self.dram_bytes: dict[str, int] = {}
        self.sram_bytes: dict[str, int] = {}
        self.actions: dict[str, int] = {}
        self.vector_lane_cycles = 0
        self.tiles = 0
        self.pe_fraction_sum = 0.0
        self.intervals: list | None = None  # [(unit, start, end, label)] when recorded
        self.commands = 0
        self.unit_busy: dict[str, float] = {}  # unit -> busy cycles


class ArchContext:
    """Per-arch constants and caches for the hot loop."""

    __slots__ = ("arch", "model", "bpc", "latency", "lanes", "vec_cycles", "vec_default", "detailed",
                 "tile_cache", "action_cache", "frac_cache", "identity", "cycles_by_id", "peak", "unit_kinds",
                 "units_of_kind", "_peaks", "_projections", "_plain")

    def __init__(self, arch: Any, detailed: bool = False):
        self.arch = arch
        self.model = arch.model()
        self.bpc = float(arch.dram.bytes_per_cycle)
        self.latency = arch.dram.latency_cycles
        self.lanes = arch.vector_unit.lanes
        self.vec_cycles = arch.vector_unit.cycles_per_op
        self.vec_default = arch.vector_unit.default_cycles
        self.detailed = detailed
        self.tile_cache: dict = {}
        self.cycles_by_id: dict[int, tuple] = {}
        self.action_cache: dict = {}
        self.frac_cache: dict = {}
        self.identity = arch.identity()
        self.peak = float(self.model.peak_macs_per_cycle())
        self._peaks: dict = {}
        self.unit_kinds: dict[str, str] = dict(self.model.units)
        bad = sorted(k for k in set(self.unit_kinds.values()) if k not in UNIT_KINDS)
        if bad:
            raise SpecError(f"template {arch.template}: unit kinds {', '.join(bad)} are not among "
                            f"{', '.join(UNIT_KINDS)}")
        self.units_of_kind = {kind: tuple(u for u, k in self.unit_kinds.items() if k == kind) for kind in UNIT_KINDS}
        self._projections: dict = {}
        self._plain: dict | None = None

    def peak_for(self, weights: str, activations: str = "") -> float:
        """The model's peak MACs/cycle on ``weights`` x ``activations`` operands (the arch's own
        for "", ""; a format left "" is the arch's own)."""
        if not weights and not activations:
            return self.peak
        key = (weights, activations)
        p = self._peaks.get(key)
        if p is None:
            p = self._peaks[key] = float(self.model.peak_macs_per_cycle(weights or None, activations or None))
        return p

    # -- what the engine reads of the arch, by command kinds (memo_key) ---------------
    def projection(self, kinds: frozenset) -> str:
        """Canonical string of the arch fields :func:`schedule_layer` and
        :func:`layer_energy` read for a layer with commands of ``kinds``.

        Keep in step with those functions: a field they read for a kind but
        this omits gives stale memo hits (tests/test_engine_memo.py)."""
        p = self._projections.get(kinds)
        if p is None:
            if kinds - _PROJECTED_KINDS:  # Compute: the model (tile cycles, actions, PE fractions, units)
                p = self.identity       # is built from the whole arch
            elif not kinds:
                p = ""
            else:
                d = self._plain
                if d is None:
                    d = self._plain = self.arch.to_dict()
                part: dict = {"tech": d["tech"]}  # dram_bit, SRAM points, vector.op
                if Load in kinds or Store in kinds:
                    part["dram"] = [d["dram"]["bytes_per_cycle"], d["dram"]["latency_cycles"]]
                    part["buffers"] = d["buffers"]  # SRAM pJ/byte of each operand's buffer
                if VectorOp in kinds:
                    part["vector_unit"] = d["vector_unit"]
                p = json.dumps(part, sort_keys=True, separators=(",", ":"))
            self._projections[kinds] = p
        return p

    # -- per-tile figures (cached by tile, tiles are frozen dataclasses) -------------
    def tile_cycles(self, tile: Any) -> int:
        c = self.tile_cache.get(tile)
        if c is None:
            c = self._detailed_cycles(tile) if self.detailed else int(self.model.tile_cycles(tile))
            self.tile_cache[tile] = c
        return c

    def _detailed_cycles(self, tile: Any) -> int:
        return int(self.model.detailed_tile_cycles(tile))

    def tile_actions(self, tile: Any) -> dict[str, int]:
        a = self.action_cache.get(tile)
        if a is None:
            a = self.model.tile_actions(tile)
            self.action_cache[tile] = a
        return a

    def pe_fraction(self, tile: Any) -> float:
        """Fraction of the compute units a tile maps (SCALE-Sim's mapping efficiency)."""
        f = self.frac_cache.get(tile)
        if f is None:
            f = self.frac_cache[tile] = float(self.model.tile_pe_fraction(tile))
        return f


def schedule_layer(commands: list, ctx: ArchContext, record: bool = False) -> LayerTiming:
    """Run one iteration of a layer's commands; the hot loop."""
    n = len(commands)
    finish = [0.0] * n
    free: dict[str, float] = {}
    busy: dict[str, float] = {}
    bpc = ctx.bpc
    lat = ctx.latency
    lanes = ctx.lanes
    vec_cycles = ctx.vec_cycles
    vec_default = ctx.vec_default
    tile_cycles = ctx.tile_cycles
    by_id = ctx.cycles_by_id  # id(tile) -> cycles; tiles stay alive for the whole run
    dram: dict[str, int] = {}
    sram: dict[str, int] = {}
    tile_counts: dict[int, int] = {}
    tile_objs: dict[int, Any] = {}
    vector_lane_cycles = 0
    intervals = [] if record else None
    end_max = 0.0
    for i in range(n):
        c = commands[i]
        unit = c.unit
        t = free.get(unit, 0.0)
        for d in c.deps:
            f = finish[d]
            if f > t:
                t = f
        cls = type(c)
        if cls is Compute:
            tile = c.tile
            key = id(tile)
            entry = by_id.get(key)
            if entry is None:  # the entry holds the tile, so its id is not reused while ctx lives
                entry = by_id[key] = (tile, tile_cycles(tile))
            dur = entry[1]
            if key in tile_counts:
                tile_counts[key] += 1
            else:
                tile_objs[key] = tile
                tile_counts[key] = 1
            end = t + dur
            free[unit] = end
            finish[i] = end
            label = "compute"
        elif cls is Load or cls is Store:
            nb = c.nbytes
            dur = nb / bpc if bpc != math.inf else 0.0
            free[unit] = t + dur
            end = t + dur + lat
            finish[i] = end
            op = c.operand
            dram[op] = dram.get(op, 0) + nb
            sram[op] = sram.get(op, 0) + nb
            label = "load" if cls is Load else "store"
        elif cls is VectorOp:
            work = c.elements * c.reads_per_element * vec_cycles.get(c.op, vec_default)
            vector_lane_cycles += work
            dur = -(-work // lanes)
            end = t + dur
            free[unit] = end
            finish[i] = end
            label = c.op
        else:  # pragma: no cover - Program contract violation
            raise TypeError(f"unknown command type {cls.__name__}")
        busy[unit] = busy.get(unit, 0.0) + dur
        if end > end_max:
            end_max = end
        if intervals is not None:
            intervals.append((unit, t, end if cls is not Load and cls is not Store else t + dur, label, i))
    timing = LayerTiming()
    timing.cycles = math.ceil(end_max - _EPS) if end_max > 0 else 0
    kinds = ctx.unit_kinds
    undeclared = [u for u in busy if u not in kinds]
    if undeclared:
        raise SpecError(f"template {ctx.arch.template}: commands run on unit(s) {', '.join(sorted(undeclared))} "
                        f"that its model does not declare (units: {', '.join(kinds)})")
    of_kind = ctx.units_of_kind
    compute_busy = max((busy.get(u, 0.0) for u in of_kind["compute"]), default=0.0)
    vector_busy = max((busy.get(u, 0.0) for u in of_kind["vector"]), default=0.0)
    tiles: dict[Any, int] = {}
    for key, count in tile_counts.items():
        tile = tile_objs[key]
        tiles[tile] = tiles.get(tile, 0) + count
    if not tiles:  # a layer of vector work only: the vector units are its compute
        compute_busy = vector_busy
    timing.compute_cycles = min(timing.cycles, math.ceil(compute_busy - _EPS)) if compute_busy > 0 else 0
    timing.dma_busy = sum(busy.get(u, 0.0) for u in of_kind["dma"])
    timing.vector_busy = int(sum(busy.get(u, 0.0) for u in of_kind["vector"]))
    timing.unit_busy = busy
    timing.vector_lane_cycles = vector_lane_cycles
    timing.intervals = intervals
    timing.commands = n
    # actions and SRAM traffic of the array side, per distinct tile x count
    actions: dict[str, int] = {}
    frac = 0.0
    ntiles = 0
    for tile, count in tiles.items():
        ntiles += count
        frac += ctx.pe_fraction(tile) * count
        for name, v in ctx.tile_actions(tile).items():
            if v:
                actions[name] = actions.get(name, 0) + v * count
    for name, v in actions.items():
        if name.startswith(("sram_read_bytes.", "sram_write_bytes.")):
            op = name.split(".", 1)[1]
            sram[op] = sram.get(op, 0) + v
    timing.actions = actions
    timing.tiles = ntiles
    timing.pe_fraction_sum = frac
    timing.dram_bytes = dram
    timing.sram_bytes = sram
    return timing


# ----------------------------------------------------------------------------- energy

_OPERAND_BUFFER = {"psum": "output"}


def layer_energy(timing: LayerTiming, ctx: ArchContext) -> dict[str, float]:
    """Energy of one layer iteration by component (pJ): mac, reg, sram, dram, vector, other."""
    out = {"compute": 0.0, "sram": 0.0, "dram": 0.0, "vector": 0.0}
    for name, count in timing.actions.items():
        if name.startswith(("sram_read_bytes.", "sram_write_bytes.")):
            continue  # counted with the SRAM bytes below
        out["compute"] += _action_energy(ctx, name) * count
    for operand, nbytes in timing.sram_bytes.items():
        out["sram"] += nbytes * _sram_pj_per_byte(ctx, operand)
    out["dram"] = sum(timing.dram_bytes.values()) * 8 * _action_energy(ctx, "dram_bit")
    if timing.vector_lane_cycles:
        out["vector"] = timing.vector_lane_cycles * _action_energy(ctx, "vector.op")
    return out


def _action_energy(ctx: ArchContext, name: str) -> float:
    """pJ of one ``name`` action from the arch's tech table; a SpecError naming the table if it lacks it."""
    tech = ctx.arch.tech
    try:
        return tech.energy(name)
    except KeyError:
        raise SpecError(
            f"tech table {tech.name}: no energy for action {name!r} of template {ctx.arch.template}; "
            f"expected one of {', '.join(sorted(tech.energy_pj))}"
        ) from None


def _sram_pj_per_byte(ctx: ArchContext, operand: str) -> float:
    arch = ctx.arch
    name = _OPERAND_BUFFER.get(operand, operand)
    buf = arch.buffers.get(name) or arch.buffers.get("unified")
    if buf is None:
        buf = max(arch.buffers.values(), key=lambda b: b.bytes)  # template-specific operand name
    return arch.tech.sram_pj_per_byte(buf.bytes / buf.banks)


# ----------------------------------------------------------------------------- driver


def _layer_result(layer: LayerProgram, timing: LayerTiming, energy: dict[str, float], ctx: ArchContext) -> LayerResult:
    repeat = int(layer.repeat or 1)
    cycles = timing.cycles * repeat
    compute = timing.compute_cycles * repeat
    peak = ctx.peak_for(layer.weight_format, layer.activation_format) if layer.macs else ctx.peak
    util = layer.macs / (peak * cycles) if cycles and peak else 0.0
    compute_util = layer.macs / (peak * compute) if compute and peak and timing.tiles else 0.0
    sram = {k: v * repeat for k, v in sorted(timing.sram_bytes.items())}
    dram = {k: v * repeat for k, v in sorted(timing.dram_bytes.items())}
    en = {k: v * repeat for k, v in energy.items()}
    return LayerResult(
        name=layer.name,
        op=layer.op,
        macs=layer.macs,
        cycles=cycles,
        compute_cycles=compute,
        stall_cycles=cycles - compute,
        utilization=util,
        sram_bytes=sum(sram.values()),
        dram_bytes=sum(dram.values()),
        energy_pj=sum(en.values()),
        sram_bytes_by_operand=sram,
        dram_bytes_by_operand=dram,
        energy_pj_by_component=en,
        mapping=dict(layer.mapping or {}),
        repeat=repeat,
        tiles=timing.tiles * repeat,
        commands=timing.commands * repeat,
        mapping_efficiency=(timing.pe_fraction_sum / timing.tiles) if timing.tiles else 0.0,
        compute_utilization=compute_util,
        dma_busy_cycles=timing.dma_busy * repeat,
        vector_cycles=timing.vector_busy * repeat,
        weight_format=layer.weight_format,
        activation_format=layer.activation_format,
        tokens=layer.tokens,
        internal_bytes_by_operand=dict(sorted(layer.internal_bytes.items())),
        unit_busy_cycles={u: b * repeat for u, b in sorted(timing.unit_busy.items())},
        unit_utilization={u: (b / timing.cycles if timing.cycles else 0.0) for u, b in sorted(timing.unit_busy.items())},
    )


def memo_key(layer: LayerProgram, ctx: ArchContext) -> tuple | None:
    """The memo key of ``layer`` on ``ctx``'s arch (module docstring), or None
    for a layer without a signature (never memoized)."""
    sig = layer.signature
    if not sig:
        return None
    ak = layer.arch_key
    if ak is None:
        return (sig, None, ctx.identity, ctx.detailed)
    kk = (sig, ak)
    kinds = _KINDS.get(kk)
    if kinds is None:
        kinds = frozenset(type(c) for c in layer.commands)
        if len(_KINDS) >= _CACHE_LIMIT:
            _KINDS.clear()
        _KINDS[kk] = kinds
    return (sig, ak, ctx.projection(kinds), ctx.detailed)


def simulate_layer(layer: LayerProgram, ctx: ArchContext, record: bool = False) -> tuple[LayerResult, LayerTiming]:
    """Time one layer (memoized by :func:`memo_key`) and build its LayerResult."""
    key = memo_key(layer, ctx)
    entry = _CACHE.get(key) if key is not None else None
    if entry is None or (record and entry[0].intervals is None):
        timing = schedule_layer(layer.commands, ctx, record=record)
        entry = (timing, layer_energy(timing, ctx))
        if key is not None:
            _STATS["misses"] += 1
            if len(_CACHE) >= _CACHE_LIMIT:
                _CACHE.popitem(last=False)
            _CACHE[key] = entry
    elif key is not None:
        _STATS["hits"] += 1
    timing, energy = entry
    return _layer_result(layer, timing, energy, ctx), timing


def _run_peak(layers: list[LayerResult], ctx: ArchContext) -> float:
    """Peak MACs/cycle of the (weights, activations) formats that carry most of the run's MACs."""
    by_format: dict[tuple[str, str], int] = {}
    for l in layers:
        if l.macs:
            key = (l.weight_format, l.activation_format)
            by_format[key] = by_format.get(key, 0) + l.macs
    peak = ctx.peak_for(*max(by_format, key=by_format.get)) if by_format else ctx.peak
    return int(peak) if float(peak).is_integer() else peak


def run_program(
    program: Program,
    arch: Any,
    *,
    detailed: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    trace_layers: int = 0,
) -> SimResult:
    """Run every layer of ``program`` on ``arch``; return a :class:`SimResult`.

    ``progress(done, total, layer_name)`` is called after each layer.
    ``trace_layers``: record the command timeline of the first N layers
    (``SimResult.trace``) for the Perfetto trace writer.
    """
    ctx = ArchContext(arch, detailed)
    layers = []
    trace = []
    total = len(program.layers)
    offset = 0
    for i, layer in enumerate(program.layers):
        record = i < trace_layers
        res, timing = simulate_layer(layer, ctx, record=record)
        res.start_cycle = offset
        if record and timing.intervals is not None:
            trace.append((i, layer.name, offset, timing.cycles, res.repeat, timing.intervals))
        offset += res.cycles
        layers.append(res)
        if progress is not None:
            progress(i + 1, total, layer.name)
    result = SimResult.from_layers(
        layers,
        arch_name=arch.name,
        workload_name=program.workload_name,
        clock_mhz=arch.clock_mhz,
        peak_macs_per_cycle=_run_peak(layers, ctx),
        detailed=detailed,
    )
    result.trace = trace
    result.trace_layers = trace_layers
    result.extras.update(result.token_rates())  # any template: LLM runs report tokens/s
    result.extras.update(ctx.model.report_extras(result))
    return result
