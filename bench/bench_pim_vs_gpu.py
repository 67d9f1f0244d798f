"""PIM-GPT-style table: decode tokens/s and energy/token on pim-hbm2 vs the gpu-a100 roofline.

    python bench/bench_pim_vs_gpu.py [--kv-len 1024] [--launch-us 4]

Workloads in bf16 (as PIM-GPT); every model decodes one token against
--kv-len cached tokens. llama2_7b (13.5 GB in bf16) does not fit one 8 GiB HBM2 stack: it runs on two
(``channels=32``). The A100 is a pure roofline (an upper bound on a GPU);
``--launch-us`` adds a fixed per-kernel time, which dominates batch-1 decode
on real GPUs (PIM-GPT's large speedups come from measured GPU runs).
"""
from __future__ import annotations

import argparse
import time

import mappers
import workloads
from archsim.engine import run_program
from archsim.spec.load import load_arch

MODELS = [("gpt2", []), ("gpt2-medium", []), ("gpt2-large", []), ("gpt2-xl", []), ("llama2_7b", ["channels=32"])]


def run(name: str, arch, kv_len: int):
    g = workloads.load(name, phase="decode", kv_len=kv_len, weight_precision="bf16", act_precision="bf16")
    return run_program(mappers.compile(g, arch), arch).extras


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv-len", type=int, default=1024)
    ap.add_argument("--launch-us", type=float, default=0.0)
    args = ap.parse_args()
    gpu = load_arch("gpu-a100", overrides=[f"kernel_launch_us={args.launch_us}"])
    t0 = time.time()
    print(f"decode, kv_len {args.kv_len}, bf16; gpu-a100 roofline"
          f"{f' + {args.launch_us} us/kernel' if args.launch_us else ''}")
    print(f"{'model':<12} {'PIM tok/s':>10} {'GPU tok/s':>10} {'speedup':>8} "
          f"{'PIM mJ/tok':>11} {'GPU mJ/tok':>11} {'energy x':>9}")
    for name, over in MODELS:
        pim = run(name, load_arch("pim-hbm2", overrides=over), args.kv_len)
        ref = run(name, gpu, args.kv_len)
        print(f"{name + ('*' if over else ''):<12} {pim['tokens_per_s']:>10.1f} {ref['tokens_per_s']:>10.1f} "
              f"{pim['tokens_per_s'] / ref['tokens_per_s']:>7.2f}x "
              f"{pim['energy_per_token_pj'] / 1e9:>11.3f} {ref['energy_per_token_pj'] / 1e9:>11.3f} "
              f"{ref['energy_per_token_pj'] / pim['energy_per_token_pj']:>8.1f}x")
    print("* two HBM2 stacks (channels=32)")
    print(f"({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
