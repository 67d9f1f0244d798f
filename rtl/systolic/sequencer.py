"""Fetch level of the systolic controller: the tile sequencer (launch, phase counters, buffer
pointers) and the shadow-bank loader, which produce the lane-0 tokens of every cycle.

The sequencer launches the queue head (:mod:`rtl.systolic.command_queue`) when it is ready and the
array is free, then walks the tile's schedule: the serial preload (``R`` shifts down the top
chain), the stream (``S`` items into the left edge) and the output window. Every phase boundary
is a comparison of the counter with a value decoded before launch (no adders on these paths);
phase flags are registers. The lane-0 tokens (:func:`fetch_token_layout`) are skewed and delayed
to the lanes and the array by :mod:`rtl.systolic.skew`.
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.systolic.command_queue import entry_layout, entry_registers
from rtl.systolic.config import SystolicConfig


#: the fields of the running tile's entry that the sequencer reads after its launch
CURRENT_FIELDS = ("os", "m", "acc", "out_base", "pre_skip", "lim_left", "lim_top", "lim_out", "last_m1", "S_m1",
                  "out_len_m1", "stream_end_m1", "out_start_m1", "out_end_m1")


def fetch_token_layout(cfg: SystolicConfig) -> data.StructLayout:
    """What the fetch level says in one cycle, for lane 0 / column 0 (the skew does the rest).

    ``left`` / ``top``: buffer address, valid, lane limit (lane i is valid when i < lim) and the
    OS stream's first / last item flags; ``os_run``: an OS tile runs; ``shift`` / ``swap``: the top
    chain shifts, the shadow bank swaps in; ``start``: tile cycle 0; ``out``: output column 0's
    token (present, write enable, output buffer address, last row).
    """
    aw, dw = cfg.addr_bits, cfg.dim_bits
    return data.StructLayout({
        "left": data.StructLayout({"addr": aw, "valid": 1, "lim": dw, "first": 1, "last": 1}),
        "top": data.StructLayout({"addr": aw, "valid": 1, "lim": dw}),
        "run": 1, "os": 1, "os_run": 1, "shift": 1, "swap": 1, "start": 1, "acc": 1, "lim_out": dw,
        "out": data.StructLayout({"present": 1, "we": 1, "addr": aw, "last": 1}),
    })


class ShadowLoader(wiring.Component):
    """Loads the queued head's preload into the shadow bank (double-buffered builds): ``R`` shifts
    down the top chain, the first in the cycle it starts (``go``), while the chain is free.

    ``addr`` counts down from the head's ``top_last``; ``valid`` is low for the ``R - k`` padding
    shifts; ``last`` is the loader's last shift; ``loaded_now`` tells the queue the head is loaded.
    """

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__({
            "head": In(entry_layout(cfg)), "head_valid": In(1), "head_loaded": In(1),
            "chain_free": In(1), "launch": In(1),
            "go": Out(1), "last": Out(1), "valid": Out(1), "addr": Out(cfg.addr_bits),
            "running": Out(1), "loaded_now": Out(1),
        })

    def elaborate(self, platform):
        R, aw = self.cfg.rows, self.cfg.addr_bits
        m = Module()
        head = self.head
        ld_run, ld_ptr = Signal(), Signal(aw)
        ld_cnt = Signal(range(max(R, 2)))
        ld_idx = Mux(ld_run, ld_cnt, 0)
        ld_addr = Mux(ld_run, ld_ptr, head.top_last)
        # the last shift is in this cycle (for R > 1 it is always a running loader; ld_cnt == R - 1
        # is kept in a register, computed from the counter's next value)
        ld_cnt_next = Signal.like(ld_cnt)
        m.d.comb += ld_cnt_next.eq(ld_cnt)
        ld_cnt_last = Signal()
        m.d.sync += [ld_cnt.eq(ld_cnt_next), ld_cnt_last.eq(ld_cnt_next == R - 1)]
        go, last = self.go, self.last
        m.d.comb += last.eq((ld_run & ld_cnt_last) if R > 1 else go)
        m.d.comb += go.eq(ld_run | (self.head_valid & head.hidden & ~self.head_loaded & self.chain_free))
        with m.If(go):
            with m.If(last):
                m.d.sync += ld_run.eq(0)
                m.d.comb += ld_cnt_next.eq(0)
            with m.Else():
                m.d.sync += [ld_run.eq(1), ld_ptr.eq(ld_addr - 1)]
                m.d.comb += ld_cnt_next.eq(ld_idx + 1)
        m.d.comb += [self.valid.eq(ld_idx >= head.pre_skip), self.addr.eq(ld_addr), self.running.eq(ld_run),
                     self.loaded_now.eq(go & last & ~self.launch)]
        return m


class TileSequencer(wiring.Component):
    """Launches the queue head and walks its schedule; outputs the fetch-level tokens (``tok``).

    ``head_ready``: the head may launch (queued and, if hidden, loaded or loading its last row);
    ``loader_*``: the shadow loader's shift of this cycle (it has the top chain before a preload).
    """

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__({
            "head": In(entry_layout(cfg)), "head_ready": In(1),
            "loader_go": In(1), "loader_valid": In(1), "loader_addr": In(cfg.addr_bits),
            "launch": Out(1), "chain_free": Out(1), "tok": Out(fetch_token_layout(cfg)),
        })

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        R, aw, cw = cfg.rows, cfg.addr_bits, cfg.counter_bits
        head, tok, launch = self.head, self.tok, self.launch
        run, cnt = Signal(), Signal(cw)
        # the running tile's entry: the fields the walk reads, each a register of its own
        cur_regs = {k: v for k, v in entry_registers(cfg, "cur").items() if k in CURRENT_FIELDS}
        cur = SimpleNamespace(**cur_regs)
        scnt = Signal(cw)  # streamed items so far
        top_ptr = Signal(aw)  # top buffer address: counts down in a preload, up in an OS stream
        left_ptr = Signal(aw)  # left buffer address of the next streamed item
        orow = Signal(cw)  # output rows presented at column 0 so far
        # registered flags keep the launch decision (which fans out to the whole queue) shallow
        at_end = Signal()  # run and cnt == last
        pre_r = Signal()  # run and in the serial preload (cnt < R)
        stream_r = Signal()  # run and L <= cnt < L + S
        outwin_r = Signal()  # run and out_start <= cnt < out_start + out_len
        free_r = Signal(init=1)  # ~run | at_end: the array is free for a launch in this cycle
        m.d.sync += free_r.eq(Mux(launch, head.end0, ~run | at_end | (cnt == cur.last_m1)))
        m.d.comb += launch.eq(self.head_ready & free_r)

        with m.If(launch):
            m.d.sync += [cur_regs[k].eq(getattr(head, k)) for k in cur_regs]
            m.d.sync += [run.eq(1), cnt.eq(0), at_end.eq(head.end0), pre_r.eq(head.pre0),
                         stream_r.eq(head.str0), outwin_r.eq(head.ow0), scnt.eq(0), orow.eq(0),
                         top_ptr.eq(Mux(head.os, head.top_base, head.top_last)), left_ptr.eq(head.left_base)]
        with m.Elif(at_end):
            m.d.sync += [run.eq(0), at_end.eq(0), pre_r.eq(0), stream_r.eq(0), outwin_r.eq(0)]
        with m.Elif(run):
            m.d.sync += [cnt.eq(cnt + 1), at_end.eq(cnt == cur.last_m1)]
            with m.If(pre_r & (cnt == R - 1)):
                m.d.sync += [pre_r.eq(0), stream_r.eq(1)]
            with m.If(cnt == cur.stream_end_m1):
                m.d.sync += stream_r.eq(0)
            with m.If(cnt == cur.out_start_m1):
                m.d.sync += outwin_r.eq(1)
            with m.If(cnt == cur.out_end_m1):
                m.d.sync += outwin_r.eq(0)

        # phases: comparisons of the counter with boundaries computed at launch (no adders here)
        preload, stream, outwin = run & pre_r, stream_r, outwin_r
        with m.If(~launch & stream):
            m.d.sync += [scnt.eq(scnt + 1), left_ptr.eq(left_ptr + 1)]
        with m.If(~launch & (preload | (stream & cur.os))):
            m.d.sync += top_ptr.eq(Mux(cur.os, top_ptr + 1, top_ptr - 1))
        with m.If(~launch & outwin):
            m.d.sync += orow.eq(orow + 1)
        m.d.comb += self.chain_free.eq(~run | (~cur.os & ~pre_r))

        # top lane 0: shadow loader / preload / OS stream; left lane 0: the stream; output column 0
        with m.If(self.loader_go):
            m.d.comb += [tok.top.valid.eq(self.loader_valid), tok.top.addr.eq(self.loader_addr),
                         tok.top.lim.eq(head.lim_top)]
        with m.Elif(preload):
            m.d.comb += [tok.top.valid.eq(cnt >= cur.pre_skip), tok.top.addr.eq(top_ptr), tok.top.lim.eq(cur.lim_top)]
        with m.Elif(stream & cur.os):
            m.d.comb += [tok.top.valid.eq(1), tok.top.addr.eq(top_ptr), tok.top.lim.eq(cur.lim_top)]
        # the shadow bank swaps in after a serial preload or with a launch of a loaded tile
        swap = (preload & (cnt == R - 1)) | (launch & head.hidden) if cfg.double_buffered else 0
        m.d.comb += [
            tok.left.addr.eq(left_ptr), tok.left.valid.eq(stream), tok.left.lim.eq(cur.lim_left),
            tok.left.first.eq(scnt == 0), tok.left.last.eq(scnt == cur.S_m1),
            tok.run.eq(run), tok.os.eq(cur.os), tok.swap.eq(swap), tok.os_run.eq(run & cur.os),
            tok.shift.eq(self.loader_go | preload | (run & cur.os)), tok.start.eq(run & (cnt == 0)),
            tok.acc.eq(cur.acc), tok.lim_out.eq(cur.lim_out),
            tok.out.present.eq(outwin), tok.out.we.eq(Mux(cur.os, orow < cur.m, 1)),
            tok.out.addr.eq((cur.out_base + orow)[:aw]), tok.out.last.eq(orow == cur.out_len_m1),
        ]
        return m
