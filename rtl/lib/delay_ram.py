"""A long fixed delay line in LUT RAM instead of a chain of registers.

``value`` delayed by ``cycles`` cycles (``out`` in cycle ``t`` is ``value`` of cycle ``t - cycles``) costs
``width * cycles`` flip-flops as a register chain (:func:`rtl.simd.accumulate.delayed`); the SIMD PE's
int64 group sum waits ~130 cycles for the float path, 8,300 flip-flops that nextpnr must spread over
the device. :class:`DelayRam` keeps the same values in a circular buffer of ``depth`` words (the next
power of two >= ``cycles - 2``): each cycle writes the input at the write pointer and reads the word
written ``cycles - 2`` cycles before it (the read port's register and one output register make up the
other two cycles; when ``depth == cycles - 2`` the slot read is the one written in the same cycle,
and the read port is not transparent, so it gets the old word). ``ram_style`` is ``distributed`` (ECP5
``TRELLIS_DPR16X4``): in block RAM the ``DP16KD``'s clock-to-out alone caps a 64-bit line at 145 MHz
(unit run in docs/simd_rtl.md). Same values as the register chain once ``cycles`` cycles have passed
after reset; before that, the chain gives zeros and the RAM its initial zeros too (a reset in the
middle of a run is the one difference: the RAM keeps what it held, so read only what was written
since -- the SIMD PE reads the delayed value only at a round's end, after its own writes).
"""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

#: shortest delay built in a RAM (two cycles are registers; fewer stay a register chain)
MIN_CYCLES = 4


class DelayRam(wiring.Component):
    """``o`` = ``i`` delayed ``cycles`` cycles (module docstring), in a RAM of ``depth`` words."""

    def __init__(self, width: int, cycles: int):
        if cycles < MIN_CYCLES:
            raise ValueError(f"DelayRam: cycles must be >= {MIN_CYCLES} (got {cycles}); use a register chain")
        self.width, self.cycles = width, cycles
        self.depth = 1 << (cycles - 3).bit_length()  # >= cycles - 2
        super().__init__({"i": In(width), "o": Out(width)})

    @property
    def latency(self) -> int:
        return self.cycles

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=self.width, depth=self.depth, init=[],
                                         attrs={"ram_style": "distributed"})
        wr, rd = mem.write_port(), mem.read_port(transparent_for=())
        ptr = Signal(range(self.depth), name="wptr")
        m.d.sync += ptr.eq(ptr + 1)  # wraps: depth is a power of two
        # written at cycle s to slot s; read at cycle t - 2 from slot t - cycles (-> rd.data at t - 1)
        m.d.comb += [wr.en.eq(1), wr.addr.eq(ptr), wr.data.eq(self.i),
                     rd.en.eq(1), rd.addr.eq(ptr - (self.cycles - 2))]
        out = Signal(self.width, name="out_r")
        m.d.sync += out.eq(rd.data)
        m.d.comb += self.o.eq(out)
        return m


def ram_delayed(m: Module, value, cycles: int, name: str):
    """``value`` ``cycles`` cycles later: a :class:`DelayRam` when ``cycles >= MIN_CYCLES``, else registers."""
    if cycles < MIN_CYCLES:
        for k in range(cycles):
            reg = Signal(value.shape(), name=f"{name}_d{k + 1}")
            m.d.sync += reg.eq(value)
            value = reg
        return value
    line = m.submodules[f"{name}_ram"] = DelayRam(len(value), cycles)
    m.d.comb += line.i.eq(value)
    out = Signal(value.shape(), name=f"{name}_dl")
    m.d.comb += out.eq(line.o)
    return out
