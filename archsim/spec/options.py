"""Options of :func:`mappers.compile`: common ones here, the rest the template's own.

They live beside the spec loader (which checks a spec's ``options:`` with
:func:`options_for`) so that reading a spec never imports the compiler;
``mappers.options`` re-exports them.

Common options (every template): ``objective``, ``conv_lowering`` and
``fusion``. A
template may declare its own frozen options dataclass on its entry
(``Template(options="module:Class")``, e.g. the systolic template's
``dataflow`` and ``scalesim_compat``). Values come from the arch spec's
``options:`` section, overridden by keyword arguments of ``compile`` (and
``archsim run`` flags); the result is one frozen :class:`MapOptions` whose
``template`` field holds the template's options instance.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from archsim.errors import MappingError

#: how convolutions become GEMMs (:func:`mappers.lower.lower_op`)
CONV_LOWERINGS = ("im2col_padded", "scalesim")

OBJECTIVES = ("cycles", "energy")
#: which inter-layer tensors stay in the scratchpad (:mod:`mappers.allocation`)
ALLOCATIONS = ("greedy", "ilp", "heuristic")
#: options every template takes
COMMON_OPTIONS = ("objective", "conv_lowering", "fusion", "allocation")


@dataclass(frozen=True)
class MapOptions:
    """Mapper options.

    Attributes
    ----------
    objective : "cycles" | "energy"
        What the mapping search minimises (the other breaks ties).
    conv_lowering : "im2col_padded" | "scalesim" | None
        How convolutions become GEMMs (see :mod:`mappers.lower`); None lets
        the template choose (the systolic template picks "scalesim" when its
        ``scalesim_compat`` option is set, else "im2col_padded").
    template : the template's options dataclass instance, or None
    fusion : bool
        Run element-wise ops in the array's output path where the arch's
        ``output_ops`` has them (:mod:`mappers.fusion`); False (``--no-fusion``)
        runs every one as its own vector pass.
    allocation : "greedy" | "ilp" | "heuristic"
        Which inter-layer tensors stay in the scratchpad: greedy is layer by layer
        (every layer's output stored to DRAM); ilp / heuristic are COSMA's plans
        (:mod:`mappers.allocation`), applied to the Program by :mod:`mappers.allocation.apply`.
    """

    objective: str = "cycles"
    conv_lowering: str | None = None
    template: Any = None
    fusion: bool = True
    allocation: str = "greedy"


def option_names(template_name: str) -> tuple[str, ...]:
    """Every option name ``template_name``'s mapper takes (common first)."""
    cls = _options_cls(template_name)
    return COMMON_OPTIONS + (tuple(f.name for f in fields(cls)) if cls is not None else ())


def _options_cls(template_name: str):
    from archsim.templates import get_template
    from archsim.templates.base import TemplateOptions

    cls = get_template(template_name).options_cls
    if cls is not None and not issubclass(cls, TemplateOptions):  # its hooks are called, never probed
        raise TypeError(f"options class {cls.__name__} must subclass archsim.templates.base.TemplateOptions")
    return cls


def make_options(arch, options: dict) -> MapOptions:
    """Validate ``arch.options`` overridden by keyword ``options`` into a :class:`MapOptions`."""
    return options_for(arch.template, arch.options, options)


def options_for(template_name: str, spec_options: dict | None, overrides: dict | None = None) -> MapOptions:
    """Validate a spec's ``options:`` of ``template_name`` overridden by ``overrides`` (None
    values ignored) into a :class:`MapOptions`; a one-line :class:`MappingError` otherwise."""
    merged = {**(spec_options or {}), **{k: v for k, v in (overrides or {}).items() if v is not None}}
    cls = _options_cls(template_name)
    own = tuple(f.name for f in fields(cls)) if cls is not None else ()
    names = COMMON_OPTIONS + own
    for key in merged:
        if key not in names:
            raise MappingError(f"unknown mapper option {key!r} for template {template_name!r}; "
                               f"expected one of {', '.join(names)}")
    conv = merged.get("conv_lowering")
    if conv is not None and conv not in CONV_LOWERINGS:
        raise MappingError(f"conv_lowering: expected one of {', '.join(CONV_LOWERINGS)}, got {conv!r}")
    objective = merged.get("objective") or "cycles"
    if objective not in OBJECTIVES:
        raise MappingError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    fusion = merged.get("fusion", True)
    if not isinstance(fusion, bool):
        raise MappingError(f"fusion: expected true or false, got {fusion!r}")
    allocation = merged.get("allocation") or "greedy"
    if allocation not in ALLOCATIONS:
        raise MappingError(f"allocation: expected one of {', '.join(ALLOCATIONS)}, got {allocation!r}")
    template = None
    if cls is not None:
        try:
            template = cls(**{k: merged[k] for k in own if k in merged})
            template.validate()  # TemplateOptions hook (no check by default)
        except (TypeError, ValueError) as err:
            raise MappingError(str(err)) from None
    return MapOptions(objective, conv, template, fusion, allocation)


def option_fields(template_name: str) -> list[tuple[str, bool, str]]:
    """``(name, is_bool, help)`` of each of ``template_name``'s own options, the help text
    being the first sentence of the field's entry in its class docstring's ``Attributes``."""
    import typing

    cls = _options_cls(template_name)
    if cls is None:
        return []
    docs = _attribute_docs(cls.__doc__ or "")
    hints = typing.get_type_hints(cls)
    return [(f.name, hints.get(f.name) is bool, docs.get(f.name, "")) for f in fields(cls)]


def _attribute_docs(doc: str) -> dict[str, str]:
    """Field name -> first sentence of its description in a numpy-style ``Attributes`` section."""
    import re

    out: dict[str, list[str]] = {}
    current = None
    for line in doc.splitlines():
        head = re.match(r"^\s*(\w+) : ", line)
        if head and not line.startswith(" " * 8):
            current = head.group(1)
            out[current] = []
        elif current is not None and line.strip() and not set(line.strip()) <= {"-"}:
            out[current].append(line.strip())
    texts = {}
    for name, lines in out.items():
        text = re.sub(r":\w+:`([^`]*)`", r"\1", " ".join(lines).replace("``", ""))
        first = re.split(r"(?<=[.;])\s", text, maxsplit=1)[0]
        texts[name] = first.rstrip(".;")
    return texts
