"""Mapper options of the simd template (the arch spec's ``options:`` section, ``archsim run`` flags)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from archsim.templates.base import TemplateOptions


@dataclass(frozen=True)
class SimdOptions(TemplateOptions):
    """Attributes
    ----------
    precision_policy : str | dict | None
        Layer-adaptive precision: a policy YAML file, or the policy mapping itself
        (``rules: [{match: "conv*", op: conv2d, weights: int4, activations: int8,
        group_size: 128}, ...]``, see :mod:`archsim.spec.precision_policy`). None: every
        layer runs at the arch's ``weight_format`` x ``activation_format``.
    """

    precision_policy: Any = None

    def __hash__(self) -> int:  # a mapping policy is hashed by its text (the mapper cache keys on options)
        return hash(repr(self.precision_policy))

    def validate(self) -> None:
        from archsim.spec.precision_policy import load_policy

        if self.precision_policy is not None:
            load_policy(self.precision_policy)
