"""archsim: simulate deep-learning accelerators, generate their RTL, check one against the other.

Public names (imported lazily so ``import archsim`` stays fast):

- :func:`simulate` — run a workload on an arch, return a :class:`SimResult`;
- :func:`load_arch` — load an arch spec (preset name, YAML path, mapping);
- :class:`SimResult`, :class:`LayerResult` — results;
- :class:`ArchSpec` — the arch spec dataclass.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "simulate": ("archsim.simulation", "simulate"),
    "load_arch": ("archsim.spec.load", "load_arch"),
    "ArchSpec": ("archsim.spec.model", "ArchSpec"),
    "SimResult": ("archsim.report.result", "SimResult"),
    "LayerResult": ("archsim.report.result", "LayerResult"),
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        if not name.startswith("_"):
            try:  # submodules: archsim.spec, archsim.engine, archsim.errors, ...
                return importlib.import_module(f"archsim.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"archsim.{name}":
                    raise
        raise AttributeError(f"module 'archsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
