"""The SIMD array's tile controller: command registers, the issue counters (stage 0) and the
pipeline control the PEs and buffers follow (stages 1..4 of :mod:`rtl.simd.design`, or the
pipelined PE's cycles of :mod:`rtl.simd.pipelined`), ``tile_done`` and the hardware cycle counter.

Stage 0 walks round -> group -> step -> weight bit: ``op_addr`` is the operand entry of the step
(read by the buffers, data the next cycle), the lane mask drops lanes beyond the group end.
``tile_done`` is ``pipeline_cycles`` cycles after the last issue; ``tile_cycles`` counts from the
first issue (``tile_start``) through ``tile_done``.
"""
from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.simd.config import DIM_BITS, SimdConfig, _bits, _delayed

#: PE control ports the controller drives (besides the pipelined PE's p_* flags)
PE_CONTROL = ("take", "accumulate", "g_zero", "s1_v", "s1_first_bit", "s1_bit", "s1_mask", "s2_v", "s2_gstart",
              "s3_v", "s3_gend", "s3_first_g")


def controller_signature(cfg: SimdConfig) -> dict:
    o = cfg.options
    sig = {
        "cmd_valid": In(1), "cmd_ready": Out(1), "cmd_mode": In(_bits(len(cfg.modes))),
        "cmd_m": In(DIM_BITS), "cmd_n": In(DIM_BITS), "cmd_k": In(DIM_BITS), "cmd_g": In(DIM_BITS),
        "cmd_accumulate": In(1),
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1), "tile_cycles": Out(32), "tiles_done": Out(32),
        "op_addr": Out(range(o.op_depth)), "sc_addr": Out(range(o.scale_depth)), "old_addr": Out(range(o.out_depth)),
        "wb_en": Out(1), "wb_addr": Out(range(o.out_depth)),
        "take": Out(1), "accumulate": Out(1), "g_zero": Out(1),
        "s1_v": Out(1), "s1_first_bit": Out(1), "s1_bit": Out(range(cfg.max_bit_cycles + 1)),
        "s1_mask": Out(cfg.max_lanes), "s2_v": Out(1), "s2_gstart": Out(1),
        "s3_v": Out(1), "s3_gend": Out(1), "s3_first_g": Out(1),
    }
    if cfg.accumulators > 1:
        from rtl.simd.pipelined import STEP_FLAGS

        sig.update({k: Out(1) for k in STEP_FLAGS})
    return sig


class SimdController(wiring.Component):
    def __init__(self, cfg: SimdConfig):
        self.cfg = cfg
        super().__init__(controller_signature(cfg))

    def elaborate(self, platform):
        from rtl.simd.pe import _ModeRegs

        cfg = self.cfg
        m = Module()
        regs = _ModeRegs()
        st = self._issue(m, regs)
        regs.emit(m, self.take, self.cmd_mode, cfg.modes)
        if cfg.accumulators > 1:
            self._pipelined_control(m, st)
        else:
            self._stage_control(m, st)
        self._done(m, st)
        return m

    def _issue(self, m, regs) -> dict:
        """Command registers and the stage-0 counters; returns the signals later stages use."""
        cfg, o, P = self.cfg, self.cfg.options, self.cfg.pes
        running, first_cycle = Signal(name="running"), Signal(name="first_cycle")
        k_len, g_len = Signal(DIM_BITS, name="k_len"), Signal(DIM_BITS, name="g_len")
        mn = Signal(2 * DIM_BITS, name="mn")
        done_line = Signal(cfg.pipeline_cycles, name="done_line")  # tile_done delay line from the last issue
        take = self.take
        m.d.comb += [take.eq(self.cmd_valid & self.cmd_ready), self.cmd_ready.eq(~running & ~done_line.any()),
                     self.busy.eq(running | done_line.any()), self.g_zero.eq(g_len == 0)]
        lanes_now = regs.reg("lanes_now", range(cfg.max_lanes + 1), lambda md: md.lanes)
        bit = Signal(range(cfg.max_bit_cycles + 1), name="wbit")  # weight bit of a bit-serial step (else 0)
        last_bit = regs.reg("last_wbit", range(cfg.max_bit_cycles + 1), lambda md: cfg.bit_cycles(md) - 1)
        bit_last = Signal(name="bit_last")
        m.d.comb += bit_last.eq(bit == last_bit)
        o_base = Signal(2 * DIM_BITS, name="o_base")
        kg = Signal(DIM_BITS, name="kg")  # offset of this step in its group
        gk0 = Signal(DIM_BITS, name="gk0")  # first k of the group
        sc_addr = Signal(range(o.scale_depth), name="sc_issue")
        rnd = Signal(range(o.out_depth), name="round")
        remaining = Signal(DIM_BITS, name="remaining")
        m.d.comb += remaining.eq(k_len - gk0)
        grp = Signal(DIM_BITS, name="group_len")
        if cfg.dequant:  # one group of K
            m.d.comb += grp.eq(remaining)
        else:
            m.d.comb += grp.eq(Mux((g_len != 0) & (remaining > g_len), g_len, remaining))
        step_last = kg + lanes_now >= grp
        g_end = step_last & bit_last
        r_end = g_end & (gk0 + grp == k_len)
        t_end = r_end & (o_base + P >= mn)
        mask = Signal(cfg.max_lanes, name="lane_mask")
        for j in range(cfg.max_lanes):
            m.d.comb += mask[j].eq((j < lanes_now) & (kg + j < grp))
        op_addr = self.op_addr
        with m.If(take):
            m.d.sync += [running.eq(1), k_len.eq(self.cmd_k), g_len.eq(self.cmd_g),
                         mn.eq(self.cmd_m * self.cmd_n), self.accumulate.eq(self.cmd_accumulate),
                         o_base.eq(0), kg.eq(0), gk0.eq(0), bit.eq(0), op_addr.eq(0), sc_addr.eq(0),
                         rnd.eq(0), first_cycle.eq(1)]
        with m.If(running):
            m.d.sync += [first_cycle.eq(0), bit.eq(bit + 1)]
            with m.If(bit_last):
                m.d.sync += [bit.eq(0), op_addr.eq(op_addr + 1), kg.eq(kg + lanes_now)]
                with m.If(step_last):
                    m.d.sync += [kg.eq(0), gk0.eq(gk0 + grp), sc_addr.eq(sc_addr + 1)]
                    with m.If(r_end):
                        m.d.sync += [gk0.eq(0), rnd.eq(rnd + 1), o_base.eq(o_base + P)]
                        with m.If(t_end):
                            m.d.sync += running.eq(0)
        m.d.comb += self.tile_start.eq(running & first_cycle)
        return dict(running=running, bit=bit, bit_last=bit_last, kg=kg, gk0=gk0, g_end=g_end, r_end=r_end,
                    t_end=t_end, mask=mask, sc_addr=sc_addr, rnd=rnd, done_line=done_line)

    def _stage_control(self, m, st):
        """Stages 1..4 of the one-stage datapath, each delayed by the extra cuts (``cfg.cuts``): the decode
        cut delays the PE's multiply-stage controls, every stage-1 cut delays stage 2, the group cuts delay
        the scale read and the output stage."""
        cfg = self.cfg
        s1 = {k: Signal(name=f"s1_{k}") for k in ("v", "first_bit", "last_bit", "gstart", "gend", "rend", "first_g")}
        s1_mask = Signal(cfg.max_lanes, name="s1_mask")
        s1_bit = Signal.like(st["bit"], name="s1_wbit")
        s1_sc, s1_rnd = Signal.like(st["sc_addr"], name="s1_sc"), Signal.like(st["rnd"], name="s1_round")
        m.d.sync += [s1["v"].eq(st["running"]), s1["first_bit"].eq(st["bit"] == 0), s1["last_bit"].eq(st["bit_last"]),
                     s1["gstart"].eq(st["kg"] == 0), s1["gend"].eq(st["g_end"]), s1["rend"].eq(st["r_end"]),
                     s1["first_g"].eq(st["gk0"] == 0),
                     s1_mask.eq(st["mask"]), s1_bit.eq(st["bit"]), s1_sc.eq(st["sc_addr"]), s1_rnd.eq(st["rnd"])]
        d_dec = cfg.cut_count("decode")
        d_s1 = cfg.cut_count("decode", "prod", "tree")
        d_grp_src, d_grp = cfg.cut_count("group_src"), cfg.cut_count("group_src", "group_res")
        m.d.comb += [self.s1_v.eq(_delayed(m, s1["v"], d_dec, "s1m_v")),
                     self.s1_first_bit.eq(_delayed(m, s1["first_bit"], d_dec, "s1m_fb")),
                     self.s1_bit.eq(_delayed(m, s1_bit, d_dec, "s1m_bit")),
                     self.s1_mask.eq(_delayed(m, s1_mask, d_dec, "s1m_mask"))]
        s2 = {k: Signal(name=f"s2_{k}") for k in ("v", "gstart", "gend", "rend", "first_g")}
        s2_sc, s2_rnd = Signal.like(s1_sc, name="s2_sc"), Signal.like(s1_rnd, name="s2_round")
        m.d.sync += [s2["v"].eq(_delayed(m, s1["v"] & s1["last_bit"], d_s1, "s1_vl")),
                     s2_sc.eq(_delayed(m, s1_sc, d_s1, "s1_sc")), s2_rnd.eq(_delayed(m, s1_rnd, d_s1, "s1_round"))]
        m.d.sync += [s2[k].eq(_delayed(m, s1[k], d_s1, f"s1_{k}")) for k in ("gstart", "gend", "rend", "first_g")]
        s3 = {k: Signal(name=f"s3_{k}") for k in ("v", "gend", "rend", "first_g")}
        s3_rnd = Signal.like(s1_rnd, name="s3_round")
        s3_old_addr = _delayed(m, s2_rnd, d_grp, "s2_round")
        m.d.sync += [s3[k].eq(_delayed(m, s2[k], d_grp, f"s2_{k}")) for k in s3] + [s3_rnd.eq(s3_old_addr)]
        m.d.comb += [self.s2_v.eq(s2["v"]), self.s2_gstart.eq(s2["gstart"]), self.s3_v.eq(s3["v"]),
                     self.s3_gend.eq(s3["gend"]), self.s3_first_g.eq(s3["first_g"]),
                     self.sc_addr.eq(_delayed(m, s2_sc, d_grp_src, "s2_sc")), self.old_addr.eq(s3_old_addr)]
        m.d.sync += [self.wb_en.eq(s3["v"] & s3["rend"]), self.wb_addr.eq(s3_rnd)]

    def _pipelined_control(self, m, st):
        """The pipelined PE's controls: its issue-time flags two cycles later (the decoded-operand cycle),
        the scale / old-output read addresses and the write-back delayed to its cycles."""
        from rtl.simd.pipelined import timing, write_latency

        tm, w_lat = timing(self.cfg), write_latency(self.cfg)
        running, kg, bit = st["running"], st["kg"], st["bit"]
        m.d.comb += [self.sc_addr.eq(_delayed(m, st["sc_addr"], 1 + tm["Gt"], "p_sc")),
                     self.old_addr.eq(_delayed(m, st["rnd"], 1 + tm["Rt"], "p_old")),
                     self.wb_en.eq(_delayed(m, running & st["r_end"], w_lat, "p_wr")),
                     self.wb_addr.eq(_delayed(m, st["rnd"], w_lat, "p_wr_round"))]
        first_cycle_of_group = running & (kg == 0) & (bit == 0)
        now = {"p_step": running & st["bit_last"], "p_gfirst": kg == 0, "p_gstart": first_cycle_of_group,
               "p_gend": running & st["g_end"], "p_rstart": first_cycle_of_group & (st["gk0"] == 0),
               "p_rend": running & st["r_end"]}
        m.d.comb += [getattr(self, k).eq(_delayed(m, v, 2, k)) for k, v in now.items()]
        m.d.comb += [self.s1_v.eq(_delayed(m, running, 2, "s1m_v")),
                     self.s1_first_bit.eq(_delayed(m, bit == 0, 2, "s1m_fb")),
                     self.s1_bit.eq(_delayed(m, bit, 2, "s1m_bit")), self.s1_mask.eq(_delayed(m, st["mask"], 2, "s1m_mask"))]

    def _done(self, m, st):
        """``tile_done`` ``pipeline_cycles`` after the last issue; the tile cycle counter."""
        cfg, done_line = self.cfg, st["done_line"]
        issue_end = st["running"] & st["t_end"] & st["bit_last"]
        m.d.sync += done_line.eq(Cat(issue_end, done_line[:-1]))
        m.d.comb += self.tile_done.eq(done_line[cfg.pipeline_cycles - 1])
        count = Signal(32, name="cycle_count")
        with m.If(self.take):
            m.d.sync += count.eq(0)
        with m.Elif(self.busy):
            m.d.sync += count.eq(count + 1)
        with m.If(self.tile_done):
            m.d.sync += [self.tile_cycles.eq(count + 1), self.tiles_done.eq(self.tiles_done + 1)]
