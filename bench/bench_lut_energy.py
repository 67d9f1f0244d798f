"""Energy per MAC of the LUT tensor core RTL vs a dequantize-then-MAC core, from synthesized netlists.

For each W x A (W1, W1.58, W2, W4 x A8, A16) it takes the two designs that
``bench/bench_lut_synth.py`` synthesizes for compute density (same peak
MACs/cycle at that W; M2 N8 K4), their generic 4-LUT netlists (rtl/synth.py,
``netlist=True``, cached), simulates both at gate level in Icarus on the same
operands and measures switching energy with :mod:`rtl.power`:

- LUT core: the density build with deeper (external) weight and output
  buffers, ``ENERGY_OPTIONS`` (weight 256, out 64 entries: only address
  registers widen; the LUT4 column shows the build's size), so that a tile
  is long enough to reach steady state: ``--tiles`` tiles of m = 2, k = 16
  (4 K-groups), n = 512 / b, i.e. 256 lookup cycles, each group's table used
  for 64 of them (an LLM layer reuses it for N / 8 x b). The table builds and
  the pipeline fill are inside the measured window (``busy``), the host's
  buffer writes are not. Every tile's outputs and cycles are also checked
  against the fast and detailed models: a gate-level co-simulation.
- baseline: the same matrices streamed at its peak (one (row block, column
  block, K-group) per cycle, dequantized weights as int8 / fp16), the window
  from the first operand to the last result. Its accumulators after every
  operand word are checked against numpy (:func:`baseline_reference`).

Operands: activations N(0, 1) (fp16) or round(32 N(0, 1)) clipped (int8),
weights uniform over the format's codes. Energy = load-weighted toggles +
clock load per flip-flop per cycle, in units calibrated so that a
synthesized registered int8 multiplier costs the tech table's ``mult.int8``
(Horowitz ISSCC 2014, 45 nm, 0.2 pJ); the LUT/MAC ratio does not depend on
that calibration. Buffers / SRAM and DRAM are outside both netlists, and so
is the baseline's dequantizer (its weights arrive dequantized): both favour
the baseline. The clock load (``rtl.power.CLOCK_UNITS_PER_FF``) is a model
constant, so the table also gives the ratio without it.

    python bench/bench_lut_energy.py [--only W1,A8] [--tiles 4] [--seed 0] [--json out.json]

The A16 baselines' netlists come from hour-long syntheses (the W1 one about
two hours); a netlist not yet in the cache is synthesized first.
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

import bench_lut_synth as synth_bench  # noqa: E402
from archsim.errors import ToolError  # noqa: E402
from archsim.numerics import get_format  # noqa: E402
from archsim.spec.load import load_tech  # noqa: E402
from archsim.templates.lut.tile import WEIGHT_RANGE, LutTile  # noqa: E402
from rtl.lut.gate_level import run_gate_level  # noqa: E402
from rtl.lut.mac_baseline import PLANES  # noqa: E402
from rtl.design import pack_lanes  # noqa: E402
from rtl.lut.rtl_design import LutDesign, activation_codes  # noqa: E402
from rtl.power import calibration_pj_per_unit, stream_units  # noqa: E402
from rtl.synth import synthesize, synthesize_verilog  # noqa: E402


def operands(rng, wf: str, af: str, m: int, k: int, n: int) -> dict:
    if af == "int8":
        a = np.clip(np.round(rng.standard_normal((m, k)) * 32), -128, 127).astype(np.int64)
    else:
        f = get_format(af)
        a = f.decode(f.encode(rng.standard_normal((m, k)))).astype(np.float32)
    lo, hi = WEIGHT_RANGE[wf]
    w = rng.choice(np.array([-1, 1]), size=(k, n)) if wf == "int1" else rng.integers(lo, hi + 1, size=(k, n))
    return {"input": a, "weight": w.astype(np.int64)}


def baseline_words(items, tm: int, tn_b: int, K: int, af: str) -> list[list[int]]:
    """One [in_valid, first, act, weight] word per cycle: the tiles' products at the baseline's peak."""
    words = []
    ab = 8 if af == "int8" else 16
    for _tile, ops in items:
        # port codes: int8 two's complement or fp16 bits (weights dequantized: small integers)
        a, w = activation_codes(ops["input"], af), activation_codes(ops["weight"], af)
        m, k = a.shape
        n = w.shape[1]
        for r0 in range(0, m, tm):
            for c0 in range(0, n, tn_b):
                for g in range(k // K):
                    act = a[r0:r0 + tm, g * K:(g + 1) * K].reshape(-1)  # lane r * K + j
                    wgt = w[g * K:(g + 1) * K, c0:c0 + tn_b].reshape(-1)  # lane j * tn_b + c
                    words.append([1, int(g == 0), pack_lanes(act, ab), pack_lanes(wgt, ab)])
    words.append([0, 0, 0, 0])
    return words


#: the energy build: the density build's core with deeper external weight / output buffers
ENERGY_OPTIONS = {**synth_bench.LUT_OPTIONS, "weight_depth": 256, "out_depth": 64}
GROUPS = 4  # K-groups per tile: GROUPS * (out_depth / b column blocks) * b planes = 256 lookup cycles


def baseline_reference(items, tm: int, tn_b: int, K: int, af: str) -> list[list[float]]:
    """What the baseline's accumulators must hold after each word (numpy, the order its docstring
    states: exact products, a pairwise fp32 / int adder tree over the K-group, then acc + tree,
    restarting at each first group); lanes r * tn_b + c."""
    expect = []
    integer = af == "int8"
    dtype = np.int64 if integer else np.float32
    for _tile, ops in items:
        a = np.asarray(ops["input"], dtype)
        w = np.asarray(ops["weight"], dtype)
        m, k = a.shape
        for r0 in range(0, m, tm):
            for c0 in range(0, w.shape[1], tn_b):
                acc = np.zeros((tm, tn_b), dtype)
                for g in range(k // K):
                    prods = [a[r0:r0 + tm, g * K + j][:, None] * w[g * K + j, c0:c0 + tn_b][None, :] for j in range(K)]
                    while len(prods) > 1:
                        prods = [prods[i] + prods[i + 1] for i in range(0, len(prods) - 1, 2)] + (
                            [prods[-1]] if len(prods) % 2 else [])
                    acc = prods[0] if g == 0 else acc + prods[0]
                    expect.append(acc.reshape(-1).tolist())
    return expect


def _lanes(word: int | None, count: int, integer: bool) -> list[float] | None:
    if word is None:
        return None
    raw = [(word >> (32 * i)) & 0xFFFFFFFF for i in range(count)]
    if integer:
        return [v - (1 << 32) if v >> 31 else v for v in raw]
    return np.array(raw, np.uint32).view(np.float32).tolist()


def measure(wname, wf, aname, af, tiles: int, seed: int, pj_per_unit: float, tm=2, tn=8, K=4) -> dict:
    b = PLANES[wf]
    rng = np.random.default_rng(seed)
    k, n = GROUPS * K, ENERGY_OPTIONS["out_depth"] // b * tn
    items = [(LutTile(tm, k, n, wf, af), operands(rng, wf, af, tm, k, n)) for _ in range(tiles)]
    macs = sum(t.m * t.k * t.n for t, _ in items)

    p = synth_bench.lut_params(tm, tn, K, wf, af)
    lut_syn = synthesize(p, target="generic", options=ENERGY_OPTIONS, netlist=True, timeout_s=4 * 3600,
                         **synth_bench.SYNTH)
    design = LutDesign(p, ENERGY_OPTIONS)
    report, lut_units = run_gate_level(design, items, Path(lut_syn["netlist"]).read_text())
    bad = [t for t in report.tiles if not t.ok]

    core, text = synth_bench.mac_baseline(tm, tn, K, af, b)
    mac_syn = synthesize_verilog(text, synth_bench.MAC_TOP, target="generic", netlist=True, timeout_s=4 * 3600,
                                 **synth_bench.SYNTH)
    ab = 8 if af == "int8" else 16
    ports = [("in_valid", 1), ("first", 1), ("act", tm * K * ab), ("weight", K * (tn // b) * ab)]
    words = baseline_words(items, tm, tn // b, K, af)
    lanes = tm * (tn // b)
    mac_units = stream_units(Path(mac_syn["netlist"]).read_text(), synth_bench.MAC_TOP, ports, words,
                             warmup_cycles=0, drain_cycles=3, record=("out_valid", "out", 32 * lanes))
    expect = baseline_reference(items, tm, tn // b, K, af)
    got = [_lanes(v, lanes, af == "int8") for v in mac_units["outputs"]]
    mac_bad = sum(1 for e, g in zip(expect, got) if g != e) + abs(len(expect) - len(got))

    def row(units, syn):
        return {"pj_per_mac": units["units"] * pj_per_unit / macs, "cycles": units["cycles"],
                "clock_share": units["clock_units"] / units["units"], "toggles": units["toggles"],
                "luts": syn["luts"], "ffs": syn["ffs"]}

    lut, mac = row(lut_units, lut_syn), row(mac_units, mac_syn)
    return {"w": wname, "a": aname, "macs": macs, "tiles": tiles, "lut": lut, "mac": mac,
            "lut_macs_per_cycle": macs / lut["cycles"], "mac_macs_per_cycle": macs / mac["cycles"],
            "ratio": mac["pj_per_mac"] / lut["pj_per_mac"],
            "ratio_without_clock": (mac["pj_per_mac"] * (1 - mac["clock_share"]))
            / (lut["pj_per_mac"] * (1 - lut["clock_share"])),
            "gate_level_tiles": len(report.tiles), "gate_level_mismatches": len(bad) + (1 if report.error else 0),
            "mismatch": (bad[0].mismatch if bad else report.error),
            "baseline_words": len(expect), "baseline_mismatches": mac_bad}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="W,A", help="one pair, e.g. W1,A8")
    ap.add_argument("--tiles", type=int, default=2, help="tiles per W x A (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    if args.tiles < 1:
        print("error: --tiles must be >= 1", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        mult_pj = load_tech().energy_pj["mult.int8"]
        pj_per_unit = calibration_pj_per_unit(mult_pj)
        rows = []
        for aname, af in synth_bench.ACTS:
            for wname, wf in synth_bench.WEIGHTS:
                if args.only and args.only != f"{wname},{aname}":
                    continue
                rows.append(measure(wname, wf, aname, af, args.tiles, args.seed, pj_per_unit))
                print(f"  measured {wname} x {aname} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    except ToolError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.only and not rows:
        print(f"error: --only {args.only}: expected W1/W1.58/W2/W4 and A8/A16, e.g. W1,A8", file=sys.stderr)
        return 2
    print(f"Energy per MAC from gate-level simulation of the synthesized netlists (generic 4-LUT flow; "
          f"1 unit = {pj_per_unit * 1000:.3f} fJ, calibrated: synthesized int8 multiplier = mult.int8 "
          f"{mult_pj} pJ, 45 nm); LUT core M2 N8 K4 vs MAC core of the same peak at each W")
    hdr = (f"{'W x A':<11} | {'core':<4} {'LUT4':>6} {'FF':>5} {'MACs/cyc':>8} {'clock':>6} | "
           f"{'pJ/MAC':>7} | {'MACs/J LUT/MAC':>14} {'(no clock)':>10} | gate-level check")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        for core in ("lut", "mac"):
            f = r[core]
            rate = r["lut_macs_per_cycle"] if core == "lut" else r["mac_macs_per_cycle"]
            last = (f"{r['ratio']:.2f}x" if core == "lut" else "")
            last2 = (f"{r['ratio_without_clock']:.2f}x" if core == "lut" else "")
            check = (f"{r['gate_level_tiles']} tiles, {r['gate_level_mismatches']} mismatches (models)"
                     if core == "lut" else
                     f"{r['baseline_words']} outputs, {r['baseline_mismatches']} mismatches (numpy)")
            label = f"{r['w']} x {r['a']}" if core == "lut" else ""
            print(f"{label:<11} | {core:<4} {f['luts']:>6} {f['ffs']:>5} {rate:>8.1f} {f['clock_share']:>6.0%} | "
                  f"{f['pj_per_mac']:>7.3f} | {last:>14} {last2:>10} | {check}")
    mism = [r for r in rows if r["gate_level_mismatches"] or r["baseline_mismatches"]]
    for r in mism:
        print(f"gate-level mismatch at {r['w']} x {r['a']}: "
              f"{r['mismatch'] or str(r['baseline_mismatches']) + ' baseline outputs differ from numpy'}")
    print(f"({time.perf_counter() - t0:.0f} s; MACs/cycle: measured over each core's window, "
          f"the LUT core's including its table build and pipeline fill per tile)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if mism else 0


if __name__ == "__main__":
    sys.exit(main())
