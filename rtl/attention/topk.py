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

Components (:mod:`rtl.attention.topk_units`): :class:`~rtl.attention.topk_units.ScoreBuffers`,
:class:`~rtl.attention.topk_units.PivotPicker`, :class:`~rtl.attention.topk_units.LaneCompare`,
two :class:`~rtl.attention.topk_units.Compactor` (below / above the pivot) and
:class:`~rtl.attention.topk_units.TieSelect`; this module runs the FSM.
"""
from amaranth import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.attention.topk_units import Compactor, LaneCompare, PivotPicker, ScoreBuffers, TieSelect, popcount


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
        P, W = self.lanes, self.width
        CB, AB = self.count_bits, self.addr_bits
        m.submodules.buffers = bufs = ScoreBuffers(P, self.rows, W, AB)
        m.submodules.picker = picker = PivotPicker(CB)
        m.submodules.compare = cmp = LaneCompare(P, W, CB)
        m.submodules.less = less = Compactor(P, W, AB)
        m.submodules.more = more = Compactor(P, W, AB)
        m.submodules.select = select = TieSelect(P, W, CB, AB + 1)

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
        shift = (P - 1).bit_length()  # log2(P)

        def ceil_rows(count):
            return (count + (P - 1)) >> shift

        # the partition buffer in the "src" role is read, the compactors write the other two
        m.d.comb += [bufs.src.eq(src), bufs.fill_data.eq(self.in_data)]
        for side, unit in (("less", less), ("more", more)):
            m.d.comb += [getattr(bufs, f"{side}_en").eq(unit.wr_en), getattr(bufs, f"{side}_addr").eq(unit.wr_addr),
                         getattr(bufs, f"{side}_data").eq(unit.wr_data), unit.data.eq(bufs.rd_data)]
        lanes_of = [bufs.rd_data[j * W:(j + 1) * W] for j in range(P)]
        # one compare stage shared by the scan and tail states
        m.d.comb += [cmp.data.eq(bufs.rd_data), cmp.pivot.eq(pivot), cmp.first.eq(proc_row * P), cmp.count.eq(m_cur),
                     less.sel.eq(cmp.lt), more.sel.eq(cmp.gt)]
        scanning = Signal()  # a scanned row's data is here: stage its lanes below / above the pivot
        m.d.comb += [less.append.eq(scanning), more.append.eq(scanning)]
        with m.If(scanning):
            m.d.sync += eq_total.eq(eq_total + popcount(cmp.eq))
        m.d.comb += [select.data.eq(bufs.orig_data), select.pivot.eq(pivot), select.row.eq(row), select.n.eq(n),
                     select.ties_left.eq(ties_left)]

        def start_round(count, state):
            """The next round's partition size and LFSR state (the picker draws its pivot)."""
            m.d.comb += [picker.count.eq(count), picker.state.eq(state), less.clear.eq(1), more.clear.eq(1)]
            m.d.sync += [m_cur.eq(count), lfsr.eq(picker.lfsr), pidx.eq(picker.pidx), row.eq(0),
                         rows_cur.eq(ceil_rows(count)), eq_total.eq(0)]

        with m.FSM(name="topk_fsm") as fsm:
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [n.eq(self.n), k.eq(self.k), target.eq(self.n - self.k), base.eq(0), src.eq(0),
                                 cycles.eq(0), row.eq(0)]
                    start_round(self.n, self.seed)
                    m.next = "FILL"
            with m.State("FILL"):
                with m.If(self.in_valid):
                    m.d.comb += [bufs.fill_en.eq(1), bufs.fill_addr.eq(row)]
                    m.d.sync += row.eq(row + 1)
                    with m.If(row + 1 == rows_cur):
                        m.next = "PIVOT_READ"
            with m.State("PIVOT_READ"):
                m.d.comb += bufs.rd_addr.eq(pidx >> shift)
                m.d.sync += [row.eq(0), proc.eq(0)]
                m.next = "PIVOT_LATCH"
            with m.State("PIVOT_LATCH"):
                m.d.sync += pivot.eq(Array(lanes_of)[pidx[:shift]] if P > 1 else lanes_of[0])
                m.next = "SCAN"
            with m.State("SCAN"):
                m.d.comb += bufs.rd_addr.eq(row)
                with m.If(proc):
                    m.d.comb += scanning.eq(1)
                m.d.sync += [proc.eq(1), proc_row.eq(row), row.eq(row + 1)]
                with m.If(row + 1 == rows_cur):
                    m.next = "TAIL"
            with m.State("TAIL"):
                m.d.comb += scanning.eq(1)
                m.next = "DECIDE"
            with m.State("DECIDE"):
                m.d.comb += [less.flush.eq(1), more.flush.eq(1)]
                m.d.comb += bufs.orig_addr.eq(0)  # prefetch the select pass's first row
                lt, eq = less.total, eq_total
                with m.If(target < lt):
                    m.d.sync += src.eq(bufs.less_dst)
                    start_round(lt, lfsr)
                    m.next = "PIVOT_READ"
                with m.Elif(target < lt + eq):
                    above = n - (base + lt + eq)  # scores above the pivot: all kept; then ties, lowest index first
                    m.d.sync += [ties_left.eq(k - above), row.eq(0)]
                    m.next = "SELECT"
                with m.Else():
                    m.d.sync += [target.eq(target - lt - eq), base.eq(base + lt + eq), src.eq(bufs.more_dst)]
                    start_round(more.total, lfsr)
                    m.next = "PIVOT_READ"
            with m.State("SELECT"):
                m.d.comb += bufs.orig_addr.eq(row + 1)
                m.d.comb += [self.out_valid.eq(1), self.out_row.eq(row), self.out_mask.eq(select.keep)]
                m.d.sync += [ties_left.eq(ties_left - select.taken), row.eq(row + 1)]
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
