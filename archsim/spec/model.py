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

from dataclasses import dataclass, field
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
