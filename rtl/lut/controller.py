"""The LUT core's controller: takes a tile command, sequences the lookups (stage 0: one (column block,
bit plane) a cycle, slot by slot), starts each step's table build (``pre_go``), and counts the tile's
cycles. Outputs the stage-t1 control of each lookup (registered with the weight read) and the
command's decoded formats; the datapath (:class:`rtl.lut.design.LutCore`) does the rest.
See :mod:`rtl.lut.design` for the timing it implements.

Components (:mod:`rtl.lut.sequencer`): :class:`~rtl.lut.sequencer.LutCommandDecoder` (accept or
refuse, the command's limits), :class:`~rtl.lut.sequencer.SlotTimer`,
:class:`~rtl.lut.sequencer.BlockWalker` and :class:`~rtl.lut.sequencer.StepWalker` (the lookup
sequencer), :class:`~rtl.lib.cycle_counter.TileCycleCounter` (``tile_cycles`` / ``tiles_done``).
This module keeps the command's format registers, the pipeline tail and the stage-t1 registers."""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.cycle_counter import TileCycleCounter
from rtl.lut.config import AFMT, DIM_BITS, WFMT, _bits
from rtl.lut.sequencer import BlockWalker, LutCommandDecoder, SlotTimer, StepWalker


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
        m.submodules.decoder = dec = LutCommandDecoder(c)
        m.submodules.slots = slots = SlotTimer(c)
        m.submodules.blocks = blocks = BlockWalker(c)
        m.submodules.steps = steps = StepWalker(c)
        m.submodules.counter = counter = TileCycleCounter()
        # ---------------------------------------------------------- command
        running = Signal()
        wfmt, afmt = Signal(3), Signal(2)
        acc_cmd, precomp = Signal(), Signal()
        is_fp, fp16, int1 = Signal(), Signal(), Signal()
        m.d.comb += [is_fp.eq(afmt != AFMT["int8"]), fp16.eq(afmt == AFMT["fp16"]), int1.eq(wfmt == WFMT["int1"])]
        m.d.comb += [self.busy.eq(running), self.cmd_ready.eq(~running), self.is_fp.eq(is_fp), self.fp16.eq(fp16),
                     self.int1.eq(int1), self.acc_cmd.eq(acc_cmd), self.precomp.eq(precomp)]
        m.d.comb += [dec.row_blocks.eq(self.cmd_row_blocks), dec.groups.eq(self.cmd_groups),
                     dec.col_blocks.eq(self.cmd_col_blocks), dec.wfmt.eq(self.cmd_wfmt), dec.afmt.eq(self.cmd_afmt),
                     dec.precomputed.eq(self.cmd_precomputed)]
        accept = self.accept  # a command is taken this cycle
        offered = self.cmd_valid & ~running
        with m.If(offered):
            with m.If(dec.ok):
                m.d.comb += accept.eq(1)
                m.d.sync += [self.bank.eq(self.cmd_bank), running.eq(1), wfmt.eq(self.cmd_wfmt),
                             afmt.eq(self.cmd_afmt), acc_cmd.eq(self.cmd_accumulate), precomp.eq(self.cmd_precomputed)]
            with m.Else():
                m.d.sync += self.cmd_error.eq(1)

        # ---------------------------------------------------------- lookup sequencer (stage 0)
        m.d.comb += [
            slots.take.eq(accept), slots.running.eq(running), slots.precomputed.eq(self.cmd_precomputed),
            slots.pre.eq(dec.pre), slots.look.eq(dec.look), slots.slot_m1.eq(dec.slot_m1),
            slots.last_step.eq(steps.last_step),
            blocks.take.eq(accept), blocks.planes.eq(dec.planes), blocks.col_blocks.eq(steps.cols),
            blocks.issue.eq(slots.issue), blocks.restart.eq(slots.restart), blocks.sc.eq(slots.sc),
            blocks.w_base.eq(steps.w_base),
            steps.take.eq(accept), steps.row_blocks.eq(self.cmd_row_blocks), steps.groups.eq(self.cmd_groups),
            steps.col_blocks.eq(self.cmd_col_blocks), steps.look_w.eq(dec.look_w), steps.step_adv.eq(slots.step_adv),
        ]

        # ---------------------------------------------------------- pipeline tail, cycle counter
        tail_active = Signal()
        tail = Signal(range(c.pipeline_cycles + 1))
        done, first = Signal(), Signal()  # first: the tile's first cycle (the one after its accept)
        m.d.comb += done.eq(tail_active & (tail == 1))
        m.d.sync += first.eq(accept)
        with m.If(accept):
            m.d.sync += tail_active.eq(0)
        with m.If(slots.last_issue):
            m.d.sync += [tail_active.eq(1), tail.eq(c.pipeline_cycles)]
        with m.If(tail_active):
            m.d.sync += tail.eq(tail - 1)
        with m.If(done):
            m.d.sync += [running.eq(0), tail_active.eq(0)]
        m.d.comb += [counter.start.eq(first), counter.done.eq(done), self.tile_start.eq(first),
                     self.tile_done.eq(done), self.tile_cycles.eq(counter.tile_cycles),
                     self.tiles_done.eq(counter.tiles_done)]

        # ---------------------------------------------------------- stage t1
        m.d.comb += [self.w_addr.eq(blocks.w_addr), self.tab_addr.eq(steps.s)]
        # t1: the weight plane arrives and the table is read (registered lookup); s1: the shift-add
        m.d.sync += [self.t1_valid.eq(slots.issue & blocks.blk_ok), self.t1_first.eq(blocks.q == 0),
                     self.t1_last.eq(blocks.plane_last), self.t1_bank.eq(steps.s[0]),
                     self.t1_oaddr.eq(steps.o_base + blocks.nb), self.t1_fg.eq(steps.g_first & ~acc_cmd)]
        if c.scale == "per_group":
            m.d.comb += steps.clear.eq(offered)
            m.d.sync += self.t1_saddr.eq(steps.sg_base + blocks.nb)
        if c.scale == "per_channel":  # the scratch restarts at group 0 (psum is added after the scale)
            m.d.sync += [self.t1_fg.eq(steps.g_first), self.t1_nb.eq(blocks.nb), self.t1_lastg.eq(steps.g_wrap)]

        # ---------------------------------------------------------- precompute start
        # The precompute of step s+1 starts in the first lookup cycle of step s (not the last step).
        # ``pre_go`` is that cycle, registered one cycle ahead from the sequencer's next state: the
        # generators and the table write enables see registers only.
        first_look = slots.starting & ~steps.last_step  # step 0's lookups start next cycle (lk_wait is 1 once)
        m.d.sync += self.pre_go.eq(~precomp & (first_look | (slots.advance & ~steps.next_last)))
        return m
