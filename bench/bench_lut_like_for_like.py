"""Like-for-like LUT core vs MAC core, from synthesis: density per LUT4, per MAC/s (Fmax-aware), energy per MAC.

Two pairings at A8 (M2 N8 K4, the tile of ``bench/bench_lut_synth.py``; peak MACs/cycle of both
cores equal at each W: ``tile_m * tile_n * group_k / b``):

1. **Specialized**: the LUT core built for one W x A8 pair vs a MAC core specialized to the SAME
   pair (:class:`rtl.lut.mac_baseline.MacBaseline` with ``weight_format=W``: b-bit codes on its
   weight port, dequantized inside, so synthesis folds the +-1 of int1 / the b-bit range into
   the multipliers).
2. **General**: a LUT core built for every weight format (int1, ternary, int2, int3, int4) x int8,
   run at each W, vs the general int8 x int8 MAC array fed with dequantized weights
   (``weight_format=None``, what ``bench_lut_synth.py`` synthesizes).

Columns: generic 4-LUTs (``synth -flatten -lut 4``, no DSP, shifters premapped for both, as in
``bench_lut_synth.py``); density = peak MACs/cycle per 1000 LUT4; MAC/s per LUT4 = peak x Fmax
/ LUT4 with the ECP5 nextpnr Fmax RECORDED in docs/lut_rtl.md (LUT core 79.8-91.2 MHz, general
MAC core 171.4-193.2 MHz; the specialized MAC cores are not placed and routed here: they get the
general core's Fmax, a lower bound on theirs, which favours the LUT core); energy per MAC from
gate-level simulation of the synthesized netlists (``bench_lut_energy.py``'s method, its
calibration: a synthesized int8 multiplier = ``mult.int8``).

Syntheses are cached (rtl/synth.py). Figures this script does not synthesize (the pair-built LUT
cores, the general MAC cores, their energies) are read from ``RECORDED`` (measured 2026-11-24,
docs/lut_rtl.md) unless ``--resynth-all``.

    python bench/bench_lut_like_for_like.py [--only W1] [--no-energy] [--timeout-s 900] [--json F]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_lut_energy as energy_bench  # noqa: E402
import bench_lut_synth as synth_bench  # noqa: E402
from archsim.errors import ToolError  # noqa: E402
from archsim.templates.lut.params import WEIGHT_FORMATS  # noqa: E402
from rtl.lut.mac_baseline import PLANES, MacBaseline  # noqa: E402

TILE = (2, 8, 4)
WEIGHTS = (("W1", "int1"), ("W1.58", "ternary"), ("W2", "int2"), ("W4", "int4"))
#: measured 2026-11-24 (docs/lut_rtl.md, "Synthesis, M2 N8 K4" and "Energy per MAC"): generic LUT4,
#: ECP5 Fmax MHz, pJ/MAC of the pair-built LUT core and of the general int8 MAC core of the same peak
RECORDED = {
    "W1": {"lut_luts": 4465, "lut_fmax": 91.2, "lut_pj": 0.063, "gen_luts": 15254, "gen_fmax": 171.4, "gen_pj": 0.242},
    "W1.58": {"lut_luts": 5519, "lut_fmax": 83.2, "lut_pj": 0.135, "gen_luts": 7624, "gen_fmax": 185.2, "gen_pj": 0.219},
    "W2": {"lut_luts": 5502, "lut_fmax": 81.9, "lut_pj": 0.132, "gen_luts": 7624, "gen_fmax": 185.2, "gen_pj": 0.239},
    "W4": {"lut_luts": 5584, "lut_fmax": 79.8, "lut_pj": 0.250, "gen_luts": 3792, "gen_fmax": 193.2, "gen_pj": 0.239},
}


def specialized_mac(wf: str) -> tuple[MacBaseline, str]:
    """The MAC core of the LUT core's peak at ``wf``, specialized to ``wf`` x int8 (codes on its port)."""
    from amaranth.back import verilog

    tm, tn, K = TILE
    core = MacBaseline(tm, tn // PLANES[wf], K, wf, "int8")
    return core, verilog.convert(core, name=synth_bench.MAC_TOP, emit_src=False)


def weight_codes(w: np.ndarray, wf: str) -> np.ndarray:
    """The b-bit codes the specialized core's port takes: int1 bit = (w == +1); else two's complement."""
    b = PLANES[wf]
    return (w == 1).astype(np.int64) if wf == "int1" else np.asarray(w, np.int64) & ((1 << b) - 1)


def specialized_words(items, wf: str) -> list[list[int]]:
    """:func:`bench_lut_energy.baseline_words` with the weights as b-bit codes."""
    from rtl.design import pack_lanes
    from rtl.lut.rtl_design import activation_codes

    tm, tn, K = TILE
    b, tn_b = PLANES[wf], tn // PLANES[wf]
    words = []
    for _tile, ops in items:
        a, w = activation_codes(ops["input"], "int8"), weight_codes(ops["weight"], wf)
        m, k = a.shape
        for r0 in range(0, m, tm):
            for c0 in range(0, w.shape[1], tn_b):
                for g in range(k // K):
                    act = a[r0:r0 + tm, g * K:(g + 1) * K].reshape(-1)
                    wgt = w[g * K:(g + 1) * K, c0:c0 + tn_b].reshape(-1)
                    words.append([1, int(g == 0), pack_lanes(act, 8), pack_lanes(wgt, b)])
    words.append([0, 0, 0, 0])
    return words


def items_for(wf: str, tiles: int, seed: int) -> list:
    from archsim.templates.lut.tile import LutTile

    tm, tn, K = TILE
    rng = np.random.default_rng(seed)
    k, n = energy_bench.GROUPS * K, energy_bench.ENERGY_OPTIONS["out_depth"] // PLANES[wf] * tn
    return [(LutTile(tm, k, n, wf, "int8"), energy_bench.operands(rng, wf, "int8", tm, k, n)) for _ in range(tiles)]


def specialized_energy(wf: str, syn: dict, tiles: int, seed: int, pj_per_unit: float) -> dict:
    """pJ/MAC of the specialized MAC core's netlist on the energy bench's operands, checked against numpy."""
    from rtl.power import stream_units

    tm, tn, K = TILE
    tn_b = tn // PLANES[wf]
    items = items_for(wf, tiles, seed)
    macs = sum(t.m * t.k * t.n for t, _ in items)
    ports = [("in_valid", 1), ("first", 1), ("act", tm * K * 8), ("weight", K * tn_b * PLANES[wf])]
    units = stream_units(Path(syn["netlist"]).read_text(), synth_bench.MAC_TOP, ports, specialized_words(items, wf),
                         warmup_cycles=0, drain_cycles=3, record=("out_valid", "out", 32 * tm * tn_b))
    expect = energy_bench.baseline_reference(items, tm, tn_b, K, "int8")
    got = [energy_bench._lanes(v, tm * tn_b, True) for v in units["outputs"]]
    bad = sum(1 for e, g in zip(expect, got) if g != e) + abs(len(expect) - len(got))
    return {"pj_per_mac": units["units"] * pj_per_unit / macs, "mismatches": bad, "outputs": len(expect)}


def multi_format_lut(wf: str, timeout_s: float, netlist: bool) -> tuple[object, dict]:
    """The LUT core built for every weight format x int8, running ``wf`` (the ENERGY build with
    ``netlist``: deeper external buffers, only address registers wider)."""
    from archsim.templates.lut.params import LutParams
    from rtl.synth import synthesize

    tm, tn, K = TILE
    p = LutParams(group_k=K, tile_k=K, tile_m=tm, tile_n=tn, precompute_entries_per_cycle=2,
                  weight_formats=list(WEIGHT_FORMATS), activation_formats=["int8"], weight_format=wf,
                  activation_format="int8")
    options = energy_bench.ENERGY_OPTIONS if netlist else synth_bench.LUT_OPTIONS
    return p, synthesize(p, target="generic", options=options, netlist=netlist, timeout_s=timeout_s, **synth_bench.SYNTH)


def multi_format_fmax(wf: str, timeout_s: float) -> float | None:
    """nextpnr Fmax (ECP5) of the multi-format LUT core's density build."""
    from archsim.templates.lut.params import LutParams
    from rtl.synth import synthesize

    tm, tn, K = TILE
    p = LutParams(group_k=K, tile_k=K, tile_m=tm, tile_n=tn, precompute_entries_per_cycle=2,
                  weight_formats=list(WEIGHT_FORMATS), activation_formats=["int8"], weight_format=wf,
                  activation_format="int8")
    return synthesize(p, target="ecp5", pnr=True, options=synth_bench.LUT_OPTIONS, timeout_s=timeout_s,
                      **synth_bench.SYNTH).get("fmax_mhz")


def multi_format_energy(wf: str, tiles: int, seed: int, pj_per_unit: float, timeout_s: float) -> dict:
    from rtl.lut.gate_level import run_gate_level
    from rtl.lut.rtl_design import LutDesign

    p, syn = multi_format_lut(wf, timeout_s, netlist=True)
    items = items_for(wf, tiles, seed)
    macs = sum(t.m * t.k * t.n for t, _ in items)
    report, units = run_gate_level(LutDesign(p, energy_bench.ENERGY_OPTIONS), items, Path(syn["netlist"]).read_text())
    bad = sum(1 for t in report.tiles if not t.ok) + (1 if report.error else 0)
    return {"pj_per_mac": units["units"] * pj_per_unit / macs, "mismatches": bad, "tiles": len(report.tiles),
            "luts": syn["luts"]}


def main(argv=None) -> int:
    from archsim.spec.load import load_tech
    from rtl.power import calibration_pj_per_unit
    from rtl.synth import synthesize_verilog

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="W", help="one weight format: W1, W1.58, W2 or W4")
    ap.add_argument("--no-energy", action="store_true", help="synthesis only (no gate-level simulation)")
    ap.add_argument("--no-multi", action="store_true", help="skip the multi-format LUT core")
    ap.add_argument("--pnr", action="store_true",
                    help="also place and route the specialized MAC core and the multi-format LUT core on ECP5 "
                         "(nextpnr Fmax instead of the recorded pair-built / general cores' Fmax)")
    ap.add_argument("--tiles", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout-s", type=float, default=900.0, help="per yosys run (default 900)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pj_per_unit = calibration_pj_per_unit(load_tech().energy_pj["mult.int8"])
    tm, tn, K = TILE
    rows = []
    try:
        for wname, wf in WEIGHTS:
            if args.only and args.only != wname:
                continue
            rec = RECORDED[wname]
            peak = tm * tn * K / PLANES[wf]
            _core, text = specialized_mac(wf)
            spec = synthesize_verilog(text, synth_bench.MAC_TOP, target="generic", netlist=not args.no_energy,
                                      timeout_s=args.timeout_s, **synth_bench.SYNTH)
            row = {"w": wname, "peak": peak, **rec, "spec_luts": spec["luts"], "spec_ffs": spec["ffs"]}
            if args.pnr:
                ecp = synthesize_verilog(text, synth_bench.MAC_TOP, target="ecp5", pnr=True, timeout_s=args.timeout_s,
                                         **synth_bench.SYNTH)
                row["spec_fmax"] = ecp.get("fmax_mhz")
                print(f"  specialized MAC {wname} x A8 on ECP5: {row['spec_fmax']} MHz", file=sys.stderr)
            print(f"  specialized MAC {wname} x A8: {spec['luts']} LUT4 ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr)
            if not args.no_energy:
                e = specialized_energy(wf, spec, args.tiles, args.seed, pj_per_unit)
                row.update(spec_pj=e["pj_per_mac"], spec_mismatches=e["mismatches"])
            if not args.no_multi:
                _p, multi = multi_format_lut(wf, args.timeout_s, netlist=False)
                row["multi_luts"] = multi["luts"]
                if args.pnr:
                    row["multi_fmax"] = multi_format_fmax(wf, args.timeout_s)
                    print(f"  multi-format LUT core on ECP5: {row['multi_fmax']} MHz", file=sys.stderr)
                print(f"  multi-format LUT core (at {wname}): {multi['luts']} LUT4 ({time.perf_counter() - t0:.0f} s)",
                      file=sys.stderr)
                if not args.no_energy:
                    e = multi_format_energy(wf, args.tiles, args.seed, pj_per_unit, args.timeout_s)
                    row.update(multi_pj=e["pj_per_mac"], multi_mismatches=e["mismatches"])
            rows.append(row)
    except ToolError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print_table(rows)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def ratios(row: dict) -> dict:
    """The like-for-like LUT/MAC ratios of one W (None where a figure is missing)."""
    out = {}
    peak = row["peak"]
    dens = lambda luts: peak / luts  # noqa: E731 - MACs/cycle per LUT4
    rate = lambda luts, f: peak * f / luts  # noqa: E731 - MAC/s per LUT4 (MHz units)
    out["spec_density"] = dens(row["lut_luts"]) / dens(row["spec_luts"])
    out["spec_per_macs"] = (rate(row["lut_luts"], row["lut_fmax"])
                            / rate(row["spec_luts"], row.get("spec_fmax") or row["gen_fmax"]))
    out["spec_energy"] = row["spec_pj"] / row["lut_pj"] if row.get("spec_pj") else None
    if row.get("multi_luts"):
        out["gen_density"] = dens(row["multi_luts"]) / dens(row["gen_luts"])
        out["gen_per_macs"] = (rate(row["multi_luts"], row.get("multi_fmax") or row["lut_fmax"])
                               / rate(row["gen_luts"], row["gen_fmax"]))
    out["gen_energy"] = row["gen_pj"] / row["multi_pj"] if row.get("multi_pj") else None
    return out


def print_table(rows: list[dict]) -> None:
    print("LUT core vs MAC core, like for like (M2 N8 K4, A8, equal peak MACs/cycle at each W; generic LUT4; "
          "Fmax: ECP5 nextpnr, recorded; LUT/MAC > 1 favours the LUT core)")
    hdr = (f"{'W':<6}| {'pair':<38} {'LUT4 LUT':>8} {'LUT4 MAC':>8} | {'density':>8} {'per MAC/s':>9} "
           f"{'MACs/J':>7} | {'pJ/MAC LUT':>10} {'pJ/MAC MAC':>10}")
    print(hdr)
    print("-" * len(hdr))
    fmt = lambda v: f"{v:.2f}x" if v is not None else "-"  # noqa: E731
    for r in rows:
        q = ratios(r)
        print(f"{r['w']:<6}| {'LUT(' + r['w'] + 'xA8 only) vs MAC(' + r['w'] + 'xA8 only)':<38} {r['lut_luts']:>8} "
              f"{r['spec_luts']:>8} | {fmt(q['spec_density']):>8} {fmt(q['spec_per_macs']):>9} "
              f"{fmt(q['spec_energy']):>7} | {r['lut_pj']:>10.3f} {r.get('spec_pj', float('nan')):>10.3f}")
        if r.get("multi_luts"):
            print(f"{'':<6}| {'LUT(W1-W4 x A8) vs MAC(int8 x int8)':<38} {r['multi_luts']:>8} {r['gen_luts']:>8} | "
                  f"{fmt(q['gen_density']):>8} {fmt(q['gen_per_macs']):>9} {fmt(q['gen_energy']):>7} | "
                  f"{r.get('multi_pj', float('nan')):>10.3f} {r['gen_pj']:>10.3f}")
    for r in rows:
        print(f"Fmax MHz at {r['w']}: LUT(pair) {r['lut_fmax']}, LUT(multi) "
              f"{r.get('multi_fmax') or str(r['lut_fmax']) + ' (pair build, recorded)'}, MAC(general) {r['gen_fmax']}, "
              f"MAC(specialized) {r.get('spec_fmax') or str(r['gen_fmax']) + ' (general core, recorded: a lower bound)'}")
    print("per MAC/s = peak x Fmax per LUT4 (ECP5 nextpnr Fmax); MACs/J = pJ/MAC MAC / pJ/MAC LUT "
          "(gate level, bench_lut_energy.py's calibration)")


if __name__ == "__main__":
    sys.exit(main())
