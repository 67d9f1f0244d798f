"""Tile-command controller of the systolic design: command queue, tile FSM, operand fetch.

Commands arrive on a ``lib.stream`` (valid/ready) into a command register, then a two-entry
queue. A taken command is registered as it arrives and decoded into its schedule (preload length,
streamed length, window boundaries, last cycle; one adder deep) on its way from that register into
the queue, so no logic hangs off the command ports and launching a tile is a register copy. On an
idle engine a tile's fetch starts ``COMMAND_LATENCY_CYCLES`` after its command is taken; behind a
running tile the decode overlaps it (tiles run back to back, as the models count them).

Pipeline levels: the *fetch* level (the FSM; it issues the buffer reads), the operand side
``FETCH_LATENCY`` cycles later (the read data in the array's edge registers; shift / swap / os),
and the partial-sum side one cycle after that (the registered products meet the partial sums;
OS flags). Tile-local cycle ``x`` of the
timing contract is ``FETCH_LATENCY + 1 - P`` cycles after the fetch-level cycle in which the
FSM counter equals ``x`` (output tokens, ``tile_start``, ``tile_done``): with ``P = 0`` the
operands run one cycle ahead of the contract and the product register is hidden.

Components: :class:`~rtl.systolic.command_queue.CommandQueue` (command register, decode, queue),
:class:`~rtl.systolic.sequencer.TileSequencer` (launch, phases, pointers: the fetch level) and
:class:`~rtl.systolic.sequencer.ShadowLoader` (double-buffered preload of the queued tile),
:class:`~rtl.systolic.skew.LaneSkew` (per-lane addresses and valid bits),
:class:`~rtl.systolic.skew.ArrayControl` (array controls and output tokens at their cycles) and
:class:`~rtl.lib.cycle_counter.TileCycleCounter` (``tile_cycles`` / ``tiles_done``).
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.cycle_counter import TileCycleCounter
from rtl.systolic.command_queue import CommandQueue
from rtl.systolic.config import SystolicConfig, command_signature, out_token_layout
from rtl.systolic.sequencer import ShadowLoader, TileSequencer
from rtl.systolic.skew import ArrayControl, LaneSkew


def controller_signature(cfg: SystolicConfig) -> wiring.Signature:
    R, C, aw = cfg.rows, cfg.cols, cfg.addr_bits
    members = {
        "cmd": In(command_signature(cfg)),
        # fetch level: buffer read addresses, one per lane
        "left_addr": Out(data.ArrayLayout(aw, R)), "top_addr": Out(data.ArrayLayout(aw, C)),
        # array level: lane valid bits (with the read data), array controls, output tokens
        "left_ok": Out(R), "top_ok": Out(C),
        "shift": Out(1), "swap": Out(1), "os": Out(1), "os_acc": Out(1),
        "out_token": Out(data.ArrayLayout(out_token_layout(cfg), C)),
        "out_busy": In(1),
        # status
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1),
        "tile_cycles": Out(32), "tiles_done": Out(32), "error": Out(1),
    }
    if cfg.has_os:
        members.update({"first": Out(R), "last": Out(R)})
    return wiring.Signature(members)


class TileController(wiring.Component):
    """Runs tile commands with exactly the cycles of the timing contract (see the module docstring)."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__(controller_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        m.submodules.queue = queue = CommandQueue(cfg)
        m.submodules.sequencer = seq = TileSequencer(cfg)
        m.submodules.lane_skew = skew = LaneSkew(cfg)
        m.submodules.array_control = ctl = ArrayControl(cfg)
        m.submodules.counter = counter = TileCycleCounter()
        wiring.connect(m, wiring.flipped(self.cmd), queue.cmd)
        m.d.comb += [queue.launch.eq(seq.launch), seq.head.eq(queue.head), skew.tok.eq(seq.tok), ctl.tok.eq(seq.tok)]
        if cfg.double_buffered:
            m.submodules.loader = loader = ShadowLoader(cfg)
            m.d.comb += [
                loader.head.eq(queue.head), loader.head_valid.eq(queue.head_valid),
                loader.head_loaded.eq(queue.head_loaded), loader.chain_free.eq(seq.chain_free),
                loader.launch.eq(seq.launch), queue.loaded_now.eq(loader.loaded_now),
                # the head may launch in the cycle of its loader's last shift
                seq.head_ready.eq(queue.head_ready | loader.last), seq.loader_go.eq(loader.go),
                seq.loader_valid.eq(loader.valid), seq.loader_addr.eq(loader.addr),
            ]
            loading = loader.running
        else:
            m.d.comb += seq.head_ready.eq(queue.head_ready)
            loading = 0
        m.d.comb += [
            self.left_addr.eq(skew.left_addr), self.top_addr.eq(skew.top_addr),
            self.left_ok.eq(skew.left_ok), self.top_ok.eq(skew.top_ok),
            self.shift.eq(ctl.shift), self.swap.eq(ctl.swap), self.os.eq(ctl.os), self.os_acc.eq(ctl.os_acc),
            self.out_token.eq(ctl.out_token), self.tile_start.eq(ctl.tile_start), self.tile_done.eq(ctl.tile_done),
            counter.start.eq(ctl.tile_start), counter.done.eq(ctl.tile_done),
            self.tile_cycles.eq(counter.tile_cycles), self.tiles_done.eq(counter.tiles_done),
            self.error.eq(queue.error), self.busy.eq(queue.pending | loading | ctl.active | self.out_busy),
        ]
        if cfg.has_os:
            m.d.comb += [self.first.eq(ctl.first), self.last.eq(ctl.last)]
        return m
