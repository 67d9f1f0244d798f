"""LUT tensor core template: lookup-table mpGEMM of 1-4-bit weights x int8 / fp16 /
bf16 activations (LUT Tensor Core, ISCA 2025; T-MAC).

- :class:`LutParams` (``params:``), :class:`LutOptions` (``options:``: ``precompute_fusion``);
- :class:`LutTile` and the timing / value contract shared with ``rtl/lut/`` (:mod:`.tile`);
- :class:`LutModel`: fast (closed form) and detailed (cycle by cycle through table
  build, index, lookup, negate, shift-add) models (:mod:`.model`, :mod:`.detailed`).
"""
from __future__ import annotations

from archsim.templates.base import Template

TEMPLATE = Template(
    name="lut",
    description="LUT tensor core: table-lookup mpGEMM, 1-4-bit weights x int8/fp16/bf16 activations, bit-serial",
    params="archsim.templates.lut.params:LutParams",
    model="archsim.templates.lut.model:LutModel",
    mapper="mappers.lut",
    options="archsim.templates.lut.options:LutOptions",
    rtl="rtl.lut.rtl_design:LutDesign",
    conformance="archsim.templates.lut.conformance",
    reference="archsim.templates.lut.reference:check",
    coverage="archsim.templates.lut.reference:missing_cases",
)

from archsim.templates.lut.detailed import LutArrayDetailed  # noqa: E402
from archsim.templates.lut.model import LutModel  # noqa: E402
from archsim.templates.lut.options import LutOptions  # noqa: E402
from archsim.templates.lut.params import LutParams  # noqa: E402
from archsim.templates.lut.tile import LutTile, tile_cycles, weight_planes  # noqa: E402

__all__ = ["TEMPLATE", "LutArrayDetailed", "LutModel", "LutOptions", "LutParams", "LutTile", "tile_cycles",
           "weight_planes"]
