"""The LUT core controller's parts (:mod:`rtl.lut.controller` wires them): the command decoder and
the lookup sequencer of stage 0, split by what each counts.

A tile runs ``row_blocks x groups`` *steps* (one table each); a step's *slot* lasts
``max(lookups, table build)`` cycles, in which the lookups walk the (column block, bit plane)
pairs, one a cycle. :class:`SlotTimer` times the slots (the first step waits for the table
build), :class:`BlockWalker` walks the (block, plane) pairs of a slot and forms the weight
address, :class:`StepWalker` walks the steps (K-group fastest, then row block) with their weight
and output bases. Each loads its state from the command in the cycle it is taken (``take``).
Decisions read registers: a counter's ``== 0`` / ``== 1`` and the step flags are registers set
with the counter, and the slot-end decision is made twice from complement registers (fan-out).
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lut.config import AFMT, DIM_BITS, PLANES, WFMT, _bits


def counter_widths(c) -> SimpleNamespace:
    """Counter widths of a :class:`~rtl.lut.design.LutConfig` build: the buffers' address bits (an
    address counter is only ever read modulo its buffer's depth, so a narrower counter gives the
    same addresses) and the command's limits bounded by what fits the buffers (a command over them
    is refused)."""
    o_bits = max(_bits(c.out_depth), _bits(c.scale_depth) if c.scale == "per_group" else 0)
    step_max = min(c.act_depth, c.table_depth)  # row blocks, K-groups (steps = their product)
    pre_full = c.pre_cycles + c.precompute_latency
    D = c.lookup_interleave  # column blocks interleaved (a power of two)
    return SimpleNamespace(
        w=_bits(c.weight_depth), t=_bits(c.table_depth), o=o_bits, step_max=step_max, pre_full=pre_full, D=D,
        slot=max(c.weight_depth + 4 * (D - 1), pre_full).bit_length(),  # cycles of a slot, minus one
        n=step_max.bit_length(), nb=max(o_bits, (c.out_depth + D).bit_length()),  # column blocks (+ a batch)
        look=DIM_BITS + 3)


class LutCommandDecoder(wiring.Component):
    """Combinational: whether a command is accepted (formats built, no zero dimension, fits the
    buffers) and what it implies: bit planes, lookups a step (``look``; batches of ``D`` blocks,
    the last one padded), weight entries a step (``look_w``), the first step's wait for its table
    build (``pre``: 0 when precomputed) and the slot length minus one."""

    def __init__(self, cfg):
        self.cfg = cfg
        wd = counter_widths(cfg)
        super().__init__({
            "row_blocks": In(DIM_BITS), "groups": In(DIM_BITS), "col_blocks": In(DIM_BITS),
            "wfmt": In(3), "afmt": In(2), "precomputed": In(1),
            "ok": Out(1), "planes": Out(3), "look_w": Out(wd.look), "look": Out(wd.look),
            "pre": Out(range(wd.pre_full + 1)), "slot_m1": Out(wd.slot),
        })

    def elaborate(self, platform):
        c, wd = self.cfg, counter_widths(self.cfg)
        m = Module()
        w_ok = Const(sum(1 << WFMT[f] for f in c.weight_formats), 8).bit_select(self.wfmt, 1)
        a_ok = Const(sum(1 << AFMT[f] for f in c.activation_formats), 4).bit_select(self.afmt, 1)
        dims_ok = (self.row_blocks != 0) & (self.groups != 0) & (self.col_blocks != 0)
        planes = Array(Const(v, 3) for v in PLANES + (0, 0, 0))[self.wfmt]
        m.d.comb += [self.planes.eq(planes), self.look_w.eq(self.col_blocks * planes)]
        if wd.D == 1:
            m.d.comb += self.look.eq(self.look_w)
        else:  # batches of D blocks, the last one padded
            m.d.comb += self.look.eq(((self.col_blocks + (wd.D - 1)) & ~(wd.D - 1)) * planes)
        # a tile that fits the buffers has at most this many row blocks, K-groups, lookups a step and
        # column blocks (the host checks the products: rtl.lut.rtl_design)
        fits = ((self.row_blocks <= wd.step_max) & (self.groups <= wd.step_max)
                & (self.look_w <= c.weight_depth) & (self.col_blocks <= c.out_depth))
        pre = Mux(self.precomputed, 0, wd.pre_full)
        m.d.comb += [self.ok.eq(w_ok & a_ok & dims_ok & fits), self.pre.eq(pre),
                     self.slot_m1.eq(Mux(self.look > pre, self.look, pre) - 1)]
        return m


class SlotTimer(wiring.Component):
    """Times the slots: waits ``pre`` cycles for the first table, then runs slot after slot
    (``slot_m1 + 1`` cycles, lookups in the first ``look``) until the last step's last lookup.

    ``seq``: the sequencer runs; ``issue``: a lookup this cycle; ``sc``: the cycle in the slot;
    ``restart``: the slot ends and another follows; ``last_issue``: the tile's last lookup;
    ``step_adv`` / ``advance``: the step advances (from the complement registers) / and the next
    step's lookups start next cycle (not the last step); ``starting``: step 0's lookups start next
    cycle."""

    def __init__(self, cfg):
        self.cfg = cfg
        wd = counter_widths(cfg)
        super().__init__({
            "take": In(1), "running": In(1), "precomputed": In(1), "pre": In(range(wd.pre_full + 1)),
            "look": In(wd.look), "slot_m1": In(wd.slot), "last_step": In(1),
            "seq": Out(1), "issue": Out(1), "sc": Out(wd.w), "restart": Out(1), "last_issue": Out(1),
            "step_adv": Out(1), "advance": Out(1), "starting": Out(1),
        })

    def elaborate(self, platform):
        wd = counter_widths(self.cfg)
        m = Module()
        slot_m1, look_m1 = Signal(wd.slot), Signal(wd.slot)  # the command's limits minus one, registers
        slot_m1_zero, look_m1_zero = Signal(), Signal()
        looking = Signal()  # the step's lookups still run in its slot (sc < look)
        lk_wait = Signal(range(wd.pre_full + 1))
        lk_go = Signal()  # lk_wait == 0, a register (the sequencer's enable reads no compare)
        lk_done = Signal()
        # seq = running & lk_go & ~lk_done, kept as a register of its own (set and cleared where those
        # three are), so its decisions are one gate from registers
        seq = self.seq
        sc = self.sc
        # cycles left to the last lookup / to the slot's end (down-counters), and their == 0 kept as
        # registers, set with every write of the counter from the value written
        look_left, slot_left = Signal(wd.slot), Signal(wd.slot)
        look_end, slot_end = Signal(), Signal()
        # their complements, registers of their own (init 1) that the step's registers read: the slot-end
        # decision is made twice, each copy driving half of the sequencer's registers (fan-out; the
        # copies hold ~x, so synthesis does not merge them)
        seq_n, look_end_n, slot_end_n = Signal(init=1), Signal(init=1), Signal(init=1)

        def seq_eq(v):
            return [seq.eq(v), seq_n.eq(~v)]

        def ends_eq(look_v, slot_v):
            return [look_end.eq(look_v), slot_end.eq(slot_v), look_end_n.eq(~look_v), slot_end_n.eq(~slot_v)]

        with m.If(self.take):
            m.d.sync += [slot_m1.eq(self.slot_m1), look_m1.eq(self.look - 1), slot_m1_zero.eq(self.slot_m1 == 0),
                         look_m1_zero.eq(self.look == 1), looking.eq(1), look_left.eq(self.look - 1),
                         slot_left.eq(self.slot_m1), *ends_eq(self.look == 1, self.slot_m1 == 0),
                         lk_wait.eq(self.pre), lk_go.eq(self.precomputed), lk_done.eq(0),
                         *seq_eq(self.precomputed), sc.eq(0)]
        issue, last_step = self.issue, self.last_step
        m.d.comb += [issue.eq(seq & looking), self.last_issue.eq(issue & last_step & look_end),
                     self.restart.eq(seq & slot_end & ~self.last_issue)]
        with m.If(issue & look_end):
            m.d.sync += looking.eq(0)
        with m.If(self.running & ~lk_go):
            m.d.sync += [lk_wait.eq(lk_wait - 1), lk_go.eq(lk_wait == 1), *seq_eq(lk_wait == 1)]
        with m.If(self.last_issue):
            m.d.sync += [lk_done.eq(1), *seq_eq(Const(0, 1))]
        with m.Elif(seq & slot_end):
            m.d.sync += [sc.eq(0), looking.eq(1), look_left.eq(look_m1), slot_left.eq(slot_m1),
                         *ends_eq(look_m1_zero, slot_m1_zero)]
        with m.Elif(seq):
            m.d.sync += [sc.eq(sc + 1), look_left.eq(look_left - 1), slot_left.eq(slot_left - 1),
                         *ends_eq(look_left == 1, slot_left == 1)]
        # the same slot-end decision from the complements, for the step's registers
        m.d.comb += [self.step_adv.eq(~seq_n & ~slot_end_n & ~(looking & last_step & ~look_end_n)),
                     self.advance.eq(~seq_n & ~slot_end_n & ~last_step),
                     self.starting.eq(self.running & (lk_wait == 1))]
        return m


class BlockWalker(wiring.Component):
    """Walks a slot's lookups: (column block ``nb``, plane position ``q``), one per ``issue``; with
    ``D`` interleaved blocks, block ``nb = bb + d`` of the batch at ``bb``, ``d`` fastest, then
    ``q``, then ``bb``. ``w_addr``: the weight entry (``w_base`` + block * planes + plane);
    ``blk_ok``: the block is one of the tile's (not the last batch's padding)."""

    def __init__(self, cfg):
        self.cfg = cfg
        wd = counter_widths(cfg)
        super().__init__({
            "take": In(1), "planes": In(3), "col_blocks": In(wd.nb), "issue": In(1), "restart": In(1),
            "sc": In(wd.w), "w_base": In(wd.w),
            "q": Out(3), "nb": Out(wd.nb), "plane_last": Out(1), "blk_ok": Out(1), "w_addr": Out(wd.w),
        })

    def elaborate(self, platform):
        wd = counter_widths(self.cfg)
        D = wd.D
        m = Module()
        q, nb, issue = self.q, self.nb, self.issue
        planes, planes_m1 = Signal(3), Signal(3)
        with m.If(self.take):
            m.d.sync += [planes.eq(self.planes), planes_m1.eq(self.planes - 1), q.eq(0), nb.eq(0)]
        m.d.comb += self.plane_last.eq(q == planes_m1)
        if D == 1:
            with m.If(issue):
                with m.If(q == planes_m1):
                    m.d.sync += [q.eq(0), nb.eq(nb + 1)]
                with m.Else():
                    m.d.sync += q.eq(q + 1)
            m.d.comb += [self.w_addr.eq(self.w_base + self.sc), self.blk_ok.eq(1)]
        else:
            d = Signal(range(D))
            bb = Signal(wd.nb)
            bb_off, d_off = Signal(wd.w), Signal(wd.w)  # bb * b and d * b: weight entries
            batch_w = Signal(wd.w)  # D * b
            with m.If(self.take):
                m.d.sync += [d.eq(0), bb.eq(0), bb_off.eq(0), d_off.eq(0), batch_w.eq(self.planes * D)]
            with m.If(issue):
                with m.If(d == D - 1):
                    m.d.sync += [d.eq(0), d_off.eq(0)]
                    with m.If(q == planes_m1):
                        m.d.sync += [q.eq(0), bb.eq(bb + D), nb.eq(bb + D), bb_off.eq(bb_off + batch_w)]
                    with m.Else():
                        m.d.sync += [q.eq(q + 1), nb.eq(bb)]
                with m.Else():
                    m.d.sync += [d.eq(d + 1), nb.eq(nb + 1), d_off.eq(d_off + planes)]
            with m.If(self.restart):
                m.d.sync += [d.eq(0), bb.eq(0), bb_off.eq(0), d_off.eq(0)]
            m.d.comb += [self.w_addr.eq(self.w_base + bb_off + d_off + q), self.blk_ok.eq(nb < self.col_blocks)]
        with m.If(self.restart):
            m.d.sync += [q.eq(0), nb.eq(0)]
        return m


class StepWalker(wiring.Component):
    """Walks the steps (one per ``step_adv``): ``s`` (the table buffer's address), K-group fastest
    (``w_base`` += weight entries a step; ``g_first`` / ``g_wrap`` = first / last group), then row
    block (``o_base`` += column blocks). ``last_step`` / ``next_last``: this / the next step is the
    tile's last. Per-group scales: ``sg_base``, the scale entries of the step's scale group."""

    def __init__(self, cfg):
        self.cfg = cfg
        wd = counter_widths(cfg)
        members = {
            "take": In(1), "row_blocks": In(DIM_BITS), "groups": In(DIM_BITS), "col_blocks": In(DIM_BITS),
            "look_w": In(wd.look), "step_adv": In(1),
            "s": Out(wd.t), "last_step": Out(1), "next_last": Out(1), "g_wrap": Out(1), "g_first": Out(1),
            "w_base": Out(wd.w), "o_base": Out(wd.o), "cols": Out(wd.nb),
        }
        if cfg.scale == "per_group":
            members.update({"clear": In(1), "sg_base": Out(wd.o)})
        super().__init__(members)

    def elaborate(self, platform):
        c, wd = self.cfg, counter_widths(self.cfg)
        m = Module()
        s, last_step, g_wrap, g_first = self.s, self.last_step, self.g_wrap, self.g_first
        w_base, o_base, col_blocks = self.w_base, self.o_base, self.cols
        look_w = Signal(wd.w)  # weight entries a step (col_blocks * b; added to the weight base)
        groups_m1 = Signal(wd.n)
        # down-counters of the K-groups / row blocks left after the step's, and flags kept with them:
        # g_m2 = one group left (g == groups - 2), mb_last = no row block left, mb_m2 = one left
        g_left, mb_left = Signal(wd.n), Signal(wd.n)
        g_m2, mb_last, mb_m2, two_groups, one_group = Signal(), Signal(), Signal(), Signal(), Signal()
        groups, rows = self.groups, self.row_blocks
        with m.If(self.take):
            m.d.sync += [col_blocks.eq(self.col_blocks), look_w.eq(self.look_w), groups_m1.eq(groups - 1),
                         g_left.eq(groups - 1), mb_left.eq(rows - 1), two_groups.eq(groups == 2),
                         g_m2.eq(groups == 2), mb_last.eq(rows == 1), mb_m2.eq(rows == 2), one_group.eq(groups == 1),
                         s.eq(0), g_first.eq(1), w_base.eq(0), o_base.eq(0), g_wrap.eq(groups == 1),
                         last_step.eq((groups == 1) & (rows == 1))]
        m.d.comb += self.next_last.eq(Mux(g_wrap, mb_m2 & one_group, mb_last & g_m2))
        with m.If(self.step_adv):
            m.d.sync += [s.eq(s + 1), last_step.eq(self.next_last)]
            with m.If(g_wrap):
                m.d.sync += [g_first.eq(1), w_base.eq(0), o_base.eq(o_base + col_blocks),
                             g_wrap.eq(one_group), g_left.eq(groups_m1), g_m2.eq(two_groups),
                             mb_left.eq(mb_left - 1), mb_last.eq(mb_m2), mb_m2.eq(mb_left == 2)]
            with m.Else():
                m.d.sync += [g_first.eq(0), w_base.eq(w_base + look_w), g_wrap.eq(g_m2), g_left.eq(g_left - 1),
                             g_m2.eq(g_left == 2)]
        if c.scale == "per_group":  # scale entry (g * K // scale_group) * col_blocks + nb, by counting
            per = c.scale_group // c.group_k  # K-groups per scale group
            sgc = Signal(range(per + 1))
            with m.If(self.clear):
                m.d.sync += [sgc.eq(0), self.sg_base.eq(0)]
            with m.If(self.step_adv):
                with m.If(g_wrap):
                    m.d.sync += [sgc.eq(0), self.sg_base.eq(0)]
                with m.Elif(sgc == per - 1):
                    m.d.sync += [sgc.eq(0), self.sg_base.eq(self.sg_base + col_blocks)]
                with m.Else():
                    m.d.sync += sgc.eq(sgc + 1)
        return m
