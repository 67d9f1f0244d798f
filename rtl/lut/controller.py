"""The LUT core's controller: takes a tile command, sequences the lookups (stage 0: one (column block,
bit plane) a cycle, slot by slot), starts each step's table build (``pre_go``), and counts the tile's
cycles. Outputs the stage-t1 control of each lookup (registered with the weight read) and the
command's decoded formats; the datapath (:class:`rtl.lut.design.LutCore`) does the rest.
See :mod:`rtl.lut.design` for the timing it implements."""
from __future__ import annotations

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lut.config import AFMT, DIM_BITS, PLANES, WFMT, _bits


class LutController(wiring.Component):
    """Command, lookup sequencer and precompute start of a :class:`~rtl.lut.design.LutConfig` build."""

    def __init__(self, cfg):
        self.cfg = c = cfg
        ports = {
            "cmd_valid": In(1), "cmd_ready": Out(1),
            "cmd_row_blocks": In(DIM_BITS), "cmd_groups": In(DIM_BITS), "cmd_col_blocks": In(DIM_BITS),
            "cmd_wfmt": In(3), "cmd_afmt": In(2), "cmd_accumulate": In(1), "cmd_precomputed": In(1), "cmd_bank": In(1),
            "accept": Out(1), "busy": Out(1), "cmd_error": Out(1), "tile_start": Out(1), "tile_done": Out(1),
            "tile_cycles": Out(32), "tiles_done": Out(32),
            "is_fp": Out(1), "fp16": Out(1), "int1": Out(1), "acc_cmd": Out(1), "precomp": Out(1), "bank": Out(1),
            "w_addr": Out(_bits(c.weight_depth)), "tab_addr": Out(_bits(c.table_depth)), "pre_go": Out(1),
            "t1_valid": Out(1), "t1_first": Out(1), "t1_last": Out(1), "t1_bank": Out(1), "t1_fg": Out(1),
            "t1_oaddr": Out(range(c.out_depth)),
        }
        if c.scale == "per_group":
            ports["t1_saddr"] = Out(range(c.scale_depth))
        if c.scale == "per_channel":
            ports.update({"t1_nb": Out(range(c.out_depth)), "t1_lastg": Out(1)})
        super().__init__(ports)

    def elaborate(self, platform):
        c = self.cfg
        m = Module()
        # Counter widths: the buffers' address bits (an address counter is only ever read modulo its
        # buffer's depth, so a narrower counter gives the same addresses), and the command's limits
        # bounded by what fits the buffers (a command over them is refused: ``cmd_error``).
        w_bits, t_bits = _bits(c.weight_depth), _bits(c.table_depth)
        o_bits = max(_bits(c.out_depth), _bits(c.scale_depth) if c.scale == "per_group" else 0)
        step_max = min(c.act_depth, c.table_depth)  # row blocks, K-groups (steps = their product)
        pre_full = c.pre_cycles + c.precompute_latency
        D = c.lookup_interleave  # column blocks interleaved (a power of two)
        slot_bits = max(c.weight_depth + 4 * (D - 1), pre_full).bit_length()  # cycles of a slot, minus one
        n_bits = step_max.bit_length()
        nb_bits = max(o_bits, (c.out_depth + c.lookup_interleave).bit_length())  # column blocks (+ a batch)
        # ---------------------------------------------------------- command
        running = Signal()
        error = self.cmd_error
        wfmt, afmt = Signal(3), Signal(2)
        acc_cmd, precomp = Signal(), Signal()
        planes = Signal(3)
        col_blocks = Signal(nb_bits)
        last_step = Signal()
        g_wrap = Signal()
        g_first = Signal()  # the step's K-group is 0
        look_w = Signal(w_bits)  # weight entries a step (col_blocks * b; added to the weight base)
        # the command's limits minus one (two), taken with the command: the sequencer compares
        # its counters with registers (no subtractor on its paths)
        slot_m1, look_m1 = Signal(slot_bits), Signal(slot_bits)
        slot_m1_zero, look_m1_zero = Signal(), Signal()  # (== 0, for the end flags below)
        groups_m1 = Signal(n_bits)
        # down-counters of the K-groups / row blocks left after the step's, and flags kept with them (set
        # with the step, so that the sequencer's decisions read registers, not counter compares):
        # g_m2 = one group left (g == groups - 2), mb_last = no row block left, mb_m2 = one left
        g_left, mb_left = Signal(n_bits), Signal(n_bits)
        g_m2, mb_last, mb_m2, two_groups = Signal(), Signal(), Signal(), Signal()
        planes_m1 = Signal(3)
        one_group = Signal()
        looking = Signal()  # the step's lookups still run in its slot (sc < look)
        is_fp = Signal()
        fp16 = Signal()
        int1 = Signal()
        m.d.comb += [is_fp.eq(afmt != AFMT["int8"]), fp16.eq(afmt == AFMT["fp16"]), int1.eq(wfmt == WFMT["int1"])]
        m.d.comb += [self.busy.eq(running), self.cmd_ready.eq(~running), self.is_fp.eq(is_fp), self.fp16.eq(fp16),
                     self.int1.eq(int1), self.acc_cmd.eq(acc_cmd), self.precomp.eq(precomp)]

        w_ok = Const(sum(1 << WFMT[f] for f in c.weight_formats), 8).bit_select(self.cmd_wfmt, 1)
        a_ok = Const(sum(1 << AFMT[f] for f in c.activation_formats), 4).bit_select(self.cmd_afmt, 1)
        dims_ok = (self.cmd_row_blocks != 0) & (self.cmd_groups != 0) & (self.cmd_col_blocks != 0)
        cmd_planes = Array(Const(v, 3) for v in PLANES + (0, 0, 0))[self.cmd_wfmt]
        cmd_look_w, cmd_look = Signal(DIM_BITS + 3), Signal(DIM_BITS + 3)
        m.d.comb += cmd_look_w.eq(self.cmd_col_blocks * cmd_planes)
        if D == 1:
            m.d.comb += cmd_look.eq(cmd_look_w)
        else:  # batches of D blocks, the last one padded
            m.d.comb += cmd_look.eq(((self.cmd_col_blocks + (D - 1)) & ~(D - 1)) * cmd_planes)
        # a tile that fits the buffers has at most this many row blocks, K-groups, lookups a step and
        # column blocks (the host checks the products: rtl.lut.rtl_design)
        fits = ((self.cmd_row_blocks <= step_max) & (self.cmd_groups <= step_max)
                & (cmd_look_w <= c.weight_depth) & (self.cmd_col_blocks <= c.out_depth))
        cmd_pre = Mux(self.cmd_precomputed, 0, pre_full)
        cmd_slot_m1 = Signal(slot_bits)
        m.d.comb += cmd_slot_m1.eq(Mux(cmd_look > cmd_pre, cmd_look, cmd_pre) - 1)

        # lookup sequencer state
        lk_wait = Signal(range(pre_full + 1))
        lk_go = Signal()  # lk_wait == 0, a register (the sequencer's enable reads no compare)
        lk_done = Signal()
        # seq = running & lk_go & ~lk_done: the sequencer runs, kept as a register of its own (set and
        # cleared where those three are), so its decisions are one gate from registers
        seq = Signal()
        sc = Signal(w_bits)  # cycle within the step's slot (read only as the weight address's offset)
        # cycles left to the last lookup / to the slot's end (down-counters), and their == 0 kept as
        # registers, set with every write of the counter from the value written
        look_left, slot_left = Signal(slot_bits), Signal(slot_bits)
        look_end, slot_end = Signal(), Signal()
        # their complements, registers of their own (init 1) that the step's registers read: the slot-end
        # decision is made twice, each copy driving half of the sequencer's registers (fan-out; the
        # copies hold ~x, so synthesis does not merge them)
        seq_n, look_end_n, slot_end_n = Signal(init=1), Signal(init=1), Signal(init=1)

        def seq_eq(v):
            return [seq.eq(v), seq_n.eq(~v)]

        def ends_eq(look_v, slot_v):
            return [look_end.eq(look_v), slot_end.eq(slot_v), look_end_n.eq(~look_v), slot_end_n.eq(~slot_v)]
        s = Signal(t_bits)  # step (the table buffer's address; s[0] the table bank)
        q = Signal(3)  # plane position (0 = MSB plane)
        w_base = Signal(w_bits)
        o_base = Signal(o_bits)
        nb = Signal(nb_bits)
        tail_active = Signal()
        tail = Signal(range(c.pipeline_cycles + 1))
        t = Signal(32)
        accept = self.accept  # a command is taken this cycle

        with m.If(self.cmd_valid & ~running):
            with m.If(w_ok & a_ok & dims_ok & fits):
                m.d.comb += accept.eq(1)
                m.d.sync += self.bank.eq(self.cmd_bank)
                m.d.sync += [
                    running.eq(1), t.eq(0),
                    wfmt.eq(self.cmd_wfmt), afmt.eq(self.cmd_afmt), acc_cmd.eq(self.cmd_accumulate),
                    precomp.eq(self.cmd_precomputed), planes.eq(cmd_planes),
                    col_blocks.eq(self.cmd_col_blocks), look_w.eq(cmd_look_w),
                    slot_m1.eq(cmd_slot_m1), look_m1.eq(cmd_look - 1),
                    slot_m1_zero.eq(cmd_slot_m1 == 0), look_m1_zero.eq(cmd_look == 1),
                    groups_m1.eq(self.cmd_groups - 1), g_left.eq(self.cmd_groups - 1),
                    mb_left.eq(self.cmd_row_blocks - 1), two_groups.eq(self.cmd_groups == 2),
                    g_m2.eq(self.cmd_groups == 2), mb_last.eq(self.cmd_row_blocks == 1),
                    mb_m2.eq(self.cmd_row_blocks == 2),
                    planes_m1.eq(cmd_planes - 1), one_group.eq(self.cmd_groups == 1), looking.eq(1),
                    look_left.eq(cmd_look - 1), slot_left.eq(cmd_slot_m1),
                    *ends_eq(cmd_look == 1, cmd_slot_m1 == 0),
                    lk_wait.eq(cmd_pre), lk_go.eq(self.cmd_precomputed), lk_done.eq(0),
                    *seq_eq(self.cmd_precomputed), sc.eq(0), s.eq(0), g_first.eq(1), q.eq(0), nb.eq(0),
                    w_base.eq(0), o_base.eq(0), tail_active.eq(0),
                    g_wrap.eq(self.cmd_groups == 1), last_step.eq((self.cmd_groups == 1) & (self.cmd_row_blocks == 1)),
                ]
            with m.Else():
                m.d.sync += error.eq(1)

        # ---------------------------------------------------------- lookup sequencer (stage 0)
        issue = Signal()
        m.d.comb += issue.eq(seq & looking)
        # the step's flags are registers, set with the step (no counter compare on the sequencer's paths):
        # g_wrap = (g == groups - 1), last_step = g_wrap & (mb == row_blocks - 1)
        next_last = Signal()  # the step after this one is the tile's last
        m.d.comb += next_last.eq(Mux(g_wrap, mb_m2 & one_group, mb_last & g_m2))
        last_issue = issue & last_step & look_end
        with m.If(issue & look_end):
            m.d.sync += looking.eq(0)
        with m.If(running):
            m.d.sync += t.eq(t + 1)
            with m.If(~lk_go):
                m.d.sync += [lk_wait.eq(lk_wait - 1), lk_go.eq(lk_wait == 1), *seq_eq(lk_wait == 1)]
        blk_ok = Const(1, 1)  # the issued (block, plane) is one of the tile's (not the last batch's idle slot)
        if D == 1:
            with m.If(issue):
                with m.If(q == planes_m1):
                    m.d.sync += [q.eq(0), nb.eq(nb + 1)]
                with m.Else():
                    m.d.sync += q.eq(q + 1)
            w_addr = w_base + sc
        else:  # block nb = bb + d of the batch starting at bb, plane position q: d fastest, then q, then bb
            d = Signal(range(D))
            bb = Signal(nb_bits)
            bb_off, d_off = Signal(w_bits), Signal(w_bits)  # bb * b and d * b: weight entries
            batch_w = Signal(w_bits)  # D * b
            with m.If(self.accept):
                m.d.sync += [d.eq(0), bb.eq(0), bb_off.eq(0), d_off.eq(0), batch_w.eq(cmd_planes * D)]
            with m.If(issue):
                with m.If(d == D - 1):
                    m.d.sync += [d.eq(0), d_off.eq(0)]
                    with m.If(q == planes_m1):
                        m.d.sync += [q.eq(0), bb.eq(bb + D), nb.eq(bb + D), bb_off.eq(bb_off + batch_w)]
                    with m.Else():
                        m.d.sync += [q.eq(q + 1), nb.eq(bb)]
                with m.Else():
                    m.d.sync += [d.eq(d + 1), nb.eq(nb + 1), d_off.eq(d_off + planes)]
            with m.If(seq & slot_end & ~last_issue):
                m.d.sync += [d.eq(0), bb.eq(0), bb_off.eq(0), d_off.eq(0)]
            blk_ok = nb < col_blocks
            w_addr = w_base + bb_off + d_off + q
        with m.If(last_issue):
            m.d.sync += [lk_done.eq(1), *seq_eq(Const(0, 1)), tail_active.eq(1), tail.eq(c.pipeline_cycles)]
        with m.Elif(seq & slot_end):
            m.d.sync += [sc.eq(0), q.eq(0), nb.eq(0), looking.eq(1), look_left.eq(look_m1), slot_left.eq(slot_m1),
                         *ends_eq(look_m1_zero, slot_m1_zero)]
        with m.Elif(seq):
            m.d.sync += [sc.eq(sc + 1), look_left.eq(look_left - 1), slot_left.eq(slot_left - 1),
                         *ends_eq(look_left == 1, slot_left == 1)]
        # the same slot-end decision from the complements, for the step's registers
        step_adv = ~seq_n & ~slot_end_n & ~(looking & last_step & ~look_end_n)
        with m.If(step_adv):
            m.d.sync += [s.eq(s + 1), last_step.eq(next_last)]
            with m.If(g_wrap):
                m.d.sync += [g_first.eq(1), w_base.eq(0), o_base.eq(o_base + col_blocks),
                             g_wrap.eq(one_group), g_left.eq(groups_m1), g_m2.eq(two_groups),
                             mb_left.eq(mb_left - 1), mb_last.eq(mb_m2), mb_m2.eq(mb_left == 2)]
            with m.Else():
                m.d.sync += [g_first.eq(0), w_base.eq(w_base + look_w), g_wrap.eq(g_m2), g_left.eq(g_left - 1),
                             g_m2.eq(g_left == 2)]

        done = Signal()
        m.d.comb += done.eq(tail_active & (tail == 1))
        with m.If(tail_active):
            m.d.sync += tail.eq(tail - 1)
        with m.If(done):
            m.d.sync += [running.eq(0), tail_active.eq(0), self.tile_cycles.eq(t + 1),
                         self.tiles_done.eq(self.tiles_done + 1)]
        m.d.comb += [self.tile_start.eq(running & (t == 0)), self.tile_done.eq(done)]

        m.d.comb += [self.w_addr.eq(w_addr), self.tab_addr.eq(s)]
        # t1: the weight plane arrives and the table is read (registered lookup); s1: the shift-add
        t1_valid, t1_first, t1_last, t1_bank, t1_fg = self.t1_valid, self.t1_first, self.t1_last, self.t1_bank, self.t1_fg
        t1_oaddr = self.t1_oaddr
        m.d.sync += [t1_valid.eq(issue & blk_ok), t1_first.eq(q == 0), t1_last.eq(q == planes_m1), t1_bank.eq(s[0]),
                     t1_oaddr.eq(o_base + nb), t1_fg.eq(g_first & ~acc_cmd)]
        if c.scale == "per_group":  # scale entry (g * K // scale_group) * col_blocks + nb, by counting
            per = c.scale_group // c.group_k  # K-groups per scale group
            sgc = Signal(range(per + 1))
            sg_base = Signal(o_bits)
            with m.If(self.cmd_valid & ~running):
                m.d.sync += [sgc.eq(0), sg_base.eq(0)]
            with m.If(step_adv):
                with m.If(g_wrap):
                    m.d.sync += [sgc.eq(0), sg_base.eq(0)]
                with m.Elif(sgc == per - 1):
                    m.d.sync += [sgc.eq(0), sg_base.eq(sg_base + col_blocks)]
                with m.Else():
                    m.d.sync += sgc.eq(sgc + 1)
            m.d.sync += self.t1_saddr.eq(sg_base + nb)
        if c.scale == "per_channel":  # the scratch restarts at group 0 (psum is added after the scale)
            m.d.sync += [t1_fg.eq(g_first), self.t1_nb.eq(nb), self.t1_lastg.eq(g_wrap)]

        # ---------------------------------------------------------- precompute start
        # The precompute of step s+1 starts in the first lookup cycle of step s (not the last step).
        # ``pre_go`` is that cycle, registered one cycle ahead from the sequencer's next state: the
        # generators and the table write enables see registers only.
        pre_go = self.pre_go
        first_look = running & (lk_wait == 1) & ~last_step  # step 0's lookups start next cycle (lk_wait is 1 once)
        advance = ~seq_n & ~slot_end_n & ~last_step  # the next step's lookups start next cycle
        m.d.sync += pre_go.eq(~precomp & (first_look | (advance & ~next_last)))
        return m
