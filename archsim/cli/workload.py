"""``archsim workload``: inspect workloads.

``archsim workload list`` prints the zoo's model names;
``archsim workload show NAME|FILE [--batch N --seq N --phase prefill|decode
--kv-len N --image-size N]`` prints one row per op (name, kind, input and
output shapes, MACs, parameters, bytes) and the totals.
"""
from __future__ import annotations

import argparse

import workloads
from workloads.ops import Op


def register(subparsers) -> None:
    parser = subparsers.add_parser("workload", help="list the model zoo or show a workload's layers",
                                   description="List the model zoo or show a workload's layers.")
    sub = parser.add_subparsers(dest="workload_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 0)[1])

    show = sub.add_parser("show", help="per-layer table and totals of a zoo model or a workload file")
    show.add_argument("source", metavar="NAME|FILE", help="zoo name or a .onnx / .yaml / .csv file")
    show.add_argument("--batch", type=int)
    show.add_argument("--seq", type=int, dest="seq_len", help="sequence length (prefill) ")
    show.add_argument("--phase", choices=["prefill", "decode"])
    show.add_argument("--kv-len", type=int, dest="kv_len", help="KV-cache length (decode)")
    show.add_argument("--image-size", type=int, dest="image_size")
    from archsim.cli.run import add_onnx_args

    add_onnx_args(show)
    show.add_argument("--check", action="store_true",
                      help="ONNX: count the MACs a second, independent way (one onnxruntime run with every "
                      "intermediate shape exposed) and print both counts; exit 1 if they differ by more than 1%%")
    show.set_defaults(func=_show)

    lst = sub.add_parser("list", help="names of the zoo models")
    lst.set_defaults(func=_list)


def _list(args: argparse.Namespace) -> int:
    for name in workloads.zoo_names():
        print(name)
    return 0


def _shapes(shapes) -> str:
    return " ".join("x".join(map(str, s)) for s in shapes)


def layer_rows(graph: workloads.Graph) -> list[list[str]]:
    rows = []
    for op in graph.ops():
        b = op.operand_bytes()
        rows.append([op.name, _kind(op), _shapes(op.input_shapes()), _shapes(op.output_shapes()),
                     f"{op.macs():,}", f"{op.params():,}", f"{b['input'] + b['weight'] + b['output']:,}"])
    return rows


def _kind(op: Op) -> str:
    fn = getattr(op, "fn", None)
    return f"{op.kind}:{fn}" if fn else op.kind


def _show(args: argparse.Namespace) -> int:
    from archsim.cli.run import onnx_options

    params = {k: getattr(args, k) for k in ("batch", "seq_len", "phase", "kv_len", "image_size")
              if getattr(args, k) is not None}
    params.update(onnx_options(args))
    graph = workloads.load(args.source, **params)
    header = ["name", "op", "input shapes", "output shape", "MACs", "params", "bytes"]
    rows = layer_rows(graph)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {4, 5, 6}
    for row in [header, *rows]:
        print("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    total_bytes = sum(sum(op.operand_bytes().values()) for op in graph.ops())
    print(f"total: {len(graph)} ops, {graph.total_macs():,} MACs, {graph.total_params():,} params "
          f"(shared weights counted once), {total_bytes:,} operand bytes")
    report = getattr(graph, "import_report", None)
    if report:
        from archsim.report.writers import coverage_line

        print(f"import: {coverage_line(report)}")
    if getattr(args, "check", False):
        return _check(args.source, graph)
    return 0


#: largest relative difference --check accepts between archsim's MACs and the independent count
CHECK_REL_TOL = 0.01


def _check(source: str, graph) -> int:
    """Print archsim's MACs beside an independent count (:func:`workloads.onnx_reference.count_macs`)."""
    from archsim.errors import WorkloadError

    report = getattr(graph, "import_report", None)
    if report is None:
        raise WorkloadError(f"--check: counts the MACs of an ONNX model a second way; {source} is not a .onnx file")
    try:
        from workloads.onnx_reference import count_macs
    except ImportError:
        raise WorkloadError("--check: needs workloads.onnx_reference (the independent counter)") from None
    shapes = {k: tuple(v) for k, v in report.get("input_shapes", {}).items() if k not in report.get("input_values", {})}
    try:
        ref = count_macs(source, input_shapes=shapes, input_values=report.get("input_values") or None)
    except Exception as err:  # onnxruntime and the counter raise their own types
        text = (str(err).splitlines() or [""])[0][:200]
        raise WorkloadError(f"--check: the independent count failed on {source}: {type(err).__name__}: {text}") from None
    ours, theirs = graph.total_macs(), ref.total_macs
    diff = abs(ours - theirs) / theirs if theirs else (0.0 if ours == 0 else float("inf"))
    print(f"check: archsim {ours:,} MACs; independent count (onnxruntime shapes) {theirs:,} MACs; "
          f"difference {100 * diff:.2f}%")
    unknown = getattr(ref, "unknown_ops", {})
    if unknown:
        print("check: the independent count does not know " + ", ".join(f"{t} x{n}" for t, n in unknown.items()))
    if diff > CHECK_REL_TOL:
        def by_op(table: dict) -> str:
            return ", ".join(f"{t} {m:,}" for t, m in sorted(table.items(), key=lambda kv: -kv[1])) or "none"

        print(f"check: FAILED: the counts differ by more than {100 * CHECK_REL_TOL:g}% (by op: archsim "
              f"{by_op(report.get('macs_by_op', {}))}; independent count {by_op(ref.macs_by_op)})")
        return 1
    return 0
