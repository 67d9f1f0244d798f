"""Batch-1 GPU time bound by host-side kernel dispatch, overlapped with execution.

An eager framework (PyTorch) dispatches one kernel at a time from the host;
each costs the host ``dispatch_s`` (Python, framework bookkeeping, the
launch call) and then waits in the GPU's queue; the GPU runs queued kernels
in order. Kernel ``i`` (from 1) is queued at ``i * dispatch_s`` and finishes at
``done_i = max(done_{i-1}, i * dispatch_s) + kernel_i``; the step ends at
``done_N``. Small kernels leave the GPU waiting for the host (time
``~ N * dispatch_s``); long ones let the host run ahead, so the two costs
overlap instead of adding up (the template's additive ``kernel_overhead_us``
counts both, which overstates memory-bound runs).

Energy: ``busy_power_w`` while a kernel runs, ``idle_power_w`` in the gaps
while the GPU waits for the host.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class DispatchBound:
    """One step's time on the GPU: ``seconds`` in all, ``busy_s`` running kernels, the rest waiting."""

    seconds: float
    busy_s: float
    kernels: int

    @property
    def idle_s(self) -> float:
        return self.seconds - self.busy_s

    def energy_j(self, busy_power_w: float, idle_power_w: float) -> float:
        return self.busy_s * busy_power_w + self.idle_s * idle_power_w


def pipelined(kernel_s: Iterable[float], dispatch_s: float) -> DispatchBound:
    """The step's time when each kernel needs ``dispatch_s`` of host time before it can run."""
    if dispatch_s < 0:
        raise ValueError(f"dispatch_s: expected >= 0, got {dispatch_s!r}")
    done = busy = 0.0
    n = 0
    for k in kernel_s:
        n += 1
        done = max(done, n * dispatch_s) + k
        busy += k
    return DispatchBound(done, busy, n)


def layer_kernel_seconds(result) -> list[float]:
    """Per-kernel seconds of a roofline run, in program order (a layer repeated r times is r kernels)."""
    hz = result.clock_mhz * 1e6
    out: list[float] = []
    for layer in result.layers:
        r = max(1, int(layer.repeat or 1))
        if layer.cycles:
            out.extend([layer.cycles / r / hz] * r)
    return out
