"""The SIMD array's buffers: operands, group scales and outputs (one entry = every PE's part), each in
two banks, so the host fills one while a tile computes on the other (issue 23 item 8: the overlap of
loads and stores with compute that the models assume, the mapper's two slots per operand).

``bank`` is the bank of the running tile (the array drives it from the command's ``bank`` field:
the command's own in the cycle it is taken, then the held one). The datapath reads its bank
(``op_addr``, ``sc_addr``, ``old_addr``: data the next cycle) and writes its results there (``wb_*``).
The host writes (``wr_*``) and reads (``rd_*``: ``rd_data`` valid the cycle after ``rd_en``) the bank
on top of its address (``wr_addr``'s bit :func:`host_addr_bits` ``- 1``, ``rd_addr``'s likewise).
While a tile runs (``busy``), the host's writes and reads of the other bank are ready; a write into
the running bank, or into the outputs in a cycle the datapath writes them, is not (``wr_ready`` low),
and a read of the running bank waits (``rd_ready`` low). A write given while not ready is dropped:
the host signature's streams (:class:`rtl.simd.host.SimdEngine`) only give one when ready.

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

#: operand banks: the running tile's and the one the host fills
BANKS = 2


def host_addr_bits(cfg: SimdConfig) -> int:
    """Width of the host's write address: an entry of the deepest buffer, then the bank bit on top."""
    o = cfg.options
    return _bits(max(o.op_depth, o.scale_depth, o.out_depth)) + 1


def read_addr_bits(cfg: SimdConfig) -> int:
    """Width of the host's read address: an output entry, then the bank bit on top."""
    return _bits(cfg.options.out_depth) + 1


def buffers_signature(cfg: SimdConfig) -> dict:
    o = cfg.options
    P, OW = cfg.pes, cfg.out_bits
    return {
        "wr_en": In(1), "wr_buf": In(2), "wr_addr": In(host_addr_bits(cfg)), "wr_data": In(cfg.data_bits),
        "wr_ready": Out(1),
        "rd_en": In(1), "rd_addr": In(read_addr_bits(cfg)), "rd_data": Out(P * OW), "rd_valid": Out(1),
        "rd_ready": Out(1),
        "bank": In(1), "busy": In(1),
        "op_addr": In(range(o.op_depth)), "op_data": Out(P * cfg.entry_bits),
        "sc_addr": In(range(o.scale_depth)), "sc_data": Out(P * 32),
        "old_addr": In(range(o.out_depth)), "old_data": Out(P * OW),
        "wb_en": In(1), "wb_addr": In(range(o.out_depth)), "wb_data": In(P * OW),
    }


def _banked(depth: int) -> tuple[int, int]:
    """(entry address bits, memory depth) of a two-bank buffer of ``depth`` entries a bank: bank 1's
    entries start at ``1 << bits`` (the bank is the address's top bit)."""
    bits = _bits(depth)
    return bits, (1 << bits) + depth


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
        (ob, op_mem), (sb, sc_mem), (rb, out_mem) = (_banked(d) for d in (o.op_depth, o.scale_depth, o.out_depth))
        m.submodules.opbuf = opbuf = Memory(shape=op_bits, depth=op_mem, init=[])
        m.submodules.scbuf = scbuf = Memory(shape=P * 32, depth=sc_mem, init=[])
        m.submodules.outbuf = outbuf = Memory(shape=P * cfg.out_bits, depth=out_mem, init=[])
        op_w, sc_w, out_w = opbuf.write_port(), scbuf.write_port(), outbuf.write_port()
        op_r, sc_r, old_r, host_r = opbuf.read_port(), scbuf.read_port(), outbuf.read_port(), outbuf.read_port()
        wr_bank, rd_bank = self.wr_addr[-1], self.rd_addr[-1]
        to_out = self.wr_buf == BUF_CODES["outputs"]
        m.d.comb += [self.wr_ready.eq(~(self.busy & (wr_bank == self.bank)) & ~(to_out & self.wb_en)),
                     self.rd_ready.eq(~(self.busy & (rd_bank == self.bank)))]
        host_wr = {k: self.wr_en & self.wr_ready & (self.wr_buf == code) for k, code in BUF_CODES.items()}
        m.d.comb += [
            op_w.en.eq(host_wr["operands"]), op_w.addr.eq(Cat(self.wr_addr[:ob], wr_bank)), op_w.data.eq(self.wr_data),
            sc_w.en.eq(host_wr["scales"]), sc_w.addr.eq(Cat(self.wr_addr[:sb], wr_bank)), sc_w.data.eq(self.wr_data),
            out_w.en.eq(self.wb_en | host_wr["outputs"]),
            out_w.addr.eq(Mux(self.wb_en, Cat(self.wb_addr, self.bank), Cat(self.wr_addr[:rb], wr_bank))),
            out_w.data.eq(Mux(self.wb_en, self.wb_data, self.wr_data)),
            op_r.addr.eq(Cat(self.op_addr, self.bank)), op_r.en.eq(1),
            self.op_data.eq(op_r.data if self.operands is None else Cat(*self.operands.network(op_r.data))),
            sc_r.addr.eq(Cat(self.sc_addr, self.bank)), sc_r.en.eq(1), self.sc_data.eq(sc_r.data),
            old_r.addr.eq(Cat(self.old_addr, self.bank)), old_r.en.eq(1), self.old_data.eq(old_r.data),
            host_r.addr.eq(Cat(self.rd_addr[:rb], rd_bank)), host_r.en.eq(self.rd_en), self.rd_data.eq(host_r.data),
        ]
        m.d.sync += self.rd_valid.eq(self.rd_en)
        return m
