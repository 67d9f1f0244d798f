"""Roofline template: a GPU (or any processor) described by its peak compute per
precision and its memory bandwidth; each layer (one kernel) takes
``max(flops / peak, bytes / (mem_efficiency * bandwidth)) + kernel_overhead_us``
(Williams, Waterman, Patterson, "Roofline", CACM 2009). A baseline for the PIM
template, not a GPU model: no occupancy or cache effects; bytes are each
operand once. ``mem_efficiency`` is the sustained fraction of the peak DRAM
bandwidth; ``kernel_overhead_us`` the fixed time per kernel (launch +
framework), which bounds batch-1 decoding on real GPUs; 0 and 1.0 give the
pure roofline.

``dispatch_us`` is the other way to charge the host: each kernel needs that
much host time before it can run, and host and GPU overlap (the dispatch
pipeline of :mod:`archsim.templates.roofline.dispatch`). The run's cycles stay
the roofline's; ``report_extras`` adds the dispatch-bound step
(``dispatch_bound_latency_s``, ``..._tokens_per_s``, ``..._energy_per_token_j``),
whose energy charges ``board_power_w`` while kernels run and ``idle_power_w``
while the GPU waits for the host.

Energy: ``board_power_w`` x time. The action ``gpu.board_pj`` counts the pJ
a kernel draws (``cycles / clock x board_power_w``; the tech table prices it
at 1 pJ), so changing the clock does not change the power.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil
from typing import ClassVar

from archsim.templates.base import Template
from archsim.templates.base import TemplateModel, TemplateParams


@dataclass
class RooflineParams(TemplateParams):
    """Attributes
    ----------
    peak_tflops : dict[str, float]
        Dense peak per precision name (``"bf16"``, ``"int8"``, ...), in
        TFLOP/s (TOPS for integers); precisions not listed use ``"default"``.
    mem_gb_per_s : float
        Peak DRAM bandwidth (GB/s).
    mem_efficiency : float
        Sustained fraction of ``mem_gb_per_s`` a streaming kernel reaches (0, 1].
    memory_bytes : int
        DRAM capacity.
    board_power_w : float
        Board power while running (TDP, or a measured figure): energy = power x time.
    kernel_overhead_us : float
        Fixed time added to every kernel (launch + framework dispatch, batch 1);
        0 is the pure roofline. Batch-1 decoding on a GPU is often bound by it.
    die_area_mm2 : float
        Die area for area reports (0: not given), with ``die_area_source``.
    dispatch_us : float
        Host time per kernel, overlapped with the GPU's execution (0: off); reported
        as the dispatch-bound figures in the extras. Not together with ``kernel_overhead_us``.
    idle_power_w : float | None
        Board power while the GPU waits for the host between kernels (None: ``board_power_w``).
    """

    peak_tflops: dict[str, float] = field(default_factory=lambda: {"default": 100.0})
    mem_gb_per_s: float = 1000.0
    mem_efficiency: float = 1.0
    memory_bytes: int = 40 << 30
    board_power_w: float = 400.0
    kernel_overhead_us: float = 0.0
    die_area_mm2: float = 0.0
    die_area_source: str = ""
    dispatch_us: float = 0.0
    idle_power_w: float | None = None

    def with_precision(self, weights: str, activations: str) -> "RooflineParams":
        """Any pair whose precisions have a listed peak (the kernels run at the weights')."""
        listed = sorted(k for k in self.peak_tflops if k != "default")
        for fmt in (weights, activations):
            if fmt not in self.peak_tflops:
                raise ValueError(f"roofline peaks are listed for {', '.join(listed)}; got {fmt!r}")
        return self

    def validate(self) -> None:
        if not self.peak_tflops or any(not (isinstance(v, (int, float)) and v > 0) for v in self.peak_tflops.values()):
            raise ValueError(f"peak_tflops: expected positive TFLOP/s per precision, got {self.peak_tflops!r}")
        if "default" not in self.peak_tflops:
            raise ValueError("peak_tflops: expected a 'default' entry for unlisted precisions")
        if not self.mem_gb_per_s > 0:
            raise ValueError(f"mem_gb_per_s: expected a positive number, got {self.mem_gb_per_s!r}")
        if not (isinstance(self.memory_bytes, int) and self.memory_bytes > 0):
            raise ValueError(f"memory_bytes: expected a positive integer, got {self.memory_bytes!r}")
        if not self.kernel_overhead_us >= 0:
            raise ValueError(f"kernel_overhead_us: expected a number >= 0, got {self.kernel_overhead_us!r}")
        if not 0 < self.mem_efficiency <= 1:
            raise ValueError(f"mem_efficiency: expected a fraction in (0, 1], got {self.mem_efficiency!r}")
        if not (isinstance(self.die_area_mm2, (int, float)) and self.die_area_mm2 >= 0):
            raise ValueError(f"die_area_mm2: expected a number >= 0, got {self.die_area_mm2!r}")
        if not self.board_power_w > 0:
            raise ValueError(f"board_power_w: expected a positive number, got {self.board_power_w!r}")
        if not (isinstance(self.dispatch_us, (int, float)) and self.dispatch_us >= 0):
            raise ValueError(f"dispatch_us: expected a number >= 0, got {self.dispatch_us!r}")
        if self.dispatch_us and self.kernel_overhead_us:
            raise ValueError(f"dispatch_us: expected 0 when kernel_overhead_us is set ({self.kernel_overhead_us}): "
                             f"the host overhead is either added per kernel or overlapped, not both")
        if self.idle_power_w is not None and not 0 <= self.idle_power_w <= self.board_power_w:
            raise ValueError(f"idle_power_w: expected 0..board_power_w ({self.board_power_w}), got {self.idle_power_w!r}")


@dataclass(frozen=True, slots=True)
class RooflineTile:
    """One kernel: ``flops`` operations at ``precision`` touching ``nbytes`` of DRAM."""

    flops: int
    nbytes: int
    precision: str = "bf16"


class RooflineModel(TemplateModel):
    units: ClassVar[dict[str, str]] = {"gpu": "compute", "vector": "vector", "dma": "dma"}

    def __init__(self, arch):
        super().__init__(arch)
        self.p = arch.params
        hz = arch.clock_mhz * 1e6
        self.bytes_per_cycle = self.p.mem_gb_per_s * self.p.mem_efficiency * 1e9 / hz
        self.flops_per_cycle = {k: v * 1e12 / hz for k, v in self.p.peak_tflops.items()}
        self.launch_cycles = ceil(self.p.kernel_overhead_us * 1e-6 * hz)
        self.pj_per_cycle = self.p.board_power_w / hz * 1e12

    def peak_flops_per_cycle(self, precision: str) -> float:
        return self.flops_per_cycle.get(precision, self.flops_per_cycle["default"])

    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> float:
        """Half the peak FLOP/cycle at ``precision`` (the ``default`` entry when None or unlisted)."""
        return self.peak_flops_per_cycle(precision or "default") / 2

    def tile_pe_fraction(self, tile: RooflineTile) -> float:
        return 1.0

    def check_tile(self, tile: RooflineTile) -> None:
        if tile.flops < 0 or tile.nbytes < 0:
            raise ValueError(f"expected flops and bytes >= 0, got {tile.flops} and {tile.nbytes}")

    def area_inputs(self):
        """The die, from the preset (no MAC count is invented for a GPU)."""
        from archsim.area import AreaInputs

        p = self.p
        fixed = {"gpu_die": (p.die_area_mm2 * 1e6, p.die_area_source or "preset")} if p.die_area_mm2 else {}
        return AreaInputs(fixed_um2=fixed)

    def tile_cycles(self, tile: RooflineTile) -> int:
        roof = max(tile.flops / self.peak_flops_per_cycle(tile.precision), tile.nbytes / self.bytes_per_cycle)
        return ceil(roof) + self.launch_cycles

    def tile_bound(self, tile: RooflineTile) -> str:
        c = tile.flops / self.peak_flops_per_cycle(tile.precision)
        return "compute" if c >= tile.nbytes / self.bytes_per_cycle else "memory"

    def tile_actions(self, tile: RooflineTile) -> dict[str, float]:
        """``gpu.board_pj``: board power x the kernel's time, in pJ (priced at 1 pJ each)."""
        return {"gpu.board_pj": self.tile_cycles(tile) * self.pj_per_cycle}

    def tile_values(self, tile, operands):
        raise NotImplementedError("the roofline template models time only")

    def detailed_tile(self, tile, operands):
        raise NotImplementedError("the roofline template has no detailed model")

    def detailed_tile_cycles(self, tile: RooflineTile) -> int:
        return self.tile_cycles(tile)

    def dispatch_bound(self, result) -> dict:
        """The run as a dispatch-bound step (``dispatch_us`` > 0), else {}."""
        from archsim.templates.roofline.dispatch import layer_kernel_seconds, pipelined

        p = self.p
        if not p.dispatch_us:
            return {}
        step = pipelined(layer_kernel_seconds(result), p.dispatch_us * 1e-6)
        idle_w = p.board_power_w if p.idle_power_w is None else p.idle_power_w
        energy = step.energy_j(p.board_power_w, idle_w)
        out = {"dispatch_us": p.dispatch_us, "idle_power_w": idle_w, "dispatch_bound_latency_s": step.seconds,
               "dispatch_bound_busy_s": step.busy_s, "dispatch_bound_energy_j": energy}
        if result.tokens:
            out["dispatch_bound_tokens_per_s"] = result.tokens / step.seconds
            out["dispatch_bound_energy_per_token_j"] = energy / result.tokens
        return out

    def report_extras(self, result) -> dict:
        mem = sum(l.cycles for l in result.layers if l.mapping.get("bound") == "memory")
        return {
            **self.dispatch_bound(result),
            "memory_bound_fraction": mem / result.total_cycles if result.total_cycles else 0.0,
            "board_power_w": self.p.board_power_w,
            "kernel_overhead_us": self.p.kernel_overhead_us,
            "mem_efficiency": self.p.mem_efficiency,
            **({"die_area_mm2": self.p.die_area_mm2} if self.p.die_area_mm2 else {}),
            **result.token_rates(),
        }


TEMPLATE = Template(
    name="roofline",
    description="processor as a roofline: peak compute per precision and DRAM bandwidth (GPU baseline)",
    params="archsim.templates.roofline:RooflineParams",
    model="archsim.templates.roofline:RooflineModel",
    mapper="mappers.roofline",
    uses_buffers=False,
)

__all__ = ["RooflineModel", "RooflineParams", "RooflineTile", "TEMPLATE"]
