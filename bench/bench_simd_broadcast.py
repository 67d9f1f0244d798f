"""SIMD operand broadcast (issue 23 item 8): the operand buffers with every PE's operands replicated in
one wide entry (before; BitMoD's array still builds it) vs each distinct row and column of a round once,
broadcast by per-PE selects (after, rtl.simd.broadcast), synthesized.

Prints, per configuration: operand entry bits, and for the buffers unit (``SimdBuffers``: operand,
scale and output memories, host and datapath ports, the broadcast network) LUT4 / FF / DP16KD of
``synth_ecp5`` (``--targets generic`` adds generic LUT4 cells, where the memories become flip-flops
and read muxes). The PEs are not part of the change (their entry port is the same), so the unit is
the whole difference. The replicated unit is byte-identical to the buffers before the change.

Usage: ``python bench/bench_simd_broadcast.py [--arch simd-edge] [--pes 2 8] [--targets ecp5 [generic]]``
(one yosys run at a time; about 3 minutes for the four ECP5 runs on the shared machine).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.spec import load_arch  # noqa: E402
from rtl.simd.buffers import SimdBuffers  # noqa: E402
from rtl.simd.config import SimdConfig  # noqa: E402
from rtl.synth import synthesize_verilog  # noqa: E402


def buffers_verilog(arch: str, pes: int, broadcast: bool) -> tuple[str, str, SimdConfig]:
    from amaranth.back import verilog

    cfg = SimdConfig.from_params(load_arch(arch, {"pes": pes}).params)
    top = f"simd_buffers_p{pes}_{'bcast' if broadcast else 'repl'}"
    comp = SimdBuffers(cfg, cfg.operand_layout if broadcast else None)
    return verilog.convert(comp, name=top, emit_src=False), top, cfg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="simd-edge")
    ap.add_argument("--pes", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--targets", nargs="+", default=["ecp5"])
    args = ap.parse_args(argv)
    print(f"{'PEs':>4s} {'layout':10s} {'op entry bits':>13s} " + " ".join(
        f"{t + ' ' + k:>13s}" for t in args.targets for k in (("LUT4", "FF", "BRAM") if t == "ecp5" else ("LUT4",))))
    for pes in args.pes:
        for broadcast in (False, True):
            text, top, cfg = buffers_verilog(args.arch, pes, broadcast)
            bits = cfg.operand_layout.entry_bits if broadcast else pes * cfg.entry_bits
            cols = []
            for target in args.targets:
                r = synthesize_verilog(text, top, target=target, timeout_s=900)
                cols += [r["luts"], r["ffs"], r.get("bram", 0)] if target == "ecp5" else [r["luts"]]
            print(f"{pes:4d} {'broadcast' if broadcast else 'replicated':10s} {bits:13d} "
                  + " ".join(f"{c:13d}" for c in cols), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
