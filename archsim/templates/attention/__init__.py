"""Attention template: a 2D MAC array plus a 1D array running attention in one pass
with online softmax (FuseMax, Nayak et al., MICRO 2024), or FLAT's two-pass
fused dataflow, or unfused, on the same hardware.

- :class:`AttentionParams` (``params:``), :class:`AttentionOptions` (``options:``:
  ``attention_mapping``);
- :class:`AttentionTile` and the timing contract (:mod:`.tile`);
- :class:`AttentionModel` (fast: closed form), :class:`AttentionDetailed`
  (cycle by cycle with values); values in fp32 (:mod:`.values`).
"""
from __future__ import annotations

from archsim.templates.base import Template

TEMPLATE = Template(
    name="attention",
    description="2D MAC array + 1D array for attention: FuseMax one-pass online softmax, FLAT, or unfused",
    params="archsim.templates.attention.params:AttentionParams",
    model="archsim.templates.attention.model:AttentionModel",
    mapper="mappers.attention",
    options="archsim.templates.attention.options:AttentionOptions",
    conformance="archsim.templates.attention.conformance",
    reference="archsim.templates.attention.reference:check",
    coverage="archsim.templates.attention.reference:missing_cases",
    rtl="rtl.attention.rtl_design:AttentionDesign",
    unit_rtl=("rtl.attention.topk_design:TopkDesign", "rtl.attention.spatten_design:SpattenDesign"),
)

from archsim.templates.attention.detailed import AttentionDetailed  # noqa: E402
from archsim.templates.attention.model import AttentionModel  # noqa: E402
from archsim.templates.attention.options import AttentionOptions  # noqa: E402
from archsim.templates.attention.params import AttentionParams  # noqa: E402
from archsim.templates.attention.tile import AttentionTile  # noqa: E402

__all__ = ["TEMPLATE", "AttentionDetailed", "AttentionModel", "AttentionOptions", "AttentionParams", "AttentionTile"]
