"""Operand checks and integer wrap-around shared by the systolic fast and detailed
models (a module of its own so that neither model imports the other at import time)."""
from __future__ import annotations

import numpy as np

from archsim.templates.systolic.params import PRECISION_BITS, SystolicParams
from archsim.templates.systolic.tile import SystolicTile

ACC_DTYPES = {"int16": np.int16, "int32": np.int32, "int64": np.int64}


def wrap(values: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of integer ``values`` to ``bits`` bits (as int64)."""
    v = np.asarray(values, dtype=np.int64)
    if bits >= 64:
        return v
    half = np.int64(1) << np.int64(bits - 1)
    return ((v + half) & ((half << np.int64(1)) - np.int64(1))) - half


def check_operands(tile: SystolicTile, operands: dict[str, np.ndarray], params: SystolicParams
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate shapes and ranges; return (A, W, psum or None) as int64 arrays."""
    shapes = {"input": (tile.m, tile.k), "weight": (tile.k, tile.n), "psum": (tile.m, tile.n)}
    precs = {"input": params.input_precision, "weight": params.weight_precision,
             "psum": params.acc_precision}
    need = ["input", "weight"] + (["psum"] if tile.accumulate else [])
    out = []
    for name in need:
        if name not in operands:
            raise ValueError(f"operands: expected key {name!r} for this tile")
        arr = np.asarray(operands[name])
        if arr.shape != shapes[name]:
            raise ValueError(f"operands.{name}: expected shape {shapes[name]}, got {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"operands.{name}: expected integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        bits = PRECISION_BITS[precs[name]]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if arr.size and (arr.min() < lo or arr.max() > hi):
            raise ValueError(f"operands.{name}: expected values in [{lo}, {hi}] ({precs[name]})")
        out.append(arr)
    return out[0], out[1], (out[2] if tile.accumulate else None)
