"""BitMoD (HPCA 2025, arXiv:2411.11745): weight quantization error of its per-group mixture of
datatypes vs INT and FP of the same width, group 128, beside what the paper reports.

Weights: ``--rows`` output rows of each Llama-3-8B linear layer at full input width, generated
(:func:`archsim.validate.bitmod.llama3_8b_like_weights`: Student-t(4) elements, log-normal
per-row std, 0.2% of input channels x8 outliers, numpy ``default_rng(--seed)``). No real weights
are loaded. SQNR = 10 log10(sum w^2 / sum (w - q)^2), pooled over all seven tensors.

The paper reports perplexity/accuracy on six real LLMs (Tables VI, VIII), not SQNR: the
"paper" column gives its ordering (BitMoD best at the same bits), the rows give archsim's dB.

Run: ``python bench/bench_bitmod.py [--rows 64] [--seed 0]``
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from archsim.numerics import get_format, quantize_mixture
from archsim.numerics._bitmod import MIXTURES
from archsim.validate.bitmod import BASELINES, best_fp3_ea_special, llama3_8b_like_weights, sqnr_table

ROWS = {
    3: [("int3", "INT3 g128 (symmetric, +-3)"), ("fp3_e2m0", "FP3 g128 (0, +-1, +-2, +-4)"),
        ("fp3_er_pos", "FP3-ER+ alone"), ("fp3_ea_pos", "FP3-EA+ alone"), ("er3", "ER+- mixture"),
        ("ea3", "EA+- mixture"), ("bitmod3", "BitMoD-3 mixture (ER+-, EA+-)")],
    4: [("int4", "INT4 g128 (symmetric, +-7)"), ("fp4_e2m1", "FP4 E2M1 g128"),
        ("fp4_er_pos", "FP4-ER+ alone"), ("fp4_ea_pos", "FP4-EA+ alone"), ("er4", "ER+- mixture"),
        ("ea4", "EA+- mixture"), ("bitmod4", "BitMoD-4 mixture (ER+-, EA+-)")],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=64, help="output rows per layer (default 64)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    weights = llama3_8b_like_weights(rows=args.rows, seed=args.seed)
    table = sqnr_table(weights)
    n = sum(w.size for w in weights.values())
    print(f"Llama-3-8B-shaped generated weights: {n:,} weights in 7 tensors, seed {args.seed}, group 128")
    print(f"{'datatype':34s} {'SQNR dB':>8s} {'vs best single':>15s}  paper (Table VI, perplexity)")
    for bits in (3, 4):
        best = max(table[b] for b in BASELINES[bits])
        for key, label in ROWS[bits]:
            paper = "best at this width" if key.startswith("bitmod") else ""
            print(f"{label:34s} {table[key]:8.2f} {table[key] - best:+14.2f}  {paper}")
        print()
    for bits in (3, 4):
        mix = [get_format(n) for n in MIXTURES[bits]]
        idx = np.concatenate([quantize_mixture(w, mix)[1].ravel() for w in weights.values()])
        share = ", ".join(f"{n} {np.mean(idx == i):.0%}" for i, n in enumerate(MIXTURES[bits]))
        print(f"groups choosing each {bits}-bit type: {share}")
    print(f"FP3 extra-asymmetry value with least error among 5..9: {best_fp3_ea_special(weights):g} "
          f"(paper's choice: 6, on real LLM weights)")
    print(f"[{time.perf_counter() - t0:.1f} s]")


if __name__ == "__main__":
    main()
