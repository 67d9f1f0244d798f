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
``--allow-mixed-precision``, and then the table says so in capitals. An integer datapath that
sign-extends the graph's integer codes (ternary weights into int8 multipliers) computes the same
values from the same stored data: that is like for like, and the table says "ternary/int8 as
int8/int8".

Normalization (stated on every line of the table):

- ``--iso macs``: B is rebuilt with A's peak MACs per second (A's peak MACs/cycle at the layer's
  precision x A's clock / B's clock);
- ``--iso area``: B is rebuilt with the largest peak whose area (``archsim.area``, the area
  model) is at most A's;
- ``--iso bandwidth``: B's DRAM bandwidth (bytes/s) is set to A's;
- ``--tune``: before comparing, each design is searched over its shapes and mapping options at
  its peak (rows x cols at equal MACs, dataflow, ...; the template's ``Params.reshapes`` hook,
  :func:`archsim.templates.base.reshapes`) and runs in its best: the least energy among the
  shapes within 1 % of the fastest (tokens or inferences per second); the table reports the shape
  picked. Best against best.

Without ``--tune``, ``--iso macs/area`` take the template's shape closest to B's own.
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np

from archsim.cli._progress import LayerProgress, add_quiet
from archsim.cli.run import add_fusion_arg, add_precision_args, add_workload_args, workload_options
from archsim.errors import ArchsimError

ISO_MODES = ("macs", "area", "bandwidth")
#: ``--tune`` picks the least energy among the shapes at most this fraction slower than the fastest
TUNE_SPEED_SLACK = 0.01

ROWS = (  # key, label, unit scale, unit
    ("latency_per_token_s", "latency per token", 1e3, "ms"),
    ("tokens_per_s", "tokens/s", 1.0, ""),
    ("energy_per_token_j", "energy per token", 1e3, "mJ"),
    ("utilization", "utilization", 100.0, "%"),
    ("peak_macs_per_s", "peak MACs/s", 1e-9, "G"),
    ("dram_bytes_per_s", "DRAM bandwidth", 1e-9, "GB/s"),
    ("area_mm2", "area", 1.0, "mm2"),
    ("tokens_per_s_per_mm2", "tokens/s per mm2", 1.0, ""),
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
    p.add_argument("--iso", choices=ISO_MODES, metavar="macs|area|bandwidth",
                   help="rebuild B at A's peak MACs/s, area (area model) or DRAM bandwidth before comparing")
    p.add_argument("--tune", action="store_true",
                   help="search each design's shapes and mapping options at its peak first (best against best)")
    p.add_argument("--detailed", action="store_true", help="time tiles with the detailed models")
    p.add_argument("--allow-mixed-precision", action="store_true",
                   help="compare even if the two archs compute in different precisions (stated loudly)")
    p.add_argument("--json", metavar="FILE", help="also write the comparison as JSON to FILE")
    add_quiet(p)
    p.set_defaults(func=run)


def graph_formats(graph) -> tuple[str, str]:
    """(weights, activations) formats of ``graph``'s first matmul / conv / attention (stored formats)."""
    for op in graph.ops():
        if op.kind in ("matmul", "conv2d", "attention"):
            weights = str(op.weight_precision) if op.params() else str(op.act_precision)
            return weights, str(op.act_precision)
    return "none", "none"


def compute_precision(arch, graph) -> tuple[str, str]:
    """(weights, activations) format ``arch`` computes ``graph``'s matmuls in: the graph's
    formats as the template's datapath takes them (its model's ``compute_formats``)."""
    from archsim.templates.base import compute_formats

    weights, activations = graph_formats(graph)
    if weights == "none":
        return weights, activations
    return compute_formats(arch.model(), weights, activations)


def widens_exactly(narrow: str, wide: str) -> bool:
    """True if ``wide`` is an integer format holding every value of integer format ``narrow``: an
    integer datapath sign-extending the codes (a dequantize-then-MAC array fed ternary weights)
    computes the same values from the same stored data. A change of kind (int8 data computed in
    bf16) is not a widening: such a datapath stores and moves another format."""
    from archsim.numerics import get_format

    if narrow == wide:
        return True
    try:
        n, w = get_format(narrow), get_format(wide)
    except Exception:  # noqa: BLE001 - an unknown name is not an exact widening
        return False
    if n.kind != "int" or w.kind != "int" or n.bits > 16:
        return False
    values = n._finite_values()
    return bool(np.array_equal(w.round_to(values), values))


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


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if (a is not None and b) else None


def _peak_macs_per_cycle(arch, graph) -> float:
    return float(arch.model().peak_macs_per_cycle(compute_precision(arch, graph)[0]))


def _dram_bytes_per_s(arch) -> float:
    return float(arch.dram.bytes_per_cycle) * arch.clock_mhz * 1e6


def _area_mm2(arch) -> float | None:
    from archsim.area import area_mm2

    try:
        return float(area_mm2(arch))
    except Exception:  # noqa: BLE001 - a design without an area model (a GPU roofline): no area row
        return None


def _area_unpriced(arch) -> dict[str, str]:
    """Parameters the area model does not price for ``arch`` (said next to its area)."""
    from archsim.area import area_unpriced

    try:
        return area_unpriced(arch)
    except Exception:  # noqa: BLE001 - as _area_mm2: no area model, no area row
        return {}


def _design_key(arch) -> str:
    d = arch.to_dict()
    d.pop("name", None)
    d.pop("source", None)
    return repr(d)


def at_peak(arch, graph, macs_per_cycle: float, why: str) -> list[tuple[dict, Any]]:
    """``[(overrides, arch)]``: ``arch`` rebuilt with exactly ``macs_per_cycle`` peak MACs/cycle in each
    shape / mapping option its template offers (:func:`archsim.templates.base.reshapes`), the one
    closest to ``arch`` first, duplicates dropped. Refuses (one line) a design that cannot be rebuilt."""
    from archsim.errors import SpecError
    from archsim.spec import load_arch
    from archsim.templates.base import reshapes

    out, seen, refused = [], set(), []
    for overrides in reshapes(arch.params, macs_per_cycle):
        try:
            variant = load_arch(arch, overrides)
        except SpecError as err:  # e.g. a shape whose tile does not fit the buffers
            refused.append(str(err))
            continue
        if abs(_peak_macs_per_cycle(variant, graph) - macs_per_cycle) > 1e-9 * max(1.0, macs_per_cycle):
            continue
        key = _design_key(variant)
        if key not in seen:
            seen.add(key)
            out.append((overrides, variant))
    if not out:
        reason = (f"; e.g. {refused[0]}" if refused else
                  ": its template has no reshape hook (Params.reshapes) or no shape with exactly that peak")
        raise ArchsimError(f"compare {why}: {arch.name} (template {arch.template}) cannot be built with "
                           f"{macs_per_cycle:g} MACs/cycle{reason}")
    return out


def _own_shapes(arch, graph) -> list[tuple[dict | None, Any]]:
    """``--tune``'s candidates for ``arch`` at its own peak; ``[(None, arch)]`` (as given, not searched)
    for a template without reshapes (a GPU roofline, a PIM)."""
    try:
        return at_peak(arch, graph, _peak_macs_per_cycle(arch, graph), "--tune")
    except ArchsimError:
        return [(None, arch)]


def _iso_area_peak(a, b, graph) -> float:
    """The largest peak MACs/cycle at which B's area (area model) is at most A's (bisection; peaks the
    template cannot build are skipped downwards)."""
    target = _area_mm2(a)
    if target is None or _area_mm2(b) is None:
        raise ArchsimError(f"compare --iso area: no area model for {a.name if target is None else b.name}")

    def area_at(p: int) -> float | None:
        for q in range(p, max(0, p - 64), -1):
            try:
                return _area_mm2(at_peak(b, graph, q, "--iso area")[0][1])
            except ArchsimError:
                continue
        return None

    lo, hi = 0, max(1, int(_peak_macs_per_cycle(b, graph)))
    while (area := area_at(hi)) is not None and area <= target:
        lo, hi = hi, hi * 2
        if hi > 1 << 24:
            raise ArchsimError(f"compare --iso area: {b.name}'s area does not grow with its MACs")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        area = area_at(mid)
        if area is not None and area <= target:
            lo = mid
        else:
            hi = mid
    for q in range(lo, max(0, lo - 64), -1):
        try:
            at_peak(b, graph, q, "--iso area")
            return float(q)
        except ArchsimError:
            continue
    raise ArchsimError(f"compare --iso area: {b.name} cannot be built small enough to fit {a.name}'s "
                       f"{target:.4g} mm2")


def _simulate(graph, arch, args, mapper, label: str):
    from archsim.simulation import simulate

    progress = LayerProgress(label, quiet=getattr(args, "quiet", False))
    try:
        return simulate(graph, arch, detailed=args.detailed, progress=progress, **mapper)
    finally:
        progress.close()


def tune(graph, candidates: list[tuple[dict, Any]], args, mapper) -> tuple[dict, Any, list[dict]]:
    """The best of ``candidates`` on ``graph``: the least energy per token (inference) among those within
    :data:`TUNE_SPEED_SLACK` of the fastest (a shape 0.1 % faster at 3x the energy is not the best):
    ``(overrides, arch, [every candidate's overrides and figures])``. A candidate the mapper
    refuses is listed with its reason; if every one is refused, the first one's error is raised."""
    from archsim.errors import MappingError
    from archsim.simulation import simulate

    tried, done, first_err = [], [], None
    for overrides, arch in candidates:
        try:
            fig = figures(simulate(graph, arch, detailed=args.detailed, **mapper))
        except MappingError as err:
            first_err = first_err or err
            tried.append({"shape": overrides, "refused": str(err)})
            continue
        tried.append({"shape": overrides, "tokens_per_s": fig["tokens_per_s"],
                      "energy_per_token_j": fig["energy_per_token_j"]})
        done.append((fig, overrides, arch))
    if not done:
        raise first_err
    fastest = max(f["tokens_per_s"] for f, _, _ in done)
    near = [d for d in done if d[0]["tokens_per_s"] >= (1 - TUNE_SPEED_SLACK) * fastest]
    _fig, overrides, arch = min(near, key=lambda d: (d[0]["energy_per_token_j"], -d[0]["tokens_per_s"]))
    return overrides, arch, tried


def _normalization(args, a, b, graph) -> str:
    parts = []
    if args.iso == "macs":
        parts.append(f"iso-MACs: B at A's peak {_peak_macs_per_cycle(a, graph) * a.clock_mhz * 1e-3:.4g} GMAC/s")
    elif args.iso == "area":
        parts.append(f"iso-area: B at most A's {_area_mm2(a):.4g} mm2 (area model)")
    elif args.iso == "bandwidth":
        parts.append(f"iso-bandwidth: B's DRAM at A's {_dram_bytes_per_s(a) * 1e-9:.4g} GB/s")
    else:
        parts.append("as given (no normalization)")
    parts.append("both tuned (shape + mapping searched: least energy within 1 % of the fastest)" if args.tune
                 else "shapes as given")
    return "; ".join(parts)


def _tag(args) -> str:
    """The short normalization tag printed at the end of every line."""
    iso = {"macs": "iso-MACs", "area": "iso-area", "bandwidth": "iso-BW"}.get(args.iso, "as given")
    return f"[{iso}{', tuned' if args.tune else ''}]"


def _shape_text(overrides: dict | None) -> str:
    if overrides is None:
        return "as given (its template offers no reshapes: not searched)"
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()) or "as given"


def compare(args: argparse.Namespace) -> dict[str, Any]:
    import workloads
    from archsim.errors import SpecError
    from archsim.simulation import _with_precision
    from archsim.spec import load_arch

    if len(args.arch) != 2:
        raise ArchsimError(f"compare: expected --arch twice (A and B), got {len(args.arch)}")
    if (args.weights is None) != (args.activations is None):
        raise SpecError("precision: give both weights and activations (e.g. --weights bf16 --activations bf16)")
    iso, do_tune = getattr(args, "iso", None), getattr(args, "tune", False)
    args.iso, args.tune = iso, do_tune
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
    transform = options.pop("transform", None)
    graph = workloads.load(args.workload, **options)
    if transform is not None:
        from workloads.transforms import apply_spec

        graph = apply_spec(graph, transform)
    stored = graph_formats(graph)
    precisions = [compute_precision(a, graph) for a in archs]
    exact = [all(widens_exactly(g, c) for g, c in zip(stored, prec) if g != "none") for prec in precisions]
    mixed = precisions[0] != precisions[1] and not all(exact)
    if mixed and not args.allow_mixed_precision:
        raise ArchsimError(
            f"compare: {archs[0].name} computes in {'/'.join(precisions[0])} (weights/activations) but "
            f"{archs[1].name} in {'/'.join(precisions[1])}: not like for like; pass --weights/--activations "
            f"to match them or --allow-mixed-precision")
    a, b = archs
    shapes: list[dict | None] = [None, None]
    searched: list[list[dict]] = [[], []]
    if iso == "bandwidth":
        if not (math.isfinite(_dram_bytes_per_s(a)) and math.isfinite(_dram_bytes_per_s(b))):
            raise ArchsimError("compare --iso bandwidth: both archs need a finite DRAM bandwidth")
        b = load_arch(b, {"dram.bytes_per_cycle": _dram_bytes_per_s(a) / (b.clock_mhz * 1e6)})
    if do_tune:  # A first: --iso area takes A's tuned area
        shapes[0], a, searched[0] = tune(graph, _own_shapes(a, graph), args, mapper)
    if iso in ("macs", "area"):
        target = (_peak_macs_per_cycle(a, graph) * a.clock_mhz / b.clock_mhz if iso == "macs"
                  else _iso_area_peak(a, b, graph))
        candidates = at_peak(b, graph, target, f"--iso {iso}")
        if do_tune:
            shapes[1], b, searched[1] = tune(graph, candidates, args, mapper)
        else:
            shapes[1], b = candidates[0]
    elif do_tune:
        shapes[1], b, searched[1] = tune(graph, _own_shapes(b, graph), args, mapper)
    runs = []
    for i, (arch, prec) in enumerate(zip((a, b), precisions)):
        r = _simulate(graph, arch, args, mapper, f"{arch.name} x {getattr(graph, 'name', '') or args.workload}")
        fig = figures(r)
        area = _area_mm2(arch)
        runs.append({"arch": arch.name, "template": arch.template,
                     "precision": {"weights": prec[0], "activations": prec[1]},
                     "stored_precision": {"weights": stored[0], "activations": stored[1]},
                     "widened_exactly": exact[i] and tuple(prec) != tuple(stored),
                     "cycles": r.total_cycles, **fig,
                     "peak_macs_per_cycle": _peak_macs_per_cycle(arch, graph),
                     "peak_macs_per_s": _peak_macs_per_cycle(arch, graph) * arch.clock_mhz * 1e6,
                     "dram_bytes_per_s": _dram_bytes_per_s(arch), "area_mm2": area,
                     "area_unpriced": _area_unpriced(arch) if area is not None else {},
                     "tokens_per_s_per_mm2": fig["tokens_per_s"] / area if area else None,
                     "shape": shapes[i], "params": {k: v for k, v in arch.to_dict()["params"].items()},
                     "options": dict(arch.options), "tuned_over": searched[i]})
    ratios = {key: _ratio(runs[0][key], runs[1][key]) for key, *_ in ROWS}
    return {"workload": str(getattr(graph, "name", args.workload)), "options": {**options, **mapper}, "a": runs[0],
            "b": runs[1], "ratios_a_over_b": ratios, "mixed_precision": mixed, "iso": iso, "tuned": do_tune,
            "normalization": _normalization(args, a, b, graph), "tag": _tag(args)}


def format_table(cmp: dict[str, Any]) -> str:
    """The comparison as text; every line ends with the normalization tag (``[iso-MACs, tuned]`` ...)."""
    a, b = cmp["a"], cmp["b"]
    tag = cmp.get("tag", "[as given]")
    per = "token" if a["tokens"] else "inference"
    lines = []
    if cmp["mixed_precision"]:
        lines.append(f"WARNING: MIXED PRECISION -- {a['arch']} computes in {a['precision']['weights']}/"
                     f"{a['precision']['activations']}, {b['arch']} in {b['precision']['weights']}/"
                     f"{b['precision']['activations']}: NOT A LIKE-FOR-LIKE COMPARISON {tag}")
    wa, wb = max(len(a["arch"]), 12), max(len(b["arch"]), 12)
    lines.append(f"{cmp['workload']}, {', '.join(f'{k}={v}' for k, v in cmp['options'].items()) or 'defaults'} {tag}")
    lines.append(f"normalization: {cmp.get('normalization', 'as given (no normalization); shapes as given')} {tag}")
    lines.append(f"{'':<24} {a['arch']:>{wa}} {b['arch']:>{wb}} {'A / B':>9} {tag}")

    def num(v, scale):
        return f"{v * scale:.4g}" if v is not None else "-"

    for key, label, scale, unit in ROWS:
        label = label.replace("token", per)
        r = cmp["ratios_a_over_b"][key]
        lines.append(f"{(label + (f' ({unit})' if unit else '')):<24} {num(a[key], scale):>{wa}} "
                     f"{num(b[key], scale):>{wb}} {(f'{r:.3g}x' if r is not None else '-'):>9} {tag}")
    lines.append(f"{'cycles (per run)':<24} {a['cycles']:>{wa},} {b['cycles']:>{wb},} {tag}")
    for side, run in (("A", a), ("B", b)):
        for name, text in run.get("area_unpriced", {}).items():
            lines.append(f"area {side} ({run['arch']}): {name} {text} {tag}")

    def prec(run):
        text = run["precision"]["weights"] + "/" + run["precision"]["activations"]
        stored = run.get("stored_precision")
        if run.get("widened_exactly") and stored:
            text = f"{stored['weights']}/{stored['activations']} as {text}"
        return text

    lines.append(f"{'precision (w/a)':<24} {prec(a):>{wa}} {prec(b):>{wb}} {tag}")
    if a.get("widened_exactly") or b.get("widened_exactly"):
        lines.append(f"(\"X as Y\": the datapath widens the stored format X exactly into Y: same values) {tag}")
    for side, run in (("A", a), ("B", b)):
        if run.get("shape") is not None or cmp.get("tuned"):
            tried = [t for t in run.get("tuned_over", []) if "tokens_per_s" in t]
            note = f" (best of {len(tried)} tried)" if tried else ""
            lines.append(f"shape {side} ({run['arch']}): {_shape_text(run.get('shape'))}{note} {tag}")
    sp = cmp["ratios_a_over_b"]["tokens_per_s"]
    en = cmp["ratios_a_over_b"]["energy_per_token_j"]
    if sp and en:
        lines.append(f"{a['arch']} vs {b['arch']}: {sp:.3g}x the throughput, {1 / en:.3g}x the energy efficiency {tag}")
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
