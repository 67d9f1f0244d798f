"""``archsim.simulate``: workload + arch -> mapper -> engine -> :class:`SimResult`.

This module is callable itself, so ``archsim.simulate(...)`` works whether
``archsim.simulate`` resolves to the function or to this module.
"""
from __future__ import annotations

import sys
import types
from typing import Any, Callable

from archsim.errors import ArchsimError, WorkloadError

#: options that go to ``mappers.compile``
MAPPER_OPTIONS = ("conv_lowering", "objective", "dataflow")
#: options that go to ``workloads.load`` (others are passed through too and checked there)
WORKLOAD_OPTIONS = ("batch", "seq_len", "seq", "phase", "kv_len", "image_size")


def simulate(
    workload: Any,
    arch: Any,
    *,
    overrides: Any = (),
    detailed: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    trace_layers: int = 0,
    **options: Any,
):
    """Simulate ``workload`` on ``arch`` and return a :class:`~archsim.report.SimResult`.

    Parameters
    ----------
    workload : Graph | str | path
        A workloads ``Graph``, or a zoo name / ``.onnx`` / ``.yaml`` / ``.csv`` path for
        ``workloads.load`` (with ``batch``, ``seq_len``/``seq``, ``phase``, ``kv_len``,
        ``image_size`` and any other option the loader takes).
    arch : ArchSpec | str | path | mapping
        An arch spec, or a preset name / YAML path for :func:`archsim.spec.load_arch`.
    overrides : KEY=VALUE strings or dict
        ``--set`` style overrides applied to ``arch``.
    detailed : bool
        Time Compute tiles with the template's detailed (cycle-by-cycle) model.
    progress : callable(done, total, layer_name)
        Called after each layer.
    trace_layers : int
        Record the command timeline of the first N layers for the trace writer.
    **options
        Mapper options (``objective``, ``dataflow``, ``conv_lowering``) go to
        ``mappers.compile``; the rest to ``workloads.load``.
    """
    from archsim.engine import run_program
    from archsim.spec import load_arch

    arch_spec = load_arch(arch, overrides=overrides)
    mapper_opts = {k: v for k, v in options.items() if k in MAPPER_OPTIONS and v is not None}
    workload_opts = {k: v for k, v in options.items() if k not in MAPPER_OPTIONS and v is not None}
    if isinstance(workload, (str, bytes)) or hasattr(workload, "__fspath__"):
        import workloads

        graph = workloads.load(workload, **workload_opts)
    else:
        if workload_opts:
            raise WorkloadError(
                f"workload options {', '.join(sorted(workload_opts))} apply only to a workload given by name or path"
            )
        graph = workload
    if not hasattr(graph, "ops"):
        raise ArchsimError(f"expected a workload Graph, a zoo name or a file path, got {type(workload).__name__}")
    import mappers

    program = mappers.compile(graph, arch_spec, **mapper_opts)
    result = run_program(program, arch_spec, detailed=detailed, progress=progress, trace_layers=trace_layers)
    if not result.workload_name:
        result.workload_name = str(getattr(graph, "name", "") or workload)
    result.arch = arch_spec.to_dict()
    result.options = {"workload": workload_opts, "mapper": mapper_opts, "overrides": _overrides_list(overrides),
                      "detailed": detailed}
    return result


def _overrides_list(overrides: Any) -> list[str]:
    if not overrides:
        return []
    if isinstance(overrides, dict):
        return [f"{k}={v}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return [str(o) for o in overrides]


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any):
        return simulate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
