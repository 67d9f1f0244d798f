"""LUT tensor core vs a dequantize-then-MAC core of equal peak MACs/cycle, per W x A, and BitNet decode.

1. Per W x A (W1, W1.58, W2, W4 x A8, A16) one GEMM (default 256 x 2048 x 2048, weights
   in the W format) on ``lut-m2n64k4`` built for that pair only, and on a baseline of
   the SAME PEAK MACs/cycle AT THAT W (the bit-serial LUT core's peak is
   ``tile_m * tile_n * group_k / b``: 512 / 256 / 128 at W1 / W2 / W4), the same DRAM
   and buffers: the systolic ``lut-baseline-mac-2x128-a8`` / ``-a16`` rebuilt at that
   peak in its BEST shape and dataflow for this GEMM (``archsim compare --iso macs
   --tune``'s search over every rows x cols with rows * cols = peak x ws/os/is/auto: the
   least energy among the shapes within 1 % of the fastest); its
   weights travel packed (DRAM and weight-buffer reads) and are widened to int8 / 16
   bits at the array:
   cycles, energy, core area, MACs/cycle per mm^2 of core (compute density), MACs per uJ
   (whole run: datapath + SRAM + DRAM) and per uJ of the datapath alone ("core").
   Core = the compute datapath (LUT units + precompute unit + table / accumulator
   registers, vs MACs + PE registers); the buffers, DRAM and vector unit are the same
   on both and left out of the density. Areas come from archsim's AREA MODEL (45 nm
   gate figures, ``archsim.area``) unless synthesis results are given:
   ``--synth`` runs (or reads from archsim's synth cache) ``bench/bench_lut_synth.py``'s
   syntheses of the RTL, ``--synth-json F`` reads that script's ``--json`` output; the
   synthesized figures (generic 4-LUTs and the density ratio) are printed in their own
   columns, labelled "synth". The like-for-like synthesized pairs (specialized MAC core,
   multi-format LUT core, Fmax-aware) are ``bench/bench_lut_like_for_like.py``.
2. BitNet b1.58 2B4T decode (kv 128) at equal peak MACs (256/cycle at W1.58) and equal
   DRAM (32 B/cycle): the LUT core (each design tuned over its shapes and mapping
   options) vs the best-shaped A8 baseline: tokens/s, energy/token, area (area model),
   tokens/s per mm^2; the 16x16 shape the baseline had until 2026-11-27 is printed as a
   labelled strawman row; then the table-precompute fusion study (in-tile vs fused, and
   a slow 1 entry/cycle precompute unit).

    python bench/bench_lut_vs_mac.py [--gemm M K N] [--synth | --synth-json F]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from archsim.area import area_breakdown  # noqa: E402
from archsim.simulation import simulate  # noqa: E402
from archsim.spec.load import load_arch  # noqa: E402
from archsim.templates.lut.tile import PLANES  # noqa: E402
from archsim.cli.compare import at_peak, figures, tune  # noqa: E402
from workloads.zoo._net import Net  # noqa: E402
from types import SimpleNamespace  # noqa: E402

WEIGHTS = (("W1", "int1"), ("W1.58", "ternary"), ("W2", "int2"), ("W4", "int4"))
ACTS = (("A8", "int8"), ("A16", "fp16"))
LUT = "lut-m2n64k4"
BASE = {"A8": "lut-baseline-mac-2x128-a8", "A16": "lut-baseline-mac-2x128-a16"}
CORE = ("lut_units", "lut_precompute", "pe_registers", "mac")


def gemm(m: int, k: int, n: int, w: str, a: str):
    net = Net(f"gemm_{m}x{k}x{n}_{w}_{a}", weight_precision=w, act_precision=a,
              acc_precision="int32" if a == "int8" else "fp32")
    net.linear("gemm", net.input("x", (m, k)), n, bias=False)
    return net.graph


def core_mm2(arch) -> float:
    return sum(i.um2 for i in area_breakdown(arch) if i.component.split(".")[0] in CORE) / 1e6


def peak_of(arch) -> float:
    """Peak MACs/cycle: the LUT core's at its weight format, or the systolic array's PEs."""
    p = arch.params
    if hasattr(p, "group_k"):
        return p.tile_m * p.tile_n * p.group_k / PLANES[p.weight_format]
    return p.rows * p.cols


def best_shaped(arch, graph, macs_per_cycle: float) -> tuple[dict, object]:
    """``arch`` rebuilt with ``macs_per_cycle`` peak MACs/cycle in its fastest shape and mapping
    options on ``graph`` (``archsim compare --tune``'s search): ``(overrides, arch)``."""
    shape, best, _tried = tune(graph, at_peak(arch, graph, macs_per_cycle, "bench"), SimpleNamespace(detailed=False), {})
    return shape, best


def baseline(aname: str, lut, graph) -> tuple[dict, object]:
    """The systolic baseline with the LUT core's peak MACs/cycle at its weight format, best-shaped for ``graph``."""
    return best_shaped(load_arch(BASE[aname]), graph, peak_of(lut))


def run_pair(args, wname, w, aname, a) -> dict:
    lut = load_arch(LUT, {"weight_formats": [w], "activation_formats": [a], "weight_format": w,
                          "activation_format": a})
    g = gemm(*args.gemm, w, a)
    shape, base = baseline(aname, lut, g)
    lut_shape, lut = best_shaped(lut, g, peak_of(lut))  # best against best: the LUT core's shape searched too
    out = {"w": wname, "a": aname, "mac_shape": shape, "lut_shape": lut_shape}
    for name, arch in (("lut", lut), ("mac", base)):
        r = simulate(g, arch)
        mm2 = core_mm2(arch)
        out[name] = {"arch": arch.name, "cycles": r.total_cycles, "energy_uj": r.energy_pj / 1e6,
                     "core_energy_uj": r.energy_pj_by_component.get("compute", 0.0) / 1e6,
                     "core_mm2": mm2, "macs": r.macs, "peak": peak_of(arch),
                     "macs_per_cycle": r.macs / r.total_cycles,
                     "density": r.macs / r.total_cycles / mm2,
                     "macs_per_uj": r.macs / (r.energy_pj / 1e6),
                     "core_macs_per_uj": r.macs / max(1e-12, r.energy_pj_by_component.get("compute", 0.0) / 1e6)}
    return out


def synth_rows(args) -> dict:
    """(W, A) -> the RTL syntheses' row (``lut`` / ``mac`` figures, ``ratio``: density LUT/MAC), read from
    ``bench/bench_lut_synth.py --json`` output (``--synth`` runs that script: archsim's synth cache makes a
    repeated run fast)."""
    path = args.synth_json
    if not path:
        import tempfile

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_lut_synth  # the RTL's synthesis bench (rtl/lut)

        path = str(Path(tempfile.mkdtemp()) / "lut_synth.json")
        bench_lut_synth.main(["--tile", *map(str, args.synth_tile), "--no-ecp5", "--json", path])
    rows = json.loads(Path(path).read_text())
    return {(r["w"], r["a"]): r for r in rows}


def decode_headline(args) -> dict:
    """BitNet decode, LUT core vs the best-shaped MAC baseline at equal peak MACs and DRAM (both tuned)."""
    import workloads
    from archsim.area import area_mm2

    graph = workloads.load("bitnet-b1.58-2b", phase="decode", kv_len=args.kv)
    lut0 = load_arch(LUT, {"activation_formats": ["int8"]})  # like the int8 MAC array: int8 activations only
    peak = peak_of(lut0)
    lut_shape, lut = best_shaped(lut0, graph, peak)
    mac_shape, mac = best_shaped(load_arch(BASE["A8"]), graph, peak)
    straw = load_arch(BASE["A8"], {"rows": 16, "cols": 16, "dataflow": "os"})
    full = load_arch(LUT, lut_shape)
    print(f"\nBitNet b1.58 2B4T decode (kv {args.kv}): equal peak {peak:g} MACs/cycle (W1.58), 1 GHz, equal DRAM "
          f"{lut0.dram.bytes_per_cycle:g} B/cycle, same buffers; each design tuned over its shapes and mapping options")
    hdr = (f"{'design':<38} {'shape':<44} {'tokens/s':>8} {'mJ/token':>8} {'area mm2':>8} {'tok/s/mm2':>9} "
           f"{'DRAM MB':>8} {'ternary linears ms':>18} {'lm_head ms':>10}")
    print(hdr)
    print("-" * len(hdr))
    rows = {}
    for label, arch, shape in (("LUT core, W1-W4 x int8 (lut-m2n64k4)", lut, lut_shape),
                               ("MAC baseline, best-shaped (A8)", mac, mac_shape),
                               ("MAC 16x16 OS (strawman, <=11/2026)", straw, {"rows": 16, "cols": 16, "dataflow": "os"}),
                               ("LUT preset as shipped (+fp16/bf16)", full, lut_shape)):
        r = simulate(graph, arch)
        f = figures(r)
        mm2 = area_mm2(arch)
        clk = arch.clock_mhz * 1e3  # cycles per ms
        proj = sum(x.cycles for x in r.layers if x.name.endswith("_proj")) / clk
        head = sum(x.cycles for x in r.layers if x.name.endswith("lm_head")) / clk
        rows[label] = {"tokens_per_s": f["tokens_per_s"], "mj_per_token": f["energy_per_token_j"] * 1e3,
                       "area_mm2": mm2, "tokens_per_s_per_mm2": f["tokens_per_s"] / mm2,
                       "dram_mb": r.dram_bytes / 1e6, "shape": shape, "linears_ms": proj, "lm_head_ms": head}
        text = " ".join(f"{k}={v}" for k, v in shape.items())
        print(f"{label:<38} {text:<44} {f['tokens_per_s']:>8.2f} {f['energy_per_token_j'] * 1e3:>8.2f} {mm2:>8.3f} "
              f"{f['tokens_per_s'] / mm2:>9.3f} {r.dram_bytes / 1e6:>8.0f} {proj:>18.2f} {head:>10.2f}")
    a, b = rows["LUT core, W1-W4 x int8 (lut-m2n64k4)"], rows["MAC baseline, best-shaped (A8)"]
    print(f"LUT / best-shaped MAC: {a['tokens_per_s'] / b['tokens_per_s']:.2f}x tokens/s, "
          f"{b['mj_per_token'] / a['mj_per_token']:.2f}x less energy per token, {a['area_mm2'] / b['area_mm2']:.2f}x "
          f"the area, {a['tokens_per_s_per_mm2'] / b['tokens_per_s_per_mm2']:.2f}x tokens/s per mm2 "
          f"[iso-MACs, iso-DRAM, both tuned]. The ternary linears take {a['linears_ms']:.2f} ms on the LUT core, "
          f"{b['linears_ms']:.2f} ms on the MAC array (both near DRAM-bound on the same packed weights); the bf16 "
          f"LM head runs on the LUT preset's vector unit (the LUT core runs 1-4-bit weights only) and on the "
          f"baseline's array.")
    return rows


def decode(args) -> None:
    decode_headline(args)
    print(f"\nTable-precompute fusion study, BitNet b1.58 2B4T decode (kv {args.kv}), 1 GHz, 32 B/cycle DRAM:")
    slow = load_arch(LUT, {"precompute_entries_per_cycle": 1})
    runs = [("LUT, precompute in-tile", LUT, {}), ("LUT, precompute fused", LUT, {"precompute_fusion": True}),
            (f"MAC {BASE['A8'].split('-')[-2]} (A8)", BASE["A8"], {}),
            ("LUT 1 entry/cyc, in-tile", slow, {}), ("LUT 1 entry/cyc, fused", slow, {"precompute_fusion": True})]
    hdr = (f"{'run':<26} {'tokens/s':>9} {'mJ/token':>9} {'cycles':>12} {'LUT-core layers':>16} "
           f"{'their mJ':>9} {'build exposed':>14}")
    print(hdr)
    print("-" * len(hdr))
    res = {}
    for label, arch, opts in runs:
        r = simulate("bitnet-b1.58-2b", arch, phase="decode", kv_len=args.kv, **opts)
        rates = r.token_rates()
        core = [l for l in r.layers if l.mapping.get("unit") == "array" and "weight_format" in l.mapping]
        exposed = sum(l.mapping.get("precompute_exposed_cycles", 0) * l.repeat for l in core)
        core_cycles = sum(l.cycles for l in core)
        core_mj = sum(l.energy_pj for l in core) / 1e9
        res[label] = (r, core_cycles, core_mj)
        print(f"{label:<26} {rates['tokens_per_s']:>9.2f} {rates['energy_per_token_pj'] / 1e9:>9.2f} "
              f"{r.total_cycles:>12,} {core_cycles:>16,} {core_mj:>9.2f} {exposed:>14,}")
    for plain, fused in (("LUT, precompute in-tile", "LUT, precompute fused"),
                         ("LUT 1 entry/cyc, in-tile", "LUT 1 entry/cyc, fused")):
        (r0, c0, e0), (r1, c1, e1) = res[plain], res[fused]
        print(f"fusion ({plain.split(',')[0]}): LUT-core layers {c0:,} -> {c1:,} cycles ({(c0 - c1) / c0:+.2%} saved), "
              f"{e0:.2f} -> {e1:.2f} mJ; decode step {r0.total_cycles:,} -> {r1.total_cycles:,} cycles "
              f"({(r0.total_cycles - r1.total_cycles) / r0.total_cycles:+.2%}), {r0.energy_pj / 1e9:.2f} -> "
              f"{r1.energy_pj / 1e9:.2f} mJ")
    r0 = res["LUT, precompute in-tile"][0]
    by_type: dict = {}
    for l in r0.layers:
        if "weight_format" in l.mapping and l.mapping.get("unit") == "array":
            key = l.name.split(".")[-1]
            by_type.setdefault(key, [0, 0])
            by_type[key][0] += l.mapping.get("precompute_exposed_cycles", 0) * l.repeat
            by_type[key][1] += l.cycles
    print("per layer type (in-tile precompute): exposed table-build cycles / layer cycles: " + ", ".join(
        f"{k} {v[0]:,}/{v[1]:,}" for k, v in sorted(by_type.items())))
    print("(fused: the tiles skip the table build, their A loads carry the tables (2.75x the int8 bytes), "
          "and the producer's table build runs on the vector unit at vector.op cost; a slow precompute unit "
          "makes the in-tile mapping pick columns wider than the array, whose partial sums cross the output "
          "buffer every group)")
    rb = res[f"MAC {BASE['A8'].split('-')[-2]} (A8)"][0]
    print(f"LUT vs MAC preset {BASE['A8']}: {rb.total_cycles / r0.total_cycles:.2f}x tokens/s, "
          f"{rb.energy_pj / r0.energy_pj:.2f}x less energy per token. Both stream the same packed weights "
          f"(DRAM bytes LUT {r0.dram_bytes / 1e6:.0f} MB, MAC {rb.dram_bytes / 1e6:.0f} MB); the bf16 LM head "
          f"runs on the LUT preset's vector unit but on the baseline's array.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemm", nargs=3, type=int, default=[256, 2048, 2048], metavar=("M", "K", "N"))
    ap.add_argument("--kv", type=int, default=128, help="KV-cache length of the decode step (default 128)")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--synth", action="store_true", help="read/run the RTL syntheses (bench_lut_synth.py, cached)")
    src.add_argument("--synth-json", metavar="FILE", help="bench_lut_synth.py --json output to read")
    ap.add_argument("--synth-tile", nargs=3, type=int, default=[2, 8, 4], metavar=("M", "N", "K"))
    ap.add_argument("--no-decode", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    synth = synth_rows(args) if (args.synth or args.synth_json) else {}
    m, k, n = args.gemm
    if synth:
        p = next(iter(synth.values()))["lut"]["generic"].get("params", {})
        print(f"SYNTH columns: the RTL (rtl/lut) LUT core M{p.get('tile_m')} N{p.get('tile_n')} K{p.get('group_k')} "
              f"built for each pair vs rtl.lut.mac_baseline of the same peak at that W, yosys generic 4-LUTs; density = peak "
              f"MACs/cycle per 4-LUT (bench/bench_lut_synth.py). The other columns: archsim's AREA MODEL.")
    print(f"GEMM {m} x {k} x {n} on {LUT} (built for each pair) vs {BASE['A8']} / {BASE['A16']} "
          f"rebuilt at the LUT's peak at each W in its best shape for this GEMM ([shape]: the least energy within 1 % "
          f"of the fastest, `compare --tune`; equal DRAM and buffers). core mm^2 from the AREA MODEL (45 nm); density = "
          f"MACs/cycle per core mm^2" + ("; 'synth' columns from yosys (generic 4-LUTs, bench_lut_synth.py)"
                                         if synth else "; no synthesis results given (--synth / --synth-json)"))
    hdr = (f"{'W x A':<11}| {'core':<4} {'peak':>5} {'cycles':>10} {'MAC/cyc':>8} {'energy uJ':>10} {'core mm2':>9} "
           f"{'density':>8} {'MAC/uJ':>8} | {'density LUT/MAC':>15} {'MAC/uJ LUT/MAC':>14} {'core MAC/uJ LUT/MAC':>19}"
           + (f" | {'synth 4-LUTs':>12} {'synth density LUT/MAC':>21}" if synth else ""))
    print(hdr)
    print("-" * len(hdr))
    for aname, a in ACTS:
        for wname, w in WEIGHTS:
            row = run_pair(args, wname, w, aname, a)
            for core in ("lut", "mac"):
                f = row[core]
                ratios = (f"{row['lut']['density'] / row['mac']['density']:>14.2f}x "
                          f"{row['lut']['macs_per_uj'] / row['mac']['macs_per_uj']:>13.2f}x "
                          f"{row['lut']['core_macs_per_uj'] / row['mac']['core_macs_per_uj']:>18.2f}x") \
                    if core == "lut" else f"{'':>15} {'':>14} {'':>19}"
                line = (f"{(wname + ' x ' + aname) if core == 'lut' else '':<11}| {core:<4} {f['peak']:>5g} {f['cycles']:>10,} "
                        f"{f['macs_per_cycle']:>8.1f} {f['energy_uj']:>10.1f} {f['core_mm2']:>9.4f} "
                        f"{f['density']:>8.0f} {f['macs_per_uj']:>8.0f} | {ratios}")
                s = synth.get((wname, aname))
                if synth:
                    line += (f" | {s[core]['generic']['luts']:>12,} "
                             f"{(format(s['ratio'], '.2f') + 'x') if core == 'lut' else '':>21}") if s else " | -"
                line += "  [" + " ".join(f"{k}={v}" for k, v in row[core + "_shape"].items()) + "]"
                print(line)
    if not args.no_decode:
        decode(args)
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
