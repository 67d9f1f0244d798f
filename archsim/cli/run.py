"""``archsim run``: simulate a workload on an arch and write the reports.

Example::

    archsim run --arch systolic-32x32-ws --workload resnet50
    archsim run --arch my_arch.yaml --workload gpt2 --phase decode --kv-len 1023 --set rows=64

Reports go to ``sim_out/<arch>-<workload>/`` (or ``--out DIR``); they are
written into a temporary folder and swapped in at the end, so a failing run
leaves an earlier run's folder untouched.
"""
from __future__ import annotations

import argparse
import os
import re

from archsim.cli._progress import LayerProgress, add_quiet
from archsim.errors import ArchsimError

DEFAULT_OUT_ROOT = "sim_out"
DEFAULT_TRACE_LAYERS = 20


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="simulate a workload on an arch and write reports to sim_out/",
        description="Simulate a workload on an arch spec and write report.json, layers.csv, summary.md, "
        "COMPUTE_REPORT.csv, trace.json and plots to sim_out/<arch>-<workload>/.",
    )
    p.add_argument("--arch", required=True, metavar="NAME|FILE", help="arch preset name (see `archsim presets`) or YAML file")
    p.add_argument("--workload", required=True, metavar="NAME|FILE", help="zoo model name or .onnx/.yaml/.csv file")
    add_workload_args(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override an arch spec value, e.g. rows=16 or dram.bytes_per_cycle=16 (repeatable)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: sim_out/<arch>-<workload>)")
    p.add_argument("--detailed", action="store_true", help="time tiles with the detailed cycle-by-cycle model")
    p.add_argument("--objective", choices=["cycles", "energy"], help="what the mapping search minimises")
    p.add_argument("--allocation", choices=["greedy", "ilp", "heuristic"],
                   help="which inter-layer tensors stay in the scratchpad: greedy (layer by layer, the default), "
                        "ilp or heuristic (COSMA's plans: operator order, residency, eviction; systolic, simd)")
    add_fusion_arg(p)
    add_precision_args(p)
    add_template_option_args(p)
    p.add_argument("--sqnr", action="store_true",
                   help="ONNX workloads: also run the model's values at the run's precisions on seeded random "
                   "inputs and report sqnr_db per GEMM layer and at the output vs fp32 (onnxruntime), and "
                   "top-1 agreement for a classifier (see docs/simd.md)")
    p.add_argument("--sqnr-seed", type=int, default=0, dest="sqnr_seed", metavar="N",
                   help="seed of --sqnr's standard-normal inputs (default 0)")
    p.add_argument("--trace-layers", type=int, default=DEFAULT_TRACE_LAYERS, metavar="N",
                   help=f"per-command trace events for the first N layers (default {DEFAULT_TRACE_LAYERS})")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_quiet(p)
    p.add_argument("--work-limit", type=float, dest="work_limit", metavar="CYCLES",
                   help="refuse a run estimated above this many ideal compute cycles (default 1e12, or "
                   "ARCHSIM_WORK_LIMIT)")
    p.set_defaults(func=run)


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """The workload shape flags of ``run`` and ``compare`` (--batch, --seq, --phase, --kv-len,
    --image-size, and the ONNX ones of :func:`add_onnx_args`); :func:`workload_options` reads them."""
    p.add_argument("--batch", type=int, help="batch size")
    p.add_argument("--seq", type=int, help="sequence length (transformers)")
    p.add_argument("--phase", choices=["prefill", "decode"], help="LLM phase")
    p.add_argument("--kv-len", type=int, dest="kv_len", help="KV-cache length (decode)")
    p.add_argument("--image-size", type=int, dest="image_size", help="input image size (CNNs, ViT)")
    p.add_argument("--transform", metavar="NAME[:key=INT,...]",
                   help="rewrite the workload before mapping (workloads.transforms), e.g. draco:group_width=4")
    add_onnx_args(p)


def workload_options(args: argparse.Namespace) -> dict:
    """Loader options of :func:`add_workload_args`' flags (the ones given)."""
    options = {"batch": args.batch, "seq": args.seq, "phase": args.phase, "kv_len": args.kv_len,
               "image_size": args.image_size, "transform": getattr(args, "transform", None), **onnx_options(args)}
    return {k: v for k, v in options.items() if v is not None}


def _template_options() -> dict[str, tuple[bool, str, list[str]]]:
    """Every registered template's own mapper options: name -> (is_bool, help, templates)."""
    from archsim.spec.options import option_fields
    from archsim.templates import template_names

    out: dict[str, tuple[bool, str, list[str]]] = {}
    for template in template_names():
        for name, is_bool, help_text in option_fields(template):
            if name in out:
                out[name][2].append(template)
            else:
                out[name] = (is_bool, help_text, [template])
    return out


def add_template_option_args(p: argparse.ArgumentParser) -> None:
    """One flag per template mapper option (``--dataflow`` for ``dataflow``), generated from each
    template's options dataclass and its docstring: a bool option is a switch, any other takes a
    YAML value as ``--set`` does; :func:`template_option_values` reads them."""
    for name, (is_bool, help_text, templates) in sorted(_template_options().items()):
        flag = "--" + name.replace("_", "-")
        text = f"{help_text} [option of: {', '.join(templates)}]".replace("%", "%%")
        if is_bool:
            p.add_argument(flag, dest=name, action="store_const", const=True, default=None, help=text)
        else:
            p.add_argument(flag, dest=name, metavar="VALUE", default=None, help=text)


def template_option_values(args: argparse.Namespace, template: str) -> dict:
    """The template option flags given, parsed, checked against ``template``'s own options."""
    import yaml

    from archsim.inputs import Yaml12Loader
    from archsim.spec.options import option_names

    own = option_names(template)
    out = {}
    for name, (_is_bool, _help, templates) in sorted(_template_options().items()):
        value = getattr(args, name, None)
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if name not in own:
            raise ArchsimError(f"{flag}: template {template} has no option {name} (templates with it: "
                               f"{', '.join(templates)})")
        if isinstance(value, str):
            try:
                value = yaml.load(value, Loader=Yaml12Loader)  # noqa: S506 - a safe loader (YAML 1.2 scalars)
            except yaml.YAMLError:
                raise ArchsimError(f"{flag}: expected a YAML value, got {value!r}") from None
        out[name] = value
    return out


def add_fusion_arg(p: argparse.ArgumentParser) -> None:
    """``--no-fusion`` (``args.fusion``: None unless given, then False)."""
    p.add_argument("--no-fusion", action="store_false", dest="fusion", default=None,
                   help="run bias/ReLU/GELU/residual/requant ops as separate vector passes, not in the array's "
                   "output path (the arch's output_ops)")


def add_precision_args(p: argparse.ArgumentParser) -> None:
    """``--weights FMT --activations FMT`` (both or neither)."""
    p.add_argument("--weights", metavar="FMT", help="weight precision for the run, e.g. int8, int4, bf16, fp8_e4m3 "
                   "(with --activations; sets the workload and the template's datapath)")
    p.add_argument("--activations", metavar="FMT", help="activation precision for the run (with --weights)")


def add_onnx_args(p: argparse.ArgumentParser) -> None:
    """``--dim NAME=VALUE``, ``--input-shape NAME=AxBxC``, ``--input-value NAME=V`` (repeatable) and
    ``--unknown-ops`` for ONNX workloads."""
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE", dest="dims",
                   help="ONNX: bind a symbolic input dim, e.g. --dim N=8 (repeatable; --batch / --seq bind "
                   "the usual batch and sequence names)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=AxBxC", dest="input_shapes",
                   help="ONNX: bind an input's whole shape, whatever its dims are called (named, ?, -1 or "
                   "unnamed), e.g. --input-shape x=1x3x48x192 (repeatable)")
    p.add_argument("--input-value", action="append", default=[], metavar="NAME=V", dest="input_values",
                   help="ONNX: give a control input a value, e.g. --input-value sr=16000 (it becomes a constant, "
                   "so the If it decides folds; repeatable)")
    p.add_argument("--unknown-ops", choices=["error", "vector"], dest="unknown_ops",
                   help="ONNX: ops archsim cannot lower are an error (default) or run as generic vector work "
                   "(listed in the summary, their MACs not counted)")


def onnx_options(args: argparse.Namespace) -> dict:
    """Loader options of :func:`add_onnx_args`' flags."""
    from workloads.onnx_import import parse_onnx_args

    workload = getattr(args, "workload", None) or getattr(args, "source", "")
    out = parse_onnx_args(workload, dims=args.dims, input_shapes=getattr(args, "input_shapes", ()),
                          input_values=getattr(args, "input_values", ()))
    if args.unknown_ops is not None:
        out["unknown_ops"] = args.unknown_ops
    return out


def _slug(text: str) -> str:
    base = os.path.basename(str(text))
    if base.endswith((".yaml", ".yml", ".onnx", ".csv")):
        base = base.rsplit(".", 1)[0]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._") or "run"


def run_name(arch_name: str, workload: str) -> str:
    from workloads.zoo import canonical_name

    try:
        workload = canonical_name(workload)  # ResNet50, resnet-50: one folder, resnet50
    except ArchsimError:
        pass  # a file
    return f"{_slug(arch_name)}-{_slug(workload)}"


def run(args: argparse.Namespace) -> int:
    from archsim.report.writers import summary_rows, write_reports
    from archsim.simulation import simulate
    from archsim.spec import load_arch

    arch = load_arch(args.arch, overrides=args.overrides)
    options = {"objective": args.objective, "fusion": args.fusion, "allocation": args.allocation}
    options = {**workload_options(args), **{k: v for k, v in options.items() if v is not None},
               **template_option_values(args, arch.template)}
    if getattr(args, "sqnr", False):
        from archsim.accuracy.network import check_sqnr_run

        check_sqnr_run(arch, args.workload)
    from archsim.outputs import OutputDir, OutputError

    if args.out is not None and not args.out.strip():
        raise OutputError("--out: expected a folder name, got an empty one")
    out_dir = args.out or os.path.join(DEFAULT_OUT_ROOT, run_name(arch.name, args.workload))

    from archsim.report.writers import RUN_FILES

    OutputDir.check(out_dir, RUN_FILES)  # refuse a user's folder before simulating, not after
    from archsim.report.run_lock import hold_run_lock

    _folder_lock = hold_run_lock(out_dir)  # one run per folder; released when run() returns  # noqa: F841
    progress = LayerProgress(f"{arch.name} x {_slug(args.workload)}", quiet=args.quiet)
    try:
        result = simulate(args.workload, arch, detailed=args.detailed, progress=progress,
                          trace_layers=max(0, args.trace_layers), weights=args.weights,
                          activations=args.activations, work_limit=args.work_limit, **options)
    finally:
        progress.close()
    result.options["overrides"] = list(args.overrides)
    if getattr(args, "sqnr", False):
        from archsim.accuracy.network import add_network_sqnr

        add_network_sqnr(result, arch, args.workload, options, seed=args.sqnr_seed)
    try:
        write_reports(result, out_dir, plots=not args.no_plots)
    except OSError as err:
        raise ArchsimError(f"{out_dir}: cannot write reports: {err.strerror or err}") from None
    rows = summary_rows(result)
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(f"{'reports':<{width}}  {out_dir}/")
    return 0
