"""Carry-save arithmetic: radix-4 Booth partial products and a 3:2 compressor (Wallace) tree.

What a MAC that keeps its sum in carry-save form is built from (Wu et al., HPCA 2025, OPT1:
the multiplier's partial-product compression merged with the accumulation, one carry-propagate
add deferred to where the value leaves). Every row is a ``width``-bit vector and every sum is
modulo ``2**width`` (two's complement wrap, like the accumulators), so the rows of a signed
product can be added to a carry-save pair with no sign handling beyond sign extension.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, signed


def booth_rows(m, a, b, width: int, name: str) -> list:
    """Rows whose sum modulo ``2**width`` is ``a * b`` (signed ``a``, signed ``b`` of even width).

    Radix-4 Booth recoding of ``b``: digit ``j`` is ``-2 b[2j+1] + b[2j] + b[2j-1]`` (``b[-1] = 0``),
    row ``j`` is ``digit * a << 2j``. A negative row is the inverted magnitude, its ``+1`` collected
    in one extra row (the bits sit at distinct positions ``2j``): ``len(b) / 2 + 1`` rows in all.
    """
    bw = len(b)
    if bw % 2:
        raise ValueError(f"booth_rows: expected an even multiplier width, got {bw}")
    a_ext = Signal(signed(width), name=f"{name}_a")
    m.d.comb += a_ext.eq(a)
    a2 = Cat(Const(0, 1), a_ext[:width - 1])  # 2a modulo 2**width
    rows, neg_bits = [], []
    for j in range(bw // 2):
        lo = b[2 * j - 1] if j else Const(0, 1)
        mid, hi = b[2 * j], b[2 * j + 1]
        one = mid ^ lo
        two = (hi & ~mid & ~lo) | (~hi & mid & lo)
        mag = Mux(two, a2, Mux(one, a_ext.as_unsigned(), 0))
        row = Signal(width, name=f"{name}_pp{j}")
        m.d.comb += row.eq(Cat(Const(0, 2 * j), (mag ^ hi.replicate(width))[:width - 2 * j]))
        rows.append(row)
        neg_bits.append(hi)
    neg = Signal(width, name=f"{name}_neg")
    m.d.comb += neg.eq(Cat(*[Cat(bit, Const(0, 1)) for bit in neg_bits])[:width])
    rows.append(neg)
    return rows


def compress(m, rows: list, width: int, name: str) -> tuple:
    """A 3:2 compressor tree: ``(sum, carry)`` with ``sum + carry == sum(rows)`` modulo ``2**width``.

    Each level takes rows three at a time (``s = x ^ y ^ z``, ``c = maj(x, y, z) << 1``); two rows
    or fewer leave. No carry propagates inside the tree (its depth is ``O(log rows)`` gates).
    """
    rows = list(rows)
    level = 0
    while len(rows) > 2:
        nxt = []
        for i in range(0, len(rows) - 2, 3):
            x, y, z = rows[i:i + 3]
            s = Signal(width, name=f"{name}_s{level}_{i // 3}")
            c = Signal(width, name=f"{name}_c{level}_{i // 3}")
            m.d.comb += [s.eq(x ^ y ^ z), c.eq(Cat(Const(0, 1), ((x & y) | (x & z) | (y & z))[:width - 1]))]
            nxt += [s, c]
        nxt += rows[len(rows) - len(rows) % 3:]
        rows = nxt
        level += 1
    while len(rows) < 2:
        rows.append(Const(0, width))
    return rows[0], rows[1]
