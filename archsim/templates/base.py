"""What every accelerator template provides to the rest of archsim.

A template is one idea of hardware (systolic array, PIM banks, ...). It has a
parameter dataclass (``Params``, read from the ``params:`` section of an arch
spec, the same dataclass the RTL generator takes) and a model class that the
engine, the mapper's search and the tests call. Adding a template = one
package under ``archsim/templates/<name>/`` exposing ``TEMPLATE``, one
lowering module under ``mappers/``, one RTL design under ``rtl/``, and one
entry in the shared fast-vs-detailed-vs-RTL test harness.

Conventions for ``Params`` dataclasses:
- plain type-hinted fields with defaults where a default is sensible;
- a ``validate(self) -> None`` method that raises ``ValueError("key: expected ...")``
  for impossible combinations (the spec loader turns it into a one-line
  ``SpecError`` naming the file).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np


class TemplateModel(Protocol):
    """Timing, values and action counts of one template instance.

    Built once per arch spec: ``model = TEMPLATE.model_cls(arch)``.
    """

    arch: Any  # archsim.spec.ArchSpec

    #: names of the compute units this template's Compute commands run on
    compute_units: ClassVar[tuple[str, ...]]

    def peak_macs_per_cycle(self) -> int:
        """MACs per cycle with every MAC busy (for utilization and rooflines)."""

    def tile_cycles(self, tile: Any) -> int:
        """Fast model: closed-form cycles of one Compute tile."""

    def tile_actions(self, tile: Any) -> dict[str, int]:
        """Fast model: counts of energy actions of one tile, keyed by the
        technology table's action names (e.g. ``"mac_int8"``, ``"pe_reg_access"``)."""

    def tile_values(self, tile: Any, operands: dict[str, np.ndarray]) -> np.ndarray:
        """Fast model: the tile's output values, bit-exact, with numpy."""

    def detailed_tile(self, tile: Any, operands: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        """Detailed model: run the tile cycle by cycle; return (values, cycles)."""


@dataclass(frozen=True)
class Template:
    """Registry entry of a template."""

    name: str
    description: str
    params_cls: type
    model_cls: type  # TemplateModel implementation; constructed as model_cls(arch)
    #: False for templates with no on-chip operand buffers (PIM banks, a GPU
    #: roofline): their specs may omit ``buffers`` or leave it empty.
    uses_buffers: bool = True
