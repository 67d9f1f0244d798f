"""LUT Tensor Core (Mo et al., ISCA 2025, arXiv:2408.06003) and T-MAC (Wei et al., EuroSys 2025,
arXiv:2407.00088): the published figures archsim reproduces in a comparable setup.

Both are properties of the datapath both papers describe and archsim models (tables of the
``2**K`` signed sums of K activations, one bit plane of the weights per lookup):

- table symmetrization / mirror consolidation: the table of a K-group is stored as half of
  its ``2**K`` sums (the rest are their negations): half the entries;
- bit-serial weights: a b-bit weight takes b lookups, so a GEMM at W4 takes 4x the cycles of
  the same GEMM at W1 on the same core (the paper's "bit-serial design to support diverse
  precision combinations").

NOT claimed: the papers' headline gains of the LUT core over a MAC tensor core (v1 abstract:
"more than a magnitude" in compute density and energy efficiency, for ASIC gates with an N64
tile against an fp16 MAC core). archsim's like-for-like syntheses (``bench/bench_lut_like_for_like.py``,
docs/lut_rtl.md) measure a different setup -- a 4-LUT FPGA netlist, M2 N8 K4, against MAC cores of
the same peak specialized to the same W x A or general int8 -- and find 0.4-2.6x density; the
papers' setup (their 28 nm library, their MAC baseline) is not reproduced, so no claim is made.
"""
from __future__ import annotations

from archsim.validate import Claim

SOURCE_SYM = ("Mo et al., LUT Tensor Core, ISCA 2025 (arXiv:2408.06003), table symmetrization; Wei et al., "
              "T-MAC, EuroSys 2025 (arXiv:2407.00088), mirror consolidation: 2^(K-1) of the 2^K entries stored")
SOURCE_BITSERIAL = ("Mo et al., LUT Tensor Core, ISCA 2025 (arXiv:2408.06003), bit-serial LUT unit: one weight "
                    "bit plane per lookup, a b-bit weight takes b lookups")


def _gemm(m: int, k: int, n: int, weights: str):
    from workloads.zoo._net import Net

    net = Net(f"gemm_{m}x{k}x{n}_{weights}", weight_precision=weights, act_precision="int8", acc_precision="int32")
    net.linear("gemm", net.input("x", (m, k)), n, bias=False)
    return net.graph


def claims() -> list[Claim]:
    from archsim.simulation import simulate
    from archsim.spec import load_arch

    full = load_arch("lut-m2n64k4", {"symmetric": False}).params.table_entries
    half = load_arch("lut-m2n64k4").params.table_entries
    cycles = {w: simulate(_gemm(256, 2048, 2048, w), load_arch("lut-m2n64k4", {"weight_format": w})).total_cycles
              for w in ("int1", "int4")}
    return [
        Claim("lut", "table entries per K=4 group, full / symmetric", full / half, 2.0, 0.0, SOURCE_SYM, "x",
              note="lut-m2n64k4 params (symmetric: false vs true)"),
        Claim("lut", "GEMM 256x2048x2048 cycles, W4 / W1 (bit-serial)", cycles["int4"] / cycles["int1"], 4.0, 0.02,
              SOURCE_BITSERIAL, "x",
              note="fast model on lut-m2n64k4; the table build and pipeline fill are paid once per step at any W"),
    ]
