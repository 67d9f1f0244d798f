"""Published results archsim claims to reproduce, each beside archsim's own figure.

Every module in this package (name not starting with ``_``) that defines
``claims() -> list[Claim]`` is one published comparison (SCALE-Sim cycles, the
FuseMax artifact, PIM-GPT, ...). ``archsim validate`` runs them all and prints
ours beside the published figure with its tolerance; the tests pin each claim,
so a model change that breaks agreement with a paper fails CI.

A module adds itself by existing: no registry line to edit.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Claim:
    """One published figure and archsim's value for the same quantity and setup.

    ``rel_tol`` is the relative tolerance the agreement is held to; ``source``
    names where the published number comes from (paper figure/table or
    artifact file), so a reader can check it. ``explained``: why archsim's
    figure is *expected* to differ (the paper measured against another
    baseline or setup than archsim can build); such a claim outside its
    tolerance is reported as ``differs`` with the reason, not as a failure, so
    a reader sees the gap and its cause instead of a silently dropped figure.
    """

    group: str
    name: str
    ours: float
    published: float
    rel_tol: float
    source: str
    unit: str = ""
    note: str = ""
    explained: str = ""

    @property
    def rel_error(self) -> float:
        if self.published == 0:
            return math.inf if self.ours != 0 else 0.0
        return abs(self.ours - self.published) / abs(self.published)

    @property
    def passed(self) -> bool:
        return math.isfinite(self.ours) and self.rel_error <= self.rel_tol

    @property
    def status(self) -> str:
        """``pass`` (within tolerance), ``differs`` (outside it, for the stated reason) or ``FAIL``."""
        if self.passed:
            return "pass"
        return "differs" if self.explained and math.isfinite(self.ours) else "FAIL"

    def as_dict(self) -> dict:
        return {**asdict(self), "rel_error": self.rel_error, "passed": self.passed, "status": self.status}


def groups() -> list[str]:
    """Names of the published comparisons available (module names)."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    )


def run(group: str) -> list[Claim]:
    """Regenerate one published comparison and return its claims."""
    if group not in groups():
        from archsim.errors import ArchsimError

        raise ArchsimError(f"unknown validation {group!r}; known: {', '.join(groups()) or 'none'}")
    module = importlib.import_module(f"{__name__}.{group}")
    return list(module.claims())
