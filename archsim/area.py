"""Area model: silicon area of an accelerator from its arch spec, per component.

The area is a sum over components, each a count times a per-unit figure:

========================  ======================================  ==========================
component                 count                                   figure (tech key)
========================  ======================================  ==========================
``mac``                   MAC units per precision (the model's)    ``mac.<precision>`` um2
any compute component     units of it (the model's)               its own key, e.g. ``add.int8``
``pe_registers``          datapath register bits (the model's)    ``reg.bit`` um2
fixed parts               e.g. a GPU die, with its source          as given
template units            e.g. SIMD PEs (count, um2 each, source)  the template's, 45 nm-scaled
``sram``                  bytes of each buffer                    SRAM um2/byte by macro size
``vector_unit``           vector lanes                            ``vector.lane`` um2
========================  ======================================  ==========================

Figures come from the arch's technology table (``TechSpec.area_um2`` and
``TechSpec.sram_area_points``) when it has them; a missing figure falls back to
:data:`DEFAULT_AREA_UM2` / :data:`DEFAULT_SRAM_AREA_POINTS` (45 nm, each with
its source in :data:`SOURCES`), scaled by ``(node_nm / 45)**2`` for another node.
``area_breakdown(arch)`` returns every component with its count, unit figure
and where the figure came from, so a report can show the arithmetic.

The counts come from the template's model (``model.area_inputs()``, an
:class:`AreaInputs`): area.py never reads a template's own parameters, and
prices the precision the template really uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from archsim.spec.model import interp_log

#: um2 per unit at 45 nm. A MAC is a multiplier at the operand precision plus an
#: accumulator adder (32b integer add for integer MACs, fp32 add for float MACs),
#: the same convention as the shipped generic-45nm table.
DEFAULT_AREA_UM2: dict[str, float] = {
    "mac.int4": 70.5 + 137.0,
    "mac.int8": 282.0 + 137.0,
    "mac.int16": 1128.0 + 137.0,
    "mac.int32": 3495.0 + 137.0,
    "mac.fp8_e4m3": 410.0 + 4184.0,
    "mac.fp8_e5m2": 410.0 + 4184.0,
    "mac.fp16": 1640.0 + 4184.0,
    "mac.bf16": 1640.0 + 4184.0,
    "mac.fp32": 7700.0 + 4184.0,
    "reg.bit": 4.522,
    "vector.lane": 7700.0 + 4184.0 + 32 * 32 * 4.522,  # fp32 mult + fp32 add + 32 x 32-bit registers
}

#: (macro bytes, um2 per byte) at 45 nm, ascending: small macros pay more periphery per bit
DEFAULT_SRAM_AREA_POINTS: tuple[tuple[int, float], ...] = (
    (8 << 10, 6.92),  # 0.346 um2 x 8 bits / 0.40 array efficiency
    (64 << 10, 4.61),  # / 0.60
    (1 << 20, 3.95),  # / 0.70
)

_HOROWITZ = (
    "M. Horowitz, 'Computing's energy problem (and what we can do about it)', ISSCC 2014, "
    "45 nm area table: 32b add 137 um2, 8b mult 282 um2, 32b mult 3495 um2, "
    "fp16 mult 1640 um2, fp32 add 4184 um2, fp32 mult 7700 um2"
)
SOURCES: dict[str, str] = {
    "mac.int4": _HOROWITZ + "; 4b mult = 8b mult x (4/8)^2 (bits^2 scaling) + 32b add",
    "mac.int8": _HOROWITZ + "; 8b mult + 32b add",
    "mac.int16": _HOROWITZ + "; 16b mult = 8b mult x (16/8)^2 (bits^2 scaling) + 32b add",
    "mac.int32": _HOROWITZ + "; 32b mult + 32b add",
    "mac.fp8_e4m3": _HOROWITZ + "; fp8 mult = fp16 mult / 4 (bits^2 scaling) + fp32 add",
    "mac.fp8_e5m2": _HOROWITZ + "; as mac.fp8_e4m3",
    "mac.fp16": _HOROWITZ + "; fp16 mult + fp32 add (fp32 accumulation)",
    "mac.bf16": _HOROWITZ + "; assumed equal to mac.fp16",
    "mac.fp32": _HOROWITZ + "; fp32 mult + fp32 add",
    "reg.bit": "NanGate FreePDK45 Open Cell Library: DFF_X1 cell area 4.522 um2",
    "vector.lane": "derived: fp32 mult 7700 + fp32 add 4184 um2 (Horowitz ISSCC 2014) + 32 x 32-bit registers at reg.bit (NanGate FreePDK45 DFF_X1 4.522 um2)",
    "sram": (
        "6T bit cell 0.346 um2 at 45 nm (K. Mistry et al., IEDM 2007) = 2.77 um2 per byte of cells; "
        "array efficiency assumed 40 % (8 KiB), 60 % (64 KiB), 70 % (1 MiB), CACTI-like trend"
    ),
}
REFERENCE_NODE_NM = 45

@dataclass(frozen=True)
class AreaInputs:
    """What a template's model says its silicon is made of (``model.area_inputs()``).

    ``macs``: MAC units per precision name (priced at ``mac.<precision>``);
    ``components``: units of any other compute component, by the tech table's
    area key (an adder-based PE's ``add.int8``, a LUT's table bits, an exp unit,
    a register file), each priced at that key like a MAC;
    ``register_bits``: flip-flops of the datapath (priced at ``reg.bit``);
    ``fixed_um2``: components given as an area with its source, e.g. a GPU
    die from its preset: ``{"gpu_die": (826e6, "NVIDIA A100 whitepaper")}``;
    ``units``: components counted in units whose area the template derives
    itself, ``{component: (count, um2 per unit, source)}``, e.g. SIMD PEs priced
    from synthesis by their format set (``archsim/templates/simd/area.py``);
    ``unpriced``: parameters of the arch the area does not price, ``{parameter: what
    is counted instead and why}`` (said next to the area, never silent).
    """

    macs: dict[str, int] = field(default_factory=dict)
    register_bits: int = 0
    components: dict[str, float] = field(default_factory=dict)
    fixed_um2: dict[str, tuple[float, str]] = field(default_factory=dict)
    units: dict[str, tuple[float, float, str]] = field(default_factory=dict)
    unpriced: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AreaItem:
    """One component: ``count`` units of ``unit_um2`` each."""

    component: str
    count: float
    unit_um2: float
    figure: str  # tech key the figure is read from
    source: str  # "tech:<table>" or "default (<citation>)"

    @property
    def um2(self) -> float:
        return self.count * self.unit_um2


class _Figures:
    """Per-unit figures: the tech table's, else scaled defaults."""

    def __init__(self, tech: Any):
        self.tech = tech
        node = getattr(tech, "node_nm", REFERENCE_NODE_NM) or REFERENCE_NODE_NM
        self.scale = (float(node) / REFERENCE_NODE_NM) ** 2
        self.table = dict(getattr(tech, "area_um2", {}) or {})
        self.name = getattr(tech, "name", "?")

    def unit(self, key: str) -> tuple[float, str]:
        for alias in (key, key.replace(".", "_", 1), key.replace("_", ".", 1)):
            if alias in self.table:
                return float(self.table[alias]), f"tech:{self.name}"
        if key not in DEFAULT_AREA_UM2:
            raise KeyError(f"no area figure {key!r} in tech table {self.name!r} nor in archsim.area defaults")
        scaled = f", scaled x{self.scale:.3g} from 45 nm" if self.scale != 1 else ""
        return DEFAULT_AREA_UM2[key] * self.scale, f"default ({SOURCES[key]}{scaled})"

    def sram_per_byte(self, macro_bytes: float) -> tuple[float, str]:
        points = tuple(getattr(self.tech, "sram_area_points", ()) or ())
        if points and hasattr(self.tech, "sram_um2_per_byte"):
            return float(self.tech.sram_um2_per_byte(macro_bytes)), f"tech:{self.name}"
        scaled = f", scaled x{self.scale:.3g} from 45 nm" if self.scale != 1 else ""
        return interp_log(DEFAULT_SRAM_AREA_POINTS, macro_bytes, above="clamp") * self.scale, f"default ({SOURCES['sram']}{scaled})"


def area_breakdown(arch: Any) -> list[AreaItem]:
    """Area of each component of ``arch`` (an :class:`archsim.spec.ArchSpec`)."""
    figures = _Figures(arch.tech)
    inputs = arch.model().area_inputs()
    items = []
    for precision, count in sorted(inputs.macs.items()):
        key = f"mac.{precision}"
        unit, source = figures.unit(key)
        items.append(AreaItem("mac" if len(inputs.macs) == 1 else key, count, unit, key, source))
    for key, count in sorted(inputs.components.items()):
        unit, source = figures.unit(key)
        items.append(AreaItem(key, count, unit, key, source))
    if inputs.register_bits:
        unit, source = figures.unit("reg.bit")
        items.append(AreaItem("pe_registers", inputs.register_bits, unit, "reg.bit", source))
    for component, (um2, source) in sorted(inputs.fixed_um2.items()):
        items.append(AreaItem(component, 1, float(um2), component, source))
    for component, (count, unit, source) in sorted(inputs.units.items()):
        scaled = f", scaled x{figures.scale:.3g} from 45 nm" if figures.scale != 1 else ""
        items.append(AreaItem(component, count, float(unit) * figures.scale, component, source + scaled))
    for name, buffer in sorted(arch.buffers.items()):
        macro = buffer.bytes / max(1, int(buffer.banks))
        unit, source = figures.sram_per_byte(macro)
        items.append(AreaItem(f"sram.{name}", buffer.bytes, unit, "sram_area", source))
    lanes = int(arch.vector_unit.lanes)
    if lanes:
        unit, source = figures.unit("vector.lane")
        items.append(AreaItem("vector_unit", lanes, unit, "vector.lane", source))
    return items


def area_unpriced(arch: Any) -> dict[str, str]:
    """Parameters of ``arch`` its area does not price (:attr:`AreaInputs.unpriced`); empty when all are."""
    return dict(arch.model().area_inputs().unpriced)


def area_um2(arch: Any) -> float:
    """Total area of ``arch`` in um2."""
    return sum(item.um2 for item in area_breakdown(arch))


def area_mm2(arch: Any) -> float:
    """Total area of ``arch`` in mm2."""
    return area_um2(arch) / 1e6


__all__ = [
    "AreaInputs",
    "AreaItem",
    "DEFAULT_AREA_UM2",
    "DEFAULT_SRAM_AREA_POINTS",
    "SOURCES",
    "area_breakdown",
    "area_mm2",
    "area_um2",
    "area_unpriced",
]
