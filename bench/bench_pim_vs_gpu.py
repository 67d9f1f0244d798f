"""HBM2-PIM vs A100, like for like: decode tokens/s and energy/token, pim-hbm2 with 5 stacks
(the A100 40GB's five HBM2 stacks) vs the gpu-a100 roofline, both bf16.

    python bench/bench_pim_vs_gpu.py [--kv-len 1024] [--overhead-us 0] [--stacks 5]

Every model decodes one token against --kv-len cached tokens. The A100 is a roofline at its
sustained bandwidth (x 0.9); ``--overhead-us`` is its per-kernel overhead (0: pure roofline, an
upper bound on the GPU; the preset's calibrated batch-1 figure is 80). For PIM-GPT's own table
(GDDR6 PIM vs a measured-like T4) see bench/bench_pim_gpt.py.
"""
from __future__ import annotations

import argparse
import time

import mappers
import workloads
from archsim.engine import run_program
from archsim.spec.load import load_arch

MODELS = ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-xl", "gpt3-2.7b", "llama2_7b"]


def run(name: str, arch, kv_len: int):
    g = workloads.load(name, phase="decode", kv_len=kv_len, weight_precision="bf16", act_precision="bf16")
    return run_program(mappers.compile(g, arch), arch).extras


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv-len", type=int, default=1024)
    ap.add_argument("--overhead-us", type=float, default=0.0)
    ap.add_argument("--stacks", type=int, default=5)
    args = ap.parse_args()
    gpu = load_arch("gpu-a100", overrides=[f"kernel_overhead_us={args.overhead_us}"])
    pim_arch = load_arch("pim-hbm2", overrides=[f"stacks={args.stacks}"])
    t0 = time.time()
    print(f"decode, kv_len {args.kv_len}, bf16; pim-hbm2 x {args.stacks} stacks vs gpu-a100 roofline (x0.9 bandwidth)"
          f"{f' + {args.overhead_us} us/kernel' if args.overhead_us else ''}")
    print(f"{'model':<12} {'PIM tok/s':>10} {'GPU tok/s':>10} {'speedup':>8} "
          f"{'PIM mJ/tok':>11} {'GPU mJ/tok':>11} {'energy x':>9}")
    for name in MODELS:
        pim = run(name, pim_arch, args.kv_len)
        ref = run(name, gpu, args.kv_len)
        print(f"{name:<12} {pim['tokens_per_s']:>10.1f} {ref['tokens_per_s']:>10.1f} "
              f"{pim['tokens_per_s'] / ref['tokens_per_s']:>7.2f}x "
              f"{pim['energy_per_token_pj'] / 1e9:>11.3f} {ref['energy_per_token_pj'] / 1e9:>11.3f} "
              f"{ref['energy_per_token_pj'] / pim['energy_per_token_pj']:>8.1f}x")
    print(f"({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
