"""Simulation results: :class:`SimResult` (whole run) and :class:`LayerResult` (one graph node)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class LayerResult:
    """One layer (graph node) of a run.

    Attributes
    ----------
    cycles : int
        The layer's cycles (it runs between two barriers).
    compute_cycles : int
        Busy time of the compute unit (of the vector unit for a layer with no tile).
    stall_cycles : int
        ``cycles - compute_cycles``: time the compute unit waits (for DRAM, mostly).
    utilization : float
        ``macs / (peak_macs_per_cycle * cycles)``.
    sram_bytes_by_operand, dram_bytes_by_operand : dict
        Bytes moved per operand (DMA fills and drains plus the array's own reads
        and writes for SRAM; loads and stores for DRAM).
    energy_pj_by_component : dict
        ``compute`` (template actions: MACs, PE registers), ``sram``, ``dram``, ``vector``.
    mapping : dict
        The mapping the mapper chose (dataflow, tile sizes, loop order ...), for people.
    weight_format, activation_format : str
        The precisions the layer ran at.
    tokens : int
        Tokens the layer looks up (embedding layers; tokens/s comes from it).
    internal_bytes_by_operand : dict
        Bytes moved inside memory without the DMA (PIM in-bank reads), whole layer.
    unit_busy_cycles, unit_utilization : dict
        Per unit of the model (``units``): busy cycles, and busy / ``cycles``.
    mapping_efficiency : float
        Mean fraction of PEs a tile maps (SCALE-Sim's "Mapping Efficiency").
    compute_utilization : float
        ``macs / (peak * compute_cycles)`` (SCALE-Sim's "Compute Util").
    sqnr_db : float or None
        Signal-to-quantization-noise ratio of the layer's output vs fp32, when a run
        carried values (``archsim.accuracy``); absent from report.json otherwise.
    """

    name: str
    op: str
    macs: int
    cycles: int
    compute_cycles: int
    stall_cycles: int
    utilization: float
    sram_bytes: int
    dram_bytes: int
    energy_pj: float
    sram_bytes_by_operand: dict[str, int] = field(default_factory=dict)
    dram_bytes_by_operand: dict[str, int] = field(default_factory=dict)
    energy_pj_by_component: dict[str, float] = field(default_factory=dict)
    mapping: dict[str, Any] = field(default_factory=dict)
    repeat: int = 1
    tiles: int = 0
    commands: int = 0
    mapping_efficiency: float = 0.0
    compute_utilization: float = 0.0
    dma_busy_cycles: float = 0.0
    vector_cycles: int = 0
    start_cycle: int = 0
    weight_format: str = ""
    activation_format: str = ""
    tokens: int = 0
    internal_bytes_by_operand: dict[str, int] = field(default_factory=dict)
    unit_busy_cycles: dict[str, float] = field(default_factory=dict)
    unit_utilization: dict[str, float] = field(default_factory=dict)
    #: SQNR (dB) of the layer's output vs fp32 when values were carried (None: not computed)
    sqnr_db: float | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {} if self.sqnr_db is None else {"sqnr_db": self.sqnr_db}
        return {
            "name": self.name,
            "op": self.op,
            "macs": self.macs,
            "cycles": self.cycles,
            "compute_cycles": self.compute_cycles,
            "stall_cycles": self.stall_cycles,
            "utilization": self.utilization,
            "sram_bytes": self.sram_bytes,
            "dram_bytes": self.dram_bytes,
            "energy_pj": self.energy_pj,
            "sram_bytes_by_operand": dict(self.sram_bytes_by_operand),
            "dram_bytes_by_operand": dict(self.dram_bytes_by_operand),
            "energy_pj_by_component": dict(self.energy_pj_by_component),
            "mapping": _jsonable(self.mapping),
            "repeat": self.repeat,
            "tiles": self.tiles,
            "commands": self.commands,
            "mapping_efficiency": self.mapping_efficiency,
            "compute_utilization": self.compute_utilization,
            "dma_busy_cycles": self.dma_busy_cycles,
            "vector_cycles": self.vector_cycles,
            "start_cycle": self.start_cycle,
            "weight_format": self.weight_format,
            "activation_format": self.activation_format,
            "tokens": self.tokens,
            "internal_bytes_by_operand": dict(self.internal_bytes_by_operand),
            "unit_busy_cycles": dict(self.unit_busy_cycles),
            "unit_utilization": dict(self.unit_utilization),
            **extra,
        }


@dataclass(slots=True)
class SimResult:
    """A whole run: totals and the layers in graph order.

    ``latency_s = total_cycles / (clock_mhz * 1e6)``; ``utilization`` is
    ``macs / (peak_macs_per_cycle * total_cycles)``. ``extras`` holds what the
    template's ``report_extras(result)`` hook adds (e.g. tokens_per_s).
    """

    arch_name: str
    workload_name: str
    clock_mhz: float
    peak_macs_per_cycle: int
    total_cycles: int
    compute_cycles: int
    stall_cycles: int
    macs: int
    utilization: float
    energy_pj: float
    dram_bytes: int
    sram_bytes: int
    latency_s: float
    layers: list[LayerResult]
    detailed: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    arch: dict[str, Any] = field(default_factory=dict)  # the arch spec as a plain dict (for report.json)
    options: dict[str, Any] = field(default_factory=dict)  # workload / mapper options of the run
    trace: list = field(default_factory=list)  # recorded timelines of the first layers (not in to_dict)
    trace_layers: int = 0
    #: how an ONNX workload was imported (``workloads.onnx_import``: nodes, lowered, substituted,
    #: dropped_static, macs_accounted_fraction); report.json's ``import`` section, {} otherwise
    imported: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        """Tokens the run processes (its embedding lookups: batch x new tokens); 0 for
        workloads without token embeddings, e.g. CNNs."""
        return max([l.tokens for l in self.layers] + [0])

    @property
    def total_energy_pj(self) -> float:
        """Everything the run spends: the commands' energy plus the background energy a template
        adds (``extras["background_energy_pj"]``: PIM's DRAM refresh and standby over the run).
        The summary's energy and energy per token are both of this total."""
        return self.energy_pj + float(self.extras.get("background_energy_pj", 0.0) or 0.0)

    def token_rates(self, energy_pj: float | None = None) -> dict[str, float]:
        """``tokens``, ``tokens_per_s`` and ``energy_per_token_pj`` (of ``energy_pj``,
        default the run's energy); empty for workloads without tokens."""
        tokens = self.tokens
        if not tokens:
            return {}
        energy = self.energy_pj if energy_pj is None else energy_pj
        return {"tokens": tokens, "tokens_per_s": tokens / self.latency_s if self.latency_s else 0.0,
                "energy_per_token_pj": energy / tokens}

    @classmethod
    def from_layers(cls, layers: list[LayerResult], *, arch_name: str, workload_name: str, clock_mhz: float,
                    peak_macs_per_cycle: int, detailed: bool = False) -> "SimResult":
        total = sum(l.cycles for l in layers)
        compute = sum(l.compute_cycles for l in layers)
        macs = sum(l.macs for l in layers)
        return cls(
            arch_name=arch_name,
            workload_name=workload_name,
            clock_mhz=clock_mhz,
            peak_macs_per_cycle=peak_macs_per_cycle,
            total_cycles=total,
            compute_cycles=compute,
            stall_cycles=total - compute,
            macs=macs,
            utilization=macs / (peak_macs_per_cycle * total) if total and peak_macs_per_cycle else 0.0,
            energy_pj=math.fsum(l.energy_pj for l in layers),
            dram_bytes=sum(l.dram_bytes for l in layers),
            sram_bytes=sum(l.sram_bytes for l in layers),
            latency_s=total / (clock_mhz * 1e6),
            layers=layers,
            detailed=detailed,
        )

    @property
    def energy_pj_by_component(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for l in self.layers:
            for k, v in l.energy_pj_by_component.items():
                out[k] = out.get(k, 0.0) + v
        return dict(sorted(out.items()))

    @property
    def units(self) -> dict[str, dict[str, float]]:
        """Per unit: ``busy_cycles`` over the run and ``utilization`` (busy / total cycles)."""
        busy: dict[str, float] = {}
        for l in self.layers:
            for k, v in l.unit_busy_cycles.items():
                busy[k] = busy.get(k, 0.0) + v
        total = self.total_cycles
        return {k: {"busy_cycles": v, "utilization": v / total if total else 0.0} for k, v in sorted(busy.items())}

    @property
    def precisions(self) -> list[str]:
        """The distinct (weights, activations) pairs of the run's MAC layers, as ``"w/a"``."""
        seen = dict.fromkeys(f"{l.weight_format}/{l.activation_format}" for l in self.layers
                             if l.macs and l.weight_format)
        return list(seen)

    @property
    def dram_bytes_by_operand(self) -> dict[str, int]:
        return _sum_dicts(l.dram_bytes_by_operand for l in self.layers)

    @property
    def sram_bytes_by_operand(self) -> dict[str, int]:
        return _sum_dicts(l.sram_bytes_by_operand for l in self.layers)

    def headline(self) -> dict[str, float]:
        """``tokens_per_s`` and ``energy_per_token_j`` of a workload with tokens (the template's
        figures when its ``report_extras`` adds them, e.g. PIM's DRAM background energy), else {}."""
        rates = self.token_rates()
        if not rates:
            return {}
        tps = self.extras.get("tokens_per_s", rates["tokens_per_s"])
        ept = self.extras.get("energy_per_token_pj", rates["energy_per_token_pj"])
        return {"tokens_per_s": float(tps), "energy_per_token_j": float(ept) * 1e-12}

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for report.json (no trace); ``tokens_per_s`` / ``energy_per_token_j`` at the
        top level for workloads with tokens (see :meth:`headline`)."""
        return {
            **self.headline(),
            "arch_name": self.arch_name,
            "workload_name": self.workload_name,
            "clock_mhz": self.clock_mhz,
            "peak_macs_per_cycle": self.peak_macs_per_cycle,
            "total_cycles": self.total_cycles,
            "compute_cycles": self.compute_cycles,
            "stall_cycles": self.stall_cycles,
            "macs": self.macs,
            "utilization": self.utilization,
            "energy_pj": self.energy_pj,
            "energy_pj_by_component": self.energy_pj_by_component,
            "dram_bytes": self.dram_bytes,
            "dram_bytes_by_operand": self.dram_bytes_by_operand,
            "sram_bytes": self.sram_bytes,
            "sram_bytes_by_operand": self.sram_bytes_by_operand,
            "latency_s": self.latency_s,
            "precisions": self.precisions,
            "units": self.units,
            "detailed": self.detailed,
            "extras": _jsonable(self.extras),
            "arch": _jsonable(self.arch),
            "options": _jsonable(self.options),
            "layers": [l.to_dict() for l in self.layers],
            **({"import": _jsonable(self.imported)} if self.imported else {}),
        }


def _sum_dicts(dicts) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


def _jsonable(value: Any) -> Any:
    from archsim.spec import plain

    return plain(value)
