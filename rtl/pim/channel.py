"""Amaranth design of one PIM channel: ``N`` banks' near-bank units in all-bank lockstep,
one global input buffer, and the gather of every bank's accumulators.

Every row command (ACTAB, PREAB, REF) and column command (MACAB, GBWR, RDACC) goes to all
``N`` bank units at once (AiM's ACT16 / MACAB, HBM-PIM's all-bank mode); each unit keeps its
own timing checks (``error`` is their OR, ``ready`` their AND). The input vector lives once,
in the channel's global buffer (written by GBWR, read by every MAC for all banks). The DRAM
arrays are outside (the cosim driver plays them): ``dram_rd`` / ``dram_row`` / ``dram_col``
ask every bank for the same column, ``dram_rdata`` answers with the ``N`` columns side by
side (bank ``b`` at bits ``[b*W, (b+1)*W)``, ``W = column_elements x lane bits``).

Gather: an RDACC reads one column of ``column_bytes // 4`` accumulators out of the channel's
``N x rg`` accumulators of the group (``rg`` = the group's weight rows, carried in the RDACC's
``col_acc`` field), bank-major: word ``i`` of the group is bank ``i // rg``'s accumulator
``i % rg`` -- the packing the PIM models' gather counts (``ceil(N x rg x 4 / column_bytes)``
columns).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from rtl.pim.design import LANE_BITS, PimBankUnit, _bits, check_params, delay, pim_signature


def channel_signature(p, banks: int) -> dict:
    sig = dict(pim_signature(p))
    sig["dram_rdata"] = In(LANE_BITS[p.mac_precision] * p.column_elements * banks)
    gather_cols = -(-banks * p.acc_registers * 4 // p.column_bytes)  # RDACC columns of a full group
    sig["col_addr"] = In(_bits(max(p.row_columns, p.input_buffer_bytes // p.column_bytes, gather_cols)))
    return sig


def check_channel(p, banks: int, mul_stages: int | None = None, add_stages: int | None = None) -> None:
    check_params(p, mul_stages, add_stages)
    if banks > 1 and p.accumulator_interleave != 1:
        raise ValueError("accumulator_interleave: a channel (banks > 1) gathers one register per accumulator; "
                         "it takes accumulator_interleave 1")
    if not 1 <= banks <= p.banks_per_channel:
        raise ValueError(f"banks: expected 1..{p.banks_per_channel} (banks_per_channel), got {banks}")


class PimChannelUnit(wiring.Component):
    def __init__(self, params, banks: int, mul_stages: int | None = None, add_stages: int | None = None,
                 mul: str = "dsp"):
        check_channel(params, banks, mul_stages, add_stages)
        self.mul_stages, self.add_stages, self.mul = mul_stages, add_stages, mul
        p = self.p = params
        self.N = banks
        self.E = p.column_elements
        self.lb = LANE_BITS[p.mac_precision]
        self.buf_cols = p.input_buffer_bytes // p.column_bytes
        self.A = p.acc_registers
        self.out_lanes = p.column_bytes // 4
        super().__init__(channel_signature(p, banks))

    def elaborate(self, platform):
        p, N, E, lb = self.p, self.N, self.E, self.lb
        W = lb * E
        m = Module()
        units = [PimBankUnit(p, True, self.mul_stages, self.add_stages, self.mul) for _ in range(N)]
        for b, u in enumerate(units):
            m.submodules[f"bank{b}"] = u
            m.d.comb += [
                u.row_valid.eq(self.row_valid), u.row_cmd.eq(self.row_cmd), u.row_addr.eq(self.row_addr),
                u.col_valid.eq(self.col_valid), u.col_cmd.eq(self.col_cmd),
                u.col_addr.eq(self.col_addr[:len(u.col_addr)]),
                u.col_acc.eq(self.col_acc), u.col_in.eq(self.col_in), u.col_wdata.eq(self.col_wdata),
                u.dram_rdata.eq(self.dram_rdata[b * W:(b + 1) * W]),
            ]
        # the global buffer: one copy of the input vector for every bank
        buf = memory.Memory(shape=W, depth=max(2, self.buf_cols), init=[])
        m.submodules.gbuf = buf
        bw, br = buf.write_port(), buf.read_port()
        is_gbwr = self.col_valid & (self.col_cmd == 2)
        m.d.comb += [br.addr.eq(self.col_in), br.en.eq(1),
                     bw.en.eq(is_gbwr), bw.addr.eq(self.col_addr), bw.data.eq(self.col_wdata)]
        m.d.comb += [u.buf_data.eq(br.data) for u in units]
        # all-bank lockstep: every unit asks for the same column
        u0 = units[0]
        m.d.comb += [self.dram_rd.eq(u0.dram_rd), self.dram_row.eq(u0.dram_row), self.dram_col.eq(u0.dram_col)]
        ready = units[0].ready
        busy, err = units[0].busy, units[0].error
        for u in units[1:]:
            ready, busy, err = ready & u.ready, busy | u.busy, err | u.error
        m.d.comb += [self.ready.eq(ready), self.busy.eq(busy), self.error.eq(err)]
        # gather (the cycle after the RDACC, once the last write-back has landed)
        g = m.submodules.gather = PimChannelGather(N, self.A, self.out_lanes, len(self.col_addr), len(self.col_acc))
        m.d.comb += [g.rd.eq(self.col_valid & (self.col_cmd == 3)), g.col.eq(self.col_addr), g.rg.eq(self.col_acc),
                     g.accs.eq(Cat(*(a for u in units for a in u.accs)))]
        ov, od = g.valid, g.data
        m.d.comb += [self.out_valid.eq(delay(m, ov, p.tCL - 2, "out_v")),
                     self.out_data.eq(delay(m, od, p.tCL - 2, "out_d"))]
        return m


class PimChannelGather(wiring.Component):
    """The all-bank RDACC read-out: ``rd`` (an RDACC with column ``col`` and group rows per bank
    ``rg``, 0 = ``registers``) puts on ``data`` with ``valid`` 2 cycles later the column's
    ``lanes`` words of the bank-major group, word ``i`` = bank ``i // rg``'s accumulator ``i % rg``
    (0 beyond the group), read from ``accs`` (bank ``b``'s accumulator ``j`` at word
    ``b * registers + j``) the cycle after ``rd``.

    Bank ``b`` holds the group's words ``[b*rg, (b+1)*rg)`` (its start ``b*rg`` a running sum of
    ``rg``: no divider), so the column takes from bank ``b`` the window of ``lanes`` consecutive
    accumulators at ``s = col*lanes - b*rg`` (lane ``k``: accumulator ``s + k`` where ``0 <= s + k
    < rg``, else nothing). With the accumulators in rows of ``L`` words (``L`` = ``lanes`` rounded
    up to a power of two; a zero row before and after), the window lies in the two rows from row
    ``floor(s / L)``: one row-pair select and one shift by ``s mod L`` words per bank. Those and the
    per-lane hits are computed from the command and registered. A 64:1 select per lane and bank
    instead (any lane from any accumulator) maps to 3x (``word_select``) to 4x (``Array``) the
    LUT4s on ECP5, 6x with the dividers it had (bench/bench_pim_gather_synth.py, docs/rtl.md "Scale")."""

    def __init__(self, banks: int, registers: int, lanes: int, col_bits: int, rg_bits: int):
        self.N, self.A, self.lanes = banks, registers, lanes
        super().__init__({"rd": In(1), "col": In(col_bits), "rg": In(rg_bits), "accs": In(32 * registers * banks),
                          "valid": Out(1), "data": Out(32 * lanes)})

    def elaborate(self, platform):
        m = Module()
        N, A, lanes = self.N, self.A, self.lanes
        L = 1 << (lanes - 1).bit_length()  # row width in words
        rows = -(-A // L)
        rd_v = Signal()
        m.d.sync += rd_v.eq(self.rd)
        rg = Signal(range(A + 1))
        m.d.comb += rg.eq(Mux(self.rg == 0, A, self.rg))
        starts = [Signal(range(N * A + 1), name=f"start{b}") for b in range(N + 1)]
        m.d.comb += starts[0].eq(0)
        m.d.comb += [starts[b + 1].eq(starts[b] + rg) for b in range(N)]
        first = Signal(len(self.col) + _bits(lanes) + 1, name="first")  # the column's first word of the group
        m.d.comb += first.eq(self.col * lanes)
        words = [0] * lanes
        for b in range(N):
            bank = self.accs[32 * A * b:32 * A * (b + 1)]
            padded = Cat(bank, Const(0, 32 * (rows * L - A)))
            zero = Const(0, 32 * L)
            row = [zero] + [padded[32 * L * r:32 * L * (r + 1)] for r in range(rows)] + [zero]
            pairs = Cat(*(Cat(row[j], row[j + 1]) for j in range(rows + 1)))  # pair j = rows j - 1 and j
            # t = s + L >= 0 whenever a lane hits (s > -lanes); pair t // L, shift t % L
            t = Signal(len(first) + 1, name=f"t{b}")
            m.d.comb += t.eq(first + L - starts[b])
            pair_at, shift = Signal(_bits(rows + 1), name=f"pair{b}"), Signal(max(1, _bits(L)), name=f"shift{b}")
            m.d.sync += [pair_at.eq(t >> _bits(L) if L > 1 else t), shift.eq(t[:_bits(L)] if L > 1 else 0)]
            pair, window = Signal(64 * L, name=f"pair_words{b}"), Signal(32 * lanes, name=f"window{b}")
            # the selects as shifts sliced explicitly (a word_select of a concatenation lints as a truncation)
            m.d.comb += [pair.eq((pairs >> (pair_at * 64 * L))[:64 * L]),
                         window.eq((pair >> (shift * 32))[:32 * lanes])]
            for k in range(lanes):
                hit = Signal(name=f"hit{k}_{b}")
                below_end = first + k < starts[b + 1]
                m.d.sync += hit.eq(below_end if b == 0 else (first + k >= starts[b]) & below_end)
                words[k] = words[k] | Mux(hit, window[32 * k:32 * (k + 1)], 0)
        m.d.sync += [self.valid.eq(rd_v), self.data.eq(Cat(*words))]
        return m
