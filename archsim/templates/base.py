"""What every accelerator template provides to the rest of archsim.

A template is one idea of hardware (systolic array, PIM banks, ...). It has a
parameter dataclass (``Params``, read from the ``params:`` section of an arch
spec, the same dataclass the RTL generator takes) and a model class that the
engine, the mapper's search and the tests call. Adding a template = one
package under ``archsim/templates/<name>/`` exposing ``TEMPLATE``, a
:class:`Template` entry that names (lazily) its params, model, mapper,
options, RTL design, conformance hook and value reference; every layer finds
the template there (``docs/adding_a_template.md``).

Every part is a subclass of a base class here that declares its hooks as
methods with defaults (:class:`TemplateParams`, :class:`TemplateModel`;
``mappers.registry.Mapper`` and ``rtl.design.RtlDesign`` for the mapper and
the RTL): shared code calls the hooks and never probes for them.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


#: the kinds of units a model declares; the engine accounts time by kind
UNIT_KINDS = ("compute", "vector", "dma", "bank")


class TemplateParams:
    """Base class of a template's ``Params`` dataclass (plain type-hinted fields
    with defaults where a default is sensible). The hooks below have defaults;
    a template overrides the ones it needs."""

    def validate(self) -> None:
        """Raise ``ValueError("key: expected ...")`` for an impossible combination (the
        spec loader turns it into a one-line ``SpecError`` naming the file). Default: none."""

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        """The smallest buffers that hold one tile: ``({buffer name: bytes}, why)``;
        the spec loader checks the arch's buffers against them. Default: no minimum."""
        return {}, ""

    def with_precision(self, weights: str, activations: str) -> "TemplateParams":
        """A copy set up to run ``weights`` x ``activations`` (``archsim run --weights FMT
        --activations FMT``), or ``ValueError`` naming the pairs it runs.
        Default: the template has a fixed precision."""
        raise ValueError(f"template params {type(self).__name__} have a fixed precision; "
                         f"--weights/--activations do not apply")

    def reshapes(self, macs_per_cycle: float) -> list[dict[str, Any]]:
        """The shapes and mapping options worth searching for this design built with
        ``macs_per_cycle`` peak MACs per cycle at its own precision, each as ``load_arch``
        overrides (bare param / option names), the one closest to this instance first
        (``archsim compare --iso / --tune``; read through :func:`reshapes`).
        Default ``[]``: the design cannot be reshaped."""
        return []


class TemplateOptions:
    """Base class of a template's own mapper options (a frozen dataclass subclassing
    it, named on the entry as ``Template(options=...)``; the spec's ``options:`` and
    ``archsim run`` flags fill it; see :mod:`archsim.spec.options`)."""

    def validate(self) -> None:
        """Raise ``ValueError("option: expected ...")`` for an impossible value. Default: none."""


class TemplateModel:
    """Base class of a template's model: timing, values, action counts and area
    inputs of one template instance.

    Built from an arch spec only (the one constructor convention):
    ``model = TEMPLATE.model_cls(arch)``, cached by ``ArchSpec.model()``; a
    subclass's ``__init__(self, arch)`` calls ``super().__init__(arch)`` first,
    which refuses bare params (a :class:`TemplateParams`). Code that holds
    only a ``Params`` (an RTL design, a unit test) wraps it with
    :func:`archsim.spec.arch_from_params`. Shared code asks the model through
    these methods and never reads the template's own parameters. Methods that
    raise ``NotImplementedError`` here are required; the others are optional
    hooks whose defaults are stated.
    """

    arch: Any  # archsim.spec.ArchSpec

    #: unit name -> kind (:data:`UNIT_KINDS`); every ``unit`` a mapper emits is here
    units: dict[str, str] = {}

    def __init__(self, arch: Any):
        if isinstance(arch, TemplateParams):
            raise TypeError(f"{type(self).__name__}(arch): expected an archsim.spec.ArchSpec, got bare params "
                            f"{type(arch).__name__}; wrap them with archsim.spec.arch_from_params(params)")
        self.arch = arch

    def _required(self, name: str) -> NotImplementedError:
        return NotImplementedError(f"{type(self).__name__} does not implement {name}() "
                                   f"(archsim.templates.base.TemplateModel)")

    # ---- required ----
    def peak_macs_per_cycle(self, weights: str | None = None, activations: str | None = None) -> float:
        """MACs per cycle with every MAC busy on ``weights`` x ``activations`` operands (format
        names; None: the arch's own). Both are given, so a weight-serial and an
        activation-serial datapath each read the one that sets their rate."""
        raise self._required("peak_macs_per_cycle")

    def tile_cycles(self, tile: Any) -> int:
        """Fast model: closed-form cycles of one Compute tile."""
        raise self._required("tile_cycles")

    def tile_actions(self, tile: Any) -> dict[str, int]:
        """Fast model: counts of energy actions of one tile, keyed by the
        technology table's action names (e.g. ``"mac_int8"``, ``"pe_reg_access"``)."""
        raise self._required("tile_actions")

    def tile_values(self, tile: Any, operands: dict[str, np.ndarray]) -> np.ndarray:
        """Fast model: the tile's output values, bit-exact, with numpy."""
        raise self._required("tile_values")

    def tile_pe_fraction(self, tile: Any) -> float:
        """Fraction of the compute units ``tile`` maps (SCALE-Sim's mapping efficiency)."""
        raise self._required("tile_pe_fraction")

    def check_tile(self, tile: Any) -> None:
        """Raise ``ValueError`` if ``tile`` cannot run on this arch (mapper verification)."""
        raise self._required("check_tile")

    def area_inputs(self) -> Any:
        """:class:`archsim.area.AreaInputs`: MAC units per precision, register bits, fixed parts."""
        raise self._required("area_inputs")

    # ---- optional hooks (defaults stated) ----
    def detailed_tile(self, tile: Any, operands: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        """Detailed model: run the tile cycle by cycle; return (values, cycles).

        Default: ``NotImplementedError`` -- the template has no detailed model
        (e.g. the roofline template, which overrides it to give its reason);
        see :func:`conformance_of`."""
        raise NotImplementedError(f"{type(self).__name__} has no detailed model")

    def detailed_tile_cycles(self, tile: Any) -> int:
        """Detailed model's cycles of a tile without operands (``--detailed`` runs).
        Default: no detailed model (``NotImplementedError``)."""
        raise NotImplementedError(f"{type(self).__name__} has no detailed model")

    def detailed_cycles_range(self, tile: Any) -> tuple[int, int]:
        """The (lowest, highest) cycles the detailed model can give ``tile`` over all operand values.
        Default ``(c, c)`` with ``c = tile_cycles(tile)``: the cycles do not depend on the data, and
        the level harness asks fast == detailed exactly. A unit whose cycles depend on the data
        (SpAtten's quick-select top-k) returns its data-independent bounds; its fast cycles are
        then an estimate within them, and the harness asks detailed == RTL exactly instead."""
        c = self.tile_cycles(tile)
        return c, c

    def compute_formats(self, weights: str, activations: str) -> tuple[str, str] | None:
        """The (weights, activations) formats the datapath really computes a layer in,
        given the layer's own ("" = none); a template whose hardware has fixed
        formats (a PIM bank's MAC, a fixed-precision array) says so here.
        Default ``None``: not declared -- the layer's own formats are used, and
        ``archsim run --sqnr`` refuses the template. Read it through :func:`compute_formats`."""
        return None

    def scale_group_size(self) -> int:
        """Weights sharing one quantization scale along K in the datapath (``--sqnr`` quantizes
        the same way; a precision policy may override it per layer). Default 0: no groups
        along K (one scale per output column)."""
        return 0

    def report_extras(self, result: Any) -> dict[str, Any]:
        """Template figures added to ``report.json``'s ``extras`` after a run
        (``result`` is the :class:`archsim.report.result.SimResult`). Default: none."""
        return {}


def compute_formats(model: TemplateModel, weights: str, activations: str) -> tuple[str, str]:
    """(weights, activations) format ``model``'s hardware computes a layer of those formats in."""
    formats = model.compute_formats(weights, activations)
    return (weights, activations) if formats is None else formats


def reshapes(params: TemplateParams, macs_per_cycle: float) -> list[dict[str, Any]]:
    """Overrides that rebuild ``params``' design with ``macs_per_cycle`` peak MACs per cycle, one
    per shape / mapping option worth searching, the closest to ``params`` first: the template's
    :meth:`TemplateParams.reshapes` hook; ``[]`` when the template has no reshapes or no shape
    with exactly that peak. Shared code (``archsim compare``) reshapes through this and never
    names a template's parameters."""
    return [dict(v) for v in params.reshapes(macs_per_cycle)]


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
    #: the ``params:`` dataclass, a :class:`TemplateParams` subclass (also what the RTL generator takes)
    params: str
    #: the model class (a :class:`TemplateModel` subclass), built as ``model_cls(arch)``
    model: str
    #: mapper module exposing ``make_mapper(arch, options) -> mappers.registry.Mapper``
    mapper: str
    #: frozen :class:`TemplateOptions` dataclass of the template's own mapper options (the spec's
    #: ``options:``, and ``archsim run`` flags generated from its fields), or None
    options: str | None = None
    #: :class:`rtl.design.RtlDesign` subclass, or None for a template without RTL
    rtl: str | None = None
    #: :class:`rtl.design.UnitDesign` subclasses of units with their own standalone RTL (co-simulated
    #: by the level harness beside ``rtl``), as "module:Class"
    unit_rtl: tuple[str, ...] = ()
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
    def unit_rtl_classes(self) -> list[type]:
        return [_resolve(ref) for ref in self.unit_rtl]

    @property
    def conformance_module(self) -> Any:
        return _resolve(self.conformance)

    @property
    def reference_fn(self) -> Any:
        return _resolve(self.reference)

    @property
    def coverage_fn(self) -> Any:
        return _resolve(self.coverage)
