"""The R x C grid of processing elements with its edge registers and column outputs.

The edge registers ``left_in`` / ``top_in`` hold the buffer read data masked with the lane
valid bits, so no PE path starts at a RAM. ``col_q[c]`` is the value column c presented in
the *previous* cycle, read from registers: the bottom PE's psum (WS/IS) or, in OS, the OR of
the PEs' result-bus terms (exactly one PE of a column drives it in a cycle), so no output
path starts at an adder. With carry-save PEs (``pe_style="tpe"``) the psums and buses are
(sum, carry) pairs and ``col_q[c]`` is a register after one carry-propagate adder per column: the
only carry propagation of a value, deferred to where it leaves the array.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.systolic.config import SystolicConfig, acc_shape, lane_shape
from rtl.systolic.pe import ProcessingElement


def array_signature(cfg: SystolicConfig) -> wiring.Signature:
    R, C = cfg.rows, cfg.cols
    lane, acc = lane_shape(cfg), acc_shape(cfg)
    members = {
        "left_data": In(data.ArrayLayout(lane, R)), "left_ok": In(R),
        "top_data": In(data.ArrayLayout(lane, C)), "top_ok": In(C),
        "shift": In(1), "swap": In(1), "os": In(1), "os_acc": In(1),
        "col_q": Out(data.ArrayLayout(acc, C)),
    }
    if cfg.has_os:
        members.update({"first": In(R), "last": In(R)})
    return wiring.Signature(members)


class SystolicArray(wiring.Component):
    """PE grid: operands enter at the left (one lane per row) and the top (one per column)."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__(array_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        R, C = cfg.rows, cfg.cols
        lane, acc = lane_shape(cfg), acc_shape(cfg)

        left_in_d = [Mux(self.left_ok[r], self.left_data[r], 0) for r in range(R)]
        left_in = []
        for r in range(R):
            s = Signal(lane, name=f"left_in_{r}")
            m.d.sync += s.eq(left_in_d[r])
            left_in.append(s)
        top_in_d = [Mux(self.top_ok[c], self.top_data[c], 0) for c in range(C)]
        top_in = []
        for c in range(C):
            s = Signal(lane, name=f"top_in_{c}")
            m.d.sync += s.eq(top_in_d[c])
            top_in.append(s)

        pe = [[ProcessingElement(cfg, top_row=r == 0) for _ in range(C)] for r in range(R)]
        for r in range(R):
            for c in range(C):
                p = pe[r][c]
                m.submodules[f"pe_{r}_{c}"] = p
                m.d.comb += [p.shift.eq(self.shift), p.swap.eq(self.swap), p.os.eq(self.os),
                             p.os_acc.eq(self.os_acc)]
                if c == 0:
                    m.d.comb += [p.a.eq(left_in[r]), p.a_next.eq(left_in_d[r])]
                    if cfg.has_os:
                        m.d.comb += p.flags.eq(Cat(self.first[r], self.last[r]))
                else:
                    left = pe[r][c - 1]
                    m.d.comb += [p.a.eq(left.a_out), p.a_next.eq(left.a)]
                    if cfg.has_os:
                        m.d.comb += p.flags.eq(left.flags_out)
                if r == 0:
                    m.d.comb += [p.sh_in.eq(top_in[c]), p.sh_in_next.eq(top_in_d[c]), p.psum_in.eq(0)]
                    if cfg.carry_save:
                        m.d.comb += p.psum_c_in.eq(0)
                else:
                    up = pe[r - 1][c]
                    m.d.comb += [p.sh_in.eq(up.sh_out), p.sh_in_next.eq(up.sh_next), p.psum_in.eq(up.psum)]
                    if cfg.carry_save:
                        m.d.comb += p.psum_c_in.eq(up.psum_c)

        os_q = Signal()  # os_acc of the cycle the value in col_q was presented
        m.d.sync += os_q.eq(self.os_acc)
        if cfg.carry_save:
            self._resolve_columns(m, pe, os_q)
            return m
        for c in range(C):
            bottom = pe[R - 1][c].psum
            if cfg.has_os:
                bus = Signal(acc, name=f"os_bus_{c}")
                terms = pe[0][c].bus
                for r in range(1, R):
                    terms = terms | pe[r][c].bus
                m.d.comb += bus.eq(terms)
                m.d.comb += self.col_q[c].eq(Mux(os_q, bus, bottom) if cfg.has_wsis else bus)
            else:
                m.d.comb += self.col_q[c].eq(bottom)
        return m

    def _resolve_columns(self, m, pe, os_q):
        """Carry-save PEs: per column, the (sum, carry) pair leaving the array (bottom PE, or the
        OR of the OS bus pairs) through one carry-propagate adder into ``col_q``'s register."""
        cfg = self.cfg
        R, C = cfg.rows, cfg.cols
        acc = acc_shape(cfg)
        for c in range(C):
            pair = (pe[R - 1][c].psum, pe[R - 1][c].psum_c)
            if cfg.has_os:
                bus_s, bus_c = pe[0][c].bus, pe[0][c].bus_c
                for r in range(1, R):
                    bus_s, bus_c = bus_s | pe[r][c].bus, bus_c | pe[r][c].bus_c
                os_pair = (bus_s, bus_c)
                pair = tuple(Mux(os_q, o, w) for o, w in zip(os_pair, pair)) if cfg.has_wsis else os_pair
            resolved = Signal(acc, name=f"cpa_{c}")
            if cfg.drain_cycles:
                # two stages: the lower half and its carry, then the upper half (registered halves)
                h = cfg.acc_bits // 2
                lo = Signal(h + 1, name=f"cpa_lo_{c}")
                hi_s, hi_c = Signal(cfg.acc_bits - h, name=f"cpa_hs_{c}"), Signal(cfg.acc_bits - h, name=f"cpa_hc_{c}")
                m.d.sync += [lo.eq(pair[0][:h] + pair[1][:h]), hi_s.eq(pair[0][h:]), hi_c.eq(pair[1][h:])]
                m.d.sync += resolved.eq(Cat(lo[:h], hi_s + hi_c + lo[h]))
            else:
                m.d.sync += resolved.eq(pair[0] + pair[1])
            m.d.comb += self.col_q[c].eq(resolved)
