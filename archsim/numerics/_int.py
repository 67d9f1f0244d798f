"""Integer formats: two's complement ``int<n>``, unsigned ``uint<n>``, and the
low-bit weight codes ``int1`` (+-1) and ``ternary`` ({-1, 0, +1} in 2 bits).

Encoding is quantization: round to nearest, ties to even, then saturate to
the format's range; NaN encodes to 0 (the code of 0). Codes are the unsigned
bit patterns (``int4`` -1 is code 15).
"""
from __future__ import annotations

import numpy as np

from archsim.numerics._base import Format, code_dtype


class IntFormat(Format):
    def __init__(self, bits: int, signed: bool = True):
        name = f"{'' if signed else 'u'}int{bits}"
        super().__init__(name, bits, "int" if signed else "uint", signed, 1, "saturate",
                         f"{'two''s complement' if signed else 'unsigned'} {bits}-bit integer")
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def encode(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        v = np.clip(np.rint(np.nan_to_num(x, nan=0.0, posinf=self.hi, neginf=self.lo)), self.lo, self.hi)
        v = v.astype(np.int64)
        return (v & ((1 << self.bits) - 1)).astype(code_dtype(self.bits)) if self.bits < 64 else v.view(np.uint64)

    def decode(self, codes) -> np.ndarray:
        c = np.asarray(codes).astype(np.uint64).astype(object) if self.bits >= 64 else np.asarray(codes).astype(np.int64)
        if self.signed:
            half = 1 << (self.bits - 1)
            c = np.where(c >= half, c - (1 << self.bits), c)
        return np.asarray(c, dtype=np.float64)

    @property
    def max_value(self) -> float:
        return float(self.hi)

    @property
    def min_positive(self) -> float:
        return 1.0


class LevelFormat(Format):
    """A few signed levels with fixed codes (``int1``: 0 -> -1, 1 -> +1;
    ``ternary``: 0b00 -> 0, 0b01 -> +1, 0b11 -> -1, 0b10 unused, decodes to 0).
    Encoding picks the nearest level, ties to the level of even code... for
    ``int1`` a tie (0) goes to +1, for ``ternary`` +-0.5 go to 0."""

    def __init__(self, name: str, bits: int, levels: dict[int, float], doc: str):
        super().__init__(name, bits, "int", True, 1, "saturate", doc)
        object.__setattr__(self, "levels", dict(levels))

    def decode(self, codes) -> np.ndarray:
        c = np.asarray(codes).astype(np.int64)
        out = np.zeros(c.shape, np.float64)
        for code, value in self.levels.items():
            out = np.where(c == code, value, out)
        return out

    def encode(self, x) -> np.ndarray:
        x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0)
        if self.name == "int1":
            return np.where(x >= 0, 1, 0).astype(np.uint8)
        return np.where(x > 0.5, 0b01, np.where(x < -0.5, 0b11, 0b00)).astype(np.uint8)

    @property
    def max_value(self) -> float:
        return 1.0

    @property
    def min_positive(self) -> float:
        return 1.0
