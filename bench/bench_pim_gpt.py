"""PIM-GPT's table: pim-gpt-gddr6 versus a batch-1 NVIDIA T4 on the paper's 8 GPT models.

    python bench/bench_pim_gpt.py [--kv-len 1024]

PIM-GPT (Wu, Wang, Lu, npj Unconventional Computing 2024 / arXiv 2310.09385v2, abstract) reports
41-137x speedup and 123-383x energy efficiency over a measured T4 on GPT2-small..XL and
GPT3-small..XL at batch 1. The T4 is gpu-t4, printed two ways: first the roofline alone
(65 TFLOP/s fp16, 320 GB/s x 0.69 sustained, 70 W x time), then with the host dispatch cost per
kernel overlapped with execution, calibrated to PrunaAI's T4 measurement of SmolLM2-135M
(archsim/validate/pim_gpt.py), energy at 70 W while kernels run and idle_power_w (30 W, assumed)
while the GPU waits for the host. PIM computes in bf16, the T4 in fp16 (Turing has no bf16):
both 16-bit, the same bytes per weight. The last tables show how the ranges move with the two
knobs that are not measured here (idle power) or calibrated on another model (host cost).
"""
from __future__ import annotations

import argparse
import time

from archsim.validate import pim_gpt as V


def span(values) -> str:
    return f"{min(values):.1f}-{max(values):.1f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv-len", type=int, default=V.KV_LEN)
    args = ap.parse_args()
    t0 = time.time()
    d = V.calibrated_dispatch_us()
    print(f"T4 host cost: {d:.1f} us per kernel, from SmolLM2-135M measured {V.measured_ms('smollm2-135m'):.1f} ms "
          f"per token (PrunaAI, Tesla T4, fp32); held out SmolLM2-1.7B: predicted "
          f"{V.predicted_ms('smollm2-1.7b', d):.1f} ms, measured {V.measured_ms('smollm2-1.7b'):.1f} ms")
    rows = [V.row(m, args.kv_len) for m in V.MODELS]
    print(f"\nPIM-GPT table, decode batch 1, KV {args.kv_len}: pim-gpt-gddr6 (bf16) vs gpu-t4 (fp16)")
    print(f"{'model':<12} {'PIM ms':>7} {'PIM mJ':>7} | {'roofline-only T4':^30} | {'calibrated T4':^30}")
    print(f"{'':<12} {'':>7} {'':>7} | {'ms':>6} {'mJ':>7} {'speedup':>7} {'energy':>7} "
          f"| {'ms':>6} {'mJ':>7} {'speedup':>7} {'energy':>7}")
    for r in rows:
        print(f"{r.model:<12} {r.pim_s * 1e3:>7.3f} {r.pim_j * 1e3:>7.2f} | {r.roof_s * 1e3:>6.2f} "
              f"{r.roof_j * 1e3:>7.1f} {r.roof_speedup:>6.1f}x {r.roof_energy:>6.1f}x | {r.cal_s * 1e3:>6.2f} "
              f"{r.cal_j * 1e3:>7.1f} {r.speedup:>6.1f}x {r.energy:>6.1f}x")
    print(f"{'range':<12} {'':>7} {'':>7} | {'':>6} {'':>7} {span([r.roof_speedup for r in rows]):>7} "
          f"{span([r.roof_energy for r in rows]):>7} | {'':>6} {'':>7} {span([r.speedup for r in rows]):>7} "
          f"{span([r.energy for r in rows]):>7}")
    print(f"{'PIM-GPT':<12} {'':>7} {'':>7} | {'':>30} | {'':>6} {'':>7} {'41-137x':>7} {'123-383x':>7}  (paper)")
    print("\nenergy efficiency range vs the T4's power while it waits for the host (70 W while kernels run):")
    for w in (10.0, 30.0, 70.0):
        en = [V.row(m, args.kv_len, idle_power_w=w).energy for m in V.MODELS]
        print(f"  idle_power_w {w:>4.0f} W: {span(en)}")
    print("speedup range vs the host cost per kernel (calibrated value marked):")
    for us in (d / 2, d, 2 * d):
        sp = [V.row(m, args.kv_len, dispatch_us=us).speedup for m in V.MODELS]
        print(f"  dispatch_us {us:>6.1f}{' *' if us == d else '  '}: {span(sp)}")
    print(f"({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
