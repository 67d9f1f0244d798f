"""Report writers: one function per file, and :func:`write_reports` for a whole run folder.

Files written into ``out_dir``:

- ``report.json`` — :meth:`SimResult.to_dict` plus extras; byte-identical for the
  same inputs (sorted keys, no timestamps, floats rounded to 10 significant digits);
- ``layers.csv`` — one row per layer;
- ``summary.md`` — totals and the most expensive layers;
- ``COMPUTE_REPORT.csv`` — SCALE-Sim's per-layer columns, for diffing against it;
- ``trace.json`` — Chrome / Perfetto trace of the timeline (``ui.perfetto.dev``);
- ``plots/layers.png`` and ``plots/roofline.png`` (matplotlib, Agg backend).

:func:`write_reports` writes into a folder archsim owns (a marker file), refuses a
folder holding the user's own files, and replaces each of its files atomically.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import signal
import threading
from typing import Any, Iterator

from archsim import fmt
from archsim.report.result import SimResult

MAX_TRACE_EVENTS = 200_000
CSV_COLUMNS = [
    "index", "name", "op", "macs", "cycles", "compute_cycles", "stall_cycles", "utilization",
    "compute_utilization", "mapping_efficiency", "energy_pj", "dram_bytes", "sram_bytes",
    "dram_input_bytes", "dram_weight_bytes", "dram_output_bytes",
    "sram_input_bytes", "sram_weight_bytes", "sram_output_bytes",
    "energy_compute_pj", "energy_sram_pj", "energy_dram_pj", "energy_vector_pj",
    "repeat", "tiles", "start_cycle", "mapping", "weight_format", "activation_format", "sqnr_db",
    "dram_residual_bytes", "sram_residual_bytes",  # a fused residual add's operand (0 elsewhere)
]


def _round_floats(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return float(f"{value:.10g}")
    if isinstance(value, dict):
        return {str(k): _round_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round_floats(v) for v in value]
    return value


def report_json_text(result: SimResult) -> str:
    return json.dumps(_round_floats(result.to_dict()), sort_keys=True, indent=1, allow_nan=False) + "\n"


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.10g}"
    return str(x)


def layers_csv_text(result: SimResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for i, l in enumerate(result.layers):
        d, s, e = l.dram_bytes_by_operand, l.sram_bytes_by_operand, l.energy_pj_by_component
        row = [
            i, l.name, l.op, l.macs, l.cycles, l.compute_cycles, l.stall_cycles, l.utilization,
            l.compute_utilization, l.mapping_efficiency, l.energy_pj, l.dram_bytes, l.sram_bytes,
            d.get("input", 0), d.get("weight", 0), d.get("output", 0),
            s.get("input", 0), s.get("weight", 0), s.get("output", 0) + s.get("psum", 0),
            e.get("compute", 0.0), e.get("sram", 0.0), e.get("dram", 0.0), e.get("vector", 0.0),
            l.repeat, l.tiles, l.start_cycle,
            json.dumps(_round_floats(_plain(l.mapping)), sort_keys=True, separators=(",", ":")),
            l.weight_format, l.activation_format, "" if l.sqnr_db is None else l.sqnr_db,
            d.get("residual", 0), s.get("residual", 0),
        ]
        w.writerow([_fmt(x) for x in row])
    return buf.getvalue()


def _plain(v: Any) -> Any:
    from archsim.spec import plain

    return plain(v)


def compute_report_text(result: SimResult) -> str:
    """SCALE-Sim's COMPUTE_REPORT.csv layout (``", "``-separated, trailing comma).

    "Total Cycles" follows SCALE-Sim's convention so that the two files diff
    cleanly: SCALE-Sim reports the index of a layer's last cycle (cycles are
    numbered from 0), one less than the cycle count that report.json and
    layers.csv give.
    """
    lines = ["LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,"]
    for i, l in enumerate(result.layers):
        vals = [i, max(l.cycles - 1, 0), l.stall_cycles, f"{100 * l.utilization:.6g}", f"{100 * l.mapping_efficiency:.6g}",
                f"{100 * l.compute_utilization:.6g}"]
        lines.append(", ".join(str(v) for v in vals) + ",")
    return "\n".join(lines) + "\n"


def coverage_line(report: dict) -> str:
    """One line: 'lowered 412 of 415 nodes; 3 substituted on the vector unit (...); 100.0% of MACs accounted'."""
    dynamic = report["lowered"] + sum(s["count"] for s in report["substituted"])
    static = sum(d["count"] for d in report["dropped_static"])
    parts = [f"lowered {report['lowered']} of {dynamic} compute nodes, {static} static nodes left out"]
    if report["substituted"]:
        listed = ", ".join(f"{s['op']} x{s['count']}" for s in report["substituted"])
        parts.append(f"{sum(s['count'] for s in report['substituted'])} substituted on the vector unit "
                     f"({listed}; their MACs are not counted)")
    frac = report["macs_accounted_fraction"]
    parts.append(f"{100 * frac:.1f}% of MACs accounted" if frac is not None else "MACs of the substituted "
                 "nodes unknown")
    return "; ".join(parts)


#: unit suffixes of extras' names: the value is formatted by it and the label drops it
_UNIT_SUFFIXES = ("_per_s", "_pj", "_bytes", "_s", "_fraction", "_db")
#: labels of extras whose name alone reads poorly
_EXTRA_LABELS = {
    "tokens_per_s": "tokens per second",
    "attention_array2d_mac_utilization": "attention layers' 2D-array utilization",
    "peak_macs_per_cycle": "peak MACs per cycle",
    "output_sqnr_db": "output SQNR",
    "top1_agreement": "top-1 agreement with fp32",
}


def _extra_label(key: str) -> str:
    """An extra's name as a label: its unit suffix dropped (the value carries the unit), words spaced."""
    if key in _EXTRA_LABELS:
        return _EXTRA_LABELS[key]
    for suffix in _UNIT_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
            break
    return key.replace("_", " ")


def _extra(key: str, value) -> str:
    """A template extra by the unit its name carries (``_pj``, ``_bytes``, ``_per_s``, ``_s``,
    ``_fraction`` or ``utilization``); yes/no for a flag, ``label value, ...`` for a group."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{_extra_label(str(k))} {_extra(str(k), v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_extra(key, v) for v in value)
    if not isinstance(value, (int, float)):
        return str(value)
    if key.endswith("_pj"):
        return fmt.energy_pj(value)
    if key.endswith("_bytes"):
        return fmt.nbytes(value)
    if key.endswith("_per_s"):
        return f"{fmt.number(value)} /s"
    if key.endswith("_s"):
        return fmt.seconds(value)
    if key.endswith(("_fraction", "utilization", "agreement")):
        return fmt.percent(value)
    if key.endswith("_db"):
        return f"{value:.1f} dB"
    return fmt.number(value)


def datapath_precision(result: SimResult) -> str | None:
    """The arch's arithmetic precision when its params name one (``precision`` or ``mac_precision``), else None."""
    params = (result.arch or {}).get("params") or {}
    for key in ("precision", "mac_precision"):
        if isinstance(params.get(key), str):
            return params[key]
    return None


def precision_text(result: SimResult) -> str:
    """The workload's (weights/activations) formats, and the datapath's when it computes in another one."""
    pairs = result.precisions
    text = ", ".join(pairs) or "-"
    datapath = datapath_precision(result)
    if datapath and pairs and any(pair != f"{datapath}/{datapath}" for pair in pairs):
        text += f" (the workload's formats; the datapath computes in {datapath})"
    return text


def energy_text(result: SimResult) -> str:
    """The run's energy, one definition: everything the run spends, the template's background
    energy included (PIM's DRAM refresh and standby over the run), with the split stated."""
    background = float(result.extras.get("background_energy_pj", 0.0) or 0.0)
    if not background:
        return fmt.energy_pj(result.energy_pj)
    return (f"{fmt.energy_pj(result.total_energy_pj)} ({fmt.energy_pj(result.energy_pj)} per command + "
            f"{fmt.energy_pj(background)} DRAM background)")


def memory_traffic_text(result: SimResult) -> str:
    """DRAM bytes of the run: the DMA's, plus those a template moves inside
    memory or inside its own kernels (PIM in-bank reads, a roofline GPU's
    kernels: ``internal_bytes``), so a run that moves bytes never says 0 B."""
    internal = sum(sum(l.internal_bytes_by_operand.values()) for l in result.layers)
    if not internal:
        return fmt.nbytes(result.dram_bytes)
    return (f"{fmt.nbytes(result.dram_bytes + internal)} ({fmt.nbytes(result.dram_bytes)} by DMA, "
            f"{fmt.nbytes(internal)} inside memory / kernels)")


def summary_rows(result: SimResult) -> list[tuple[str, str]]:
    """(label, value) rows of the run's totals (the CLI prints the same table)."""
    rows = [
        ("arch", result.arch_name),
        ("workload", result.workload_name),
        ("layers", fmt.count(len(result.layers))),
        ("total cycles", fmt.count(result.total_cycles)),
        ("compute cycles", fmt.count(result.compute_cycles)),
        ("stall cycles", fmt.count(result.stall_cycles)),
        ("latency", f"{fmt.seconds(result.latency_s)} at {result.clock_mhz:g} MHz"),
        ("MACs", fmt.count(result.macs)),
        ("precision (weights/activations)", precision_text(result)),
        ("utilization", fmt.percent(result.utilization)),
        ("energy", energy_text(result)),
        ("DRAM traffic", memory_traffic_text(result)),
        ("SRAM traffic", fmt.nbytes(result.sram_bytes)),
    ]
    if result.imported:
        rows.append(("import", coverage_line(result.imported)))
    offloaded = offloaded_gemms_text(result)
    if offloaded:
        rows.append(("GEMMs off the array", offloaded))
    fused = sum(1 for l in result.layers if l.mapping.get("fused_into"))
    if fused:
        rows.append(("fused element-wise ops", f"{fused} (in the array's output path; --no-fusion to separate)"))
    alloc = result.options.get("allocation") if isinstance(result.options, dict) else None
    if alloc:  # a COSMA allocation (mappers.allocation.apply); greedy runs have none
        rows.append(("scratchpad allocation", allocation_text(alloc)))
        if alloc.get("address_note"):  # reports written before the address ILP have none
            rows.append(("scratchpad addresses", addresses_text(alloc)))
    tokens = result.tokens
    for k, v in sorted(result.extras.items()):
        if k == "background_energy_pj":
            continue  # part of the energy row
        if k == "energy_per_token_pj" and tokens:
            v = result.total_energy_pj / tokens  # of the energy row, whatever the template computed
        if k.endswith("utilization") and isinstance(v, float) and fmt.percent(v) == fmt.percent(result.utilization):
            continue  # the same figure as the utilization row
        rows.append((_extra_label(k), _extra(k, v)))
    return rows


def offloaded_gemms_text(result: SimResult) -> str:
    """One line naming the GEMMs a mapper ran off the template's array (a LUT core runs only the
    weight x activation formats it builds; the rest go to the vector unit), grouped by reason with
    their share of the run's MACs, so a workload whose GEMMs left the array never reads as if they ran
    on it. Empty when every GEMM ran on the array."""
    by_reason: dict[str, list[int]] = {}
    for layer in result.layers:
        parts = layer.mapping.get("gemms") or [layer.mapping]
        # a layer's MACs split over its GEMMs by m*k*n (one GEMM: all of them)
        dims = [q.get("m", 0) * q.get("k", 0) * q.get("n", 0) for q in parts]
        for mp, own in zip(parts, dims):
            if mp.get("unit") != "vector" or not mp.get("reason"):
                continue
            macs = layer.macs if len(parts) == 1 or not sum(dims) else layer.macs * own // sum(dims)
            entry = by_reason.setdefault(mp["reason"], [0, 0])
            entry[0] += 1
            entry[1] += macs
    if not by_reason:
        return ""
    total = result.macs or 1
    return "; ".join(f"{n} GEMM{'s' if n != 1 else ''} ({fmt.percent(macs / total)} of MACs) on the vector unit: {reason}"
                     for reason, (n, macs) in sorted(by_reason.items(), key=lambda kv: -kv[1][1]))


def allocation_text(alloc: dict) -> str:
    """One line: the allocation, the off-chip bytes its plan leaves and the engine measured, the solve time."""
    return (f"{alloc['method']} (plan: {fmt.nbytes(alloc['compulsory_bytes'])} compulsory + "
            f"{fmt.nbytes(alloc['non_compulsory_bytes'])} non-compulsory off-chip, layer by layer "
            f"{fmt.nbytes(alloc['greedy_non_compulsory_bytes'])}; measured non-compulsory "
            f"{fmt.nbytes(alloc['measured_non_compulsory_bytes'])} with the tiles' re-reads; "
            f"{alloc['resident_tensors']} tensors kept in {fmt.nbytes(alloc['plan_capacity_bytes'])} of the "
            f"{alloc['buffer']} buffer, {alloc['reloads']} reloads; solved in {alloc['solve_s']:.2f} s"
            f"{'' if alloc['optimal'] else ', not proven optimal'})")


def addresses_text(alloc: dict) -> str:
    """One line: how the resident tensors got their scratchpad addresses (the address ILP's note,
    :mod:`mappers.allocation.address_ilp`) and the highest address they reach."""
    return (f"{alloc['address_note']}; they reach {fmt.nbytes(alloc['address_peak_bytes'])} of the "
            f"{fmt.nbytes(alloc['plan_capacity_bytes'])} the plan may use")


def summary_md_text(result: SimResult, top: int = 10) -> str:
    out = [f"# {result.arch_name} × {result.workload_name}", "", "| metric | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in summary_rows(result)]
    comp = result.energy_pj_by_component
    if comp and result.energy_pj:
        out += ["", "## Energy by component", "", "| component | energy | share |", "|---|---|---|"]
        out += [f"| {k} | {fmt.energy_pj(v)} | {fmt.percent(v / result.energy_pj)} |" for k, v in comp.items()]
    ranked = sorted(enumerate(result.layers), key=lambda il: (-il[1].cycles, il[0]))[:top]
    if ranked:
        out += ["", f"## Top {len(ranked)} layers by cycles", "",
                "| # | layer | op | cycles | share | stall | utilization | DRAM bytes |", "|---|---|---|---|---|---|---|---|"]
        for i, l in ranked:
            share = l.cycles / result.total_cycles if result.total_cycles else 0.0
            out.append(f"| {i} | {l.name} | {l.op} | {fmt.count(l.cycles)} | {fmt.percent(share)} | "
                       f"{fmt.count(l.stall_cycles)} | {fmt.percent(l.utilization)} | {fmt.nbytes(l.dram_bytes)} |")
    out += ["", "Files: report.json (all figures), layers.csv, COMPUTE_REPORT.csv (SCALE-Sim columns), "
            "trace.json (open in ui.perfetto.dev), plots/.", ""]
    return "\n".join(out)


def trace_json_text(result: SimResult, max_events: int = MAX_TRACE_EVENTS) -> str:
    """Chrome trace: a ``layers`` track with every layer, and per-unit tracks for the
    commands of the first ``result.trace_layers`` layers (capped at ``max_events``).
    Times are microseconds at the arch clock."""
    us = 1.0 / result.clock_mhz  # one cycle in microseconds
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": f"{result.arch_name} x {result.workload_name}"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "layers"}},
    ]
    for i, l in enumerate(result.layers):
        events.append({"ph": "X", "name": l.name, "cat": l.op, "pid": 0, "tid": 0,
                       "ts": round(l.start_cycle * us, 6), "dur": round(l.cycles * us, 6),
                       "args": {"index": i, "cycles": l.cycles, "stall_cycles": l.stall_cycles, "repeat": l.repeat}})
    tids: dict[str, int] = {}
    truncated = False
    shown_layers = 0
    for idx, name, offset, cycles, repeat, intervals in result.trace:
        if len(events) + len(intervals) > max_events:
            truncated = True
            break
        shown_layers += 1
        for unit, start, end, label, cmd in intervals:
            tid = tids.get(unit)
            if tid is None:
                tid = tids[unit] = len(tids) + 1
                events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": unit}})
            events.append({"ph": "X", "name": label, "pid": 0, "tid": tid, "ts": round((offset + start) * us, 6),
                           "dur": round((end - start) * us, 6), "args": {"layer": name, "command": cmd}})
    note = (f"per-command events for the first {shown_layers} of {len(result.layers)} layers"
            f"{' (capped at ' + str(max_events) + ' events)' if truncated else ''}"
            f"{'; repeated layers show one iteration' if any(t[4] > 1 for t in result.trace[:shown_layers]) else ''}; "
            "the 'layers' track has every layer")
    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "otherData": {"note": note, "clock_mhz": result.clock_mhz, "time_unit": "us"}}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"


def _save_plot(fig, ax, path: str) -> str:
    """Finish a figure and write it without a timestamp (reproducible PNGs)."""
    import matplotlib.pyplot as plt

    ax.legend()
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def write_plots(result: SimResult, plots_dir: str) -> list[str]:
    """plots/layers.png (cycles per layer: compute vs stall) and plots/roofline.png."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    os.makedirs(plots_dir, exist_ok=True)
    written = []
    layers = result.layers
    xs = list(range(len(layers)))
    fig, ax = plt.subplots(figsize=(max(6.0, min(24.0, 0.12 * len(layers) + 4)), 4), dpi=100)
    ax.bar(xs, [l.compute_cycles for l in layers], color="#3b7dd8", label="compute", width=0.9)
    ax.bar(xs, [l.stall_cycles for l in layers], bottom=[l.compute_cycles for l in layers], color="#e8833a",
           label="stall", width=0.9)
    ax.set_xlabel("layer (graph order)")
    ax.set_ylabel("cycles")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: fmt.count(v)))
    ax.set_title(f"{result.arch_name} × {result.workload_name}: cycles per layer")
    written.append(_save_plot(fig, ax, os.path.join(plots_dir, "layers.png")))

    # roofline: MACs/cycle against MACs per DRAM byte
    peak = result.peak_macs_per_cycle
    bw = result.arch.get("dram", {}).get("bytes_per_cycle") if result.arch else None
    bw = math.inf if bw in (None, "inf") else float(bw)
    fig, ax = plt.subplots(figsize=(6, 4.5), dpi=100)
    pts = [(l.macs / l.dram_bytes, l.macs / l.cycles) for l in layers if l.macs and l.dram_bytes and l.cycles]
    if pts:
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, color="#3b7dd8", label="layers")
    lo = min([p[0] for p in pts] + [0.1]) / 2
    hi = max([p[0] for p in pts] + [peak / bw if bw and bw != math.inf else 10.0, 10.0]) * 2
    xs_r = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    ax.plot(xs_r, [min(peak, x * bw) if bw != math.inf else peak for x in xs_r], color="black", label="roof")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (MACs per DRAM byte)")
    ax.set_ylabel("MACs per cycle")
    ax.set_title(f"Roofline: peak {fmt.number(peak)} MACs/cycle, DRAM "
                 f"{'unlimited' if bw == math.inf else fmt.nbytes(bw)}/cycle")
    written.append(_save_plot(fig, ax, os.path.join(plots_dir, "roofline.png")))
    return written


#: the files of a run folder (a folder holding only these and plots/*.png is archsim's)
RUN_FILES = ("report.json", "layers.csv", "summary.md", "COMPUTE_REPORT.csv", "trace.json")


def legacy_run_files(out_dir: str | os.PathLike) -> tuple[str, ...]:
    """The names that let a folder without archsim's marker be adopted as an older archsim's run
    folder (:class:`archsim.outputs.OutputDir` ``legacy``): :data:`RUN_FILES`, unless its
    ``report.json`` or ``trace.json`` is not a JSON object (then the folder is the user's: none)."""
    from archsim.outputs import MARKER

    if os.path.exists(os.path.join(out_dir, MARKER)):
        return RUN_FILES
    for name in ("report.json", "trace.json"):
        path = os.path.join(out_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            if os.path.getsize(path) > 512 * 1024 * 1024:
                return ()
            with open(path, encoding="utf-8") as handle:
                if not isinstance(json.load(handle), dict):
                    return ()
        except (OSError, ValueError):
            return ()
    return RUN_FILES


@contextlib.contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block and deliver them after it, so a Ctrl-C or SIGTERM that
    arrives while a run's reports are being replaced stops the run after the last one, not between
    two (main thread only; elsewhere the block runs as is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum, frame):  # noqa: ARG001 - signal handler signature
        pending.append(signum)

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler not in (signal.SIG_IGN, None):
            previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if pending:
            signal.raise_signal(pending[0])  # now handled as if it had just arrived


def write_reports(result: SimResult, out_dir: str, plots: bool = True) -> str:
    """Write all reports into ``out_dir``, a folder archsim owns (:class:`archsim.outputs.OutputDir`):
    a folder holding the user's own files is refused, and each report replaces the
    previous one atomically (write, then rename). On any error the files already
    there are left as they were."""
    from archsim.outputs import OutputDir

    out = OutputDir(out_dir, "run", legacy=legacy_run_files(out_dir))  # a run folder from before the marker is adopted
    texts = {
        "report.json": report_json_text(result),
        "layers.csv": layers_csv_text(result),
        "summary.md": summary_md_text(result),
        "COMPUTE_REPORT.csv": compute_report_text(result),
        "trace.json": trace_json_text(result),
    }
    with out.scratch() as tmp:
        plot_paths = write_plots(result, str(tmp)) if plots else []  # the slow part, before any file is replaced
        with stop_signals_deferred():  # the set is replaced whole: never one run's report.json beside another's CSV
            for name, text in texts.items():
                out.write(name, text)
            for path in plot_paths:
                out.install(f"plots/{os.path.basename(path)}", path)
    return os.path.abspath(out_dir)
