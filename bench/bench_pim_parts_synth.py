"""ECP5 Fmax of the PIM bank unit's parts, each between input registers (yosys synth_ecp5 + nextpnr-ecp5,
85k, out of context): quicker to place than the whole unit, so each part's own limit is measured.

- ``loop``: the interleaved accumulators' accumulate loop (:class:`rtl.pim.interleaved.PimInterleavedAccumulators`
  at ``--interleave P``: column counters, the ``P`` partial memories, operand fetch, forwarding and the
  ``P``-deep fp32 adder) with the RDACC reduction left out (its adders are ``P``-deep copies of the
  loop's, without the loop: the library table's ``fp32_add_finite`` row);
- ``mac``: the MAC datapath (:class:`rtl.pim.mac.PimMacDatapath`, ``--lanes``, ``--mul-stages``,
  ``--add-stages``, ``--mul``).

Usage: python bench/bench_pim_parts_synth.py --part loop --interleave 16 [--lanes 2] [--freq 150]
       python bench/bench_pim_parts_synth.py --part mac --lanes 2 --mul lut --mul-stages 11 --add-stages 11
       [--workdir DIR] [--timeout 900] [--seed N]
Prints one JSON line (resources, Fmax, critical path, wall time). Run one at a time (shared machine).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from amaranth import Module, Signal
from amaranth.back import verilog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rtl_lib_synth import InputRegistered  # noqa: E402

from rtl.pim.interleaved import PimInterleavedAccumulators  # noqa: E402
from rtl.pim.mac import PimMacDatapath  # noqa: E402
from rtl.synth import synthesize_verilog  # noqa: E402


class LoopOnly(PimInterleavedAccumulators):
    """The accumulators with the read-out reduced to partial 0's word, registered (the reduction is
    measured apart)."""

    def _read_out(self, m: Module, mems, pb: int, lb: int):
        rd_v = Signal()
        m.d.sync += rd_v.eq(self.rd)
        for _wp, _rp, rd in mems:
            m.d.comb += [rd.addr.eq(self.rd_col), rd.en.eq(1)]
        m.d.sync += self.rd_data.eq(mems[0][2].data)
        m.d.comb += self.rd_valid.eq(rd_v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("loop", "mac"), required=True)
    ap.add_argument("--interleave", type=int, default=16)
    ap.add_argument("--registers", type=int, default=64, help="accumulators (acc_registers)")
    ap.add_argument("--lanes", type=int, default=2, help="bf16 lanes (column_bytes / 2)")
    ap.add_argument("--mul-stages", type=int, default=11)
    ap.add_argument("--add-stages", type=int, default=11)
    ap.add_argument("--mul", choices=("dsp", "lut", "dsp_reg"), default="lut")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed (its spread is about +-10 %%)")
    ap.add_argument("--freq", type=float, default=150.0)
    ap.add_argument("--workdir")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    if args.part == "loop":
        out_lanes = max(1, args.lanes // 2)
        part = LoopOnly("bf16", args.registers, out_lanes, 6, args.interleave)
        cfg = {"interleave": args.interleave, "registers": args.registers, "out_lanes": out_lanes}
    else:
        part = PimMacDatapath("bf16", args.lanes, args.mul_stages, args.add_stages, args.mul)
        cfg = {"lanes": args.lanes, "mul": args.mul, "mul_stages": args.mul_stages, "add_stages": args.add_stages}
    top = InputRegistered(part)
    text = verilog.convert(top, name="pim_part", emit_src=False)
    t0 = time.time()
    res = synthesize_verilog(text, "pim_part", target="ecp5", pnr=True, use_cache=args.workdir is None,
                             workdir=args.workdir, timeout_s=args.timeout, freq_mhz=args.freq, seed=args.seed)
    keep = ("luts", "ffs", "dsps", "bram", "lutram", "fmax_mhz", "pnr_seed", "critical_path")
    print(json.dumps({"part": args.part, **cfg, **{k: res.get(k) for k in keep if k in res},
                      "wall_s": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
