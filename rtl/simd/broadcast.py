"""Shared operands of the SIMD array (issue 23 item 8): each operand-buffer entry holds every distinct
activation row and weight column of a round's step once, and each PE picks its own through a select.

A round gives PE ``p`` output ``o = round * P + p`` (``m = o // N``, ``n = o % N``). Its rows are
consecutive (``m - m0 <= p``) and its columns, in the order they first appear, are ``(n0 + i) % N`` for
``i < min(P, N)``, so PE ``p``'s column is the ``(p mod N)``-th, again ``<= p``. A round touches at most
``P + 2`` rows and columns together (``N >= P``: 2 rows and ``P`` columns; ``N < P``: at most ``P`` rows
and ``N`` columns), so one entry has :func:`operand_slots` slots, rows from the front and columns from
the back, then every PE's two selects (``p.bit_length()`` bits each: PE ``p`` chooses among ``p + 1``
slots). The layout is written by the host (:meth:`BroadcastLayout.pack`, rtl/simd/rtl_design.py) and
read by the buffers (:meth:`BroadcastLayout.network`, rtl/simd/buffers.py); the PEs see the same
per-PE entry as before (activation word, weight word, dequant scales).

The models charge the distinct rows and columns of each round (``round_operand_counts`` in
archsim/templates/simd/model.py); with this layout the RTL reads each of them once per step too,
in an entry of ``P + 2`` slots rather than ``P`` (activation, weight) pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Array, Cat


def operand_slots(pes: int) -> int:
    """Rows + columns a round of ``pes`` outputs can touch, at most (see the module docstring)."""
    return pes + 2 if pes > 1 else 2


@dataclass(frozen=True)
class BroadcastLayout:
    """The operand entry: :attr:`slots` slots of :attr:`slot_bits`, then each PE's (row, column) select."""

    pes: int
    act_bits: int  # an activation row's word (a PE's activation word)
    weight_bits: int  # a weight column's word, with the per-lane fp32 scales of a dequant build

    @property
    def slots(self) -> int:
        return operand_slots(self.pes)

    @property
    def slot_bits(self) -> int:
        return max(self.act_bits, self.weight_bits)

    @staticmethod
    def sel_bits(p: int) -> int:
        return p.bit_length()

    @property
    def entry_bits(self) -> int:
        return self.slots * self.slot_bits + sum(2 * self.sel_bits(p) for p in range(self.pes))

    def round_operands(self, outs: list) -> tuple[list, list, list]:
        """For a round's outputs (``(m, n)`` per PE, ``None`` past the tile's end): its distinct rows (in
        order), its distinct columns (in order of first appearance) and each PE's (row, column) index."""
        rows, cols, sels = [], [], []
        for mn in outs:
            if mn is None:
                sels.append((0, 0))
                continue
            m, n = mn
            if m not in rows:
                rows.append(m)
            if n not in cols:
                cols.append(n)
            sels.append((rows.index(m), cols.index(n)))
        if len(rows) + len(cols) > self.slots or any(max(s) > p for p, s in enumerate(sels)):
            raise ValueError(f"broadcast layout: a round touches rows {rows} and columns {cols}, more than its "
                             f"{self.slots} slots or a PE's select range")  # the bound says it cannot
        return rows, cols, sels

    def pack(self, row_words: list[int], col_words: list[int], sels: list[tuple[int, int]]) -> int:
        """One entry: row ``r``'s word in slot ``r``, column ``c``'s in slot ``slots - 1 - c``, the selects."""
        sb, word = self.slot_bits, 0
        for r, w in enumerate(row_words):
            word |= w << (r * sb)
        for c, w in enumerate(col_words):
            word |= w << ((self.slots - 1 - c) * sb)
        at = self.slots * sb
        for p, (r, c) in enumerate(sels):
            b = self.sel_bits(p)
            word |= (r | c << b) << at
            at += 2 * b
        return word

    def network(self, data) -> list:
        """Each PE's entry (activation word, then weight word) selected from the entry ``data`` read."""
        sb, S = self.slot_bits, self.slots
        slot = [data[i * sb:(i + 1) * sb] for i in range(S)]
        at, out = S * sb, []
        for p in range(self.pes):
            b = self.sel_bits(p)
            rows = [slot[r][:self.act_bits] for r in range(p + 1)]
            cols = [slot[S - 1 - c][:self.weight_bits] for c in range(p + 1)]
            if b:
                a, w = Array(rows)[data[at:at + b]], Array(cols)[data[at + b:at + 2 * b]]
            else:
                a, w = rows[0], cols[0]
            out.append(Cat(a, w))
            at += 2 * b
        return out
