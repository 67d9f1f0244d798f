"""The Program: the command stream shared by the mapper, the engine and the RTL.

The mapper (``mappers``) lowers each layer of a workload ``Graph`` to a
:class:`LayerProgram`: an ordered list of commands. The engine
(``archsim.engine``) runs them against timelines of the accelerator's units;
the RTL controller (``rtl``) consumes the same compute commands. A
co-simulation is "replay these commands on both and compare".

Commands
--------
Every command has an ``id`` (its index in the layer's list), the ``deps`` it
waits for (ids of earlier commands in the same layer) and the ``unit`` that
executes it. A command starts when all its deps have finished and its unit is
free; units execute their commands in list order. Buffer capacity is the
mapper's job: it allocates slots and adds a dependency from every load into a
slot on the last command that read that slot (write-after-read), so double
buffering is simply "two slots".

Kinds:

- :class:`Load` / :class:`Store` move ``nbytes`` between DRAM and a named
  on-chip buffer slot (unit ``"dma"``); the engine times them with the DRAM
  model (bandwidth, latency).
- :class:`Compute` runs one template tile on a compute unit the template's
  model names in its ``units`` (``"array"`` by default, or its own, e.g.
  ``"pim.ch0"``; :func:`mappers.tiling.emit_gemm` takes it as ``unit=``). ``tile`` is the
  template's own frozen dataclass (e.g. ``SystolicTile``); the template's
  fast model gives its cycles and values.
- :class:`VectorOp` runs ``elements`` element-wise operations of kind ``op``
  (softmax, layernorm, gelu, add, maxpool, ...) on the vector unit
  (unit ``"vector"``).

Templates that are not arrays keep the same structure with their own tile
dataclass in ``Compute.tile`` (a PIM "bank GEMV row burst", for instance);
their detailed model expands a tile into DRAM commands (ACT, RD-MAC, PRE,
REF) when run at command level.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class _Transfer:
    """A DMA transfer of ``nbytes`` between DRAM and one buffer slot."""

    id: int
    deps: tuple[int, ...]
    operand: str  # "input" | "weight" | "output" (psum reload) | template-specific
    buffer: str  # buffer name in the arch spec ("input", "weight", "output" or "unified")
    slot: int
    nbytes: int
    dram_addr: int = 0
    unit: str = "dma"


@dataclass(frozen=True, slots=True)
class Load(_Transfer):
    """DRAM -> on-chip buffer slot."""


@dataclass(frozen=True, slots=True)
class Store(_Transfer):
    """On-chip buffer slot -> DRAM."""


@dataclass(frozen=True, slots=True)
class Compute:
    """One tile on the template's compute unit.

    ``tile`` is a template-specific frozen dataclass that fully determines
    the tile's cycles (e.g. ``SystolicTile(m, k, n, dataflow, accumulate)``).
    ``slots`` maps operand name to the buffer slot it reads or writes.
    """

    id: int
    deps: tuple[int, ...]
    tile: Any
    slots: tuple[tuple[str, int], ...] = ()
    unit: str = "array"


@dataclass(frozen=True, slots=True)
class VectorOp:
    """Element-wise / reduction work on the vector unit (or the PIM ASIC)."""

    id: int
    deps: tuple[int, ...]
    op: str  # "softmax", "layernorm", "rmsnorm", "gelu", "add", "maxpool", ...
    elements: int  # number of output elements
    reads_per_element: int = 1  # inputs read per output element (e.g. pool window)
    unit: str = "vector"


Command = Load | Store | Compute | VectorOp


@dataclass(slots=True)
class LayerProgram:
    """The commands of one graph node, plus what the engine and reports need about it.

    ``macs`` counts useful multiply-accumulates (the graph op's own count).
    ``signature`` is a hashable key of everything the layer's timing depends
    on besides the arch (shapes, precisions, chosen mapping); the engine
    memoizes layer results by it.

    ``arch_key`` is a canonical string of exactly the arch fields the mapper
    read to produce this layer (its commands, signature, macs and mapping),
    or ``None`` when the mapper does not say (then the layer is taken to
    depend on the whole arch). ``(signature, arch_key)`` determines the
    command list; the engine adds the arch fields its own timing of those
    commands reads (:func:`archsim.engine.core.memo_key`).

    Typed fields the engine and reports read (never side channels in ``mapping``):

    - ``repeat``: the commands are ONE of ``repeat`` identical, independent
      iterations (conv groups, attention heads, per-token GEMVs); the engine
      multiplies cycles, energy and bytes by it;
    - ``tokens``: tokens this layer looks up (embedding layers), from which
      tokens/s is computed (:meth:`archsim.report.SimResult.token_rates`);
    - ``weight_format`` / ``activation_format``: the precisions the layer runs at;
    - ``internal_bytes``: bytes moved inside memory without the DMA, per
      operand, for the whole layer (PIM in-bank reads), reported beside DRAM traffic.

    ``mapping`` describes the chosen mapping for people (dataflow, tile sizes,
    loop order); nothing computes with it.
    """

    name: str
    op: str
    macs: int
    commands: list[Command]
    signature: tuple = ()
    mapping: dict[str, Any] = field(default_factory=dict)  # descriptive: dataflow, tile sizes, loop order
    arch_key: str | None = None  # the arch fields the mapping depends on; None = all
    repeat: int = 1
    tokens: int = 0
    weight_format: str = ""
    activation_format: str = ""
    internal_bytes: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Program:
    """A whole workload mapped onto one arch: layers in graph (topological) order, or in the
    operator order a scratchpad allocation chose (``allocation``: its summary, see
    :mod:`mappers.allocation.apply`; empty for the greedy layer-by-layer mapping)."""

    arch_name: str
    workload_name: str
    layers: list[LayerProgram]
    allocation: dict[str, Any] = field(default_factory=dict)
