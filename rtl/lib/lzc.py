"""Leading-zero count: a log-depth tree (the one shared count of every normalizing unit)."""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal


def lzc(m: Module, sig, width: int, name: str):
    """Leading zeros of the low ``width`` bits of ``sig``, counted from bit ``width - 1`` (``width`` if zero).

    A balanced tree (depth ``ceil(log2 width)`` muxes), not a priority chain.
    """
    w2 = 1 << max(0, (width - 1).bit_length())
    padded = Cat(Const((1 << (w2 - width)) - 1, w2 - width), sig[:width]) if w2 > width else sig[:width]

    def tree(x, w):  # (count of leading zeros, all zero) of the w-bit x
        if w == 1:
            return ~x[0], ~x[0]
        hi_c, hi_z = tree(x[w // 2:], w // 2)
        lo_c, lo_z = tree(x[:w // 2], w // 2)
        c = Signal(range(w + 1), name=f"{name}_t{w}")
        m.d.comb += c.eq(Mux(hi_z, (w // 2) + lo_c, hi_c))
        return c, hi_z & lo_z

    count, _ = tree(padded, w2)
    out = Signal(range(width + 1), name=name)
    m.d.comb += out.eq(count)
    return out
