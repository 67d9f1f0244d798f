"""The SIMD array's buffers: operands, group scales and outputs (one entry = every PE's part).

Written by the host (``wr_*``, while the array is idle) and, for the outputs, by the datapath's
write-back (``wb_*``, which wins); read by the datapath (``op_addr``, ``sc_addr``, ``old_addr``:
data the next cycle) and by the host (``rd_*``: ``rd_data`` valid the cycle after ``rd_en``).
Layouts: :mod:`rtl.simd.design`. With ``operands`` (a :class:`rtl.simd.broadcast.BroadcastLayout`) an
operand entry holds each distinct row and column of a round once and ``op_data`` is every PE's
entry picked from it (the lane array); without, PE ``p``'s part is at ``[p*E, (p+1)*E)`` of the entry.
"""
from __future__ import annotations

from amaranth import Cat, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl.simd.config import BUF_CODES, SimdConfig, _bits


def buffers_signature(cfg: SimdConfig) -> dict:
    o = cfg.options
    P, OW = cfg.pes, cfg.out_bits
    return {
        "wr_en": In(1), "wr_buf": In(2), "wr_addr": In(_bits(max(o.op_depth, o.scale_depth, o.out_depth))),
        "wr_data": In(cfg.data_bits),
        "rd_en": In(1), "rd_addr": In(_bits(o.out_depth)), "rd_data": Out(P * OW), "rd_valid": Out(1),
        "op_addr": In(range(o.op_depth)), "op_data": Out(P * cfg.entry_bits),
        "sc_addr": In(range(o.scale_depth)), "sc_data": Out(P * 32),
        "old_addr": In(range(o.out_depth)), "old_data": Out(P * OW),
        "wb_en": In(1), "wb_addr": In(range(o.out_depth)), "wb_data": In(P * OW),
    }


class SimdBuffers(wiring.Component):
    def __init__(self, cfg: SimdConfig, operands=None):
        self.cfg = cfg
        self.operands = operands
        super().__init__(buffers_signature(cfg))

    def elaborate(self, platform):
        cfg, o = self.cfg, self.cfg.options
        P = cfg.pes
        m = Module()
        op_bits = P * cfg.entry_bits if self.operands is None else self.operands.entry_bits
        m.submodules.opbuf = opbuf = Memory(shape=op_bits, depth=o.op_depth, init=[])
        m.submodules.scbuf = scbuf = Memory(shape=P * 32, depth=o.scale_depth, init=[])
        m.submodules.outbuf = outbuf = Memory(shape=P * cfg.out_bits, depth=o.out_depth, init=[])
        op_w, sc_w, out_w = opbuf.write_port(), scbuf.write_port(), outbuf.write_port()
        op_r, sc_r, old_r, host_r = opbuf.read_port(), scbuf.read_port(), outbuf.read_port(), outbuf.read_port()
        host_wr = {k: self.wr_en & (self.wr_buf == code) for k, code in BUF_CODES.items()}
        m.d.comb += [
            op_w.en.eq(host_wr["operands"]), op_w.addr.eq(self.wr_addr), op_w.data.eq(self.wr_data),
            sc_w.en.eq(host_wr["scales"]), sc_w.addr.eq(self.wr_addr), sc_w.data.eq(self.wr_data),
            out_w.en.eq(self.wb_en | host_wr["outputs"]), out_w.addr.eq(Mux(self.wb_en, self.wb_addr, self.wr_addr)),
            out_w.data.eq(Mux(self.wb_en, self.wb_data, self.wr_data)),
            op_r.addr.eq(self.op_addr), op_r.en.eq(1),
            self.op_data.eq(op_r.data if self.operands is None else Cat(*self.operands.network(op_r.data))),
            sc_r.addr.eq(self.sc_addr), sc_r.en.eq(1), self.sc_data.eq(sc_r.data),
            old_r.addr.eq(self.old_addr), old_r.en.eq(1), self.old_data.eq(old_r.data),
            host_r.addr.eq(self.rd_addr), host_r.en.eq(self.rd_en), self.rd_data.eq(host_r.data),
        ]
        m.d.sync += self.rd_valid.eq(self.rd_en)
        return m
