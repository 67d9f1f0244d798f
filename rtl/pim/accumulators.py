"""The bank's accumulators (:class:`PimAccumulators`): ``acc_registers`` int32 / fp32 registers, the
accumulate of one column sum per cycle, the group restart, and the RDACC read-out.

The accumulate loop is kept to one adder: the accumulator an accumulate reads is fetched the
cycle before (``next_idx``, with the write-back in flight forwarded) into a register, and the
previous cycle's sum (``sum_r``) is forwarded when the same accumulator is hit twice in a row;
the new sum goes to ``sum_r`` and is written back into the register file the cycle after. The
first accumulate after an RDACC starts a new group: every accumulator restarts from zero.

Read-out: an RDACC's accumulator column (``column_bytes // 4`` words, accumulator
``col * lanes + i`` in word ``i``; 0 beyond ``acc_registers``) is on ``rd_data`` with
``rd_valid`` 2 cycles after ``rd`` (the snapshot is taken the cycle after the command, once the
last write-back has landed: the models put an RDACC at least ``mac_drain`` after the last MAC).
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.pim.controller import bits_for

#: cycles from ``rd`` to ``rd_data``
READ_LATENCY = 2


class PimAccumulators(wiring.Component):
    """``valid``: accumulate ``col_sum`` into accumulator ``idx`` this cycle; ``next_valid`` /
    ``next_idx``: the accumulate of the next cycle (for the prefetch). ``rd`` / ``rd_col``: an
    RDACC. ``accs``: the register file (a channel's gather reads it)."""

    def __init__(self, precision: str, registers: int, out_lanes: int, col_bits: int):
        self.precision, self.A, self.out_lanes = precision, registers, out_lanes
        ib = bits_for(registers)
        super().__init__({
            "valid": In(1), "idx": In(ib), "next_idx": In(ib), "col_sum": In(32), "rdacc": In(1),
            "rd": In(1), "rd_col": In(col_bits), "rd_valid": Out(1), "rd_data": Out(32 * out_lanes),
            "accs": Out(32 * registers),
        })

    def elaborate(self, platform):
        m = Module()
        A = self.A
        accs = Array(Signal(32, name=f"acc{i}") for i in range(A))
        m.d.comb += self.accs.eq(Cat(*accs))
        fresh = Signal(init=1)  # the next accumulate starts a group
        sum_r, sum_idx, sum_v = Signal(32), Signal.like(self.idx), Signal()  # the last accumulate, in flight
        clear = self.valid & fresh
        # the accumulator the next cycle's accumulate reads: 0 after a clear, else the write-back in flight
        # (sum_r, if it is that accumulator) or the register file
        old_r, fwd = Signal(32), Signal()
        m.d.sync += [
            old_r.eq(Mux(clear, 0, Mux(sum_v & (sum_idx == self.next_idx), sum_r, accs[self.next_idx]))),
            fwd.eq(self.valid & (self.idx == self.next_idx)),
        ]
        old = Signal(32)
        m.d.comb += old.eq(Mux(clear, 0, Mux(fwd, sum_r, old_r)))
        if self.precision == "bf16":
            new = fp.fp32_add_finite(m, old, self.col_sum, "acc_add")
        else:
            new = (old + self.col_sum)[:32]
        m.d.sync += sum_v.eq(self.valid)
        with m.If(self.valid):
            m.d.sync += [sum_r.eq(new), sum_idx.eq(self.idx), fresh.eq(0)]
        with m.If(sum_v):
            m.d.sync += accs[sum_idx].eq(sum_r)
        with m.If(clear):
            m.d.sync += [a.eq(0) for a in accs]
        with m.If(self.rdacc):
            m.d.sync += fresh.eq(1)
        # read-out: register the command, then the column of accumulators
        rd_v, rd_col = Signal(), Signal.like(self.rd_col)
        m.d.sync += [rd_v.eq(self.rd), rd_col.eq(self.rd_col)]
        words = []
        for lane in range(self.out_lanes):
            at = Signal(len(rd_col) + bits_for(self.out_lanes) + 1, name=f"rd_at{lane}")
            m.d.comb += at.eq(rd_col * self.out_lanes + lane)
            words.append(Mux(at < A, accs[at[:bits_for(A)]], 0))
        m.d.sync += [self.rd_valid.eq(rd_v), self.rd_data.eq(Cat(*words))]
        return m
