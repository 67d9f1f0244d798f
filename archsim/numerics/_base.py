"""The :class:`Format` interface and the table-driven codec shared by the small formats."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Format:
    """A number format: ``encode`` reals to unsigned integer codes, ``decode`` codes to float64.

    Attributes
    ----------
    name : str
        Registry name (``int8``, ``fp8_e4m3``, ``posit8_0``, ``mxfp4`` ...).
    bits : int
        Bits per element code (for MX: per element; the shared scale is separate).
    kind : "int" | "uint" | "float" | "posit" | "mx"
    signed : bool
    block_size : int
        Elements sharing one scale (MX formats: 32); 1 otherwise.
    overflow : str
        What encode does beyond the largest finite value (see each format's docstring).
    """

    name: str
    bits: int
    kind: str
    signed: bool
    block_size: int = 1
    overflow: str = ""
    doc: str = field(default="", repr=False)

    def encode(self, x) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def decode(self, codes) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def max_value(self) -> float:
        """Largest finite value."""
        return float(np.nanmax(self._finite_values()))

    @property
    def min_positive(self) -> float:
        """Smallest positive value (the smallest subnormal for IEEE-like floats)."""
        v = self._finite_values()
        return float(v[v > 0].min())

    def _finite_values(self) -> np.ndarray:
        values = self.decode(np.arange(1 << self.bits, dtype=np.uint64))
        return values[np.isfinite(values)]

    def round_to(self, x) -> np.ndarray:
        """``x`` rounded to this format (encode, then decode)."""
        return self.decode(self.encode(x))

    def __repr__(self) -> str:
        return f"Format({self.name!r}, bits={self.bits}, kind={self.kind!r})"


def code_dtype(bits: int):
    return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32 if bits <= 32 else np.uint64


class TableCodec:
    """Round-to-nearest-even encoding by table lookup, for formats of <= 16 bits.

    ``positive`` holds every finite non-negative value in increasing order with
    its code; a real is rounded to the nearest entry, a tie to the entry whose
    code is even (IEEE 754 and the posit standard both break ties towards the
    even bit pattern). Values past the largest entry follow the format's own
    overflow rule (handled by the caller)."""

    def __init__(self, values: np.ndarray, codes: np.ndarray, mids: np.ndarray | None = None):
        """``mids[i]``: the rounding boundary between entries i and i+1 in value order
        (default: their arithmetic mean, right for IEEE-like floats; posits pass
        the value of the bit string ``code_i`` followed by a 1)."""
        order = np.argsort(values, kind="stable")
        self.values = values[order].astype(np.float64)
        self.codes = codes[order]
        if mids is None:
            self.mids = (self.values[:-1] + self.values[1:]) / 2  # exact: dyadic values of few bits
        else:
            self.mids = np.asarray(mids, np.float64)[order[:-1]]

    def nearest(self, mag: np.ndarray) -> np.ndarray:
        """Codes of the table entries nearest to ``mag`` (finite, >= 0, <= the largest entry)."""
        hi = np.searchsorted(self.values, mag, side="left")
        hi = np.clip(hi, 1, len(self.values) - 1)
        lo = hi - 1
        mid = self.mids[lo]
        pick_hi = (mag > mid) | ((mag == mid) & (self.codes[hi] % 2 == 0))
        idx = np.where(pick_hi, hi, lo)
        idx = np.where(mag >= self.values[-1], len(self.values) - 1, idx)
        idx = np.where(mag <= self.values[0], 0, idx)
        return self.codes[idx]

    def halfway_past_max(self) -> float:
        """The real at which rounding would go past the largest entry (one half-step above it)."""
        return float(self.values[-1] + (self.values[-1] - self.values[-2]) / 2)
