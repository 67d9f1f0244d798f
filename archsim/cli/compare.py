"""``archsim compare``: one workload on two archs, like for like, in one table.

Example::

    archsim compare --arch pim-gpt-gddr6 --arch gpu-t4 --workload gpt2 --phase decode --kv-len 1024
    archsim compare --arch pim-hbm2 --arch gpu-a100 --set-b kernel_overhead_us=0 --workload gpt3-xl \\
        --phase decode --kv-len 1024 --json cmp.json

Both runs get the same workload options (the flags of ``archsim run``: shape, ``--dim``,
``--unknown-ops``, ``--no-fusion``, precision). Rows: latency per token (per inference for
workloads without tokens), tokens/s, energy per token, utilization; the last column is
A / B. The precision each arch *computes in* (a PIM stores and multiplies in its
``mac_precision`` whatever the graph says; other templates run the graph's formats) must
match: a comparison across precisions is refused (one line, exit 2) unless
``--allow-mixed-precision``, and then the table says so in capitals.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from archsim.cli._progress import LayerProgress, add_quiet
from archsim.cli.run import add_fusion_arg, add_precision_args, add_workload_args, workload_options
from archsim.errors import ArchsimError

ROWS = (  # key, label, unit scale, unit
    ("latency_per_token_s", "latency per token", 1e3, "ms"),
    ("tokens_per_s", "tokens/s", 1.0, ""),
    ("energy_per_token_j", "energy per token", 1e3, "mJ"),
    ("utilization", "utilization", 100.0, "%"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="run one workload on two archs and print one table with the ratios",
        description="Run a workload on two arch specs with the same options and print latency per token, "
                    "tokens/s, energy per token and utilization side by side, with the A/B ratios.",
    )
    p.add_argument("--arch", action="append", required=True, metavar="NAME|FILE",
                   help="arch preset or YAML file; give it twice (A, then B)")
    p.add_argument("--workload", required=True, metavar="NAME|FILE", help="zoo model name or .onnx/.yaml/.csv file")
    add_workload_args(p)
    add_fusion_arg(p)
    add_precision_args(p)
    p.add_argument("--set-a", action="append", default=[], metavar="KEY=VALUE", dest="set_a",
                   help="override a value of arch A's spec (repeatable)")
    p.add_argument("--set-b", action="append", default=[], metavar="KEY=VALUE", dest="set_b",
                   help="override a value of arch B's spec (repeatable)")
    p.add_argument("--detailed", action="store_true", help="time tiles with the detailed models")
    p.add_argument("--allow-mixed-precision", action="store_true",
                   help="compare even if the two archs compute in different precisions (stated loudly)")
    p.add_argument("--json", metavar="FILE", help="also write the comparison as JSON to FILE")
    add_quiet(p)
    p.set_defaults(func=run)


def compute_precision(arch, graph) -> tuple[str, str]:
    """(weights, activations) format ``arch`` computes ``graph``'s matmuls in: the graph's
    formats as the template's datapath takes them (its model's ``compute_formats``)."""
    from archsim.templates.base import compute_formats

    for op in graph.ops():
        if op.kind in ("matmul", "conv2d", "attention"):
            weights = str(op.weight_precision) if op.params() else str(op.act_precision)
            return compute_formats(arch.model(), weights, str(op.act_precision))
    return "none", "none"


def figures(result) -> dict[str, Any]:
    """The compared figures of one run (per token, or per inference without tokens)."""
    head = result.headline()
    tokens = result.tokens
    if head:
        tps = head["tokens_per_s"]
        return {"tokens": tokens, "latency_per_token_s": 1.0 / tps if tps else float("inf"),
                "tokens_per_s": tps, "energy_per_token_j": head["energy_per_token_j"],
                "utilization": result.utilization}
    extra_pj = float(result.extras.get("background_energy_pj", 0.0) or 0.0)
    return {"tokens": 0, "latency_per_token_s": result.latency_s,
            "tokens_per_s": 1.0 / result.latency_s if result.latency_s else 0.0,
            "energy_per_token_j": (result.energy_pj + extra_pj) * 1e-12, "utilization": result.utilization}


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def compare(args: argparse.Namespace) -> dict[str, Any]:
    import workloads
    from archsim.errors import SpecError
    from archsim.simulation import _with_precision, simulate
    from archsim.spec import load_arch

    if len(args.arch) != 2:
        raise ArchsimError(f"compare: expected --arch twice (A and B), got {len(args.arch)}")
    if (args.weights is None) != (args.activations is None):
        raise SpecError("precision: give both weights and activations (e.g. --weights bf16 --activations bf16)")
    options = {**workload_options(args), "weight_precision": args.weights, "act_precision": args.activations}
    options = {k: v for k, v in options.items() if v is not None}
    mapper = {"fusion": args.fusion} if args.fusion is not None else {}
    archs = [load_arch(args.arch[0], overrides=args.set_a), load_arch(args.arch[1], overrides=args.set_b)]
    if args.weights is not None:  # each template's datapath for the pair, as `archsim run --weights` does
        for i, arch in enumerate(archs):
            try:
                archs[i] = _with_precision(arch, args.weights, args.activations)
            except SpecError:
                if not args.allow_mixed_precision:
                    raise
    graph = workloads.load(args.workload, **options)
    precisions = [compute_precision(a, graph) for a in archs]
    mixed = precisions[0] != precisions[1]
    if mixed and not args.allow_mixed_precision:
        raise ArchsimError(
            f"compare: {archs[0].name} computes in {'/'.join(precisions[0])} (weights/activations) but "
            f"{archs[1].name} in {'/'.join(precisions[1])}: not like for like; pass --weights/--activations "
            f"to match them or --allow-mixed-precision")
    runs = []
    for arch, prec in zip(archs, precisions):
        progress = LayerProgress(f"{arch.name} x {getattr(graph, 'name', '') or args.workload}",
                                 quiet=getattr(args, "quiet", False))
        try:
            r = simulate(graph, arch, detailed=args.detailed, progress=progress, **mapper)
        finally:
            progress.close()
        runs.append({"arch": arch.name, "template": arch.template, "precision": {"weights": prec[0], "activations":
                                                                               prec[1]}, "cycles": r.total_cycles,
                     **figures(r)})
    ratios = {key: _ratio(runs[0][key], runs[1][key]) for key, *_ in ROWS}
    return {"workload": str(getattr(graph, "name", args.workload)), "options": {**options, **mapper}, "a": runs[0],
            "b": runs[1], "ratios_a_over_b": ratios, "mixed_precision": mixed}


def format_table(cmp: dict[str, Any]) -> str:
    a, b = cmp["a"], cmp["b"]
    per = "token" if a["tokens"] else "inference"
    lines = []
    if cmp["mixed_precision"]:
        lines.append(f"WARNING: MIXED PRECISION -- {a['arch']} computes in {a['precision']['weights']}/"
                     f"{a['precision']['activations']}, {b['arch']} in {b['precision']['weights']}/"
                     f"{b['precision']['activations']}: NOT A LIKE-FOR-LIKE COMPARISON")
    wa, wb = max(len(a["arch"]), 12), max(len(b["arch"]), 12)
    lines.append(f"{cmp['workload']}, {', '.join(f'{k}={v}' for k, v in cmp['options'].items()) or 'defaults'}")
    lines.append(f"{'':<24} {a['arch']:>{wa}} {b['arch']:>{wb}} {'A / B':>9}")
    for key, label, scale, unit in ROWS:
        label = label.replace("token", per)
        r = cmp["ratios_a_over_b"][key]
        lines.append(f"{(label + (f' ({unit})' if unit else '')):<24} {a[key] * scale:>{wa}.4g} {b[key] * scale:>{wb}.4g} "
                     f"{(f'{r:.3g}x' if r is not None else '-'):>9}")
    lines.append(f"{'cycles (per run)':<24} {a['cycles']:>{wa},} {b['cycles']:>{wb},}")
    lines.append(f"{'precision (w/a)':<24} {a['precision']['weights'] + '/' + a['precision']['activations']:>{wa}} "
                 f"{b['precision']['weights'] + '/' + b['precision']['activations']:>{wb}}")
    sp = cmp["ratios_a_over_b"]["tokens_per_s"]
    en = cmp["ratios_a_over_b"]["energy_per_token_j"]
    if sp and en:
        lines.append(f"{a['arch']} vs {b['arch']}: {sp:.3g}x the throughput, {1 / en:.3g}x the energy efficiency")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from archsim.outputs import check_owned_file, write_owned_json

    if args.json is not None:
        check_owned_file(args.json)  # never over a user's file; before the runs, not after
    cmp = compare(args)
    print(format_table(cmp))
    if args.json is not None:
        write_owned_json(args.json, cmp, "compare")
    if cmp["mixed_precision"]:
        print("WARNING: mixed-precision comparison (--allow-mixed-precision)", file=sys.stderr)
    return 0
