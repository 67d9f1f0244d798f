"""ECP5 resources and Fmax of the rtl/lib arithmetic units at each pipeline depth (yosys synth_ecp5 +
nextpnr-ecp5, 85k, out of context).

Each unit is wrapped with a register on every input (so every timed path is register to register,
the unit's own ``stages`` registers included) and synthesized at the ``stages`` asked for.

Usage: python bench/bench_rtl_lib_synth.py [--unit fp32_add --unit bf16_mul ...] [--stages 1 --stages 3]
       [--max-only] [--path] [--workdir DIR] [--timeout 900] [--seed 1] [--json F]
Units: fp32_add fp32_mul bf16_add bf16_mul fp16_add fp16_mul e4m3_add e4m3_mul e5m2_mul
       fp32_add_finite fp32_mul_finite bf16_mul_fp32 bf16_mul_lut fp16_mul_lut e4m3_mul_lut e5m2_mul_lut fp32_mul_lut
       fp32_mul_finite_lut bf16_mul_fp32_lut
       fp16_mul_fp32_lut i64_to_fp32 lzc48 posit16_decode exp2_4 exp2_4_lut int8_mac e5m2_add rint ldexp
       round_pack48_fp32 fp32_to_i32 recip i32_to_fp32 posit8_decode e4m3_to_i16, the fused multiply-adds
       fp32_fma bf16_fma (and fp32_fma_reg bf16_fma_reg with mul="dsp_reg"), and with registered DSP
       blocks (mul="dsp_reg"): bf16_mul_reg fp16_mul_reg fp32_mul_reg e4m3_mul_reg bf16_mul_fp32_reg
       fp16_mul_fp32_reg fp32_mul_finite_reg exp2_4_reg int8_mac_reg.
Default: every unit at stages 1, half its maximum and its maximum. Run one at a time (a 2-core shared machine); results cached.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import units as U
from rtl.lib.recip import Recip
from rtl.synth import synthesize_verilog

UNITS = {
    "fp32_add": lambda s: U.FpAdd("fp32", s), "fp32_mul": lambda s: U.FpMul("fp32", s),
    "bf16_add": lambda s: U.FpAdd("bf16", s), "bf16_mul": lambda s: U.FpMul("bf16", s),
    "fp16_add": lambda s: U.FpAdd("fp16", s), "fp16_mul": lambda s: U.FpMul("fp16", s),
    "e4m3_add": lambda s: U.FpAdd("fp8_e4m3", s), "e4m3_mul": lambda s: U.FpMul("fp8_e4m3", s),
    "e5m2_mul": lambda s: U.FpMul("fp8_e5m2", s),
    "fp32_add_finite": lambda s: U.Fp32AddFinite(s), "fp32_mul_finite": lambda s: U.Fp32MulFinite(s),
    "bf16_mul_fp32": lambda s: U.NarrowMulFp32("bf16", s),
    "bf16_mul_lut": lambda s: U.FpMul("bf16", s, "lut"), "fp16_mul_lut": lambda s: U.FpMul("fp16", s, "lut"),
    "e4m3_mul_lut": lambda s: U.FpMul("fp8_e4m3", s, "lut"), "e5m2_mul_lut": lambda s: U.FpMul("fp8_e5m2", s, "lut"), "fp32_mul_lut": lambda s: U.FpMul("fp32", s, "lut"),
    "fp32_mul_finite_lut": lambda s: U.Fp32MulFinite(s, "lut"),
    "bf16_mul_fp32_lut": lambda s: U.NarrowMulFp32("bf16", s, "lut"),
    "fp16_mul_fp32_lut": lambda s: U.NarrowMulFp32("fp16", s, "lut"), "i64_to_fp32": lambda s: U.IntToFp(64, "fp32", s),
    "lzc48": lambda s: U.Lzc(48, s), "posit16_decode": lambda s: U.PositDecode(16, 1, s),
    "exp2_4": lambda s: U.Exp2(4, s), "exp2_4_lut": lambda s: U.Exp2(4, s, "lut"),
    "int8_mac": lambda s: U.IntMac(8, 8, 32, s),
    "e5m2_add": lambda s: U.FpAdd("fp8_e5m2", s), "rint": lambda s: U.Rint(s), "ldexp": lambda s: U.Ldexp(s),
    "round_pack48_fp32": lambda s: U.RoundPack(48, "fp32", s), "fp32_to_i32": lambda s: U.FpToInt("fp32", 32, s),
    "recip": lambda s: Recip(s), "i32_to_fp32": lambda s: U.IntToFp(32, "fp32", s),
    "posit8_decode": lambda s: U.PositDecode(8, 0, s), "e4m3_to_i16": lambda s: U.FpToInt("fp8_e4m3", 16, s),
    "fp32_fma": lambda s: U.FpFma("fp32", s), "bf16_fma": lambda s: U.FpFma("bf16", s),
    "fp32_fma_reg": lambda s: U.FpFma("fp32", s, "dsp_reg"), "bf16_fma_reg": lambda s: U.FpFma("bf16", s, "dsp_reg"),
    # mul="dsp_reg": instantiated MULT18X18D blocks whose own registers are the cut points around them
    "bf16_mul_reg": lambda s: U.FpMul("bf16", s, "dsp_reg"), "fp16_mul_reg": lambda s: U.FpMul("fp16", s, "dsp_reg"),
    "fp32_mul_reg": lambda s: U.FpMul("fp32", s, "dsp_reg"), "e4m3_mul_reg": lambda s: U.FpMul("fp8_e4m3", s, "dsp_reg"),
    "bf16_mul_fp32_reg": lambda s: U.NarrowMulFp32("bf16", s, "dsp_reg"),
    "fp16_mul_fp32_reg": lambda s: U.NarrowMulFp32("fp16", s, "dsp_reg"),
    "fp32_mul_finite_reg": lambda s: U.Fp32MulFinite(s, "dsp_reg"), "exp2_4_reg": lambda s: U.Exp2(4, s, "dsp_reg"),
    "int8_mac_reg": lambda s: U.IntMac(8, 8, 32, s, "dsp_reg"),
}


class InputRegistered(wiring.Component):
    """``unit`` with a register on each input port (its outputs are the top's)."""

    def __init__(self, unit):
        self.unit = unit
        sig = {name: (In(m.shape) if m.flow == wiring.In else Out(m.shape))
               for name, m in unit.signature.members.items()}
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = u = self.unit
        for name, member in u.signature.members.items():
            if member.flow == wiring.In:
                r = Signal(member.shape, name=f"{name}_q")
                m.d.sync += r.eq(getattr(self, name))
                m.d.comb += getattr(u, name).eq(r)
            else:
                m.d.comb += getattr(self, name).eq(getattr(u, name))
        return m


def critical_path_steps(report_file: Path) -> list[str]:
    """nextpnr's critical path, one line per step (delay, kind, net / cell), from its JSON report."""
    paths = json.loads(report_file.read_text()).get("critical_paths") or []
    lines = []
    for s in (paths[0].get("path", []) if paths else []):
        if s["type"] != "routing" or s["delay"] > 0:
            lines.append(f"  {s['delay']:6.3f} {s['type']:8} {str(s.get('to', {}).get('cell'))[:110]}")
    return lines


def run(name: str, stages: int, timeout_s: float, workdir: str | None = None, seed: int = 1) -> dict:
    top = InputRegistered(UNITS[name](stages))
    text = verilog.convert(top, name="lib_unit", emit_src=False)
    t0 = time.perf_counter()
    work = None if workdir is None else Path(workdir) / (f"{name}_s{stages}" + (f"_seed{seed}" if seed != 1 else ""))
    r = synthesize_verilog(text, "lib_unit", target="ecp5", pnr=True, timeout_s=timeout_s, workdir=work,
                           use_cache=work is None, seed=seed)
    return {"unit": name, "stages": stages, "latency": top.unit.latency, "luts": r["luts"], "ffs": r["ffs"],
            "dsps": r["dsps"], "fmax_mhz": r["fmax_mhz"], "seconds": round(time.perf_counter() - t0, 1),
            "critical_path": r.get("critical_path")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unit", action="append", choices=list(UNITS))
    ap.add_argument("--stages", type=int, action="append", help="default: 1, half the maximum and the maximum")
    ap.add_argument("--max-only", action="store_true", help="only each unit's maximum stages")
    ap.add_argument("--workdir", help="keep each run's files (nextpnr report) under DIR/<unit>_s<stages>; no cache")
    ap.add_argument("--path", action="store_true", help="print the critical path step by step (needs --workdir)")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed (default 1)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    rows = []
    print(f"{'unit':16} {'stages':>6} {'LUT4':>6} {'FF':>6} {'DSP':>4} {'Fmax MHz':>9} {'wall s':>7}")
    for name in args.unit or list(UNITS):
        probe = UNITS[name](1)
        probe._MustUse__silence = True
        max_stages = probe.max_stages
        depths = [max_stages] if args.max_only else sorted({1, max(1, max_stages // 2), max_stages})
        for s in args.stages or depths:
            if s > max_stages:
                continue
            r = run(name, s, args.timeout, args.workdir, args.seed)
            rows.append(r)
            c = r.get("critical_path") or {}
            cp = f"{c.get('from')} -> {c.get('to')} ({c.get('logic_ns')} ns logic)" if c else ""
            print(f"{name:16} {s:>6} {r['luts']:>6} {r['ffs']:>6} {r['dsps']:>4} {r['fmax_mhz']:>9.1f} {r['seconds']:>7}  {cp}",
                  flush=True)
            if args.path and args.workdir:
                sub = f"{name}_s{s}" + (f"_seed{args.seed}" if args.seed != 1 else "")
                print("\n".join(critical_path_steps(Path(args.workdir) / sub / "report.json")), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
