"""Generic-flow synthesis of the BitMoD bit-serial PE (rtl.simd.bitserial.BitmodPE, or with ACT_BITS ``fp16``
rtl.simd.bitmod_fp16.BitmodFp16PE): yosys ``synth -flatten -lut 4`` cells (LUTs + flip-flops) and logic levels,
the figure ``archsim.templates.simd.bitserial.SYNTH_CELLS`` holds; ``--pnr``: ECP5 (synth_ecp5 + nextpnr-ecp5,
out of context) LUT4s and post-route Fmax instead; ``--premap``: shifters mapped to gates first
(``premap_shifts``: the fp16 PE's variable shifts otherwise keep yosys' SAT ``share`` pass running for
more than 10 minutes).

Run: ``ARCHSIM_YOSYS=native python bench/bench_bitmod_synth.py [LANES] [ACT_BITS|fp16] [WEIGHT_FORMAT] [--pnr] [--premap]``
(default 4 16 fp4_er_pos: the bitmod-simd PE).
"""
from __future__ import annotations

import json
import sys

from amaranth.back import verilog

from rtl.simd.bitmod_fp16 import BitmodFp16PE
from rtl.simd.bitserial import BitmodPE
from rtl.synth import synthesize_verilog


def main() -> None:
    pnr, premap = "--pnr" in sys.argv, "--premap" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    lanes, act = int(args[0]) if args else 4, args[1] if len(args) > 1 else "16"
    weight_format = args[2] if len(args) > 2 else "fp4_er_pos"
    pe = BitmodFp16PE(lanes, weight_format) if act == "fp16" else BitmodPE(lanes, int(act), weight_format)
    act_bits = act if act == "fp16" else int(act)
    text = verilog.convert(pe, name="archsim_bitmod_pe")
    result = synthesize_verilog(text, "archsim_bitmod_pe", target="ecp5" if pnr else "generic", pnr=pnr,
                                premap_shifts=premap, timeout_s=850)
    print(json.dumps({"lanes": lanes, "act_bits": act_bits, "weight_format": weight_format,
                      **{k: v for k, v in result.items() if k != "netlist"}}))


if __name__ == "__main__":
    main()
