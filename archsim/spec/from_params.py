"""An arch spec around a bare template ``Params``: the one way code that holds only params
(an RTL design, a unit test) builds a template's model.

Every model is built from an arch spec (``TEMPLATE.model_cls(arch)``; see
:class:`archsim.templates.base.TemplateModel`). :func:`arch_from_params` wraps params into the
smallest arch spec that carries them: no buffers, the spec dataclasses' default DRAM and
vector unit, a 1 GHz clock and the default tech table. Only the params (and the tech table,
when given) are meaningful: it builds a model, it does not describe a machine to run a
network on -- load a preset (``archsim.spec.load_arch``) for that.
"""
from __future__ import annotations

from typing import Any

from archsim.errors import SpecError
from archsim.spec.model import ArchSpec, DramSpec, TechSpec, VectorUnitSpec

#: clock of an arch built from params alone (tile cycles do not depend on it)
PARAMS_ONLY_CLOCK_MHZ = 1000.0
#: DRAM bandwidth of an arch built from params alone (a placeholder: such an arch runs tiles, not programs)
PARAMS_ONLY_DRAM_BYTES_PER_CYCLE = 64.0


def template_of_params(params: Any) -> str:
    """Name of the registered template whose ``Params`` class ``params`` is an instance of."""
    from archsim.templates import get_template, template_names

    cls = type(params)
    for name in template_names():
        if get_template(name).params_cls is cls:
            return name
    raise SpecError(f"no template takes params {cls.__name__}")


def arch_from_params(params: Any, tech: Any = None) -> ArchSpec:
    """The minimal :class:`ArchSpec` of ``params`` (a template's ``Params`` instance), to build its
    model: ``get_template(arch.template).model_cls(arch)`` or ``arch.model()``.

    ``tech``: a tech table (name, path, mapping or :class:`TechSpec`); default the shipped default.
    Raises ``SpecError`` for params no registered template takes.
    """
    from archsim.spec.load import load_tech

    template = template_of_params(params)
    tech_spec = tech if isinstance(tech, TechSpec) else (load_tech() if tech is None else load_tech(tech))
    return ArchSpec(name=f"{template}-from-params", template=template, params=params,
                    clock_mhz=PARAMS_ONLY_CLOCK_MHZ, buffers={},
                    dram=DramSpec(bytes_per_cycle=PARAMS_ONLY_DRAM_BYTES_PER_CYCLE),
                    vector_unit=VectorUnitSpec(), tech=tech_spec, source="params")
