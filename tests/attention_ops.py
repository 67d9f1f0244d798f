"""Shared by the attention RTL tests: the small array they co-simulate and bf16 operand tiles."""
from __future__ import annotations

import numpy as np

from archsim.spec import load_arch

#: a 3x2 array with 2 lanes and a 4-term exp: small enough for Icarus, every phase of a tile still overlaps
SMALL = {"rows": 3, "cols": 2, "pe1d": 2, "exp_macs": 4}


def small_arch(**over):
    """fusemax-edge at SMALL, with parameter overrides."""
    return load_arch("fusemax-edge", {**SMALL, **over})


def bf16(x):
    """float32 values truncated to bf16 (the buffers' operand format)."""
    return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def bf16_ops(rng, rows, kv, d):
    """Random Q (rows x d), K and V (kv x d) in [-2, 2), bf16-exact."""
    return {"q": bf16(rng.uniform(-2, 2, (rows, d))), "k": bf16(rng.uniform(-2, 2, (kv, d))),
            "v": bf16(rng.uniform(-2, 2, (kv, d)))}
