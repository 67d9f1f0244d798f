"""SpAtten's pruning step on the attention array (archsim/templates/attention/pruning.py, the
composed RTL's models): cycles of a step with the probability passes the array needs today,
against the output tile + top-k alone (what a probability output of the array would cost, see
docs/attention.md), per head shape. Prints the ratio; asserts nothing.

    python bench/bench_spatten_step.py
"""
from __future__ import annotations

import numpy as np

from archsim.spec import load_arch
from archsim.templates.attention import pruning
from archsim.templates.attention.conformance import _bf16
from archsim.templates.attention.pruning import PruneTile


def main() -> None:
    arch = load_arch("fusemax-edge", ["rows=2", "cols=2", "pe1d=2", "exp_macs=4", "topk_parallelism=4"])
    model = arch.model()
    rng = np.random.default_rng(0)
    print("2x2 array, 2 1D lanes, 4 comparators (the co-simulated build); cycles of one step")
    print(f"{'q':>2} {'L':>3} {'d':>3} {'h':>2} {'k':>3} {'step':>7} {'out+top-k':>10} {'ratio':>6}")
    for q, L, d, h in ((2, 8, 4, 1), (2, 8, 4, 2), (2, 8, 1, 2), (2, 64, 16, 2), (2, 64, 64, 12), (2, 128, 64, 12)):
        tile = PruneTile(q, L, d, h, max(1, L // 2), 5)
        ops = {"q": _bf16(rng.uniform(-2, 2, (h, q, d))), "k": _bf16(rng.uniform(-2, 2, (h, L, d))),
               "v": _bf16(rng.uniform(-2, 2, (h, L, d)))}
        res = pruning.run(model, tile, ops)
        engine = model.tile_cycles(tile.attention_tile()) + pruning.FLAT_CAPTURE_CYCLES + pruning.ARRAY_HANDOFF_CYCLES
        without = res.cycles - pruning.attention_cycles(model, tile) + h * engine
        print(f"{q:>2} {L:>3} {d:>3} {h:>2} {tile.k:>3} {res.cycles:>7,} {without:>10,} {res.cycles / without:>5.2f}x")


if __name__ == "__main__":
    main()
