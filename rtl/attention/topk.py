"""SpAtten's top-k engine in RTL: quick-select with ``P`` comparators, cycle-exact to
:mod:`archsim.templates.attention.topk` (the model's docstring is the contract).

Ports (``clk``/``rst`` implicit)::

    start, n, k, seed   in   a tile: keep the k largest of n scores (k < n); seed: the pivot LFSR
    in_valid, in_data   in   fill: one row of P scores per cycle (lane j = score row*P + j)
    out_valid           out  select pass: one row per cycle, in order
    out_row, out_mask   out  lane j of the row is kept (index out_row*P + j) when out_mask[j]
    busy, done          out  a tile is running; one-cycle pulse after its last select row
    cycles              out  the tile's cycles (fill + rounds + select), valid from ``done``

Structure: the scores are written to ``orig`` (for the select pass) and to partition buffer 0.
Three partition buffers rotate roles: a round reads the current partition from one (a row per
cycle) and two zero eliminators compact its lanes below and above the pivot, in order, into the
other two. A round is ``pivot read, pivot latch, ceil(m/P) scan cycles, tail, decide``: the
model's ``ceil(m/P) + 4``. The decide state flushes the partial rows, picks the side that holds
the target rank (or ends the search on the pivot's run of equal scores) and prefetches the first
row of ``orig``, so the select pass takes ``ceil(n/P)`` cycles.
"""
from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out


def _popcount(bits):
    return sum((bits[i] for i in range(len(bits))), Const(0, 1))


def _lfsr_step(state):
    """x^16 + x^14 + x^13 + x^11 + 1, shifting right (the model's ``lfsr16_step``)."""
    bit = state[0] ^ state[2] ^ state[3] ^ state[5]
    return Cat(state[1:16], bit)


class _Compactor:
    """A zero eliminator with a staging row: appends the selected lanes of a row, in order,
    and writes a full row to the destination when ``P`` are staged."""

    def __init__(self, name, lanes, width, addr_bits):
        self.lanes, self.width = lanes, width
        self.stage = Array(Signal(width, name=f"{name}_stage{i}") for i in range(lanes))
        # staged entries, < lanes; one bit at least (a 0-bit signal is a [-1:0] vector: Verilator ASCRANGE)
        self.cnt = Signal(range(max(lanes, 2)), name=f"{name}_cnt")
        self.wptr = Signal(addr_bits + 1, name=f"{name}_wptr")
        self.total = Signal(32, name=f"{name}_total")
        self.wr_en = Signal(name=f"{name}_wr_en")
        self.wr_addr = Signal(addr_bits, name=f"{name}_wr_addr")
        self.wr_data = Signal(lanes * width, name=f"{name}_wr_data")

    def reset(self, m):
        m.d.sync += [self.cnt.eq(0), self.wptr.eq(0), self.total.eq(0)]

    def append(self, m, sel, lanes_data):
        """Comb + sync logic: stage the lanes where ``sel`` is set (a valid row this cycle)."""
        P, W = self.lanes, self.width
        prefix = []  # selected lanes before lane j, as signals (an expression would be copied per use)
        acc = Const(0, range(P + 1))
        for j in range(P):
            p_j = Signal(range(P + 1), name=f"{self.cnt.name}_prefix{j}")
            m.d.comb += p_j.eq(acc)
            prefix.append(p_j)
            acc = p_j + sel[j]
        count = Signal(range(P + 1), name=f"{self.cnt.name}_new")
        m.d.comb += count.eq(_popcount(sel))
        # lane j lands at staging position cnt + (selected lanes before j); expressions, not
        # nested statements, so a 16-lane engine elaborates quickly
        pos = [Signal(range(2 * P + 1), name=f"{self.cnt.name}_pos{j}") for j in range(P)]
        m.d.comb += [pos[j].eq(self.cnt + prefix[j]) for j in range(P)]
        merged = [Signal(W, name=f"{self.cnt.name}_m{i}") for i in range(2 * P)]
        for i in range(2 * P):
            terms = [Mux(sel[j] & (pos[j] == i), lanes_data[j], 0) for j in range(P)]
            if i < P - 1:  # staged entries: cnt < P, so staging slot P - 1 never holds one across cycles
                terms.append(Mux(self.cnt > i, self.stage[i], 0))
            acc = terms[0]
            for t in terms[1:]:
                acc = acc | t
            m.d.comb += merged[i].eq(acc)
        total = self.cnt + count
        m.d.sync += self.total.eq(self.total + count)
        with m.If(total >= P):
            m.d.comb += [self.wr_en.eq(1), self.wr_addr.eq(self.wptr), self.wr_data.eq(Cat(*merged[:P]))]
            m.d.sync += [self.wptr.eq(self.wptr + 1), self.cnt.eq(total - P)]
            for i in range(P):
                m.d.sync += self.stage[i].eq(merged[P + i])
        with m.Else():
            m.d.sync += self.cnt.eq(total)
            for i in range(P):
                m.d.sync += self.stage[i].eq(merged[i])

    def flush(self, m):
        """Write the partial staging row (lanes past ``cnt`` are don't-care)."""
        with m.If(self.cnt != 0):
            m.d.comb += [self.wr_en.eq(1), self.wr_addr.eq(self.wptr), self.wr_data.eq(Cat(*self.stage))]


class TopkEngine(wiring.Component):
    """Quick-select top-k engine: ``lanes`` comparators, up to ``capacity`` scores of ``width`` bits."""

    def __init__(self, lanes: int = 4, capacity: int = 64, width: int = 16):
        if lanes < 1 or lanes & (lanes - 1):
            raise ValueError(f"lanes: expected a power of two, got {lanes}")
        if capacity % lanes or capacity < lanes:
            raise ValueError(f"capacity: expected a positive multiple of lanes={lanes}, got {capacity}")
        self.lanes, self.capacity, self.width = lanes, capacity, width
        self.rows = capacity // lanes
        self.count_bits = max(1, capacity.bit_length())
        self.addr_bits = max(1, (self.rows - 1).bit_length())
        super().__init__({
            "start": In(1), "n": In(self.count_bits), "k": In(self.count_bits), "seed": In(16),
            "in_valid": In(1), "in_data": In(lanes * width),
            "out_valid": Out(1), "out_row": Out(self.addr_bits + 1), "out_mask": Out(lanes),
            "busy": Out(1), "done": Out(1), "cycles": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        P, W, R = self.lanes, self.width, self.rows
        CB, AB = self.count_bits, self.addr_bits

        orig = Memory(shape=unsigned(P * W), depth=R, init=[])
        bufs = [Memory(shape=unsigned(P * W), depth=R, init=[]) for _ in range(3)]
        m.submodules.orig = orig
        for i, b in enumerate(bufs):
            m.submodules[f"buf{i}"] = b
        orig_rd, orig_wr = orig.read_port(), orig.write_port()
        rds = [b.read_port() for b in bufs]
        wrs = [b.write_port() for b in bufs]

        n = Signal(CB)
        k = Signal(CB)
        target = Signal(CB)   # rank (ascending) of the k-th largest within the current partition
        base = Signal(CB)     # scores below the current partition (discarded as smaller)
        m_cur = Signal(CB)
        lfsr = Signal(16)
        pidx = Signal(CB)
        pivot = Signal(W)
        src = Signal(range(3))
        row = Signal(AB + 1)
        rows_cur = Signal(AB + 1)
        proc = Signal()       # rd data of the row issued last cycle is to be processed
        proc_row = Signal(AB + 1)
        eq_total = Signal(CB + 1)
        ties_left = Signal(CB + 1)
        cycles = Signal(32)
        less = _Compactor("less", P, W, AB)
        more = _Compactor("more", P, W, AB)

        shift = (P - 1).bit_length()  # log2(P)

        def ceil_rows(count):
            return (count + (P - 1)) >> shift

        def pivot_index(state, count):
            """The model's pivot_index; every step a signal (an expression used twice would double)."""
            mask = Signal(CB, name="pivot_mask0")
            m.d.comb += mask.eq(count - 1)
            for shift in (1, 2, 4, 8, 16):
                smeared = Signal(CB, name=f"pivot_mask{shift}")
                m.d.comb += smeared.eq(mask | (mask >> shift))
                mask = smeared
            r = Signal(CB, name="pivot_r")
            m.d.comb += r.eq(state[:CB] & mask)
            return Mux(r >= count, r - count, r)

        # read/write port defaults: the partition buffer in the "src" role is read, the other two written
        src_rd_addr = Signal(AB)
        src_rd_data = Signal(P * W)
        m.d.comb += src_rd_data.eq(Array(rd.data for rd in rds)[src])
        less_dst = Signal(range(3))
        more_dst = Signal(range(3))
        m.d.comb += [less_dst.eq(Mux(src == 2, 0, src + 1)), more_dst.eq(Mux(src == 0, 2, src - 1))]
        fill_en = Signal()
        fill_addr = Signal(AB)
        for i in range(3):
            m.d.comb += rds[i].addr.eq(src_rd_addr)
            with m.If(fill_en & (i == 0)):
                m.d.comb += [wrs[i].en.eq(1), wrs[i].addr.eq(fill_addr), wrs[i].data.eq(self.in_data)]
            with m.Elif(less.wr_en & (less_dst == i)):
                m.d.comb += [wrs[i].en.eq(1), wrs[i].addr.eq(less.wr_addr), wrs[i].data.eq(less.wr_data)]
            with m.Elif(more.wr_en & (more_dst == i)):
                m.d.comb += [wrs[i].en.eq(1), wrs[i].addr.eq(more.wr_addr), wrs[i].data.eq(more.wr_data)]
        m.d.comb += [orig_wr.en.eq(fill_en), orig_wr.addr.eq(fill_addr), orig_wr.data.eq(self.in_data)]

        lanes_of = [src_rd_data[j * W:(j + 1) * W] for j in range(P)]

        # one compare stage shared by the scan and tail states (signals: used many times each)
        lt, gt, eq = Signal(P), Signal(P), Signal(P)
        scan_base = Signal(CB + P)
        m.d.comb += scan_base.eq(proc_row * P)
        for j in range(P):
            valid_j = Signal(name=f"lane_valid{j}")
            m.d.comb += [valid_j.eq((scan_base + j) < m_cur),
                         lt[j].eq(valid_j & (lanes_of[j] < pivot)),
                         gt[j].eq(valid_j & (lanes_of[j] > pivot)),
                         eq[j].eq(valid_j & (lanes_of[j] == pivot))]
        scanning = Signal()  # a scanned row's data is here: stage its lanes below / above the pivot
        with m.If(scanning):
            less.append(m, lt, lanes_of)
            more.append(m, gt, lanes_of)
            m.d.sync += eq_total.eq(eq_total + _popcount(eq))

        # the next round's partition size and LFSR state, as signals: start_round sets them
        next_count = Signal(CB)
        next_state = Signal(16)
        next_lfsr = Signal(16)
        next_pidx = Signal(CB)
        m.d.comb += [next_lfsr.eq(_lfsr_step(next_state)), next_pidx.eq(pivot_index(next_lfsr, next_count))]

        def start_round(count, state):
            m.d.comb += [next_count.eq(count), next_state.eq(state)]
            m.d.sync += [m_cur.eq(count), lfsr.eq(next_lfsr), pidx.eq(next_pidx), row.eq(0),
                         rows_cur.eq(ceil_rows(count)), eq_total.eq(0)]
            less.reset(m)
            more.reset(m)

        with m.FSM(name="topk_fsm") as fsm:
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [n.eq(self.n), k.eq(self.k), target.eq(self.n - self.k), base.eq(0), src.eq(0),
                                 cycles.eq(0), row.eq(0)]
                    start_round(self.n, self.seed)
                    m.next = "FILL"
            with m.State("FILL"):
                with m.If(self.in_valid):
                    m.d.comb += [fill_en.eq(1), fill_addr.eq(row)]
                    m.d.sync += row.eq(row + 1)
                    with m.If(row + 1 == rows_cur):
                        m.next = "PIVOT_READ"
            with m.State("PIVOT_READ"):
                m.d.comb += src_rd_addr.eq(pidx >> shift)
                m.d.sync += [row.eq(0), proc.eq(0)]
                m.next = "PIVOT_LATCH"
            with m.State("PIVOT_LATCH"):
                m.d.sync += pivot.eq(Array(lanes_of)[pidx[:shift]] if P > 1 else lanes_of[0])
                m.next = "SCAN"
            with m.State("SCAN"):
                m.d.comb += src_rd_addr.eq(row)
                with m.If(proc):
                    m.d.comb += scanning.eq(1)
                m.d.sync += [proc.eq(1), proc_row.eq(row), row.eq(row + 1)]
                with m.If(row + 1 == rows_cur):
                    m.next = "TAIL"
            with m.State("TAIL"):
                m.d.comb += scanning.eq(1)
                m.next = "DECIDE"
            with m.State("DECIDE"):
                less.flush(m)
                more.flush(m)
                m.d.comb += orig_rd.addr.eq(0)  # prefetch the select pass's first row
                lt, eq = less.total, eq_total
                with m.If(target < lt):
                    m.d.sync += src.eq(less_dst)
                    start_round(lt, lfsr)
                    m.next = "PIVOT_READ"
                with m.Elif(target < lt + eq):
                    above = n - (base + lt + eq)  # scores above the pivot: all kept; then ties, lowest index first
                    m.d.sync += [ties_left.eq(k - above), row.eq(0)]
                    m.next = "SELECT"
                with m.Else():
                    m.d.sync += [target.eq(target - lt - eq), base.eq(base + lt + eq), src.eq(more_dst)]
                    start_round(more.total, lfsr)
                    m.next = "PIVOT_READ"
            with m.State("SELECT"):
                m.d.comb += orig_rd.addr.eq(row + 1)
                data = [orig_rd.data[j * W:(j + 1) * W] for j in range(P)]
                valid = [((row * P + j) < n) for j in range(P)]
                tie = [valid[j] & (data[j] == pivot) for j in range(P)]
                keep = []
                taken = Const(0, range(P + 1))
                for j in range(P):  # ties taken so far, a signal per lane (an expression would double)
                    taken_j = Signal(range(P + 1), name=f"ties_taken{j}")
                    take_tie = Signal(name=f"take_tie{j}")
                    m.d.comb += [taken_j.eq(taken), take_tie.eq(tie[j] & (taken_j < ties_left))]
                    keep.append((valid[j] & (data[j] > pivot)) | take_tie)
                    taken = taken_j + take_tie
                m.d.comb += [self.out_valid.eq(1), self.out_row.eq(row), self.out_mask.eq(Cat(*keep))]
                m.d.sync += [ties_left.eq(ties_left - taken), row.eq(row + 1)]
                with m.If(row + 1 == ceil_rows(n)):
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += self.done.eq(1)
                m.next = "IDLE"
        counting = ~fsm.ongoing("IDLE") & ~fsm.ongoing("DONE")
        with m.If(counting):
            m.d.sync += cycles.eq(cycles + 1)
        m.d.comb += [self.busy.eq(~fsm.ongoing("IDLE")), self.cycles.eq(cycles)]
        return m
