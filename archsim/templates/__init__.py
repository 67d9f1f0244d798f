"""Accelerator templates. ``get_template(name)`` finds one by its spec name.

Each template package exposes ``TEMPLATE`` (an :class:`archsim.templates.base.Template`).
"""
from __future__ import annotations

import importlib

from archsim.errors import SpecError
from archsim.templates.base import Template, TemplateModel

# spec name -> module that defines TEMPLATE
_TEMPLATE_MODULES = {
    "systolic": "archsim.templates.systolic",
    "pim": "archsim.templates.pim",
    "roofline": "archsim.templates.roofline",
}


def template_names() -> list[str]:
    return sorted(_TEMPLATE_MODULES)


def get_template(name: str) -> Template:
    """Return the registered template called ``name`` or raise a one-line SpecError."""
    module_name = _TEMPLATE_MODULES.get(name)
    if module_name is None:
        raise SpecError(f"unknown template {name!r}; expected one of {', '.join(template_names())}")
    return importlib.import_module(module_name).TEMPLATE


__all__ = ["Template", "TemplateModel", "get_template", "template_names"]
