"""Systolic-array template: TPU-style R x C MAC grid with WS / OS / IS dataflows.

- :class:`SystolicParams` — the parameter dataclass (arch spec ``params:``, RTL generator);
- :class:`SystolicTile` — one fold; its module docstring is the timing contract
  (also ``docs/systolic_timing.md``);
- :class:`SystolicModel` — fast model (closed-form cycles, numpy values, actions);
- :class:`SystolicArrayDetailed` — cycle-by-cycle register-level model with ``trace``;
- :func:`gemm_fold_cycles`, :func:`gemm_tiles`, :func:`scalesim_total_cycles` — layer level;
- :mod:`~archsim.templates.systolic.conformance` — cases for the shared level-agreement
  harness (``TEMPLATE.conformance``).
"""
from __future__ import annotations

from archsim.templates.base import Template
from archsim.templates.systolic.detailed import SystolicArrayDetailed, detailed_sequence, detailed_tile
from archsim.templates.systolic.fast import (
    SystolicModel,
    gemm_fold_cycles,
    gemm_tiles,
    scalesim_total_cycles,
    tile_cycles,
)
from archsim.templates.systolic.params import SystolicParams
from archsim.templates.systolic.tile import SystolicTile

TEMPLATE = Template(
    name="systolic",
    description="TPU-style rows x cols int MAC array; weight-, output- or input-stationary",
    params="archsim.templates.systolic.params:SystolicParams",
    model="archsim.templates.systolic.fast:SystolicModel",
    mapper="mappers.systolic",
    options="archsim.templates.systolic.options:SystolicOptions",
    rtl="rtl.systolic.rtl_design:SystolicDesign",
    conformance="archsim.templates.systolic.conformance",
    reference="archsim.templates.systolic.reference:check",
    coverage="archsim.templates.systolic.reference:missing_cases",
)

__all__ = [
    "TEMPLATE",
    "SystolicArrayDetailed",
    "SystolicModel",
    "SystolicParams",
    "SystolicTile",
    "detailed_sequence",
    "detailed_tile",
    "gemm_fold_cycles",
    "gemm_tiles",
    "scalesim_total_cycles",
    "tile_cycles",
]
