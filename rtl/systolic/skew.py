"""From the fetch level to the lanes and the array: the skew and delay registers of the systolic
controller.

:class:`LaneSkew` turns the lane-0 tokens into one buffer address and valid bit per lane (lane
``i`` is lane 0 delayed by ``i``, the systolic skew). The tokens leave the sequencer through a
register: the read is issued one cycle after fetch, its data appears a cycle later and sits in
the array's edge registers a cycle after that (``FETCH_LATENCY`` = 3), so no PE path starts at a
RAM and no RAM address comes from the sequencer's logic. :class:`ArrayControl` delays the array
controls (shift / swap / os, OS first / last flags, output tokens, ``tile_start`` / ``tile_done``)
to the operand side (``FETCH_LATENCY`` after fetch) or to the contract's cycle
(``FETCH_LATENCY + 1 - P``; see :mod:`rtl.systolic.controller`).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.systolic.config import FETCH_LATENCY, SystolicConfig, out_token_layout
from rtl.systolic.sequencer import fetch_token_layout


def reg(m: Module, name: str, sig, shape=None) -> Signal:
    """``sig`` one cycle later (a register named ``name``)."""
    s = Signal(shape if shape is not None else len(sig), name=name)
    m.d.sync += s.eq(sig)
    return s


def late(m: Module, name: str, sig, shape=None, stages: int = FETCH_LATENCY):
    """``sig`` ``stages`` cycles later; the last register is named ``name``."""
    for i in range(stages):
        sig = reg(m, f"{name}_d{i + 1}" if i < stages - 1 else name, sig, shape)
    return sig


def delay_line(m: Module, name: str, sig, n: int, shape=None) -> list:
    """``[sig, sig + 1 cycle, ..., sig + (n - 1) cycles]``: lane i of a skewed lane-0 value."""
    out = [sig]
    for i in range(1, n):
        out.append(reg(m, f"{name}_{i}", out[-1], shape))
    return out


class LaneSkew(wiring.Component):
    """Per-lane buffer addresses (one cycle after fetch) and lane valid bits (with the read data,
    two cycles after fetch) from the lane-0 tokens; lane ``i`` is lane 0 delayed by ``i``. WS / IS
    tops are not skewed (the preload shifts down the chain); OS tops are."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        aw, R, C = cfg.addr_bits, cfg.rows, cfg.cols
        super().__init__({
            "tok": In(fetch_token_layout(cfg)),
            "left_addr": Out(data.ArrayLayout(aw, R)), "top_addr": Out(data.ArrayLayout(aw, C)),
            "left_ok": Out(R), "top_ok": Out(C),
        })

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        R, C = cfg.rows, cfg.cols
        left, top = self.tok.left, self.tok.top
        lq_addr = delay_line(m, "left_addr", reg(m, "left_addr_0", left.addr), R)
        lq_valid = delay_line(m, "left_valid", reg(m, "left_valid_0", left.valid), R, 1)
        lq_lim = delay_line(m, "left_lim", reg(m, "left_lim_0", left.lim), R)
        for r in range(R):
            m.d.comb += [self.left_addr[r].eq(lq_addr[r]),
                         self.left_ok[r].eq(late(m, f"left_ok_{r}", lq_valid[r] & (r < lq_lim[r]), 1,
                                                 FETCH_LATENCY - 2))]

        tq_addr, tq_valid, tq_lim = reg(m, "top_addr_0", top.addr), reg(m, "top_valid_0", top.valid), \
            reg(m, "top_lim_0", top.lim)
        os_q = reg(m, "top_skew", self.tok.os_run)
        if cfg.has_os:
            ta = delay_line(m, "top_addr", tq_addr, C)
            tv = delay_line(m, "top_valid", tq_valid & os_q, C, 1)
            tl = delay_line(m, "top_lim", tq_lim, C)
        for c in range(C):
            if cfg.has_os and cfg.has_wsis:
                addr = Mux(os_q, ta[c], tq_addr)
                ok = Mux(os_q, tv[c] & (c < tl[c]), tq_valid & (c < tq_lim))
            elif cfg.has_os:
                addr, ok = ta[c], tv[c] & (c < tl[c])
            else:
                addr, ok = tq_addr, tq_valid & (c < tq_lim)
            m.d.comb += [self.top_addr[c].eq(addr), self.top_ok[c].eq(late(m, f"top_ok_{c}", ok, 1, FETCH_LATENCY - 2))]
        return m


class ArrayControl(wiring.Component):
    """The array's controls and output tokens, each at its cycle: operand side (shift, swap, os)
    ``FETCH_LATENCY`` after fetch; partial-sum side and output tokens at the contract's cycle
    ``FETCH_LATENCY + 1 - P`` (carry-save PEs take their partial-sum controls a cycle earlier).
    ``active``: a tile's tokens are still on their way (for ``busy``)."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        members = {
            "tok": In(fetch_token_layout(cfg)),
            "shift": Out(1), "swap": Out(1), "os": Out(1), "os_acc": Out(1),
            "out_token": Out(data.ArrayLayout(out_token_layout(cfg), cfg.cols)),
            "tile_start": Out(1), "tile_done": Out(1), "active": Out(1),
        }
        if cfg.has_os:
            members.update({"first": Out(cfg.rows), "last": Out(cfg.rows)})
        super().__init__(members)

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        R, C, P, aw = cfg.rows, cfg.cols, cfg.mult_pipeline_stages, cfg.addr_bits
        tok = self.tok
        contract_lag = FETCH_LATENCY + 1 - P
        run_d = [tok.run]
        for i in range(FETCH_LATENCY + 1):
            run_d.append(reg(m, f"run_d{i + 1}", run_d[-1]))
        # carry-save PEs accumulate in the cycle their operands arrive (no product register): the
        # partial-sum controls come with the operands, one cycle before the contract's add
        early = int(cfg.carry_save)
        # the output lane masks (c < lim) are registered: compared one stage before contract_lag
        lim_pre = late(m, "a_lim_out", tok.lim_out, None, contract_lag - 1)
        out_lane_ok = [reg(m, f"out_lane_ok_{c}", c < lim_pre, 1) for c in range(C)]
        a_acc = late(m, "a_acc", tok.acc, None, contract_lag)
        m.d.comb += [self.tile_start.eq(late(m, "a_tile_start", tok.start, 1, contract_lag)),
                     self.shift.eq(late(m, "a_shift", tok.shift, 1)), self.swap.eq(late(m, "a_swap", tok.swap, 1)),
                     self.os.eq(late(m, "a_os", tok.os)),
                     self.os_acc.eq(late(m, "a_os_acc", tok.os, 1, contract_lag - early))]
        if cfg.has_os:
            lf = delay_line(m, "left_first", tok.left.first, R, 1)
            ll = delay_line(m, "left_last", tok.left.last, R, 1)
            flag_lag = FETCH_LATENCY + 1 - early
            m.d.comb += [self.first.eq(Cat(*[late(m, f"a_first_{r}", lf[r], 1, flag_lag) for r in range(R)])),
                         self.last.eq(Cat(*[late(m, f"a_last_{r}", ll[r], 1, flag_lag) for r in range(R)]))]
        out = tok.out
        a_o = [(late(m, "a_o_present_0", out.present, 1, contract_lag), late(m, "a_o_we_0", out.we, 1, contract_lag),
                late(m, "a_o_addr_0", out.addr, aw, contract_lag), late(m, "a_o_last_0", out.last, 1, contract_lag))]
        for c in range(1, C):
            a_o.append(tuple(reg(m, f"a_o_{nm}_{c}", s) for nm, s in zip(("present", "we", "addr", "last"), a_o[-1])))
        for c in range(C):
            present, we_row, addr, last = a_o[c]  # addr: absolute output buffer address
            m.d.comb += [
                self.out_token[c].present.eq(present),
                self.out_token[c].we.eq(present & we_row & out_lane_ok[c]),
                self.out_token[c].addr.eq(addr),
                self.out_token[c].acc.eq(a_acc),
                self.out_token[c].last.eq(last),
            ]
        present_l, _, _, last_l = a_o[C - 1]
        m.d.comb += [self.tile_done.eq(present_l & last_l), self.active.eq(Cat(*run_d).any())]
        return m
