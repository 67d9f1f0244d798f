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

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In

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
        # gather (the cycle after the RDACC, once the last write-back has landed): word i of the group is
        # bank i // rg's accumulator i % rg, i.e. bank b's accumulator i - b*rg when b*rg <= i < (b+1)*rg.
        # Each bank's start b*rg is a running sum (no divider, no multiplier); the per-lane, per-bank
        # accumulator index and hit are computed from the command and registered, so the accumulators
        # are read in the same cycle as before (the cycle after the RDACC)
        is_rdacc = self.col_valid & (self.col_cmd == 3)
        rd_v = Signal()
        m.d.sync += rd_v.eq(is_rdacc)
        span = N * self.A + self.out_lanes  # beyond every index and every bank start + rg
        rg = Signal(range(self.A + 1))
        m.d.comb += rg.eq(Mux(self.col_acc == 0, self.A, self.col_acc))
        starts = [Signal(range(span + 1), name=f"gather_start{b}") for b in range(N + 1)]
        m.d.comb += starts[0].eq(0)
        m.d.comb += [starts[b + 1].eq(starts[b] + rg) for b in range(N)]
        words = []
        for lane in range(self.out_lanes):
            idx = Signal(len(self.col_addr) + _bits(self.out_lanes) + 1, name=f"gather_idx{lane}")
            m.d.comb += idx.eq(self.col_addr * self.out_lanes + lane)
            word = 0
            for b, u in enumerate(units):
                hit = Signal(name=f"gather_hit{lane}_{b}")
                sel = Signal(_bits(self.A), name=f"gather_sel{lane}_{b}")
                m.d.sync += [hit.eq((idx >= starts[b]) & (idx < starts[b + 1])),
                             sel.eq((idx - starts[b])[:len(sel)])]
                word = word | Mux(hit, Array(u.accs)[sel], 0)
            words.append(word)
        ov, od = Signal(name="gather_v"), Signal(32 * self.out_lanes, name="gather_d")
        m.d.sync += [ov.eq(rd_v), od.eq(Cat(*words))]
        m.d.comb += [self.out_valid.eq(delay(m, ov, p.tCL - 2, "out_v")),
                     self.out_data.eq(delay(m, od, p.tCL - 2, "out_d"))]
        return m
