"""Leading-zero count: a log-depth mux tree (the one shared count of every normalizing unit).

Two levels, so a pipeline can register between them: :func:`lzc_groups` counts inside 8-bit groups,
:func:`lzc_combine` picks the first non-zero group; :func:`lzc` is both, combinational.
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal

GROUP = 8  # bits per first-level group


def _padded(sig, width: int):
    """The low ``width`` bits of ``sig`` padded below with ones to a power of two (at least :data:`GROUP`)."""
    w2 = max(GROUP, 1 << max(0, (width - 1).bit_length()))
    return (Cat(Const((1 << (w2 - width)) - 1, w2 - width), sig[:width]) if w2 > width else sig[:width]), w2


def _tree(m: Module, x, w: int, name: str):
    """``(count, all zero)`` of the ``w``-bit ``x`` (``w`` a power of two); ``count`` is
    ``log2(w)`` bits, meaningful unless all zero. Muxes only (no adders)."""
    if w == 1:
        return Const(0, 0), ~x[0]
    hi_c, hi_z = _tree(m, x[w // 2:], w // 2, name)
    lo_c, lo_z = _tree(m, x[:w // 2], w // 2, name)
    c = Signal((w - 1).bit_length(), name=f"{name}_t{w}")
    z = Signal(name=f"{name}_z{w}")
    m.d.comb += [c.eq(Mux(hi_z, Cat(lo_c, Const(1, 1)), Cat(hi_c, Const(0, 1)))), z.eq(hi_z & lo_z)]
    return c, z


def lzc_groups(m: Module, sig, width: int, name: str) -> list:
    """First level of :func:`lzc`: ``[count, zero, count, zero, ...]`` of each 8-bit group, most
    significant group first (signals, so a caller can register them)."""
    padded, w2 = _padded(sig, width)
    out = []
    for g in range(w2 // GROUP - 1, -1, -1):
        c, z = _tree(m, padded[g * GROUP:(g + 1) * GROUP], GROUP, f"{name}_g{g}")
        out += [c, z]
    return out


def lzc_combine(m: Module, groups: list, width: int, name: str):
    """Second level of :func:`lzc`: the leading zeros from :func:`lzc_groups`' list (``width`` if zero)."""
    n = len(groups) // 2
    nodes = [(groups[2 * i], groups[2 * i + 1]) for i in range(n)]  # most significant first
    size = GROUP
    while len(nodes) > 1:
        merged = []
        for (hc, hz), (lc, lz) in zip(nodes[0::2], nodes[1::2]):
            c = Signal((2 * size - 1).bit_length(), name=f"{name}_m{2 * size}")
            z = Signal(name=f"{name}_mz{2 * size}")
            m.d.comb += [c.eq(Mux(hz, Cat(lc, Const(1, 1)), Cat(hc, Const(0, 1)))), z.eq(hz & lz)]
            merged.append((c, z))
        nodes, size = merged, 2 * size
    count, zero = nodes[0]
    out = Signal(range(width + 1), name=name)
    m.d.comb += out.eq(Mux(zero, width, count))
    return out


def lzc(m: Module, sig, width: int, name: str):
    """Leading zeros of the low ``width`` bits of ``sig``, counted from bit ``width - 1`` (``width`` if zero).

    A balanced tree (depth ``log2`` of the padded width, muxes only), not a priority chain.
    """
    return lzc_combine(m, lzc_groups(m, sig, width, name), width, name)
