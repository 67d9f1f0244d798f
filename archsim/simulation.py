"""``archsim.simulate`` (this module: ``archsim.simulation``): workload + arch -> mapper -> engine -> :class:`SimResult`."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from archsim.errors import ArchsimError, SpecError, WorkloadError

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
    weights: str | None = None,
    activations: str | None = None,
    work_limit: float | None = None,
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
    weights, activations : str
        Precision names (``int8``, ``bf16``, ``fp8_e4m3`` ...) for the run: the
        workload's weights and activations, and the template's datapath through
        its ``Params.with_precision`` (a template that cannot run the pair says
        which pairs it runs). Both or neither.
    work_limit : float
        Refuse a run estimated above this many ideal compute cycles
        (:mod:`archsim.engine.guard`; default ``ARCHSIM_WORK_LIMIT`` or 1e12).
    **options
        Mapper options (``objective``, ``conv_lowering`` and the template's own,
        e.g. systolic ``dataflow``; :func:`mappers.options.option_names`) go to
        ``mappers.compile``; ``transform`` (``"draco:group_width=4"``) rewrites the graph
        before mapping (:mod:`workloads.transforms`); the rest go to ``workloads.load``.
    """
    from archsim.engine import run_program
    from archsim.spec import load_arch
    from mappers.options import option_names

    arch_spec = load_arch(arch, overrides=overrides)
    if (weights is None) != (activations is None):
        raise SpecError("precision: give both weights and activations (e.g. --weights int8 --activations int8)")
    if weights is not None:
        arch_spec = _with_precision(arch_spec, str(weights), str(activations))
        options = {**options, "weight_precision": str(weights), "act_precision": str(activations)}
    mapper_names = option_names(arch_spec.template)
    mapper_opts = {k: v for k, v in options.items() if k in mapper_names and v is not None}
    workload_opts = {k: v for k, v in options.items() if k not in mapper_names and v is not None}
    transform = workload_opts.pop("transform", None)  # "draco" or "draco:group_width=4" (workloads.transforms)
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
    if transform is not None:
        from workloads.transforms import apply_spec

        graph = apply_spec(graph, transform)
    import mappers
    from archsim.engine.guard import check_work, memory_guard

    check_work(graph, arch_spec, work_limit)  # refuse a run beyond the work limit before it grows
    with memory_guard():  # and stop one whose real memory grows beyond the machine's
        program = mappers.compile(graph, arch_spec, **mapper_opts)
        result = run_program(program, arch_spec, detailed=detailed, progress=progress, trace_layers=trace_layers)
    if not result.workload_name:
        result.workload_name = str(getattr(graph, "name", "") or workload)
    result.arch = arch_spec.to_dict()
    result.imported = dict(getattr(graph, "import_report", None) or {})
    result.options = {"workload": workload_opts, "mapper": mapper_opts, "overrides": _overrides_list(overrides),
                      "detailed": detailed}
    if program.allocation:  # COSMA allocation (mappers.allocation.apply): the plan and the bytes it left
        from mappers.allocation.apply import measured_traffic

        result.options["allocation"] = {**program.allocation, **measured_traffic(program, result)}
    return result


def _with_precision(arch_spec: Any, weights: str, activations: str) -> Any:
    """``arch_spec`` with its template's datapath set up for ``weights`` x ``activations``."""
    from archsim.numerics import get_format
    from archsim.spec import load_arch

    for role, name in (("weights", weights), ("activations", activations)):
        try:
            get_format(name)
        except ValueError as err:
            raise SpecError(f"--{role}: {err}") from None
    params = arch_spec.params
    try:
        new = params.with_precision(weights, activations)
    except ValueError as err:
        raise SpecError(f"{arch_spec.name}: {err}") from None
    changed = [(f.name, getattr(new, f.name)) for f in dataclasses.fields(new)
               if getattr(new, f.name) != getattr(params, f.name)]
    return load_arch(arch_spec, overrides=changed) if changed else arch_spec


def _overrides_list(overrides: Any) -> list[str]:
    if not overrides:
        return []
    if isinstance(overrides, dict):
        return [f"{k}={v}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return [str(o) for o in overrides]
