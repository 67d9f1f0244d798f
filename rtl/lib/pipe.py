"""Register cut points of a combinational arithmetic builder, so one builder serves every pipeline depth.

A builder (``fp_mul``, ``round_pack``, ...) calls :func:`cut` with every value
still needed downstream at each of its natural cut points; a :class:`Pipe` made
with ``stages`` registers ``stages`` of those points (spread evenly, the last
one -- the output -- first) and passes the others through. Values that bypass a
nested builder ride along with :func:`carry`. The builder's latency is
therefore exactly ``stages`` cycles, which is what a unit declares and what the
templates' models read. ``pipe=None`` means combinational (no cut registers).
"""
from __future__ import annotations

from amaranth import Module, Signal, Value


def chosen_cuts(stages: int, n_cuts: int) -> frozenset[int]:
    """Indices (0-based, in call order) of the ``stages`` cut points out of ``n_cuts`` that register.

    Evenly spread, ending at the last point: 1 of 4 -> {3}; 2 of 4 -> {1, 3}; 4 of 4 -> all.
    """
    if isinstance(stages, bool) or not isinstance(stages, int) or not 0 <= stages <= n_cuts:
        raise ValueError(f"stages: expected an integer 0..{n_cuts} (this unit has {n_cuts} cut points), "
                         f"got {stages!r}")
    return frozenset(round((i + 1) * n_cuts / stages) - 1 for i in range(stages))


class Carried:
    """A value carried across cut points (:func:`carry`); read ``.value`` where it is used."""

    def __init__(self, value):
        self.value = value


class HardRegistered:
    """A value whose register at the next cut point is inside a hard block (a DSP's input or output
    register, switched on exactly when that cut point registers: :func:`registers_next`); the cut
    passes it through unregistered, so the stage count is the same with or without the block."""

    def __init__(self, value):
        self.value = value


def _unwrap(v):
    return v.value if isinstance(v, HardRegistered) else v


class Pipe:
    """The cut points of one builder call: ``stages`` of its ``n_cuts`` points become registers."""

    def __init__(self, m: Module, stages: int, n_cuts: int, name: str, domain: str = "sync", en=None,
                 specials_as_data: bool = False, zero_fill_as_data: bool = False, packed_round: bool = False,
                 split_compare: bool = False, compare_as_data: bool = False, negate_early: bool = False,
                 split_add: bool = False):
        self.m, self.name, self.domain, self.en = m, name, domain, en
        if packed_round and not specials_as_data:
            raise ValueError(f"{name}: packed_round needs specials_as_data (it rounds the forcing-as-data pack)")
        if negate_early and split_add:
            raise ValueError(f"{name}: negate_early and split_add both rebuild the add's stage; pick one "
                             "(split_add already inverts the high half's operand before its own stage)")
        #: round-and-pack (:func:`rtl.lib.round.round_pack`) forces overflow / special values as data computed
        #: a stage early (its last stage one LUT per bit) instead of a constant mux on the result, which
        #: yosys maps onto the output flip-flops' synchronous reset (a logic-driven, high-fan-out net)
        self.specials_as_data = specials_as_data
        #: the alignment / normalizing shifts (:func:`rtl.lib.round.shift_coarse`) fill their zeros as AND data
        #: and the alignment's exponent clamps are OR data, for the same reason (same bits and cut points)
        self.zero_fill_as_data = zero_fill_as_data
        #: with ``specials_as_data``: round-and-pack's increment is one add on the packed exponent || fraction
        #: (a fraction that carries out increments the exponent), not an all-ones detect of the mantissa
        #: selecting the exponent after it (same bits and cut points)
        self.packed_round = packed_round
        #: the adder's operand magnitude compare (which one is larger: the swap) as an exponent compare beside
        #: a fraction compare, joined by one LUT (two short carry chains side by side instead of one as wide as
        #: the magnitude; same bits and cut points)
        self.split_compare = split_compare
        #: round-and-pack's compares with constants as AND / OR trees of the compared bits, not a carry chain
        #: each (:func:`rtl.lib.round.lt_const`): the subnormal case's of the exponent (the shift clamps
        #: ``rcmax`` / ``lsmax`` and ``left``) and the normal case's of the leading-zero count (``lz >= k``
        #: and the left shift's clamp ``lz > k + mbits``, that clamp's constant as AND / OR data); same bits
        #: and cut points
        self.compare_as_data = compare_as_data
        #: the adder's effective subtraction inverts the aligned operand a stage early (before the cut point in
        #: front of the add), so the add's stage is one carry chain from registers (``mx + ~y + 1``), not a LUT
        #: per bit (the operand XOR the signs) in front of it (same bits and cut points)
        self.negate_early = negate_early
        #: the adder's significand add split over two stages (:func:`rtl.lib.fp._align_add`): ONE MORE cut point
        #: (the low half's sum and carry registered), the operand sign difference formed before the add's
        #: first stage and the high half's operand inverted before its own; same bits, one more cycle
        self.split_add = split_add
        self.n_cuts, self.stages = n_cuts, stages
        self._chosen = chosen_cuts(stages, n_cuts)
        self._next = 0
        self._carried: list[Carried] = []

    def cut(self, *values):
        """The values after this cut point: registered copies if it is chosen, else the values themselves."""
        i = self._next
        if i >= self.n_cuts:
            raise RuntimeError(f"{self.name}: more than the {self.n_cuts} declared cut points")
        self._next += 1
        if i not in self._chosen:
            return tuple(_unwrap(v) for v in values)
        for k, c in enumerate(self._carried):
            c.value = self._register(c.value, f"{self.name}_c{i}_carry{k}")
        return tuple(v.value if isinstance(v, HardRegistered) else self._register(v, f"{self.name}_c{i}_{k}")
                     for k, v in enumerate(values))

    def _register(self, v, name: str):
        if _is_constant(v):  # a constant needs no register (and many constant registers would merge into
            return v         # one flip-flop whose fan-out stretches the routing: yosys opt_merge)
        r = Signal(v.shape(), name=name)
        if self.en is None:
            self.m.d[self.domain] += r.eq(v)
        else:
            with self.m.If(self.en):
                self.m.d[self.domain] += r.eq(v)
        return r

    def finish(self):
        """Check that the builder used every declared cut point (a miscount would change the latency)."""
        if self._next != self.n_cuts:
            raise RuntimeError(f"{self.name}: {self._next} cut points used, {self.n_cuts} declared")


def _is_constant(v) -> bool:
    """``v`` reads no signal (a constant expression)."""
    try:
        return len(Value.cast(v)._rhs_signals()) == 0
    except (AttributeError, TypeError):  # another amaranth version: register it
        return False


def cut(pipe: Pipe | None, *values):
    """``pipe.cut(*values)``, or the values unchanged without a pipe (combinational builder)."""
    return tuple(_unwrap(v) for v in values) if pipe is None else pipe.cut(*values)


def registers_next(pipe: Pipe | None) -> bool:
    """Whether the next cut point of ``pipe`` is a register (what a hard block's own register,
    :class:`HardRegistered`, must match)."""
    return pipe is not None and pipe._next in pipe._chosen


def carry(pipe: Pipe | None, value) -> Carried:
    """Carry ``value`` across the cut points of the builders called next (until :func:`drop`)."""
    c = Carried(value)
    if pipe is not None:
        pipe._carried.append(c)
    return c


def drop(pipe: Pipe | None, c: Carried):
    """Stop carrying ``c``; its value now (registered as often as the cuts passed)."""
    if pipe is not None:
        pipe._carried.remove(c)
    return c.value


def delay(m: Module, value, cycles: int, name: str, domain: str = "sync"):
    """``value`` through ``cycles`` registers (a fixed delay line, no enable)."""
    for i in range(cycles):
        r = Signal.like(value, name=f"{name}{i}")
        m.d[domain] += r.eq(value)
        value = r
    return value
