"""Logic levels, ECP5 resources and Fmax of the attention RTL's parts on their own: the 1D lane
(rtl.attention.lane.Lane1D), the pipelined reciprocal (rtl.lib.recip.Recip) and the 2D PE
(rtl.attention.pe.AttentionPE), each with a register on every input and output, through
rtl.attention.synth's no-share flows (generic: ``synth -flatten -lut 4 -noshare`` + ``ltp -noff``;
ecp5: synth_ecp5 without ``share``, then nextpnr-ecp5 out of context with ``--pnr``).

Usage: python bench/bench_attention_parts_synth.py --part lane --exp-stages 140 --recip-stages 8 --target generic
       python bench/bench_attention_parts_synth.py --part lane --exp-stages 140 --recip-stages 33 \
           --lane-mul-stages 11 --lane-add-stages 11 --target generic
       python bench/bench_attention_parts_synth.py --part lane --exp-stages 140 --recip-stages 33 \
           --lane-mul-stages 11 --lane-add-stages 11 --lane-max-stages 3 --lane-mul dsp_reg --target ecp5 --pnr
       python bench/bench_attention_parts_synth.py --part recip --recip-stages 8 --target ecp5 --pnr [--seed 1]
       python bench/bench_attention_parts_synth.py --part pe --exp-macs 4 --mul-stages 4 --target generic
       python bench/bench_attention_parts_synth.py --part pe --exp-macs 4 --mul-stages 11 --add-stages 11 \
           --rint-stages 11 --ldexp-stages 8 --precision fp16 --target ecp5 --pnr --seed 1
Run one at a time (a shared 2-core machine); ``timeout 900`` around it.
"""
from __future__ import annotations

import argparse
import json
import time

from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class Registered(wiring.Component):
    """``part`` with a register on every input and every output port (every path register to register)."""

    def __init__(self, part):
        self.part = part
        super().__init__({name: (In(m.shape) if m.flow == wiring.In else Out(m.shape))
                          for name, m in part.signature.members.items()})

    def elaborate(self, platform):
        m = Module()
        m.submodules.part = p = self.part
        for name, member in p.signature.members.items():
            r = Signal(member.shape, name=f"{name}_q")
            if member.flow == wiring.In:
                m.d.sync += r.eq(getattr(self, name))
                m.d.comb += getattr(p, name).eq(r)
            else:
                m.d.sync += r.eq(getattr(p, name))
                m.d.comb += getattr(self, name).eq(r)
        return m


def part_of(args):
    if args.part == "lane":
        from rtl.attention.lane import Lane1D

        return Lane1D(args.exp_macs, args.exp_stages, args.recip_stages, args.lane_mul_stages, args.lane_add_stages,
                      args.lane_mul, args.lane_max_stages)
    if args.part == "recip":
        from rtl.lib.recip import Recip

        return Recip(args.recip_stages)
    from rtl.attention.pe import AttentionPE

    return AttentionPE(args.exp_macs, first_col=False, precision=args.precision, mul_stages=args.mul_stages,
                       add_stages=args.add_stages, rint_stages=args.rint_stages, ldexp_stages=args.ldexp_stages,
                       mul=args.mul)


def main() -> None:
    from rtl.attention.synth import synthesize_no_share

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["lane", "recip", "pe"], required=True)
    ap.add_argument("--exp-macs", type=int, default=6)
    ap.add_argument("--exp-stages", type=int, default=0)
    ap.add_argument("--recip-stages", type=int, default=0)
    ap.add_argument("--mul-stages", type=int, default=0, help="the 2D PE's multiplier (latency2d)")
    ap.add_argument("--lane-mul-stages", type=int, default=0, help="the lane's multiplier (latency1d.mul)")
    ap.add_argument("--lane-mul", default="dsp", help="the lane's multipliers (rtl.lib.fp.MULTIPLIERS): dsp, "
                    "lut, dsp_reg (ECP5 MULT18X18D with their own registers)")
    ap.add_argument("--lane-add-stages", type=int, default=0,
                    help="the lane's adder (latency1d.add; the lane's exp op is then --exp-stages + this)")
    ap.add_argument("--lane-max-stages", type=int, default=0, help="the lane's compare (latency1d.max)")
    ap.add_argument("--add-stages", type=int, default=0, help="the 2D PE's adders (latency2d_add)")
    ap.add_argument("--rint-stages", type=int, default=0, help="the 2D PE's rint (latency2d_rint)")
    ap.add_argument("--ldexp-stages", type=int, default=0, help="the 2D PE's ldexp (latency2d_ldexp)")
    ap.add_argument("--mul", choices=["dsp", "dsp_reg"], default="dsp", help="the 2D PE's 18x18 products")
    ap.add_argument("--precision", choices=["bf16", "fp16"], default="bf16", help="the 2D PE's operands")
    ap.add_argument("--target", choices=["generic", "ecp5"], default="generic")
    ap.add_argument("--pnr", action="store_true")
    ap.add_argument("--freq", type=float, default=150.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir")
    ap.add_argument("--hier", action="store_true", help="rtl.attention.synth's hierarchical flow (ecp5)")
    ap.add_argument("--timeout", type=float, default=880.0)
    args = ap.parse_args()
    text = verilog.convert(Registered(part_of(args)), name="part", emit_src=False)
    t0 = time.perf_counter()
    res = synthesize_no_share(text, "part", args.target, args.pnr, args.freq, args.seed, args.workdir, args.timeout,
                              hierarchical=args.hier)
    res.update({k: getattr(args, k) for k in ("part", "exp_macs", "exp_stages", "recip_stages", "mul_stages",
                                              "lane_mul_stages", "lane_add_stages", "lane_mul", "lane_max_stages",
                                              "add_stages", "rint_stages", "ldexp_stages", "mul", "precision", "seed")},
               wall_s=round(time.perf_counter() - t0, 1))
    print(json.dumps(res, indent=1), flush=True)


if __name__ == "__main__":
    main()
