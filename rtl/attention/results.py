"""The attention array's result store: each finished pass's row sums ``l`` and outputs ``O``.

A pass's ``l`` (``rows`` words) and ``O`` (``rows x head_dim`` words) are captured from the running
online-softmax state in one cycle (``cap`` with ``cap_pass``; FLAT's single pass with ``flat_cap``);
after the tile the final divide reads ``l`` and ``O`` one element at a time (``fin_l_addr``,
``fin_o_addr``) and writes ``O * 1/l`` back (``fin_we``, ``fin_addr``, ``fin_data``; it wins over a
capture in the same cycle); the host reads one row of ``O`` per request, one cycle later
(``rd_en``, ``rd_addr`` -> ``rd_valid``, ``rd_data``). Words are fp32 bit patterns.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


class ResultStore(wiring.Component):
    def __init__(self, rows: int, head_dim: int, passes: int):
        self.rows, self.head_dim, self.passes = rows, head_dim, passes
        R, D, QP = rows, head_dim, passes
        # element addresses: pass * rows + row (l), (pass * rows + row) * head_dim + column (O); a pass index
        # of `passes` (one past the last: the final divide's counters) must not wrap
        l_addr = range((QP + 1) * R + 1)
        o_addr = range(((QP + 1) * R + 1) * D + 1)
        super().__init__({
            "cap": In(1), "cap_pass": In(range(QP + 1)), "flat_cap": In(1),
            "l_in": In(32 * R), "o_in": In(32 * R * D),
            "fin_l_addr": In(l_addr), "fin_o_addr": In(o_addr), "fin_l": Out(32), "fin_o": Out(32),
            "fin_we": In(1), "fin_addr": In(o_addr), "fin_data": In(32),
            "rd_en": In(1), "rd_addr": In(_bits(QP * R)), "rd_valid": Out(1), "rd_data": Out(32 * D),
        })

    def elaborate(self, platform):
        R, D, QP = self.rows, self.head_dim, self.passes
        m = Module()
        res_o = Array(Signal(32, name=f"res_o_{k}") for k in range(QP * R * D))
        res_l = Array(Signal(32, name=f"res_l_{k}") for k in range(QP * R))
        m.d.comb += [self.fin_l.eq(res_l[self.fin_l_addr]), self.fin_o.eq(res_o[self.fin_o_addr])]
        for pp in range(QP):
            with m.If((self.cap & (self.cap_pass == pp)) | (self.flat_cap & (pp == 0))):
                for i in range(R):
                    m.d.sync += res_l[pp * R + i].eq(self.l_in.word_select(i, 32))
                    for e in range(D):
                        m.d.sync += res_o[(pp * R + i) * D + e].eq(self.o_in.word_select(i * D + e, 32))
        with m.If(self.fin_we):
            m.d.sync += res_o[self.fin_addr].eq(self.fin_data)
        m.d.sync += self.rd_valid.eq(self.rd_en)
        with m.If(self.rd_en):
            m.d.sync += self.rd_data.eq(Cat(*(res_o[self.rd_addr * D + e] for e in range(D))))
        return m
