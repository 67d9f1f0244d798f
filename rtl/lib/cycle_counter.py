"""The hardware cycle counter of the host interface (:mod:`rtl.lib.host`): ``tile_cycles`` and
``tiles_done``, measured by the engine itself so that co-simulation reads the cycles back.

``tile_cycles`` counts a tile's cycles from its first (``start`` high) through the one in which
``done`` is high, both included; it takes the new count in the cycle after ``done`` and holds it.
A free-running counter restarts at ``start``, so a tile that starts in the cycle after the
previous one's ``done`` (back to back) is counted from that cycle.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.host import COUNTER_BITS


class TileCycleCounter(wiring.Component):
    """``start`` / ``done`` pulses in, the last tile's cycle count and the tiles finished out."""

    def __init__(self):
        super().__init__({"start": In(1), "done": In(1), "tile_cycles": Out(COUNTER_BITS),
                          "tiles_done": Out(COUNTER_BITS)})

    def elaborate(self, platform):
        m = Module()
        cyc = Signal(COUNTER_BITS)
        cyc_now = Mux(self.start, 0, cyc)  # cycles of the running tile before this one
        m.d.sync += cyc.eq(cyc_now + 1)
        with m.If(self.done):
            m.d.sync += [self.tile_cycles.eq(cyc_now + 1), self.tiles_done.eq(self.tiles_done + 1)]
        return m
