"""Compute density of the LUT tensor core RTL vs a dequantize-then-MAC core, from synthesis.

For each W x A (W1, W1.58, W2, W4 x A8, A16) it synthesizes with yosys
(rtl/synth.py, cached) two designs of the same peak MACs/cycle AT THAT W (the
definition is in :mod:`rtl.lut.mac_baseline`):

- the LUT core :class:`rtl.lut.design.LutCore` built for that one pair
  (``weight_formats=[W]``, ``activation_formats=[A]``; ``external_buffers``:
  the operand / output buffers are SRAM macros outside the logic, as the
  baseline's operands arrive on ports; a precompute unit of ``--rate``
  entries/cycle, default 2: a step's tables take ``pre = tile_m * 2**(K-1) / 2``
  = 8 cycles at M2 K4, hidden behind the lookups -- the peak -- whenever
  ``ceil(N / tile_n) * b >= pre``, i.e. N >= 64 at W1 for N8: every LLM layer),
  peak ``tile_m * tile_n * group_k / b`` MACs/cycle;
- the baseline :class:`rtl.lut.mac_baseline.MacBaseline` (int8 x int8 or
  fp16 x fp16 multipliers fed with dequantized weights) of ``tile_m x
  tile_n / b x group_k`` multipliers: the same peak ``tile_m * tile_n *
  group_k / b`` MACs/cycle (one design per A and b: W1.58 and W2 share one);

(a pair-built LUT core against the GENERAL MAC core: for the like-for-like pairings, and
per MAC/s with Fmax, see ``bench/bench_lut_like_for_like.py``) and prints one table: generic cells (``synth -flatten -lut 4``: multipliers in
logic, no DSP), ECP5 LUT / FF / DSP (``synth_ecp5``), nextpnr Fmax (``--pnr``),
and the compute density = peak MACs/cycle per 1000 generic 4-input LUTs, with
the LUT/MAC density ratio.

Synthesis flow: rtl/synth.py's with ``premap_shifts`` for EVERY design (LUT
and MAC, A8 and A16): shifters are mapped to gates before ``synth`` /
``synth_ecp5``, because yosys' SAT-based ``share`` pass, pairing the shifters
of dozens of fp32 adders in one flat module, ran for over an hour on the A16
builds (the rest of the flow is the default one).

    python bench/bench_lut_synth.py [--tile M N K] [--rate R] [--pnr] [--no-ecp5] [--only W1,A8] [--json out.json]

A16 on the LUT core is fp16 activations (bf16 builds the same fp32 datapath with
another decoder).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from archsim.templates.lut.params import LutParams  # noqa: E402
from rtl.lut.mac_baseline import PLANES, MacBaseline  # noqa: E402
from archsim.errors import ToolError  # noqa: E402
from rtl.synth import synthesize, synthesize_verilog  # noqa: E402

WEIGHTS = (("W1", "int1"), ("W1.58", "ternary"), ("W2", "int2"), ("W4", "int4"))
ACTS = (("A8", "int8"), ("A16", "fp16"))


NO_ECP5 = {"luts": 0, "ffs": 0, "dsps": 0}


SYNTH = {"premap_shifts": True}


#: the LUT core's build for synthesis: operand / output buffers outside the logic (SRAM macros)
LUT_OPTIONS = {"external_buffers": True, "act_depth": 16, "weight_depth": 16, "out_depth": 16, "table_depth": 16}


def lut_params(tm, tn, K, wf, af, rate=2) -> LutParams:
    """The LUT core built for one W x A pair (what is synthesized)."""
    return LutParams(group_k=K, tile_k=K, tile_m=tm, tile_n=tn, precompute_entries_per_cycle=rate,
                     weight_formats=[wf], activation_formats=[af], weight_format=wf, activation_format=af)


def mac_baseline(tm, tn, K, af, b) -> tuple[MacBaseline, str]:
    """The baseline of the LUT core's peak at b-bit weights and its Verilog: ``tile_n / b`` columns
    (weights arrive dequantized, so one design serves every W of that b)."""
    from amaranth.back import verilog

    if tn % b:
        raise SystemExit(f"error: --tile N ({tn}) must be a multiple of 4 (the MAC baseline has N / b columns)")
    core = MacBaseline(tm, tn // b, K, None, af)
    return core, verilog.convert(core, name=MAC_TOP, emit_src=False)


MAC_TOP = "archsim_mac_baseline"


def lut_figures(tm, tn, K, wf, af, ecp5, pnr, rate=2, **synth) -> dict:
    p = lut_params(tm, tn, K, wf, af, rate)
    gen = synthesize(p, target="generic", options=LUT_OPTIONS, **SYNTH, **synth)
    ecp = synthesize(p, target="ecp5", pnr=pnr, options=LUT_OPTIONS, **SYNTH, **synth) if ecp5 else NO_ECP5
    return {"generic": gen, "ecp5": ecp, "peak": tm * tn * K / PLANES[wf]}


def mac_figures(tm, tn, K, af, b, ecp5, pnr, **synth) -> dict:
    core, text = mac_baseline(tm, tn, K, af, b)
    gen = synthesize_verilog(text, MAC_TOP, target="generic", **SYNTH, **synth)
    ecp = synthesize_verilog(text, MAC_TOP, target="ecp5", pnr=pnr, **SYNTH, **synth) if ecp5 else NO_ECP5
    return {"generic": gen, "ecp5": ecp, "peak": core.peak_macs_per_cycle}


def density(fig: dict) -> float:
    return 1000.0 * fig["peak"] / max(1, fig["generic"]["luts"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tile", nargs=3, type=int, default=[2, 8, 4], metavar=("M", "N", "K"))
    ap.add_argument("--rate", type=int, default=2, help="LUT core precompute entries per cycle (default 2)")
    ap.add_argument("--no-ecp5", action="store_true", help="generic cells only (skip synth_ecp5)")
    ap.add_argument("--pnr", action="store_true", help="also place and route (ECP5-85k): Fmax")
    ap.add_argument("--only", metavar="W,A", help="one pair, e.g. W1,A8 (to warm the cache in parallel)")
    ap.add_argument("--timeout-min", type=float, default=60.0,
                    help="per yosys / nextpnr run (default 60; the W1 x A16 baseline's generic flow needs ~2 h)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    timeout = {"timeout_s": 60.0 * args.timeout_min}
    tm, tn, K = args.tile
    rows = []
    t0 = time.perf_counter()
    ecp5 = not args.no_ecp5
    for aname, af in ACTS:
        for wname, wf in WEIGHTS:
            if args.only and args.only != f"{wname},{aname}":
                continue
            try:
                lut = lut_figures(tm, tn, K, wf, af, ecp5, args.pnr, args.rate, **timeout)
                mac = mac_figures(tm, tn, K, af, PLANES[wf], ecp5, args.pnr, **timeout)
            except ToolError as err:
                print(f"error: {wname} x {aname}: {err}", file=sys.stderr)
                return 1
            rows.append({"w": wname, "a": aname, "lut": lut, "mac": mac,
                         "ratio": density(lut) / density(mac)})
            print(f"  synthesized {wname} x {aname} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    def fmax(f):
        v = f["ecp5"].get("fmax_mhz")
        return f"{v:.0f}" if v else "-"

    print(f"LUT core M{tm} N{tn} K{K} vs dequantize-then-MAC core of the same peak MACs/cycle at each W "
          f"({tm} x {tn}/b x {K} multipliers); density = peak MACs/cycle per 1000 generic 4-LUTs "
          f"(yosys synth -lut 4, no DSP; shifters premapped, both cores)")
    hdr = (f"{'W x A':<11} | {'core':<4} {'peak':>5} {'gen LUT':>8} {'gen FF':>7} {'cells':>7} | "
           f"{'ECP5 LUT':>8} {'FF':>6} {'DSP':>4} {'Fmax':>5} | {'density':>8} | {'LUT/MAC':>7}")
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        for core in ("lut", "mac"):
            f = row[core]
            g, e = f["generic"], f["ecp5"]
            ratio = f"{row['ratio']:.2f}x" if core == "lut" else ""
            print(f"{row['w'] + ' x ' + row['a'] if core == 'lut' else '':<11} | {core:<4} {f['peak']:>5g} "
                  f"{g['luts']:>8} {g['ffs']:>7} {g['cells']:>7} | {e['luts']:>8} {e['ffs']:>6} {e['dsps']:>4} "
                  f"{fmax(f):>5} | {density(f):>8.2f} | {ratio:>7}")
    by = {(r["w"], r["a"]): r for r in rows}
    if by:
        print("\nLUT/MAC per W (same peak at each W): compute density (generic 4-LUTs) | ECP5 Fmax LUT / MAC MHz")
        print(f"{'W':<6} | " + " | ".join(f"{a:<22}" for a, _ in ACTS))
        for wname, _ in WEIGHTS:
            cells = []
            for aname, _ in ACTS:
                r = by.get((wname, aname))
                cells.append(f"{r['ratio']:.2f}x density, {fmax(r['lut'])}/{fmax(r['mac'])}" if r else "-")
            print(f"{wname:<6} | " + " | ".join(f"{c:<22}" for c in cells))
        print("(energy per MAC of the same designs, from gate-level simulation of their synthesized netlists: "
              "bench/bench_lut_energy.py)")
        print("(these pair a LUT core built for ONE W x A with the GENERAL MAC core, per LUT4 at any clock; like for "
              "like -- a MAC core specialized to the same pair, the multi-format LUT core vs the general MAC core, "
              "per MAC/s with Fmax -- see bench/bench_lut_like_for_like.py)")
    print(f"({time.perf_counter() - t0:.0f} s; results cached under the archsim synth cache)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
