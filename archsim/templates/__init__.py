"""Accelerator templates. ``get_template(name)`` finds one by its spec name.

Each template package exposes ``TEMPLATE`` (an :class:`archsim.templates.base.Template`),
the one entry that names everything about it. Shipped templates are listed by
package below, one line each; a plug-in (or a test's toy template) adds its own
with :func:`register`.
"""
from __future__ import annotations

import importlib

from archsim.errors import SpecError
from archsim.templates.base import UNIT_KINDS, Template, TemplateModel

#: spec name -> package that defines TEMPLATE
_PACKAGES = {
    "systolic": "archsim.templates.systolic",
    "pim": "archsim.templates.pim",
    "roofline": "archsim.templates.roofline",
    "attention": "archsim.templates.attention",
    "lut": "archsim.templates.lut",
    "simd": "archsim.templates.simd",
}
_REGISTERED: dict[str, Template] = {}


def register(template: Template) -> Template:
    """Add a template that is not shipped (a plug-in, a test's toy); returns it."""
    if template.name in _PACKAGES:
        raise ValueError(f"template {template.name!r} is shipped with archsim; choose another name")
    _REGISTERED[template.name] = template
    return template


def unregister(name: str) -> None:
    """Forget a template added with :func:`register`."""
    _REGISTERED.pop(name, None)


def template_names() -> list[str]:
    return sorted(set(_PACKAGES) | set(_REGISTERED))


def get_template(name: str) -> Template:
    """Return the template called ``name`` or raise a one-line SpecError."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    package = _PACKAGES.get(name) if isinstance(name, str) else None
    if package is None:
        raise SpecError(f"unknown template {name!r}; expected one of {', '.join(template_names())}")
    return importlib.import_module(package).TEMPLATE


__all__ = ["Template", "TemplateModel", "UNIT_KINDS", "get_template", "register", "template_names", "unregister"]
