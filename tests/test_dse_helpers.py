"""Shared pieces of the sweep tests (no tests here).

``fake_loader`` builds :class:`ArchSpec` objects without YAML so the planner
and runner can be tested apart from the arch loader and the simulator;
``fake_evaluate`` is a deterministic stand-in for ``archsim.simulate`` whose
numbers are closed-form functions of the arch (so an independent expectation
can be computed in a test).
"""
from __future__ import annotations

import dataclasses
import os
import time

from archsim.errors import SpecError
from archsim.spec.model import ArchSpec, BufferSpec, DramSpec, TechSpec, VectorUnitSpec
from archsim.templates.systolic.params import SystolicParams

TECH = TechSpec(
    name="test-tech", node_nm=45, energy_pj={"mac.int8": 0.3}, sram_points=((8192, 1.25),),
    area_um2={"mac.int8": 400.0, "reg.bit": 5.0, "vector.lane": 10000.0},
    sram_area_points=((1024, 4.0), (1 << 20, 4.0)),
)


def base_arch() -> ArchSpec:
    return ArchSpec(
        name="fake-base", template="systolic", params=SystolicParams(rows=8, cols=8), clock_mhz=1000.0,
        buffers={n: BufferSpec(n, 65536, 1, 32) for n in ("input", "weight", "output")},
        dram=DramSpec(32.0, 100, 8 << 30), vector_unit=VectorUnitSpec(lanes=16), tech=TECH, source="preset:fake-base",
    )


def fake_loader(base, overrides=()):
    """Like load_arch for the keys the tests use: bare params, buffers.X.bytes, clock_mhz, dram.bytes_per_cycle."""
    if base == "fake-base":
        arch = base_arch()
    elif isinstance(base, ArchSpec):
        arch = base
    else:
        raise SpecError(f"unknown arch preset {base!r}")
    params = dataclasses.asdict(arch.params)
    buffers = dict(arch.buffers)
    clock = arch.clock_mhz
    dram = arch.dram
    for key, value in dict(overrides).items():
        parts = key.split(".")
        if len(parts) == 1 and key in params:
            params[key] = value
        elif parts[0] == "params" and len(parts) == 2 and parts[1] in params:
            params[parts[1]] = value
        elif parts[0] == "buffers" and len(parts) == 3 and parts[1] in buffers and parts[2] == "bytes":
            if not isinstance(value, int) or value < 1:
                raise SpecError(f"fake-base: buffers.{parts[1]}.bytes: expected a positive integer, got {value!r}")
            buffers[parts[1]] = dataclasses.replace(buffers[parts[1]], bytes=value)
        elif key == "clock_mhz":
            clock = float(value)
        elif key == "dram.bytes_per_cycle":
            dram = dataclasses.replace(dram, bytes_per_cycle=float(value))
        else:
            raise SpecError(f"fake-base: --set {key}={value}: unknown key")
    sp = SystolicParams(**params)
    try:
        sp.validate()
    except ValueError as err:
        raise SpecError(f"fake-base: params.{err}") from None
    if sp.rows * sp.cols > buffers["weight"].bytes:
        raise SpecError(f"fake-base: buffers.weight.bytes: expected at least {sp.rows * sp.cols} bytes")
    return dataclasses.replace(arch, params=sp, buffers=buffers, clock_mhz=clock, dram=dram)


def no_workload_check(ref):
    if ref.name == "nope":
        from archsim.errors import WorkloadError

        raise WorkloadError("unknown workload 'nope'")


def fake_metrics(task) -> dict:
    """Deterministic, closed-form metrics of a task (independent of backend and process)."""
    p = task.arch.params
    work = {"w1": 1_000_000, "w2": 250_000}.get(task.workload.name, 500_000)
    flow = {"ws": 1.0, "os": 1.2, "is": 1.5}[p.dataflow]
    cycles = int(work * flow / (p.rows * p.cols)) + 1000 + int(4_000_000 / task.arch.buffers["input"].bytes)
    energy = float(work) * 0.3 + task.arch.buffers["input"].bytes * 0.01
    latency = cycles / (task.arch.clock_mhz * 1e6)
    return {
        "cycles": cycles, "energy_pj": energy, "latency_s": latency, "edp_pj_s": energy * latency,
        "utilization": min(1.0, work / (cycles * p.rows * p.cols)), "area_mm2": task.area_mm2,
    }


def fake_evaluate(task) -> dict:
    if task.arch.params.rows == 13:
        raise RuntimeError("model bug on purpose")
    return fake_metrics(task)


def slow_evaluate(task) -> dict:
    time.sleep(float(os.environ.get("DSE_TEST_DELAY", "0.05")))
    return fake_metrics(task)
