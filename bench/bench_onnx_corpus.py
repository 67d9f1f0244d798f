"""Issue 21's corpus table: archsim's ONNX import of every corpus model vs the independent count.

For each file in tests/data/onnx/MANIFEST.json, imports it with the
manifest's bindings (``workloads.load(path, input_shapes=..., input_values=...)``)
and prints: model, exporter, opset, size, nodes (in the file), lowered,
substituted, archsim MACs, the independent MACs (workloads/onnx_reference.py,
recorded by make_corpus.py), their ratio, and the import time (best of
``--reps`` runs, wall clock). A model the importer refuses shows its error.
``--unknown-ops vector`` imports as that flag does; ``--recount`` re-runs the
reference count instead of trusting the manifest.

    python bench/bench_onnx_corpus.py [--only NAME,...] [--reps 1] [--markdown]

``ARCHSIM_ONNX_CORPUS=DIR`` reads another folder made by ``make_corpus.py --out DIR``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("ARCHSIM_ONNX_CORPUS") or ROOT / "tests" / "data" / "onnx")


def _row(name: str, meta: dict, args) -> dict:
    import workloads

    shapes = {k: tuple(v) for k, v in meta["inputs"].items()}
    values = {k: v for k, v in meta.get("values", {}).items() if len(shapes.get(k, ())) <= 1}
    ref = meta["reference_macs"]
    if args.recount:
        from workloads.onnx_reference import count_macs

        ref = count_macs(CORPUS / name, shapes, meta.get("values") or None).total_macs
    row = dict(model=name.removesuffix(".onnx"), exporter=meta.get("exporter", "?"), opset=meta.get("opset"),
               kb=meta["bytes"] / 1e3, ref=ref)
    best = None
    for _ in range(args.reps):
        t0 = time.perf_counter()
        try:
            graph = workloads.load(str(CORPUS / name), input_shapes=shapes, input_values=values or None,
                                   unknown_ops=args.unknown_ops)
        except Exception as err:  # the table shows what the user would see
            row["error"] = f"{type(err).__name__}: {str(err).replace(str(CORPUS) + '/', '')}"
            return row
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    rep = getattr(graph, "import_report", None) or {}
    row.update(nodes=rep.get("nodes_in_file", rep.get("nodes")), lowered=rep.get("lowered"),
               substituted=sum(s["count"] for s in rep.get("substituted", [])), macs=graph.total_macs(), s=best)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated model names (file stems)")
    ap.add_argument("--reps", type=int, default=1, help="imports per model; the best time is shown")
    ap.add_argument("--unknown-ops", default="error", choices=["error", "vector"])
    ap.add_argument("--recount", action="store_true", help="re-run the independent count")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    manifest = json.loads((CORPUS / "MANIFEST.json").read_text())
    only = {x.removesuffix(".onnx") for x in args.only.split(",") if x}
    rows = [_row(n, m, args) for n, m in manifest["files"].items() if not only or n.removesuffix(".onnx") in only]
    head = ["model", "exporter", "opset", "kB", "nodes", "lowered", "subst", "archsim MACs", "independent MACs",
            "ratio", "import s"]
    lines = []
    ok = 0
    for r in rows:
        if "error" in r:
            cells = [r["model"], r["exporter"], str(r["opset"]), f"{r['kb']:.0f}", "-", "-", "-", "FAILED",
                     f"{r['ref']:,}", "-", "-"]
        else:
            ratio = r["macs"] / r["ref"] if r["ref"] else float("nan")
            ok += abs(ratio - 1) <= 0.01 and r["substituted"] == 0
            cells = [r["model"], r["exporter"], str(r["opset"]), f"{r['kb']:.0f}", str(r["nodes"]),
                     str(r["lowered"]), str(r["substituted"]), f"{r['macs']:,}", f"{r['ref']:,}", f"{ratio:.4f}",
                     f"{r['s']:.2f}"]
        lines.append(cells)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for c in lines:
            print("| " + " | ".join(c) + " |")
    else:
        widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)] if lines else []
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for c in lines:
            print("  ".join(x.ljust(w) for x, w in zip(c, widths)))
    for r in rows:
        if "error" in r:
            print(f"  {r['model']}: {r['error'][:240]}")
    print(f"{ok} of {len(rows)} models within 1% of the independent count with nothing substituted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
