"""Arch spec dataclasses (contract version: field names are fixed).

An arch spec YAML looks like::

    name: systolic-32x32-ws
    description: 32x32 int8 weight-stationary array, 3 x 256 KiB buffers
    template: systolic
    params:                      # the template's own Params dataclass
      rows: 32
      cols: 32
      dataflow: ws
    clock_mhz: 1000
    buffers:                     # per operand (input, weight, output) or one "unified"
      input:  {bytes: 262144, banks: 1, bytes_per_cycle: 32}
      weight: {bytes: 262144, banks: 1, bytes_per_cycle: 32}
      output: {bytes: 262144, banks: 1, bytes_per_cycle: 128}
    dram: {bytes_per_cycle: 32, latency_cycles: 100, capacity_bytes: 8589934592}
    vector_unit: {lanes: 32, cycles_per_op: {exp: 4, div: 8}, default_cycles: 1}
    tech: generic-45nm           # name of a shipped table in archsim/presets/tech/, or a file path, or inline mapping

``archsim.spec.load_arch(name_or_path, overrides=...)`` returns an
:class:`ArchSpec`; every error is a one-line ``SpecError`` naming the file,
the key and what was expected.
"""
from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class BufferSpec:
    name: str
    bytes: int
    banks: int = 1
    bytes_per_cycle: int = 64  # read (and write) port bandwidth


@dataclass(frozen=True)
class DramSpec:
    bytes_per_cycle: float  # sustained bandwidth at the accelerator clock
    latency_cycles: int = 100
    capacity_bytes: int = 8 << 30


@dataclass(frozen=True)
class VectorUnitSpec:
    lanes: int = 16
    cycles_per_op: dict[str, int] = field(default_factory=dict)  # per element-op per lane
    default_cycles: int = 1


@dataclass(frozen=True)
class TechSpec:
    """Energy per action and area per component, each figure with its source.

    ``energy_pj``: action name -> pJ per action (e.g. ``"mac.int8"``,
    ``"pe_reg_access"``, ``"dram_bit"``); SRAM energy per byte is
    ``sram_pj_per_byte(size_bytes)``, interpolated from ``sram_points``.
    ``sources``: action/component name -> citation string.
    """

    name: str
    node_nm: int
    energy_pj: dict[str, float]
    sram_points: tuple[tuple[int, float], ...]  # (size_bytes, pJ per byte accessed), ascending
    area_um2: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    # added: SRAM area per byte by macro size, (size_bytes, um2 per byte), ascending
    sram_area_points: tuple[tuple[int, float], ...] = ()
    description: str = ""

    def energy(self, action: str) -> float:
        """pJ of one ``action``; ``"mac_int8"`` and ``"mac.int8"`` spell the same action.

        Raises ``KeyError`` (with the known names) for an action the table lacks.
        """
        table = self.energy_pj
        if action in table:
            return table[action]
        for alias in (action.replace("_", ".", 1), action.replace(".", "_", 1)):
            if alias in table:
                return table[alias]
        raise KeyError(action)

    def sram_pj_per_byte(self, size_bytes: int) -> float:
        """pJ per byte accessed in an SRAM macro of ``size_bytes``.

        Interpolated linearly in log(size) between ``sram_points``; clamped below
        the smallest point; above the largest, extrapolated as a power law with the
        exponent of the last two points (CACTI-style sqrt-like growth).
        """
        return interp_log(self.sram_points, size_bytes)

    def sram_um2_per_byte(self, size_bytes: int) -> float:
        """Area per byte of an SRAM macro of ``size_bytes`` (same interpolation)."""
        if not self.sram_area_points:
            raise KeyError("sram_area_points")
        return interp_log(self.sram_area_points, size_bytes)


#: element-wise op classes an array's output path can apply as results drain
#: (spec key ``output_ops``; see :mod:`mappers.fusion`)
OUTPUT_OPS = ("bias", "relu", "gelu", "residual", "requant")


@dataclass(frozen=True)
class ArchSpec:
    name: str
    template: str
    params: Any  # instance of the template's Params dataclass
    clock_mhz: float
    buffers: dict[str, BufferSpec]
    dram: DramSpec
    vector_unit: VectorUnitSpec
    tech: TechSpec
    description: str = ""
    source: str = ""  # file path, or "preset:<name>"
    options: dict[str, Any] = field(default_factory=dict)  # mapper options (common + the template's own)
    output_ops: tuple[str, ...] = ()  # OUTPUT_OPS the array's output path has (operator fusion)

    # -- added helpers (not fields) -------------------------------------------------

    def model(self):
        """The template's model for this arch, built once and cached:
        ``get_template(self.template).model_cls(self)``."""
        cached = self.__dict__.get("_model")
        if cached is None:
            from archsim.templates import get_template

            from archsim.templates.base import TemplateModel

            cached = get_template(self.template).model_cls(self)
            if not isinstance(cached, TemplateModel):  # the hooks shared code calls are declared there
                raise TypeError(f"template {self.template!r}: model {type(cached).__name__} must subclass "
                                f"archsim.templates.base.TemplateModel")
            object.__setattr__(self, "_model", cached)
        return cached

    def identity(self) -> str:
        """A canonical string of everything timing and energy depend on (all fields
        except name, description and source). Equal specs have equal identities;
        the engine memoizes layer results by it."""
        cached = self.__dict__.get("_identity")
        if cached is None:
            d = self.to_dict()
            for k in ("name", "description", "source"):
                d.pop(k, None)
            cached = json.dumps(d, sort_keys=True, separators=(",", ":"))
            object.__setattr__(self, "_identity", cached)
        return cached

    def __hash__(self) -> int:
        return hash(self.identity())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (params flattened; infinities as the string "inf")."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "template": self.template,
            "params": plain(self.params),
            "clock_mhz": plain(self.clock_mhz),
            "buffers": {k: plain(v) for k, v in sorted(self.buffers.items())},
            "dram": plain(self.dram),
            "vector_unit": plain(self.vector_unit),
            "tech": plain(self.tech),
            **({"options": plain(self.options)} if self.options else {}),
            **({"output_ops": list(self.output_ops)} if self.output_ops else {}),
        }

    def buffer_for(self, operand: str) -> BufferSpec:
        """The buffer that holds ``operand`` (its own, else the unified one)."""
        buf = self.buffers.get(operand)
        if buf is None:
            buf = self.buffers.get("unified")
        if buf is None:
            raise KeyError(operand)
        return buf


def plain(value: Any) -> Any:
    """A JSON-able copy of ``value`` (dataclasses and enums flattened, infinities as strings)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def interp_log(points: tuple[tuple[int, float], ...], size: float, *, above: str = "power") -> float:
    """Value at ``size`` from ascending ``(size, value)`` points: linear in
    log(size) between points, clamped below the first; above the last either
    extrapolated as a power law with the last two points' exponent
    (``above="power"``, CACTI-like growth of energy per byte) or clamped
    (``above="clamp"``)."""
    if not points:
        raise KeyError("no points")
    size = max(float(size), 1.0)
    sizes = [p[0] for p in points]
    if size <= sizes[0] or len(points) == 1:
        return points[0][1]
    i = bisect.bisect_left(sizes, size)
    if i < len(points) and sizes[i] == size:
        return points[i][1]
    if i >= len(points):
        if above == "clamp":
            return points[-1][1]
        (s0, e0), (s1, e1) = points[-2], points[-1]
        exponent = math.log(e1 / e0) / math.log(s1 / s0)
        return e1 * (size / s1) ** exponent
    (s0, e0), (s1, e1) = points[i - 1], points[i]
    t = math.log(size / s0) / math.log(s1 / s0)
    return e0 + t * (e1 - e0)
