"""Pipelined fp32 building blocks of the SIMD PE: the interleaved accumulator and the adder tree.

:class:`InterleavedSum` is an fp32 accumulator whose adder is an ``A``-stage
pipeline (:class:`rtl.lib.units.FpAdd`) feeding its own input: ``A`` partial
sums circulate, one per cycle slot, so the loop closes at the pipelined adder's
clock instead of one fp32 add per cycle. The summation order it produces is the
models' (:mod:`archsim.templates.simd.interleave`): the value of run cycle ``c``
goes to partial ``c % A`` (each partial starts from ``+0.0``: its first visit in
a run adds to ``+0.0`` instead of the circulating value), cycles without a value
add ``-0.0`` (the fp32 identity), and ``A`` cycles after the run's last cycle the
last ``A`` adder results, oldest first (``+0.0`` for cycles before the run),
enter a pipelined pairwise tree.
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.units import FpAdd


def _level_nodes(lanes: int, level: int) -> int:
    """Nodes at ``level`` of the pairwise tree over ``lanes`` products (odd ones pass through)."""
    for _ in range(level):
        lanes = -(-lanes // 2)
    return lanes


#: most slots: the ring's adder has exactly ``slots`` stages, and FpAdd("fp32") has at most 11
MAX_SLOTS = 11


def delayed(m: Module, value, cycles: int, name: str):
    """``value`` through ``cycles`` registers (itself when 0)."""
    for i in range(cycles):
        reg = Signal(value.shape(), name=f"{name}_d{i + 1}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


def tree_levels(n: int) -> int:
    """Levels of the pairwise tree over ``n`` inputs."""
    return (n - 1).bit_length()


def add_tree(m: Module, values: list, stages: int, name: str, has_right=None) -> object:
    """The pairwise fp32 tree (0,1), (2,3), ... over ``values``, each level an ``FpAdd`` of ``stages``
    stages (an odd last node is delayed alongside). ``has_right(level, i)`` (optional) gives a signal
    that is 0 when node ``i``'s right child is absent in the current mode: the node then passes its left
    child. Latency: ``tree_levels(len(values)) * stages``."""
    node, lev = list(values), 0
    while len(node) > 1:
        nxt = []
        for i in range(0, len(node), 2):
            if i + 1 >= len(node):
                nxt.append(delayed(m, node[i], stages, f"{name}{lev}_{i // 2}_p"))
                continue
            add = m.submodules[f"{name}{lev}_{i // 2}"] = FpAdd("fp32", stages, specials_as_data=True,
                                                                 zero_fill_as_data=True, packed_round=True,
                                                                 split_compare=True)
            m.d.comb += [add.a.eq(node[i]), add.b.eq(node[i + 1]), add.in_valid.eq(1)]
            total = add.out
            if has_right is not None:
                sel = delayed(m, has_right(lev, i), stages, f"{name}{lev}_{i // 2}_r")
                left = delayed(m, node[i], stages, f"{name}{lev}_{i // 2}_l")
                total = Mux(sel, add.out, left)
            nxt.append(total)
        node, lev = nxt, lev + 1
    return node[0]


class InterleavedSum(wiring.Component):
    """``slots`` interleaved fp32 partial sums over a run of cycles (``start`` marks its first cycle,
    ``end`` its last), reduced at the end: ``out`` / ``out_valid`` :attr:`latency` cycles after the
    ``end`` cycle. ``in_valid`` marks the cycles that carry a value ``in_x``."""

    def __init__(self, slots: int, tree_stages: int | None = None):
        if isinstance(slots, bool) or not isinstance(slots, int) or not 2 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots: expected an integer 2..{MAX_SLOTS}, got {slots!r}")
        self.slots = slots
        self.tree_stages = slots if tree_stages is None else tree_stages
        super().__init__({"in_valid": In(1), "in_x": In(32), "start": In(1), "end": In(1),
                          "out": Out(32), "out_valid": Out(1)})

    @property
    def latency(self) -> int:
        return self.slots + tree_levels(self.slots) * self.tree_stages

    def elaborate(self, platform):
        A = self.slots
        m = Module()
        add = m.submodules.ring = FpAdd("fp32", A, specials_as_data=True, zero_a=True, neg_zero_b=True,
                                         zero_fill_as_data=True, packed_round=True, split_compare=True)
        age = Signal(range(A + 1), name="age")  # cycles of the run so far, saturating at A
        age_now = Signal.like(age, name="age_now")
        m.d.comb += age_now.eq(Mux(self.start, 0, age))
        m.d.sync += age.eq(Mux(age_now == A, A, age_now + 1))
        full = Signal(name="full")  # age == A, a register of its own (so fresh is one LUT before the adder)
        m.d.sync += full.eq(age_now >= A - 1)
        fresh = self.start | ~full  # this slot's first visit in the run (age_now != A)
        # +0.0 on a fresh slot, -0.0 without a value: both selected inside the adder, after its operand
        # compares (which then start from the registers, not from a select in front)
        m.d.comb += [add.a.eq(add.out), add.a_zero.eq(fresh), add.b.eq(self.in_x), add.b_neg_zero.eq(~self.in_valid),
                     add.in_valid.eq(1)]
        # the run's cycles among the last A (the window's newest entries), known at the end cycle
        run_len = Signal(range(A + 1), name="run_len")
        m.d.comb += run_len.eq(Mux(age_now == A, A, age_now + 1))
        end_d = delayed(m, self.end, A, "end")
        len_d = delayed(m, run_len, A - 2, "len")  # a cycle ahead of the window's mask
        entries = []
        for k in range(A - 1):
            # the window's entry k is a register: the last of its tap's delays, masked there by a mask bit
            # compared a cycle earlier still, so the reduction tree's first stage starts from registers
            keep = Signal(name=f"keep{k}")
            m.d.sync += keep.eq(len_d >= A - k)
            e = Signal(32, name=f"entry{k}")
            m.d.sync += e.eq(delayed(m, add.out, A - 2 - k, f"tap{k}") & keep.replicate(32))
            entries.append(e)
        entries.append(add.out)  # the newest entry: always in the window (a run is at least one cycle long)
        m.d.comb += [self.out.eq(add_tree(m, entries, self.tree_stages, "red")),
                     self.out_valid.eq(delayed(m, end_d, tree_levels(A) * self.tree_stages, "ov"))]
        return m
