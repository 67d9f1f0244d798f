"""Co-simulation entry points: make tile commands + operands, run them on the RTL, compare.

``run_cosim(params, items, sim="icarus")`` -> :class:`~rtl.design.CosimReport`.
``cosim_items(params, source, tiles=N, seed=S)`` builds ``items`` (a list of
``(tile, operands)``) from a source; the template's design knows its sources
(:meth:`rtl.design.RtlDesign.cosim_items`):

- systolic (:mod:`rtl.systolic.sources`): ``random``, ``resnet50``, ``gpt2``,
  ``gpt2-prefill``, ``program``;
- pim (:mod:`rtl.pim.sources`): ``random``, ``gpt2``, ``program``.

``program`` takes the first Compute commands of ``mappers.compile`` of one
layer (``layer=``, default the first with MACs) of a zoo workload
(``workload=``; :func:`compile_layer`). Operands are random, drawn with
numpy's seeded generator; expected values and cycles come from archsim's
models.
"""
from __future__ import annotations

from typing import Any

from archsim.errors import ToolError, WorkloadError
from rtl.cosim.harness import run_job
from rtl.design import CosimReport
from rtl.generate import design_for


def compile_layer(arch: Any, workload: str, layer: str | None = None) -> list:
    """The Compute commands of ``mappers.compile`` of one layer of a zoo workload.

    ``layer`` names the op (default: the first op with MACs, e.g. ResNet-50's
    ``conv1``); only that op is compiled, so this stays fast.
    """
    import copy

    try:
        import mappers
        from workloads.graph import Graph
        from workloads.zoo import build
    except ImportError as err:
        raise ToolError(f"mapper or workload zoo not available: {err}") from None
    from archsim.program import Compute

    graph = build(workload)
    ops = [op for op in graph.ops() if (op.name == layer if layer else op.macs() > 0)]
    if not ops:
        raise WorkloadError(f"{workload}: no layer named {layer!r}" if layer else f"{workload}: no layer with MACs")
    one = Graph(f"{workload}:{ops[0].name}")
    one.add(copy.deepcopy(ops[0]))
    program = mappers.compile(one, arch)
    return [cmd for lp in program.layers for cmd in lp.commands if isinstance(cmd, Compute)]


def cosim_items(params, source: str = "random", tiles: int = 8, seed: int = 0, max_stream: int = 16,
                arch: Any = None, workload: str | None = None, layer: str | None = None) -> list:
    """Tiles + operands of ``source`` for the RTL of ``params`` (see the module docstring)."""
    return design_for(params).cosim_items(source, tiles=tiles, seed=seed, max_stream=max_stream, arch=arch,
                                          workload=workload, layer=layer)


def run_cosim(params_or_arch, items, *, sim: str = "icarus", waves: bool = False, options: Any = None,
          build_dir=None, quiet: bool = True, progress=None) -> CosimReport:
    """Replay ``items`` on the RTL of ``params_or_arch`` and compare with archsim's models.

    ``progress(stage, done, total)``: see :func:`rtl.cosim.harness.run_job`."""
    return run_design_cosim(design_for(params_or_arch, options), items, sim=sim, waves=waves, build_dir=build_dir,
                            quiet=quiet, progress=progress)


def run_design_cosim(design, items, *, sim: str = "icarus", waves: bool = False, build_dir=None, quiet: bool = True,
                     progress=None) -> CosimReport:
    """:func:`run_cosim` on a given :class:`~rtl.design.RtlDesign` (e.g. a :class:`~rtl.design.UnitDesign`)."""
    job = design.make_job(items)
    run = run_job(design.verilog(), design.toplevel, job, sim=sim, waves=waves, build_dir=build_dir, quiet=quiet,
                  extra_sources=design.sim_sources(), progress=progress)
    report = design.check(items, run.result, sim=sim)
    report.build_s, report.run_s = run.build_s, run.run_s
    report.waves = str(run.waves) if run.waves else None
    return report
