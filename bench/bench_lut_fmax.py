"""ECP5 resources and Fmax of the LUT core's FPGA configuration, one W x A per build (issue 23 item 6).

The build is ``lut-m2n8k4-ecp5``'s organisation (M2 N8 K4, symmetric tables,
``pipeline_cycles`` 4, ``precompute_pipeline_cycles`` 4; ``--pipeline 5`` adds the table register
stage) for ONE weight x activation
format, with the density bench's options (``bench_lut_synth.LUT_OPTIONS``: external
buffers, 16 entries; 2 precompute entries per cycle) and its flow (shifters premapped):
yosys ``synth_ecp5`` + nextpnr-ecp5 (ECP5-85k, out of context, seed 1). Prints LUT4 /
FF / DSP / BRAM / Fmax, the critical path's ends and its logic / routing split, and the
wall time of each tool. ``--timeout`` (default 900 s) is the whole run's budget: yosys gets it and
nextpnr what is left, so an outer ``timeout`` of the same length never cuts the run before it
prints; yosys' counts are printed as soon as yosys ends (they stand if nextpnr does not finish).

    ARCHSIM_YOSYS=native python bench/bench_lut_fmax.py --only W2,A16 [--pipeline 4] [--interleave D] [--seed S] [--json out.json]

``--preset NAME [--set KEY=VALUE ...]`` synthesizes a preset's own build instead (all its formats, its
own buffers: what ``archsim rtl synth --arch NAME --target ecp5 --pnr`` builds), with the bench's flow.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_lut_synth as synth_bench  # noqa: E402
from archsim.errors import ToolError  # noqa: E402
from rtl.synth import _tool_version, place_and_route, synthesize  # noqa: E402

WF = {"W1": "int1", "W1.58": "ternary", "W2": "int2", "W4": "int4"}
AF = {"A8": "int8", "A16": "fp16"}
#: nextpnr's --freq (the target of its timing-driven placement), as ``rtl.synth.synthesize_verilog``'s
#: default that this bench used before it ran nextpnr itself
PNR_FREQ_MHZ = 200.0


def build(w: str, a: str, pipeline: int, precompute: int, tile_n: int = 8, interleave: int = 1):
    """The LUT params of one W x A build of the FPGA configuration (``tile_n`` 8; smaller only to
    bound a synthesis, and then not the preset's build)."""
    from dataclasses import replace

    p = synth_bench.lut_params(2, tile_n, 4, WF[w], AF[a])
    return replace(p, pipeline_cycles=pipeline, precompute_pipeline_cycles=precompute, lookup_interleave=interleave)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="W,A", help="one pair, e.g. W2,A16")
    ap.add_argument("--preset", metavar="NAME", help="instead of --only: this preset's own build (all its formats)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="with --preset: a spec override")
    ap.add_argument("--pipeline", type=int, default=4, help="pipeline_cycles (default 4, as the preset)")
    ap.add_argument("--precompute", type=int, default=4, help="precompute_pipeline_cycles (default 4)")
    ap.add_argument("--tile-n", type=int, default=8, help="columns (default 8, the preset's)")
    ap.add_argument("--interleave", type=int, default=1, help="lookup_interleave (default 1)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr seed (default 1)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for the whole run: yosys, then nextpnr on what is left (default 900)")
    ap.add_argument("--workdir", help="keep yosys.log / nextpnr.log here")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    if args.preset:
        from archsim.spec import load_arch

        p, options, name = load_arch(args.preset, args.set).params, None, f"{args.preset} {' '.join(args.set)}".strip()
    else:
        w, _, a = (args.only or "").partition(",")
        if w not in WF or a not in AF:
            raise SystemExit(f"error: --only: expected W in {', '.join(WF)} and A in {', '.join(AF)}, got {args.only!r}")
        p, options = build(w, a, args.pipeline, args.precompute, args.tile_n, args.interleave), synth_bench.LUT_OPTIONS
        name = f"{w} x {a}" + (f" N{args.tile_n}" if args.tile_n != 8 else "")
    stages: dict[str, float] = {}
    last = [time.time(), None]

    def progress(stage: str):
        now = time.time()
        if last[1]:
            stages[last[1]] = round(now - last[0], 1)
        last[0], last[1] = now, stage
        print(f"  {stage} ...", file=sys.stderr, flush=True)

    start = time.time()
    tmp = None if args.workdir else tempfile.TemporaryDirectory(prefix="bench-lut-fmax-")
    work = Path(args.workdir or tmp.name)
    try:
        # yosys alone first (no cache: nextpnr needs its netlist in ``work``), then nextpnr on what is left
        fig = synthesize(p, target="ecp5", options=options, timeout_s=args.timeout, workdir=work,
                         use_cache=False, progress=progress, **synth_bench.SYNTH)
        print(f"{name}: yosys {fig['luts']:,} LUT4, {fig.get('carry', 0):,} CCU2C, {fig['ffs']:,} FF, "
              f"{fig['dsps']} DSP, {fig.get('bram', 0)} BRAM, {fig.get('lutram', 0)} TRELLIS_DPR16X4 "
              f"({time.time() - start:.0f} s)", flush=True)
        progress("nextpnr")
        left_s = args.timeout - (time.time() - start)
        if left_s < 60:
            raise ToolError(f"nextpnr-ecp5: not started, {left_s:.0f} s of --timeout {args.timeout:.0f} left")
        fig.update(place_and_route(work, freq_mhz=PNR_FREQ_MHZ, seed=args.seed, timeout_s=left_s))
    except ToolError as err:
        print(f"{name}: {err} ({time.time() - last[0]:.0f} s in {last[1]}; before it {stages})")
        return 1
    finally:
        if tmp is not None:
            tmp.cleanup()
    if last[1]:
        stages[last[1]] = round(time.time() - last[0], 1)
    cp = fig.get("critical_path", {})
    row = {"build": name, "pipeline_cycles": p.pipeline_cycles, "precompute_pipeline_cycles": p.precompute_pipeline_cycles,
           "lookup_interleave": p.lookup_interleave,
           "luts": fig["luts"], "carry": fig.get("carry", 0), "ffs": fig["ffs"], "dsps": fig["dsps"], "bram": fig.get("bram", 0),
           "fmax_mhz": fig["fmax_mhz"], "seed": args.seed, "critical_path": cp, "utilization": fig.get("utilization"), "wall_s": stages,
           "tools": {**(fig.get("tools") or {}), "nextpnr-ecp5": _tool_version("nextpnr-ecp5")}}
    print(f"{row['build']} (pipeline {p.pipeline_cycles}, precompute {p.precompute_pipeline_cycles}, "
          f"interleave {p.lookup_interleave}, "
          f"seed {args.seed}): {row['luts']:,} LUT4, "
          f"{row['ffs']:,} FF, {row['dsps']} DSP, {row['bram']} BRAM, {row['fmax_mhz']} MHz; critical path "
          f"{cp.get('from')} -> {cp.get('to')} ({cp.get('logic_ns')} ns logic + {cp.get('routing_ns')} ns routing); "
          f"wall {stages}")
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
