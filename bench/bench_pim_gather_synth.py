"""The PIM channel's RDACC gather alone on ECP5 (yosys counts): the shipped
:class:`rtl.pim.channel.PimChannelGather` against the two forms it replaced, to show what made a
2-bank channel 4x one bank unit (docs/rtl.md "Scale").

- ``divider + Array``: the old gather -- per lane ``i // rg`` and ``i % rg`` (dividers) picking an
  accumulator through a nested ``Array`` (a one-hot ``$pmux`` per bank);
- ``running sum + Array``: per-bank starts and registered index / hit (no divider), ``Array`` select;
- ``running sum + word_select``: the same with ``word_select`` (a ``$shiftx`` mux tree), still one
  64:1 select per lane and bank;
- ``row-pair window`` (shipped): per bank one select of two rows of accumulators and one shift.

Usage: ARCHSIM_YOSYS=native python bench/bench_pim_gather_synth.py [--banks 2] [--timeout 600] [--only NAME ...]
(pim-gpt-gddr6's 64 accumulators and 8 output lanes.)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amaranth import Array, Cat, Module, Mux, Shape, Signal  # noqa: E402
from amaranth.back import verilog  # noqa: E402

from archsim.spec import load_arch  # noqa: E402
from rtl.pim.channel import PimChannelGather, channel_signature  # noqa: E402
from rtl.pim.controller import bits_for  # noqa: E402
from rtl.synth import _tool_version, synthesize_verilog  # noqa: E402


class ArrayGather(PimChannelGather):
    """``style``: "divider" (the old gather), "array" or "word_select" (running sums, one select per
    lane and bank)."""

    def __init__(self, *args, style: str):
        self.style = style
        super().__init__(*args)

    def elaborate(self, platform):
        m = Module()
        N, A = self.N, self.A
        rd_v = Signal()
        m.d.sync += rd_v.eq(self.rd)
        table = Array(Array(self.accs[32 * (b * A + j):32 * (b * A + j + 1)] for j in range(A)) for b in range(N))
        words = []
        if self.style == "divider":  # the gather as it was (rtl/pim/channel.py before this bench)
            rd_col, rd_rg = Signal.like(self.col), Signal.like(self.rg)
            m.d.sync += [rd_col.eq(self.col), rd_rg.eq(self.rg)]
            rg = Signal(bits_for(A) + 1)
            m.d.comb += rg.eq(Mux(rd_rg == 0, A, rd_rg))
            for lane in range(self.lanes):
                idx = Signal(bits_for(N * A * 2) + 1)
                m.d.comb += idx.eq(rd_col * self.lanes + lane)
                bank, acc = Signal.like(idx), Signal.like(idx)
                m.d.comb += [bank.eq(idx // rg), acc.eq(idx % rg)]
                words.append(Mux(bank < N, table[bank[:bits_for(N)]][acc[:bits_for(A)]], 0))
        else:
            rg = Signal(range(A + 1))
            m.d.comb += rg.eq(Mux(self.rg == 0, A, self.rg))
            starts = [Signal(range(N * A + 1)) for _ in range(N + 1)]
            m.d.comb += [starts[0].eq(0)] + [starts[b + 1].eq(starts[b] + rg) for b in range(N)]
            for lane in range(self.lanes):
                idx = Signal(len(self.col) + bits_for(self.lanes) + 1)
                m.d.comb += idx.eq(self.col * self.lanes + lane)
                word = 0
                for b in range(N):
                    hit, sel = Signal(), Signal(bits_for(A))
                    m.d.sync += [hit.eq((idx >= starts[b]) & (idx < starts[b + 1])),
                                 sel.eq((idx - starts[b])[:len(sel)])]
                    pick = table[b][sel] if self.style == "array" else \
                        self.accs[32 * A * b:32 * A * (b + 1)].word_select(sel, 32)
                    word = word | Mux(hit, pick, 0)
                words.append(word)
        m.d.sync += [self.valid.eq(rd_v), self.data.eq(Cat(*words))]
        return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--banks", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="styles to run (default: all)")
    args = ap.parse_args(argv)
    p = load_arch("pim-gpt-gddr6", {}).params
    sig = channel_signature(p, args.banks)
    shape = (args.banks, p.acc_registers, p.column_bytes // 4, Shape.cast(sig["col_addr"].shape).width,
             Shape.cast(sig["col_acc"].shape).width)
    print(f"yosys {_tool_version('yosys')}; gather of {args.banks} banks x {p.acc_registers} accumulators, "
          f"{shape[2]} lanes")
    for name, make in (("divider + Array", lambda: ArrayGather(*shape, style="divider")),
                       ("running sum + Array", lambda: ArrayGather(*shape, style="array")),
                       ("running sum + word_select", lambda: ArrayGather(*shape, style="word_select")),
                       ("row-pair window (shipped)", lambda: PimChannelGather(*shape))):
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        v = verilog.convert(make(), name="gather")
        r = synthesize_verilog(v, "gather", target="ecp5", use_cache=False, timeout_s=args.timeout)
        row = {k: r.get(k) for k in ("luts", "carry", "ffs", "dsps", "bram")}
        row["lut4_incl_carry"] = r["luts"] + 2 * r["carry"]
        print(f"{name:28s} {json.dumps(row)}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
