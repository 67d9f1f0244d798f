"""Local tile buffers of the systolic design: operand lanes and the output buffer.

:class:`LaneBuffer` is one memory per lane (left: one per array row, top: one per column),
written by the host one entry (all lanes) at a time and read by the controller one address
per lane (data one cycle later). :class:`OutputBuffer` is the C-lane result memory with its
read-modify-write pipeline and the host's write and read ports.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl.systolic.config import (
    BUFFER_CODES,
    SystolicConfig,
    acc_shape,
    lane_shape,
    out_token_layout,
    read_signature,
    write_signature,
)


class LaneBuffer(wiring.Component):
    """``lanes`` memories of ``depth`` signed entries; host writes ``wr`` when ``wr.buf == code``."""

    def __init__(self, cfg: SystolicConfig, code: str, lanes: int, depth: int):
        self.cfg, self.code, self.lanes, self.depth = cfg, code, lanes, depth
        super().__init__({
            "wr": In(write_signature(cfg)),
            "addr": In(data.ArrayLayout(cfg.addr_bits, lanes)),
            "data": Out(data.ArrayLayout(lane_shape(cfg), lanes)),
        })

    def elaborate(self, platform):
        m = Module()
        lw = self.cfg.lane_bits
        for i in range(self.lanes):
            mem = Memory(shape=lane_shape(self.cfg), depth=self.depth, init=[])
            m.submodules[f"lane{i}"] = mem
            rp, wp = mem.read_port(), mem.write_port()
            m.d.comb += [
                rp.addr.eq(self.addr[i]),
                self.data[i].eq(rp.data),
                wp.en.eq(self.wr.en & (self.wr.buf == BUFFER_CODES[self.code])),
                wp.addr.eq(self.wr.addr),
                wp.data.eq(self.wr.data[i * lw:(i + 1) * lw]),
            ]
        return m


class OutputBuffer(wiring.Component):
    """C lanes of results; a presented value is written (or added, read-modify-write) there.

    Stages of a column: t: value presented (``token``), buffer read issued (transparent to this
    cycle's write); t+1: RAM data, the value (``value``, registered by the array); t+2: data
    registered, new value computed; t+3: new value registered and written. The two entries
    whose writes a read in t cannot see (written at the ends of t+1 and t+2) are forwarded, so
    back-to-back accumulation onto the same rows is exact. The host reads through ``rd`` while
    no token is presented.
    """

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        C = cfg.cols
        super().__init__({
            "token": In(data.ArrayLayout(out_token_layout(cfg), C)),
            "value": In(data.ArrayLayout(acc_shape(cfg), C)),
            "wr": In(write_signature(cfg)),
            "rd": In(read_signature(cfg)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        C, ab, aw = cfg.cols, cfg.acc_bits, cfg.addr_bits
        acc = acc_shape(cfg)

        def reg(name, sig, shape):
            s = Signal(shape, name=name)
            m.d.sync += s.eq(sig)
            return s

        attrs = {} if cfg.out_ram == "auto" else {"ram_style": cfg.out_ram}
        host_we = self.wr.en & (self.wr.buf == BUFFER_CODES["out"])
        active, rdata = [], []
        for c in range(C):
            mem = Memory(shape=acc, depth=cfg.out_depth, init=[], attrs=attrs)
            m.submodules[f"lane{c}"] = mem
            wp = mem.write_port()
            rp = mem.read_port(transparent_for=(wp,))
            tok = self.token[c]
            we, addr = tok.we, tok.addr
            b_we, b_addr, b_acc = reg(f"b_we_{c}", we, 1), reg(f"b_addr_{c}", addr, aw), reg(f"b_acc_{c}", tok.acc, 1)
            b_val = self.value[c]  # the array's registered column value (presented in t)
            c_we, c_addr = reg(f"c_we_{c}", b_we, 1), reg(f"c_addr_{c}", b_addr, aw)
            c_val = reg(f"c_val_{c}", b_val, acc)
            new = Signal(acc, name=f"new_{c}")
            d_we, d_addr, d_new = reg(f"d_we_{c}", c_we, 1), reg(f"d_addr_{c}", c_addr, aw), reg(f"d_new_{c}", new, acc)
            # the addend, selected one cycle ahead: D's new value (forwarded, decided from B vs C),
            # else the RAM data or the entry being written from D (forwarded, B vs D, decided from
            # the token vs C), masked to 0 when not accumulating; one 2:1 mux is left before the adder
            fwd_d = reg(f"fwd_d_{c}", b_acc & b_we & c_we & (b_addr == c_addr), 1)
            fwd_e = reg(f"fwd_e_{c}", we & c_we & (addr == c_addr), 1)  # B vs D, decided a cycle ahead
            c_old = reg(f"c_old_{c}", Mux(b_acc, Mux(fwd_e, d_new, rp.data), 0), acc)
            m.d.comb += new.eq(c_val + Mux(fwd_d, d_new, c_old))
            active += [we, b_we, c_we, d_we]
            m.d.comb += [
                rp.addr.eq(Mux(tok.present, addr, self.rd.addr)),
                wp.en.eq(d_we | host_we),
                wp.addr.eq(Mux(d_we, d_addr, self.wr.addr)),
                wp.data.eq(Mux(d_we, d_new, self.wr.data[c * ab:(c + 1) * ab])),
            ]
            rdata.append(rp.data)
        m.d.comb += [self.rd.data.eq(Cat(*rdata)), self.busy.eq(Cat(*active).any())]
        m.d.sync += self.rd.valid.eq(self.rd.en)
        return m
