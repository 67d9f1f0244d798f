"""Amaranth design of one PIM bank's near-bank unit: command decoder with the
bank's timing checks, input buffer, MAC lanes + adder tree, accumulators.

The DRAM array itself is outside the unit (a DRAM macro, not logic): the unit
asks it for one column per RD-MAC on ``dram_rd`` / ``dram_row`` /
``dram_col`` and takes the column on ``dram_rdata`` ``tCL - 1 - mac_stages``
cycles later (the cosim driver plays the array). So synthesis counts are the unit's logic.

Ports (one row-command port and one column-command port, as HBM's separate
row and column command buses; a command is sampled when its ``*_valid`` is
high at a rising edge) are listed with their meaning in
:data:`rtl.pim.rtl_design.PORT_DOCS`.

Datapath: a MAC reads its slice of the input buffer in the command's cycle
(synchronous read) and carries it through a delay line to meet the column
from the array; the ``E`` lane products go through a pairwise adder tree,
pipelined (:func:`mac_stages` registers: after the products and after each
tree level, as many as ``tCL - 1`` allows, so the array answers ``tCL - 1 -
mac_stages`` cycles after ``dram_rd``), and the column sum is added into
its accumulator at the edge ``tCL`` cycles after the command
(``mac_pipeline_cycles = 1``: visible the cycle after). int8: exact products, int32 wrap; bf16:
fp32 products, fp32 tree and accumulators, round to nearest even
(:mod:`rtl.lib.fp`). The first MAC after an RDACC starts a new group: the
accumulators restart from zero.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.formats import BF16

ACT, PRE, REF = 1, 2, 3
MAC, GBWR, RDACC = 1, 2, 3
LANE_BITS = {"int8": 8, "bf16": 16}


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def check_params(p) -> None:
    """``ValueError`` (one line) if the unit cannot be generated for ``p``."""
    p.validate()
    if p.mac_lanes < p.column_elements:
        raise ValueError(f"mac_lanes: the RTL needs one multiplier per column element ({p.column_elements}), "
                         f"got {p.mac_lanes}")
    if p.mac_pipeline_cycles != 1:
        raise ValueError(f"mac_pipeline_cycles: the RTL has one accumulate stage, got {p.mac_pipeline_cycles}")
    if p.tCL < 2:
        raise ValueError(f"tCL: the RTL needs tCL >= 2, got {p.tCL}")


def mac_stages(p) -> int:
    """Pipeline registers of the MAC unit: after the products and after each adder-tree level,
    as many as fit in the column read latency (``tCL - 1``)."""
    levels = _bits(p.column_elements) if p.column_elements > 1 else 0
    return min(levels + 1, p.tCL - 1)


def pim_signature(p) -> dict:
    E, lb = p.column_elements, LANE_BITS[p.mac_precision]
    buf_cols = p.input_buffer_bytes // p.column_bytes
    return {
        "row_valid": In(1), "row_cmd": In(2), "row_addr": In(_bits(p.rows_per_bank)),
        "col_valid": In(1), "col_cmd": In(2), "col_addr": In(_bits(max(p.row_columns, buf_cols))),
        "col_acc": In(_bits(p.acc_registers)), "col_in": In(_bits(buf_cols)), "col_wdata": In(lb * E),
        "dram_rd": Out(1), "dram_row": Out(_bits(p.rows_per_bank)), "dram_col": Out(_bits(p.row_columns)),
        "dram_rdata": In(lb * E),
        "out_valid": Out(1), "out_data": Out(32 * (p.column_bytes // 4)),
        "ready": Out(1), "busy": Out(1), "error": Out(1),
    }


class PimBankUnit(wiring.Component):
    """One bank's near-bank unit. ``external_buffer``: the input buffer lives outside (a
    channel's global buffer, :class:`rtl.pim.channel.PimChannelUnit`): the unit takes the
    buffer's read data on :attr:`buf_data` (the cycle after the command, as its own buffer's
    synchronous read) instead of keeping a copy. :attr:`accs` are its accumulator registers
    (read by a channel's gather)."""

    def __init__(self, params, external_buffer: bool = False):
        check_params(params)
        p = self.p = params
        self.E = p.column_elements
        self.lb = LANE_BITS[p.mac_precision]
        self.buf_cols = p.input_buffer_bytes // p.column_bytes
        self.A = p.acc_registers
        self.out_lanes = p.column_bytes // 4
        self.tree_width = 1 << _bits(self.E) if self.E > 1 else 1
        self.mac_stages = mac_stages(p)
        self.external_buffer = external_buffer
        self.buf_data = Signal(self.lb * self.E, name="buf_data")
        self.accs = [Signal(32, name=f"acc{i}") for i in range(self.A)]
        super().__init__(pim_signature(p))

    def elaborate(self, platform):
        p, E, lb = self.p, self.E, self.lb
        bf16 = p.mac_precision == "bf16"
        m = Module()
        if not self.external_buffer:
            buf = memory.Memory(shape=lb * E, depth=max(2, self.buf_cols), init=[])
            m.submodules.buf = buf
            bw = buf.write_port()
            br = buf.read_port()

        # ---------------------------------------------------------------- bank state and timing counters
        cw = 16
        is_open = Signal()
        open_row = Signal.like(self.row_addr)
        since_act = Signal(cw, init=(1 << cw) - 1)
        since_pre = Signal(cw, init=(1 << cw) - 1)
        since_rd = Signal(cw, init=(1 << cw) - 1)
        since_ref = Signal(cw, init=(1 << cw) - 1)
        since_mac = Signal(cw, init=(1 << cw) - 1)
        for c in (since_act, since_pre, since_rd, since_ref, since_mac):
            with m.If(c != (1 << cw) - 1):
                m.d.sync += c.eq(c + 1)
        err = Signal()
        m.d.comb += self.error.eq(err)
        m.d.comb += self.ready.eq(~is_open & (since_pre >= p.tRP) & (since_ref >= p.tRFC))
        refresh_ok = since_ref >= p.tRFC

        with m.If(self.row_valid):
            with m.Switch(self.row_cmd):
                with m.Case(ACT):
                    with m.If(is_open | (since_pre < p.tRP) | ~refresh_ok):
                        m.d.sync += err.eq(1)
                    m.d.sync += [is_open.eq(1), open_row.eq(self.row_addr), since_act.eq(1)]
                with m.Case(PRE):
                    with m.If(is_open & ((since_act < p.tRAS) | (since_rd < p.tRTP))):
                        m.d.sync += err.eq(1)
                    m.d.sync += [is_open.eq(0), since_pre.eq(1)]
                with m.Case(REF):
                    with m.If(is_open | (since_pre < p.tRP) | ~refresh_ok):
                        m.d.sync += err.eq(1)
                    m.d.sync += since_ref.eq(1)

        # ---------------------------------------------------------------- column commands
        is_mac = self.col_valid & (self.col_cmd == MAC)
        is_gbwr = self.col_valid & (self.col_cmd == GBWR)
        is_rdacc = self.col_valid & (self.col_cmd == RDACC)
        with m.If(is_mac & (~is_open | (since_act < p.tRCD) | (self.col_addr >= p.row_columns)
                            | (since_mac < p.mac_cycles_per_column))):
            m.d.sync += err.eq(1)
        with m.If(is_gbwr & (self.col_addr >= self.buf_cols)):
            m.d.sync += err.eq(1)
        with m.If(is_mac):
            m.d.sync += [since_rd.eq(1), since_mac.eq(1)]
        # the column read to the DRAM array (registered: the array sees it the cycle after the command)
        m.d.sync += [self.dram_rd.eq(is_mac), self.dram_row.eq(open_row), self.dram_col.eq(self.col_addr)]
        if not self.external_buffer:
            m.d.comb += [
                br.addr.eq(self.col_in), br.en.eq(1),
                bw.en.eq(is_gbwr), bw.addr.eq(self.col_addr), bw.data.eq(self.col_wdata),
                self.buf_data.eq(br.data),
            ]
        # MAC pipeline: registers after the products and after each adder-tree level, as many as tCL - 1
        # allows (``mac_stages``); the column read latency tCL covers the array and these stages: the array
        # answers tCL - 1 - mac_stages cycles after dram_rd, and the accumulate happens at the edge tCL after
        # the command. The input buffer's slice and the tags (valid, accumulator) travel in delay lines.
        S = self.mac_stages
        n_stage = p.tCL - S  # stage 0: the cycle after the command (buffer data valid)
        x = [Signal(lb * E, name=f"mac_x{i}") for i in range(n_stage)]
        m.d.comb += x[0].eq(self.buf_data)
        for i in range(1, n_stage):
            m.d.sync += x[i].eq(x[i - 1])
        v = [Signal(name=f"mac_v{i}") for i in range(p.tCL)]
        a = [Signal(_bits(self.A), name=f"mac_acc{i}") for i in range(p.tCL)]
        m.d.sync += [v[0].eq(is_mac), a[0].eq(self.col_acc)]
        for i in range(1, p.tCL):
            m.d.sync += [v[i].eq(v[i - 1]), a[i].eq(a[i - 1])]
        last = p.tCL - 1
        m.d.comb += self.busy.eq(Cat(*v).any())
        w_col, x_col = self.dram_rdata, x[n_stage - 1]
        cuts = 0

        def cut(values, name):
            nonlocal cuts
            if cuts >= S:
                return values
            regs = []
            for i, val in enumerate(values):
                r = Signal(32, name=f"{name}_r{i}")
                m.d.sync += r.eq(val)
                regs.append(r)
            cuts += 1
            return regs

        # products, then a pairwise adder tree (lanes padded with zeros to a power of two, as the model)
        prods = []
        for lane in range(E):
            wl, xl = w_col[lb * lane:lb * lane + lb], x_col[lb * lane:lb * lane + lb]
            if bf16:
                prods.append(fp.narrow_mul_fp32(m, BF16, wl, xl, f"prod{lane}"))
            else:
                prods.append(wl.as_signed() * xl.as_signed())
        prods = cut(prods, "prod")
        prods += [0] * (self.tree_width - E)
        level = 0
        while len(prods) > 1:
            if bf16:
                prods = [fp.fp32_add_finite(m, prods[i], prods[i + 1], f"tree{level}_{i // 2}")
                         for i in range(0, len(prods), 2)]
            else:
                prods = [prods[i] + prods[i + 1] for i in range(0, len(prods), 2)]
            level += 1
            prods = cut(prods, f"tree{level}")
        assert cuts == S
        col_sum = Signal(32)
        m.d.comb += col_sum.eq(prods[0])

        accs = Array(self.accs)
        fresh = Signal(init=1)
        old = Signal(32)
        m.d.comb += old.eq(Mux(fresh, 0, accs[a[last]]))
        new = fp.fp32_add_finite(m, old, col_sum, "acc_add") if bf16 else (old.as_signed() + col_sum.as_signed())[:32]
        with m.If(v[last]):
            with m.If(fresh):
                for i in range(self.A):
                    m.d.sync += accs[i].eq(0)
                m.d.sync += fresh.eq(0)
            m.d.sync += accs[a[last]].eq(new)

        # RDACC: snapshot a column of accumulators, present it tCL cycles after the command
        ov = [Signal(name=f"out_v{i}") for i in range(p.tCL)]
        od = [Signal(32 * self.out_lanes, name=f"out_d{i}") for i in range(p.tCL)]
        col_words = []
        for lane in range(self.out_lanes):
            idx = self.col_addr * self.out_lanes + lane
            col_words.append(Mux(idx < self.A, accs[idx[:_bits(self.A)]], 0))
        m.d.sync += [ov[0].eq(is_rdacc), od[0].eq(Cat(*col_words))]
        with m.If(is_rdacc):
            m.d.sync += fresh.eq(1)
        for i in range(1, p.tCL):
            m.d.sync += [ov[i].eq(ov[i - 1]), od[i].eq(od[i - 1])]
        m.d.comb += [self.out_valid.eq(ov[p.tCL - 1]), self.out_data.eq(od[p.tCL - 1])]
        return m
