"""The bank's command decoder and timing checks (:class:`PimBankController`): bank state (open
row), the tRCD / tRAS / tRP / tRTP / tRFC / MAC-spacing / RDACC drain and spacing counters, the sticky ``error`` flag,
``ready``, and the registered column read sent to the DRAM array (``dram_*``)."""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

ACT, PRE, REF = 1, 2, 3
MAC, GBWR, RDACC = 1, 2, 3
#: width of the "cycles since" counters (they saturate at all ones)
COUNTER_BITS = 16


def bits_for(n: int) -> int:
    """Address bits for ``n`` entries (at least 1)."""
    return max(1, (n - 1).bit_length())


class PimBankController(wiring.Component):
    """Row commands change the bank state; an ACT / PRE / REF / MAC / GBWR / RDACC that breaks a timing
    or the bank state sets ``error`` (sticky; an RDACC: before ``mac_drain`` after the last MAC, or closer
    than ``rdacc_spacing_cycles`` to the previous RDACC). ``dram_rd`` / ``dram_row`` / ``dram_col``: the MAC's
    column read, registered (high the cycle after the command)."""

    def __init__(self, params, col_addr_bits: int):
        self.p = params
        self.buf_cols = params.input_buffer_bytes // params.column_bytes
        row_bits = bits_for(params.rows_per_bank)
        super().__init__({
            "row_valid": In(1), "row_cmd": In(2), "row_addr": In(row_bits),
            "col_valid": In(1), "col_cmd": In(2), "col_addr": In(col_addr_bits),
            "dram_rd": Out(1), "dram_row": Out(row_bits), "dram_col": Out(bits_for(params.row_columns)),
            "ready": Out(1), "error": Out(1),
        })

    def elaborate(self, platform):
        p = self.p
        m = Module()
        top = (1 << COUNTER_BITS) - 1
        is_open = Signal()
        open_row = Signal.like(self.row_addr)
        since = {k: Signal(COUNTER_BITS, init=top, name=f"since_{k}") for k in ("act", "pre", "rd", "ref", "mac")}
        for c in since.values():
            with m.If(c != top):
                m.d.sync += c.eq(c + 1)
        err = Signal()
        refresh_ok = since["ref"] >= p.tRFC
        m.d.comb += [self.error.eq(err),
                     self.ready.eq(~is_open & (since["pre"] >= p.tRP) & refresh_ok)]

        with m.If(self.row_valid):
            with m.Switch(self.row_cmd):
                with m.Case(ACT):
                    with m.If(is_open | (since["pre"] < p.tRP) | ~refresh_ok):
                        m.d.sync += err.eq(1)
                    m.d.sync += [is_open.eq(1), open_row.eq(self.row_addr), since["act"].eq(1)]
                with m.Case(PRE):
                    with m.If(is_open & ((since["act"] < p.tRAS) | (since["rd"] < p.tRTP))):
                        m.d.sync += err.eq(1)
                    m.d.sync += [is_open.eq(0), since["pre"].eq(1)]
                with m.Case(REF):
                    with m.If(is_open | (since["pre"] < p.tRP) | ~refresh_ok):
                        m.d.sync += err.eq(1)
                    m.d.sync += since["ref"].eq(1)

        is_mac = self.col_valid & (self.col_cmd == MAC)
        is_gbwr = self.col_valid & (self.col_cmd == GBWR)
        with m.If(is_mac & (~is_open | (since["act"] < p.tRCD) | (self.col_addr >= p.row_columns)
                            | (since["mac"] < p.mac_cycles_per_column))):
            m.d.sync += err.eq(1)
        with m.If(is_gbwr & (self.col_addr >= self.buf_cols)):
            m.d.sync += err.eq(1)
        # an RDACC before the last MAC's column is in the accumulators (mac_drain) reads them stale, and one
        # closer than rdacc_spacing_cycles to the previous RDACC (interleaved partials: P / 2) overruns the
        # reduction's first adder: both give wrong values, so both set the flag
        is_rdacc = self.col_valid & (self.col_cmd == RDACC)
        with m.If(is_rdacc & (since["mac"] < p.mac_drain)):
            m.d.sync += err.eq(1)
        if p.rdacc_spacing_cycles > 1:  # 1 (P = 1): any two column commands are a cycle apart
            since_rdacc = Signal(COUNTER_BITS, init=top, name="since_rdacc")
            with m.If(since_rdacc != top):
                m.d.sync += since_rdacc.eq(since_rdacc + 1)
            with m.If(is_rdacc):
                with m.If(since_rdacc < p.rdacc_spacing_cycles):
                    m.d.sync += err.eq(1)
                m.d.sync += since_rdacc.eq(1)
        with m.If(is_mac):
            m.d.sync += [since["rd"].eq(1), since["mac"].eq(1)]
        m.d.sync += [self.dram_rd.eq(is_mac), self.dram_row.eq(open_row),
                     self.dram_col.eq(self.col_addr[:len(self.dram_col)])]
        return m
