"""The parts of the top-k engine (:class:`rtl.attention.topk.TopkEngine` wires them and runs the
quick-select FSM): the score buffers, the pivot picker, the lane comparators, the zero
eliminators (:class:`Compactor`) and the select pass's tie-break. Scores are unsigned ``width``-bit
values; a row holds ``lanes`` of them (lane j of row r is score ``r * lanes + j``).
"""
from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out


def popcount(bits):
    return sum((bits[i] for i in range(len(bits))), Const(0, 1))


def lfsr_step(state):
    """x^16 + x^14 + x^13 + x^11 + 1, shifting right (the model's ``lfsr16_step``)."""
    bit = state[0] ^ state[2] ^ state[3] ^ state[5]
    return Cat(state[1:16], bit)


class PivotPicker(wiring.Component):
    """Combinational: the next LFSR state and the pivot's index among ``count`` scores (the
    model's ``pivot_index``: ``r = lfsr & (2^ceil(log2 count) - 1)``, minus ``count`` if over)."""

    def __init__(self, count_bits: int):
        self.count_bits = count_bits
        super().__init__({"count": In(count_bits), "state": In(16), "lfsr": Out(16), "pidx": Out(count_bits)})

    def elaborate(self, platform):
        m = Module()
        CB = self.count_bits
        m.d.comb += self.lfsr.eq(lfsr_step(self.state))
        mask = Signal(CB, name="pivot_mask0")  # every step a signal (an expression used twice would double)
        m.d.comb += mask.eq(self.count - 1)
        for shift in (1, 2, 4, 8, 16):
            smeared = Signal(CB, name=f"pivot_mask{shift}")
            m.d.comb += smeared.eq(mask | (mask >> shift))
            mask = smeared
        r = Signal(CB, name="pivot_r")
        m.d.comb += r.eq(self.lfsr[:CB] & mask)
        m.d.comb += self.pidx.eq(Mux(r >= self.count, r - self.count, r))
        return m


class ScoreBuffers(wiring.Component):
    """``orig`` (the scores as filled, for the select pass) and three partition buffers that
    rotate roles: the one at ``src`` is read (``rd_addr`` -> ``rd_data`` a cycle later), the
    others take the ``less`` / ``more`` compactors' rows (``less_dst`` / ``more_dst``). A fill
    writes ``orig`` and buffer 0."""

    def __init__(self, lanes: int, rows: int, width: int, addr_bits: int):
        self.rows, self.row_bits = rows, lanes * width
        W, AB = lanes * width, addr_bits
        super().__init__({
            "src": In(range(3)), "rd_addr": In(AB), "rd_data": Out(W), "orig_addr": In(AB), "orig_data": Out(W),
            "fill_en": In(1), "fill_addr": In(AB), "fill_data": In(W),
            "less_en": In(1), "less_addr": In(AB), "less_data": In(W),
            "more_en": In(1), "more_addr": In(AB), "more_data": In(W),
            "less_dst": Out(range(3)), "more_dst": Out(range(3)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.orig = orig = Memory(shape=unsigned(self.row_bits), depth=self.rows, init=[])
        bufs = [Memory(shape=unsigned(self.row_bits), depth=self.rows, init=[]) for _ in range(3)]
        for i, b in enumerate(bufs):
            m.submodules[f"buf{i}"] = b
        orig_rd, orig_wr = orig.read_port(), orig.write_port()
        rds = [b.read_port() for b in bufs]
        wrs = [b.write_port() for b in bufs]
        src = self.src
        m.d.comb += [self.rd_data.eq(Array(rd.data for rd in rds)[src]),
                     self.less_dst.eq(Mux(src == 2, 0, src + 1)), self.more_dst.eq(Mux(src == 0, 2, src - 1))]
        for i in range(3):
            m.d.comb += rds[i].addr.eq(self.rd_addr)
            with m.If(self.fill_en & (i == 0)):
                m.d.comb += [wrs[i].en.eq(1), wrs[i].addr.eq(self.fill_addr), wrs[i].data.eq(self.fill_data)]
            with m.Elif(self.less_en & (self.less_dst == i)):
                m.d.comb += [wrs[i].en.eq(1), wrs[i].addr.eq(self.less_addr), wrs[i].data.eq(self.less_data)]
            with m.Elif(self.more_en & (self.more_dst == i)):
                m.d.comb += [wrs[i].en.eq(1), wrs[i].addr.eq(self.more_addr), wrs[i].data.eq(self.more_data)]
        m.d.comb += [orig_wr.en.eq(self.fill_en), orig_wr.addr.eq(self.fill_addr), orig_wr.data.eq(self.fill_data),
                     orig_rd.addr.eq(self.orig_addr), self.orig_data.eq(orig_rd.data)]
        return m


class LaneCompare(wiring.Component):
    """Combinational: each lane of a row below / above / equal to the pivot; lanes past the
    partition's ``count`` scores (index ``first + j >= count``) compare as none of them."""

    def __init__(self, lanes: int, width: int, count_bits: int):
        self.lanes, self.width = lanes, width
        super().__init__({"data": In(lanes * width), "pivot": In(width), "first": In(count_bits + lanes),
                          "count": In(count_bits), "lt": Out(lanes), "gt": Out(lanes), "eq": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        W = self.width
        for j in range(self.lanes):
            v = self.data[j * W:(j + 1) * W]
            valid_j = Signal(name=f"lane_valid{j}")
            m.d.comb += [valid_j.eq((self.first + j) < self.count), self.lt[j].eq(valid_j & (v < self.pivot)),
                         self.gt[j].eq(valid_j & (v > self.pivot)), self.eq[j].eq(valid_j & (v == self.pivot))]
        return m


class TieSelect(wiring.Component):
    """Combinational, the select pass on one row: keep the lanes above the pivot and, of the lanes
    equal to it, the first ``ties_left`` (lowest index first); ``taken``: ties kept in this row.
    Lanes at index ``row * lanes + j >= n`` are not scores."""

    def __init__(self, lanes: int, width: int, count_bits: int, row_bits: int):
        self.lanes, self.width = lanes, width
        super().__init__({"data": In(lanes * width), "pivot": In(width), "row": In(row_bits), "n": In(count_bits),
                          "ties_left": In(count_bits + 1), "keep": Out(lanes), "taken": Out(range(lanes + 1))})

    def elaborate(self, platform):
        m = Module()
        P, W = self.lanes, self.width
        data = [self.data[j * W:(j + 1) * W] for j in range(P)]
        valid = [((self.row * P + j) < self.n) for j in range(P)]
        tie = [valid[j] & (data[j] == self.pivot) for j in range(P)]
        taken = Const(0, range(P + 1))
        for j in range(P):  # ties taken so far, a signal per lane (an expression would double)
            taken_j = Signal(range(P + 1), name=f"ties_taken{j}")
            take_tie = Signal(name=f"take_tie{j}")
            m.d.comb += [taken_j.eq(taken), take_tie.eq(tie[j] & (taken_j < self.ties_left)),
                         self.keep[j].eq((valid[j] & (data[j] > self.pivot)) | take_tie)]
            taken = taken_j + take_tie
        m.d.comb += self.taken.eq(taken)
        return m


class Compactor(wiring.Component):
    """A zero eliminator with a staging row: ``append`` stages the lanes of ``data`` where ``sel``
    is set, in order, and writes a full row (``wr_*``) when ``lanes`` are staged; ``flush`` writes
    the partial row (lanes past ``cnt`` are don't-care); ``clear`` starts over. ``total``: the
    lanes appended since ``clear``."""

    def __init__(self, lanes: int, width: int, addr_bits: int):
        self.lanes, self.width = lanes, width
        super().__init__({"clear": In(1), "append": In(1), "flush": In(1), "sel": In(lanes), "data": In(lanes * width),
                          "wr_en": Out(1), "wr_addr": Out(addr_bits), "wr_data": Out(lanes * width),
                          "total": Out(32)})
        self.addr_bits = addr_bits

    def elaborate(self, platform):
        m = Module()
        P, W = self.lanes, self.width
        sel, lanes_data = self.sel, [self.data[j * W:(j + 1) * W] for j in range(P)]
        stage = Array(Signal(W, name=f"stage{i}") for i in range(P))
        # staged entries, < lanes; one bit at least (a 0-bit signal is a [-1:0] vector: Verilator ASCRANGE)
        cnt = Signal(range(max(P, 2)))
        wptr = Signal(self.addr_bits + 1)
        prefix = []  # selected lanes before lane j, as signals (an expression would be copied per use)
        acc = Const(0, range(P + 1))
        for j in range(P):
            p_j = Signal(range(P + 1), name=f"prefix{j}")
            m.d.comb += p_j.eq(acc)
            prefix.append(p_j)
            acc = p_j + sel[j]
        count = Signal(range(P + 1), name="new")
        m.d.comb += count.eq(popcount(sel))
        # lane j lands at staging position cnt + (selected lanes before j); expressions, not
        # nested statements, so a 16-lane engine elaborates quickly
        pos = [Signal(range(2 * P + 1), name=f"pos{j}") for j in range(P)]
        m.d.comb += [pos[j].eq(cnt + prefix[j]) for j in range(P)]
        merged = [Signal(W, name=f"m{i}") for i in range(2 * P)]
        for i in range(2 * P):
            terms = [Mux(sel[j] & (pos[j] == i), lanes_data[j], 0) for j in range(P)]
            if i < P - 1:  # staged entries: cnt < P, so staging slot P - 1 never holds one across cycles
                terms.append(Mux(cnt > i, stage[i], 0))
            acc = terms[0]
            for t in terms[1:]:
                acc = acc | t
            m.d.comb += merged[i].eq(acc)
        total = cnt + count
        with m.If(self.append):
            m.d.sync += self.total.eq(self.total + count)
            with m.If(total >= P):
                m.d.comb += [self.wr_en.eq(1), self.wr_addr.eq(wptr), self.wr_data.eq(Cat(*merged[:P]))]
                m.d.sync += [wptr.eq(wptr + 1), cnt.eq(total - P)]
                for i in range(P):
                    m.d.sync += stage[i].eq(merged[P + i])
            with m.Else():
                m.d.sync += cnt.eq(total)
                for i in range(P):
                    m.d.sync += stage[i].eq(merged[i])
        with m.If(self.flush & (cnt != 0)):
            m.d.comb += [self.wr_en.eq(1), self.wr_addr.eq(wptr), self.wr_data.eq(Cat(*stage))]
        with m.If(self.clear):
            m.d.sync += [cnt.eq(0), wptr.eq(0), self.total.eq(0)]
        return m
