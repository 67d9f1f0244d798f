"""What every accelerator template provides to the rest of archsim.

A template is one idea of hardware (systolic array, PIM banks, ...). It has a
parameter dataclass (``Params``, read from the ``params:`` section of an arch
spec, the same dataclass the RTL generator takes) and a model class that the
engine, the mapper's search and the tests call. Adding a template = one
package under ``archsim/templates/<name>/`` exposing ``TEMPLATE``, a
:class:`Template` entry that names (lazily) its params, model, mapper,
options, RTL design, conformance hook and value reference; every layer finds
the template there (``docs/adding_a_template.md``).

Conventions for ``Params`` dataclasses:
- plain type-hinted fields with defaults where a default is sensible;
- a ``validate(self) -> None`` method that raises ``ValueError("key: expected ...")``
  for impossible combinations (the spec loader turns it into a one-line
  ``SpecError`` naming the file);
- optionally ``min_buffer_bytes(self) -> (dict[buffer name, bytes], what)``: the
  smallest buffers that hold one tile (the spec loader checks them);
- optionally ``with_precision(self, weights, activations) -> Params``: a copy set
  up to run that precision pair, or ``ValueError`` naming the pairs it runs
  (``archsim run --weights FMT --activations FMT``);
- optionally ``reshapes(self, macs_per_cycle) -> list[dict]``: the shapes and mapping
  options worth searching for this design built with ``macs_per_cycle`` peak MACs per
  cycle at its own precision, each as ``load_arch`` overrides (bare param / option
  names), the one closest to this instance first (``archsim compare --iso / --tune``;
  read it through :func:`reshapes`; absent: the design cannot be reshaped).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


#: the kinds of units a model declares; the engine accounts time by kind
UNIT_KINDS = ("compute", "vector", "dma", "bank")


class TemplateModel(Protocol):
    """Timing, values, action counts and area inputs of one template instance.

    Built once per arch spec: ``model = TEMPLATE.model_cls(arch)``. Shared code
    asks the model through these methods and never reads the template's own
    parameters.
    """

    arch: Any  # archsim.spec.ArchSpec

    #: unit name -> kind (:data:`UNIT_KINDS`); every ``unit`` a mapper emits is here
    units: dict[str, str]

    def peak_macs_per_cycle(self, precision: str | None = None) -> float:
        """MACs per cycle with every MAC busy at ``precision`` (the arch's own when None)."""

    def tile_cycles(self, tile: Any) -> int:
        """Fast model: closed-form cycles of one Compute tile."""

    def tile_actions(self, tile: Any) -> dict[str, int]:
        """Fast model: counts of energy actions of one tile, keyed by the
        technology table's action names (e.g. ``"mac_int8"``, ``"pe_reg_access"``)."""

    def tile_values(self, tile: Any, operands: dict[str, np.ndarray]) -> np.ndarray:
        """Fast model: the tile's output values, bit-exact, with numpy."""

    def detailed_tile(self, tile: Any, operands: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        """Detailed model: run the tile cycle by cycle; return (values, cycles).

        A template with no detailed model raises ``NotImplementedError`` with
        the reason (e.g. the roofline template); see :func:`conformance_of`."""

    def detailed_tile_cycles(self, tile: Any) -> int:
        """Detailed model's cycles of a tile without operands (``--detailed`` runs)."""

    def tile_pe_fraction(self, tile: Any) -> float:
        """Fraction of the compute units ``tile`` maps (SCALE-Sim's mapping efficiency)."""

    def check_tile(self, tile: Any) -> None:
        """Raise ``ValueError`` if ``tile`` cannot run on this arch (mapper verification)."""

    def area_inputs(self) -> Any:
        """:class:`archsim.area.AreaInputs`: MAC units per precision, register bits, fixed parts."""

    # optional: ``compute_formats(weights, activations) -> (weights, activations)``, the formats
    # the datapath really computes a layer in, given the layer's own ("" = none); a template
    # whose hardware has fixed formats (a PIM bank's MAC, a fixed-precision array) says so
    # here. Absent: the layer's formats. Read it through :func:`compute_formats`.


def compute_formats(model: Any, weights: str, activations: str) -> tuple[str, str]:
    """(weights, activations) format ``model``'s hardware computes a layer of those formats in."""
    hook = getattr(model, "compute_formats", None)
    return hook(weights, activations) if hook is not None else (weights, activations)


def reshapes(params: Any, macs_per_cycle: float) -> list[dict[str, Any]]:
    """Overrides that rebuild ``params``' design with ``macs_per_cycle`` peak MACs per cycle, one
    per shape / mapping option worth searching, the closest to ``params`` first: the template's
    optional ``Params.reshapes`` hook (module docstring); ``[]`` without one or when no shape of
    the template has exactly that peak. Shared code (``archsim compare``) reshapes through this
    and never names a template's parameters."""
    hook = getattr(params, "reshapes", None)
    return [dict(v) for v in hook(macs_per_cycle)] if callable(hook) else []


class Conformance(Protocol):
    """The hook the shared level-agreement harness (``tests/test_template_levels.py``)
    draws its cases from. A template provides it by passing it as
    ``Template(conformance=...)`` in its ``TEMPLATE`` entry -- the only
    mechanism; by convention it lives in ``archsim/templates/<name>/conformance.py``
    and the module itself is the hook (module-level names below).

    The hook only *generates* cases. The harness checks, per configuration and
    sampled tile, that the fast model (``tile_cycles``, ``tile_values``) and
    the detailed model (``detailed_tile``) agree bit for bit on values and
    exactly on cycles, and that the values equal a reference the harness
    computes itself; for templates registered in its ``Template`` entry (``rtl=``) it
    also co-simulates a few tiles on ``rtl_arch``.
    """

    #: preset arch spec (as for ``archsim.spec.load_arch``) the configurations override
    base_arch: str
    #: overrides of ``base_arch`` for the one small configuration co-simulated on the RTL
    rtl_arch: dict[str, Any]

    def conformance_archs(self) -> list[dict[str, Any]]:
        """A few small configurations, as ``load_arch(base_arch, overrides)`` overrides,
        covering the template's timing- and value-relevant parameters (array shapes,
        dataflows, preload modes, pipeline stages, bank / timing variants, precisions)."""

    def sample_tiles(self, rng: np.random.Generator, params: Any, count: int) -> list[tuple[Any, dict | None]]:
        """``count`` random legal tiles for ``params`` with random operands of the right
        precision: ``[(tile, operands)]``. Deterministic given ``rng``. The list must
        cover the edge cases the template's own tests cover (partial tiles, the
        smallest tile, accumulation, every dataflow / mode ``params`` allows) and be
        legal when run back to back in order (it is replayed as one sequence on the
        RTL, and on ``rtl_arch`` every tile with operands must be one the RTL runs).
        ``operands=None`` marks a tile without output values (e.g. a write):
        only its cycles are compared, with the model's ``detailed_tile_cycles``.
        The harness asks for 16 tiles per configuration and 12 on the RTL; edge
        cases come first so that they are always among them."""


class NoDetailedModel(Exception):
    """Raised by :func:`conformance_of` for a template that declares it has no detailed model."""


def conformance_of(template: "Template") -> Conformance:
    """The template's :class:`Conformance` hook.

    Raises :class:`NoDetailedModel` (with the template's own reason) when the
    template has no hook and its model's ``detailed_tile`` raises
    ``NotImplementedError`` -- the explicit declaration that there is no detailed
    model to check (the probe calls it on a bare instance with no tile). Raises
    ``TypeError`` for a template with neither: every template with a detailed
    model must provide the hook.
    """
    if template.conformance is not None:
        return template.conformance_module
    probe = object.__new__(template.model_cls)
    try:
        template.model_cls.detailed_tile(probe, None, {})
    except NotImplementedError as err:
        raise NoDetailedModel(f"template {template.name!r}: {err}") from None
    except Exception:  # noqa: BLE001 - anything else means "there is a detailed model"
        pass
    raise TypeError(f"template {template.name!r} has a detailed model but no conformance hook: pass "
                    f"Template(conformance=...) (see archsim.templates.base.Conformance)")


def _resolve(ref: str | None) -> Any:
    """Import ``"module"`` or ``"module:attribute"`` (None stays None)."""
    if ref is None:
        return None
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


@dataclass(frozen=True)
class Template:
    """The one registry entry of a template: every part of it, named lazily.

    Each reference is ``"module"`` or ``"module:attribute"``, imported on
    first use through the properties below, so listing templates imports
    nothing heavy. Shared code (engine, spec loader, mapper driver, area,
    reports, rtl, co-sim, CLI, the level harness) finds everything here and
    never names a template (``docs/adding_a_template.md``).
    """

    name: str
    description: str
    #: the ``params:`` dataclass (also what the RTL generator takes)
    params: str
    #: the model class (:class:`TemplateModel`), built as ``model_cls(arch)``
    model: str
    #: mapper module exposing ``make_mapper(arch, options)`` (and optionally ``check_graph``)
    mapper: str
    #: frozen dataclass of the template's own mapper options (the spec's ``options:``), or None
    options: str | None = None
    #: :class:`rtl.design.RtlDesign` subclass, or None for a template without RTL
    rtl: str | None = None
    #: the level harness's hook module (:class:`Conformance`), or None without a detailed model
    conformance: str | None = None
    #: independent value check ``check(tile, operands, params, values)`` for the level harness
    reference: str | None = None
    #: ``missing_cases(params, items) -> list[str]``: cases the hook's samples promise but lack
    coverage: str | None = None
    #: False for templates with no on-chip operand buffers (PIM banks, a GPU
    #: roofline): their specs may omit ``buffers`` or leave it empty.
    uses_buffers: bool = True

    @property
    def params_cls(self) -> type:
        return _resolve(self.params)

    @property
    def model_cls(self) -> type:
        return _resolve(self.model)

    @property
    def mapper_module(self) -> Any:
        return _resolve(self.mapper)

    @property
    def options_cls(self) -> type | None:
        return _resolve(self.options)

    @property
    def rtl_cls(self) -> type | None:
        return _resolve(self.rtl)

    @property
    def conformance_module(self) -> Any:
        return _resolve(self.conformance)

    @property
    def reference_fn(self) -> Any:
        return _resolve(self.reference)

    @property
    def coverage_fn(self) -> Any:
        return _resolve(self.coverage)
