"""Sweep outputs: results.csv, pareto.csv, 2-D projections of the front (PNG), a summary table."""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from archsim.dse._pareto import pareto_front
from archsim.dse._spec import SweepSpec
from archsim.outputs import OutputDir

_BASE_COLUMNS = ("index", "workload")
_TAIL_COLUMNS = ("feasible", "on_front", "error", "elapsed_s", "key")

#: the 2-D projections plotted per workload: (x metric, y metric, file suffix)
PROJECTIONS = (
    ("latency_s", "energy_pj", "latency_vs_energy"),
    ("latency_s", "area_mm2", "latency_vs_area"),
    ("energy_pj", "area_mm2", "energy_vs_area"),
)
_LABELS = {
    "latency_s": ("latency (ms)", 1e3),
    "energy_pj": ("energy (uJ)", 1e-6),
    "area_mm2": ("area (mm2)", 1.0),
    "cycles": ("cycles", 1.0),
    "edp_pj_s": ("EDP (pJ s)", 1.0),
    "utilization": ("utilization", 1.0),
}


def front_by_workload(rows: list[dict], spec: SweepSpec) -> dict[str, list[dict]]:
    """Pareto-optimal feasible rows per workload, under the sweep's objectives."""
    fronts: dict[str, list[dict]] = {}
    senses = [o.sense for o in spec.objectives]
    for label in _workload_order(rows):
        candidates = [r for r in rows if r["workload"] == label and r["status"] == "ok" and r["feasible"]]
        points = [[_number(r.get(o.metric)) for o in spec.objectives] for r in candidates]
        fronts[label] = [candidates[i] for i in pareto_front(points, senses)]
    return fronts


def _number(value: Any) -> float:
    if value is None or value == "":
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _workload_order(rows: list[dict]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        seen.setdefault(r["workload"], None)
    return list(seen)


def columns(spec: SweepSpec, axis_keys: tuple[str, ...]) -> list[str]:
    return list(_BASE_COLUMNS) + list(axis_keys) + ["status"] + list(spec.metrics) + ["area_unpriced"] + list(_TAIL_COLUMNS)


def unpriced_cell(unpriced: tuple[tuple[str, str], ...]) -> str:
    """The ``area_unpriced`` cell of a point: the parameters its area does not price, ``;``-separated
    (empty when the area prices them all); the summary says what is counted instead."""
    return ";".join(name for name, _ in unpriced)


def unpriced_notes(points: list[Any]) -> list[str]:
    """One line per parameter the area of some points does not price: how many points, and what the
    area counts instead (``AreaInputs.unpriced``); none when every point's area is priced."""
    counts: dict[tuple[str, str], int] = {}
    for point in points:
        for item in point.area_unpriced:
            counts[item] = counts.get(item, 0) + 1
    return [f"area_mm2 of {n} of {len(points)} points does not price {name} {text}"
            for (name, text), n in sorted(counts.items())]


def write_csv(out: "OutputDir", name: str, rows: list[dict], cols: list[str]) -> Path:
    """Write ``name`` in the sweep's folder atomically (write, then rename)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in cols})
    return out.write(name, buf.getvalue())


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return value


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "workload"


def write_plots(out: "OutputDir", rows: list[dict], fronts: dict[str, list[dict]]) -> list[Path]:
    """Scatter plots of every ok point with the front highlighted, one PNG per workload and projection."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for label, front in fronts.items():
        ok = [r for r in rows if r["workload"] == label and r["status"] == "ok"]
        if not ok:
            continue
        front_keys = {r["key"] for r in front}
        for x_metric, y_metric, suffix in PROJECTIONS:
            pts = [(r, _number(r.get(x_metric)), _number(r.get(y_metric))) for r in ok]
            pts = [(r, x, y) for r, x, y in pts if math.isfinite(x) and math.isfinite(y)]
            if not pts:
                continue
            (x_label, x_scale), (y_label, y_scale) = _LABELS[x_metric], _LABELS[y_metric]
            fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
            groups = (
                ("infeasible", "#d0d0d0", "x", [(x, y) for r, x, y in pts if not r["feasible"]]),
                ("feasible", "#7f9fbf", "o", [(x, y) for r, x, y in pts if r["feasible"] and r["key"] not in front_keys]),
                ("Pareto front", "#d62728", "*", [(x, y) for r, x, y in pts if r["key"] in front_keys]),
            )
            for name, color, marker, xy in groups:
                if xy:
                    ax.scatter([x * x_scale for x, _ in xy], [y * y_scale for _, y in xy], c=color, marker=marker,
                               s=70 if marker == "*" else 22, label=f"{name} ({len(xy)})", zorder=3 if marker == "*" else 2)
            for metric, setter in ((x_metric, ax.set_xscale), (y_metric, ax.set_yscale)):
                values = [v for _, a, b in pts for v in ((a,) if metric == x_metric else (b,)) if v > 0]
                if values and max(values) / min(values) > 20:
                    setter("log")
            ax.set_xlabel(x_label)
            ax.set_ylabel(y_label)
            ax.set_title(f"{label}: {y_label.split(' (')[0]} vs {x_label.split(' (')[0]} (front over all objectives)", fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            name = f"plots/{_slug(label)}_{suffix}.png"
            with out.atomic(name) as tmp:
                fig.savefig(tmp, format="png")
            plt.close(fig)
            written.append(out.path / name)
    return written


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def metric_text(metric: str, value: float) -> str:
    """A metric's value with its unit (the column name carries it: ``energy_pj``, ``latency_s`` ...)."""
    from archsim import fmt

    if metric == "energy_pj":
        return fmt.energy_pj(value)
    if metric == "latency_s":
        return fmt.seconds(value)
    if metric == "edp_pj_s":
        return f"{value * 1e-12:.4g} J·s"
    if metric == "area_mm2":
        return f"{value:.4g} mm²"
    if metric == "utilization":
        return fmt.percent(value)
    if metric == "cycles" or metric.startswith("synth_"):
        return fmt.count(value)
    return _fmt(value)


def summary_table(spec: SweepSpec, rows: list[dict], fronts: dict[str, list[dict]], axis_keys: tuple[str, ...],
                  notes: list[str] = ()) -> str:
    """Best point per objective and the front size, per workload; ``notes`` (what the area does not
    price, :func:`unpriced_notes`) under the first line, and a best area that is unpriced is marked."""
    lines = []
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    lines.append(f"sweep {spec.name}: {len(rows)} points ({parts})")
    lines.extend(notes)
    for label, front in fronts.items():
        ok = [r for r in rows if r["workload"] == label and r["status"] == "ok"]
        feasible = [r for r in ok if r["feasible"]]
        lines.append("")
        lines.append(f"{label}: {len(ok)} ok, {len(feasible)} feasible, Pareto front {len(front)} points")
        if not feasible:
            continue
        table = [("objective", "best", "point")]
        for objective in spec.objectives:
            values = [(r, _number(r.get(objective.metric))) for r in feasible]
            values = [(r, v) for r, v in values if math.isfinite(v)]
            if not values:
                continue
            pick = min if objective.sense == "min" else max
            row, value = pick(values, key=lambda rv: (rv[1], rv[0]["index"]))
            config = " ".join(f"{k}={row.get(k)}" for k in axis_keys)
            if objective.metric == "area_mm2" and row.get("area_unpriced"):
                config += f" (area does not price {row['area_unpriced']})"
            table.append((f"{objective.written or objective.metric} ({objective.sense})",
                          metric_text(objective.metric, value), config))
        widths = [max(len(t[i]) for t in table) for i in range(3)]
        for i, t in enumerate(table):
            lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(t, widths)).rstrip())
            if i == 0:
                lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)
