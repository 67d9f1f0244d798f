"""The bank's accumulators with ``P`` interleaved partials per output row
(:class:`PimInterleavedAccumulators`, ``accumulator_interleave = P > 1``): the models' order of
:func:`archsim.templates.pim.values.gemv_dot`.

- Column counters (from the MAC command, :data:`TAG_LATENCY` cycles): accumulator ``a``'s ``c``-th
  column of the group goes into partial ``c mod P``; ``first`` (``c < P``) says that partial starts
  from zero (no clearing of the storage at a group start: the first MAC after an RDACC resets the
  counters).
- Storage: one memory per partial (LUT RAM: ``ram_style`` distributed), a row per RDACC column
  (``out_lanes`` words, word-granular writes), so an RDACC reads its ``out_lanes x P`` partials in
  one cycle and the accumulate loop has no 64:1 register mux; one read port each, shared by the operand
  fetch and the read-out (never in the same cycle of a schedule the models' checker accepts).
- Accumulate: its operands registered, then the fp32 adder (int8: an int32 add) ``P - 1`` cycles
  deep, so a partial's loop has ``P`` cycles (a partial is hit at most every ``P`` columns); beyond the
  library adder's depth (11 cut points: ``P = 16``) the rest are registers after it. Its operand is fetched 3 cycles
  ahead from the memory (the word picked in two registered 4:1 steps); the result is written back a
  cycle after the adder (address, data and write enables registered), so a result still in flight (hit
  ``P`` .. ``P + 4`` cycles ago) is forwarded, the select precomputed a cycle ahead: the loop is the
  adder plus one 2:1 mux.
- Read-out: an RDACC's partials (those not written in the group read as 0: the column counters
  selected in two registered 8:1 steps) are read :data:`PARTIALS_LATENCY` cycles after ``rd`` (the
  models' ``RDACC_PARTIALS_READ_CYCLES``) and summed pairwise by one ``P``-deep adder per level (its
  operands registered, then ``P - 1`` deep), each reused over time (:meth:`_reduce`; a tree of
  ``P - 1`` adders per output lane was ~2/3 of a P = 16 unit): ``rd_data`` :attr:`read_latency`
  cycles after ``rd`` (= the params' ``rdacc_reduction_cycles``); the next ``rd`` may come ``P / 2``
  cycles later (the params' ``rdacc_spacing_cycles``, which the models' schedules keep).

Timing contract with :class:`rtl.pim.design.PimBankUnit`: the accumulate of a MAC starts (``valid``)
``P - 1`` cycles earlier than with one accumulator, so its result lands at the same cycle; the
``pre_*`` inputs are the tags one cycle before ``valid``'s, ``pre2_*`` two, ``pre4_idx`` four cycles before.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from archsim.templates.pim.params import RDACC_PARTIALS_READ_CYCLES
from rtl.lib.pipe import delay
from rtl.lib.units import Fp32AddFinite
from rtl.pim.controller import bits_for

#: cycles from ``rd`` to the partials (register the command twice, read the memories): the models' figure
PARTIALS_LATENCY = RDACC_PARTIALS_READ_CYCLES
#: cycles from a MAC command to its tags ``tag_part`` / ``tag_first`` (the column counters' pipeline)
TAG_LATENCY = 4


def _fp32_add_max_stages() -> int:
    probe = Fp32AddFinite(1)
    probe._MustUse__silence = True  # built only to read its depth
    return probe.max_stages


#: the deepest fp32 adder of the library; a ``P``-deep adder beyond it (``P = 16``) adds registers after it
FP32_ADD_MAX_STAGES = _fp32_add_max_stages()


def _adder(m: Module, precision: str, a, b, stages: int, name: str):
    """``a + b`` (fp32 finite or int32 wrap), ``stages`` cycles later: an fp32 adder at most as deep as
    the library's (:attr:`Fp32AddFinite.max_stages`, every cut point registered), then registers. The adder
    takes the library's forcing options (same bits and cut points): its subtrahend inverted a stage early
    (``negate_early``: the add's stage one carry chain from registers -- the add held a P = 16 unit at
    123.6 MHz, seed 1, as a LUT per bit in front of the chain), the magnitude compare split
    (``split_compare``) and the shifts' zero fill as data (``zero_fill_as_data``)."""
    if precision == "bf16":
        u = Fp32AddFinite(min(stages, FP32_ADD_MAX_STAGES), zero_fill_as_data=True, split_compare=True,
                          negate_early=True)
        m.submodules[name] = u
        m.d.comb += [u.in_valid.eq(1), u.a.eq(a), u.b.eq(b)]
        return delay(m, u.out, stages - u.stages, f"{name}_pad")
    s = Signal(32, name=f"{name}_sum")
    m.d.comb += s.eq((a + b)[:32])
    return delay(m, s, stages, f"{name}_d")


class PimInterleavedAccumulators(wiring.Component):
    """``cmd_mac`` / ``cmd_acc`` / ``cmd_rdacc``: the column command (its tags ``tag_part`` /
    ``tag_first`` :data:`TAG_LATENCY` cycles after). ``valid`` / ``idx`` / ``part`` / ``col_sum``: start the
    accumulate; ``pre_*`` / ``pre2_*``: the tags 1 / 2 cycles before. ``rd`` / ``rd_col``: an RDACC."""

    def __init__(self, precision: str, registers: int, out_lanes: int, col_bits: int, interleave: int):
        P = interleave
        if P < 2 or P & (P - 1):
            raise ValueError(f"accumulator_interleave: the interleaved accumulators take a power of two >= 2, got {P}")
        if out_lanes & (out_lanes - 1):
            raise ValueError(f"column_bytes: the interleaved accumulators need column_bytes // 4 a power of two, "
                             f"got {out_lanes}")
        self.precision, self.A, self.out_lanes, self.P = precision, registers, out_lanes, P
        self.read_latency = PARTIALS_LATENCY + (P.bit_length() - 1) * P + P // 2 - 1
        ib, pb = bits_for(registers), bits_for(P)
        super().__init__({
            "cmd_mac": In(1), "cmd_acc": In(ib), "cmd_rdacc": In(1), "tag_part": Out(pb), "tag_first": Out(1),
            "valid": In(1), "idx": In(ib), "part": In(pb), "col_sum": In(32),
            "pre_valid": In(1), "pre_idx": In(ib), "pre_part": In(pb), "pre_first": In(1),
            "pre2_valid": In(1), "pre2_idx": In(ib), "pre2_part": In(pb), "pre2_first": In(1), "pre4_idx": In(ib),
            "rd": In(1), "rd_col": In(col_bits), "rd_valid": Out(1), "rd_data": Out(32 * out_lanes),
        })

    def elaborate(self, platform):
        m = Module()
        A, P, L = self.A, self.P, self.out_lanes
        pb, lb = bits_for(P), (L - 1).bit_length()
        rows = -(-A // L)
        self._counters(m, pb)
        mems = []
        for j in range(P):
            # LUT RAM: ECP5 block RAM has no output register in yosys' mapping (5.8 ns clock-to-out), too slow
            # in front of the operand select (a P = 16 loop measured 73 MHz with block RAM)
            mem = memory.Memory(shape=32 * L, depth=max(2, rows), init=[], attrs={"ram_style": "distributed"})
            m.submodules[f"part{j}"] = mem
            mems.append((mem.write_port(granularity=32), mem.read_port()))
        # -- accumulate: the adder P deep, its tags beside it
        out_tag = [(Signal(name=f"out_v{i}"), Signal.like(self.idx, name=f"out_i{i}"),
                    Signal.like(self.part, name=f"out_p{i}")) for i in range(P + 2)]
        prev = (self.valid, self.idx, self.part)
        for t in out_tag:  # out_tag[i]: the accumulate started i + 1 cycles ago
            m.d.sync += [x.eq(y) for x, y in zip(t, prev)]
            prev = t
        # the operand and the column sum registered, then a (P - 1)-deep adder: the forwarding mux ends at a
        # register instead of in front of the adder's first stage (mux + first stage held a P = 16 loop at
        # 138 MHz; the adder's first stage alone is what it measured alone)
        operand, acc_in, sum_in = Signal(32), Signal(32, name="acc_in"), Signal(32, name="acc_sum_in")
        m.d.sync += [acc_in.eq(operand), sum_in.eq(self.col_sum)]
        total = _adder(m, self.precision, acc_in, sum_in, P - 1, "acc_add")
        done_v, done_i, done_p = out_tag[P - 1]  # total is the accumulate started P cycles ago
        total_d = [Signal(32, name=f"total_d{i}") for i in (1, 2, 3)]  # total 1, 2, 3 cycles ago
        m.d.sync += [x.eq(y) for x, y in zip(total_d, [total] + total_d[:-1])]
        # write-back, registered (address, data, the partial memories' write enables: the done tag decoded
        # straight into 16 memories' enables held a P = 16 loop at 123 MHz); the memory has it a cycle later
        wb_addr = Signal(len(done_i) - lb, name="wb_addr")
        wb_en = [Signal(L, name=f"wb_en{j}") for j in range(P)]
        m.d.sync += wb_addr.eq(done_i >> lb)
        for j, (wp, _rp) in enumerate(mems):
            m.d.sync += wb_en[j].eq(Cat(*[done_v & (done_p == j) & ((done_i & (L - 1)) == lane)
                                          for lane in range(L)]))
            m.d.comb += [wp.addr.eq(wb_addr), wp.data.eq(Cat(*([total_d[0]] * L))), wp.en.eq(wb_en[j])]
        # operand fetch: memory read 3 cycles ahead; the word picked in two registered 4:1 steps (the low two
        # bits of (lane, partial) 2 cycles ahead, the rest 1 cycle ahead: a 16:1 select with one register
        # held a P = 16 loop at 113 MHz). One read port per memory, shared with the RDACC's read-out
        # (two ports were two LUT RAM copies: 1,024 DPR16X4 at P = 16 on 2 lanes): the read-out reads in
        # cycle rd + 2, and no fetch is needed then in a schedule the models' checker accepts -- a MAC
        # fetches T - 3 >= 4 cycles after its command (T: the accumulate's start, tCL + mac_pipeline_cycles
        # - P >= 7) and an RDACC comes mac_drain or more after every MAC before it. The address is picked a
        # cycle ahead and registered (the 2:1 mux in front of the 512 LUT RAMs held the unit at 118.6 MHz), one
        # register per memory (`keep`: yosys would merge the equal copies): one register driving all 512 LUT
        # RAMs across the die held the unit at 119.7 MHz (4.6 ns of its routing)
        rd_col1 = Signal.like(self.rd_col, name="rd_col1")
        rd_addr_next = Mux(delay(m, self.rd, PARTIALS_LATENCY - 2, "rd_next"), rd_col1, self.pre4_idx >> lb)
        for j, (_wp, rp) in enumerate(mems):
            rd_addr = Signal(len(self.pre4_idx) - lb, name=f"part_raddr{j}", attrs={"keep": 1})
            m.d.sync += rd_addr.eq(rd_addr_next)
            m.d.comb += [rp.addr.eq(rd_addr), rp.en.eq(1)]
        words = [mems[j][1].data[32 * lane:32 * lane + 32] for j in range(P) for lane in range(L)]
        sel2 = Cat(self.pre2_idx[:lb], self.pre2_part) if lb else self.pre2_part
        sel1 = Cat(self.pre_idx[:lb], self.pre_part) if lb else self.pre_part
        near = [Signal(32, name=f"fetch{g}") for g in range(-(-len(words) // 4))]
        for g, q in enumerate(near):
            group = words[4 * g:4 * g + 4]
            m.d.sync += q.eq(Array(group)[sel2[:2]] if len(group) > 1 else group[0])
        mem_word = Array(near)[sel1[2:]] if len(near) > 1 else near[0]
        # forwarding: the accumulate that starts in 2 cycles hits one started P .. P + 4 cycles before it
        # (out_tag[P - 3 + k] now; -1: the one starting now), not yet in the memory it read; compared a cycle
        # ahead (registered), the most recent wins
        def tag(i):
            return out_tag[i] if i >= 0 else (self.valid, self.idx, self.part)
        hits = [Signal(name=f"fwd_hit{k}") for k in range(5)]
        for k, h in enumerate(hits):
            v, i, pt = tag(P - 3 + k)
            m.d.sync += h.eq(self.pre2_valid & ~self.pre2_first & v & (i == self.pre2_idx) & (pt == self.pre2_part))
        sel0, alt = Signal(), Signal(32)
        m.d.sync += [sel0.eq(hits[0]),
                     alt.eq(Mux(self.pre_first, 0, Mux(hits[1], total, Mux(hits[2], total_d[0], Mux(
                         hits[3], total_d[1], Mux(hits[4], total_d[2], mem_word))))))]
        m.d.comb += operand.eq(Mux(sel0, total, alt))
        self._read_out(m, mems, pb, lb, rd_col1)
        return m

    def _counters(self, m: Module, pb: int):
        """Per accumulator: columns taken in the group (``pb`` bits mod P, plus a 'P or more' bit), in four
        registered steps (the tags :data:`TAG_LATENCY` cycles after the command): register the command;
        select its counter in two 8:1 steps (a register after each); pick the count and register it with
        its successor (``+ 1``); the successor written back a cycle later (step 4: the 64 counters' write
        is a register's fan-out, not the count's pick and ``+ 1``: read / forward / ``+ 1`` / write in one
        cycle held a P = 16 unit at 125 MHz, seed 2). The counts of the MACs 1, 2 and 3 cycles before
        (whose writes land after this one's read) are forwarded when they hit the same accumulator, and a
        group restart (counters cleared) after the read reads as 0."""
        A = self.A
        cnt = Array(Signal(pb + 1, name=f"cnt{i}") for i in range(A))
        self._cnt = cnt
        ib = len(self.cmd_acc)
        stage = []  # (valid, acc, rdacc) of the command 1, 2, 3, 4 cycles after it was issued
        prev = (self.cmd_mac, self.cmd_acc, self.cmd_rdacc)
        for s in (1, 2, 3, 4):
            t = (Signal(name=f"cnt_v{s}"), Signal(ib, name=f"cnt_a{s}"), Signal(name=f"cnt_rd{s}"))
            m.d.sync += [x.eq(y) for x, y in zip(t, prev)]
            stage.append(t)
            prev = t
        (_v1, a1, _r1), (_v2, a2, _r2), (v3, a3, rd3), (v4, a4, _r4) = stage
        groups = [Signal(pb + 1, name=f"cnt_g{g}") for g in range(-(-A // 8))]
        for g, q in enumerate(groups):
            entries = [cnt[i] for i in range(8 * g, min(A, 8 * g + 8))]
            m.d.sync += q.eq(Array(entries)[a1[:3]] if len(entries) > 1 else entries[0])
        r3 = Signal(pb + 1, name="cnt_r3")
        m.d.sync += r3.eq(Array(groups)[a2[3:]] if len(groups) > 1 else groups[0])
        fresh = Signal(init=1)
        c = Signal(pb + 1)
        nxt = Signal(pb + 1, name="cnt_next")  # the count of the MAC in step 4 (its c + 1), written this cycle
        m.d.sync += nxt.eq(Cat((c[:pb] + 1)[:pb], c[pb] | (c[:pb] == self.P - 1)))
        # the MACs 1, 2, 3 cycles before this one: hit (same accumulator), their counts (nxt now, then
        # delayed), cleared (a group restart); each compared while both are in flight, then delayed
        p1, p2, p3 = nxt, Signal(pb + 1, name="cnt_p2"), Signal(pb + 1, name="cnt_p3")
        m.d.sync += [p2.eq(p1), p3.eq(p2)]
        hit1, hit2, hit3 = (Signal(name=f"cnt_hit{k}") for k in (1, 2, 3))
        clr1, clr2, clr3 = (Signal(name=f"cnt_clr{k}") for k in (1, 2, 3))
        hit2_a, clr2_a = Signal(name="cnt_hit2_a"), Signal(name="cnt_clr2_a")
        hit3_a, hit3_b = Signal(name="cnt_hit3_a"), Signal(name="cnt_hit3_b")
        clr3_a, clr3_b = Signal(name="cnt_clr3_a"), Signal(name="cnt_clr3_b")
        restart = Signal(name="cnt_restart")  # the MAC in step 4 starts a group: clear every counter
        m.d.sync += [hit1.eq(v3 & (a3 == a2)), hit2_a.eq(v3 & (a3 == a1)), hit2.eq(hit2_a),
                     hit3_a.eq(v3 & (a3 == self.cmd_acc)), hit3_b.eq(hit3_a), hit3.eq(hit3_b),
                     clr1.eq(v3 & fresh), clr2_a.eq(v3 & fresh), clr2.eq(clr2_a),
                     clr3_a.eq(v3 & fresh), clr3_b.eq(clr3_a), clr3.eq(clr3_b), restart.eq(v3 & fresh)]
        m.d.comb += c.eq(Mux(fresh, 0, Mux(hit1, p1, Mux(clr1, 0, Mux(hit2, p2, Mux(clr2, 0, Mux(
            hit3, p3, Mux(clr3, 0, r3))))))))
        with m.If(v3):
            m.d.sync += fresh.eq(0)
        with m.If(rd3):
            m.d.sync += fresh.eq(1)
        with m.If(v4):
            with m.If(restart):
                m.d.sync += [x.eq(0) for x in cnt]
            m.d.sync += cnt[a4].eq(nxt)
        m.d.sync += [self.tag_part.eq(c[:pb]), self.tag_first.eq(~c[pb])]

    def _read_out(self, m: Module, mems, pb: int, lb: int, rd_col1):
        A, P, L = self.A, self.P, self.out_lanes
        # the command registered twice; the memories read the partials (written back up to mac_drain + 2
        # cycles after the group's last MAC: the RDACC follows it by mac_drain) and answer a cycle later
        m.d.sync += rd_col1.eq(self.rd_col)  # then the memories' read address (registered in elaborate)
        # which partials the group wrote: the column counters (settled: the RDACC follows the group's last
        # MAC by mac_drain > TAG_LATENCY) selected in two registered 8:1 steps from the command's column (a
        # 64:1 select in one cycle held a P = 16 unit at 85 MHz), the count registered, then compared (from
        # the twice-registered column, which yosys merges with the memories' address, 86 MHz)
        live = []
        for lane in range(L):
            at0, at1 = (Signal(len(self.rd_col) + lb + 1, name=f"rd_at{k}_{lane}") for k in (0, 1))
            m.d.comb += [at0.eq(self.rd_col * L + lane), at1.eq(rd_col1 * L + lane)]
            groups = [Signal(pb + 1, name=f"rd_cnt_g{lane}_{g}") for g in range(-(-A // 8))]
            for g, q in enumerate(groups):
                entries = [self._cnt[i] for i in range(8 * g, min(A, 8 * g + 8))]
                m.d.sync += q.eq(Array(entries)[at0[:3]] if len(entries) > 1 else entries[0])
            n = Signal(pb + 1, name=f"rd_cnt{lane}")
            m.d.sync += n.eq(Mux(at1 < A, Array(groups)[at1[3:]] if len(groups) > 1 else groups[0], 0))
            w = Signal(P, name=f"rd_live{lane}")
            m.d.sync += w.eq(Cat(*[n > j for j in range(P)]))
            live.append(w)
        rv = delay(m, self.rd, PARTIALS_LATENCY, "rd_v")  # the partials on the read ports (this cycle)
        outs = []
        for lane in range(L):
            parts = [Mux(live[lane][j], mems[j][1].data[32 * lane:32 * lane + 32], 0) for j in range(P)]
            outs.append(self._reduce(m, parts, rv, lane))
        m.d.comb += [self.rd_valid.eq(delay(m, rv, self.read_latency - PARTIALS_LATENCY, "rd_out_v")),
                     self.rd_data.eq(Cat(*outs))]

    def _reduce(self, m: Module, parts: list, load, lane: int):
        """The pairwise sum of ``parts`` (valid in the ``load`` cycle) by one ``P``-deep adder per tree
        level, each reused over time (log2(P) adders, not P - 1): level 0 takes pair ``j`` into its
        operand registers ``j`` cycles after ``load`` (pair 0 straight from ``parts``, the others from a
        shift register); level ``k`` holds its even inputs (level ``k - 1``'s results ``2i``) and takes
        the pair when the odd one arrives. Result ``P / 2 - 1 + log2(P) x P`` cycles after ``load``;
        level 0 is busy ``P / 2`` cycles per RDACC (:attr:`PimParams.rdacc_spacing_cycles`). Same
        pairs as a tree, so the same fp32 bits."""
        P, prec = self.P, self.precision
        pairs = [(parts[2 * i], parts[2 * i + 1]) for i in range(P // 2)]
        a, b, v = Signal(32, name=f"red{lane}_a0"), Signal(32, name=f"red{lane}_b0"), Signal(name=f"red{lane}_v0")
        queued = [(Signal(32, name=f"red{lane}_q{i}a"), Signal(32, name=f"red{lane}_q{i}b")) for i in range(P // 2 - 1)]
        src = [(0, 0)] * len(queued)  # queued[i] takes queued[i + 1] (the pairs move one place a cycle)
        src[:-1] = queued[1:]
        with m.If(load):
            m.d.sync += [a.eq(pairs[0][0]), b.eq(pairs[0][1])]
            m.d.sync += [x.eq(y) for q, pr in zip(queued, pairs[1:]) for x, y in zip(q, pr)]
        with m.Else():
            if queued:
                m.d.sync += [a.eq(queued[0][0]), b.eq(queued[0][1])]
                m.d.sync += [x.eq(y) for q, s in zip(queued, src) for x, y in zip(q, s)]
        if queued:
            left = Signal(range(P // 2), name=f"red{lane}_left")  # pairs still queued
            m.d.sync += [left.eq(Mux(load, P // 2 - 1, left - (left != 0))), v.eq(load | (left != 0))]
        else:
            m.d.sync += v.eq(load)
        total = _adder(m, prec, a, b, P - 1, f"red{lane}_0")
        total_v = delay(m, v, P - 1, f"red{lane}_v0_d")
        for k in range(1, P.bit_length() - 1):
            held, have = Signal(32, name=f"red{lane}_held{k}"), Signal(name=f"red{lane}_have{k}")
            a, b, v = Signal(32, name=f"red{lane}_a{k}"), Signal(32, name=f"red{lane}_b{k}"), Signal(name=f"red{lane}_v{k}")
            with m.If(total_v):
                m.d.sync += have.eq(~have)
                with m.If(~have):
                    m.d.sync += held.eq(total)
            m.d.sync += [a.eq(held), b.eq(total), v.eq(total_v & have)]
            total = _adder(m, prec, a, b, P - 1, f"red{lane}_{k}")
            total_v = delay(m, v, P - 1, f"red{lane}_v{k}_d")
        return total
