"""Generic-flow synthesis of the BitMoD bit-serial PE (rtl.simd.bitserial.BitmodPE): yosys ``synth -flatten
-lut 4`` cells (LUTs + flip-flops), the figure ``archsim.templates.simd.bitserial.SYNTH_CELLS`` holds.

Run: ``ARCHSIM_YOSYS=native python bench/bench_bitmod_synth.py [LANES] [ACT_BITS] [WEIGHT_FORMAT]``
(default 4 16 fp4_er_pos: the bitmod-simd PE).
"""
from __future__ import annotations

import json
import sys

from amaranth.back import verilog

from rtl.simd.bitserial import BitmodPE
from rtl.synth import synthesize_verilog


def main() -> None:
    lanes, act_bits = (int(a) for a in (sys.argv[1:3] or ["4", "16"]))
    weight_format = sys.argv[3] if len(sys.argv) > 3 else "fp4_er_pos"
    text = verilog.convert(BitmodPE(lanes, act_bits, weight_format), name="archsim_bitmod_pe")
    result = synthesize_verilog(text, "archsim_bitmod_pe", target="generic", timeout_s=850)
    print(json.dumps({"lanes": lanes, "act_bits": act_bits, "weight_format": weight_format,
                      **{k: v for k, v in result.items() if k != "netlist"}}))


if __name__ == "__main__":
    main()
