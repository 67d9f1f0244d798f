"""Mixed-precision SIMD PE template (XR-NPE, MixPE, BitMoD): lanes whose count grows as precision shrinks.

- :class:`SimdParams` — the parameter dataclass (arch spec ``params:``, RTL generator);
- :class:`SimdTile` — one output-stationary GEMM tile; :mod:`.tile`'s docstring is the
  timing and value contract (also ``docs/simd.md``);
- :class:`SimdModel` — fast model (closed-form cycles, numpy values, actions) and the
  detailed cycle-by-cycle model;
- :mod:`~archsim.templates.simd.conformance` — cases for the shared level harness.
"""
from __future__ import annotations

from archsim.templates.base import Template
from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import SimdTile

TEMPLATE = Template(
    name="simd",
    description="mixed-precision SIMD PE array: int2-16 / fp4 / fp8 / fp16 / bf16 / posit lanes, group scales",
    params="archsim.templates.simd.params:SimdParams",
    model="archsim.templates.simd.model:SimdModel",
    mapper="mappers.simd",
    options="archsim.templates.simd.options:SimdOptions",
    rtl="rtl.simd.entry:SimdDesignEntry",
    conformance="archsim.templates.simd.conformance",
    reference="archsim.templates.simd.reference:check",
    coverage="archsim.templates.simd.reference:missing_cases",
)

__all__ = ["TEMPLATE", "SimdParams", "SimdTile"]
