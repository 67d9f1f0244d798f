"""Amaranth design of one PIM bank with its near-bank MAC unit (int8 x int8 -> int32).

Ports (one row-command port and one column-command port, as HBM's separate
row and column command buses; a command is sampled when its ``*_valid`` is
high at a rising edge):

- row port: ``row_valid``, ``row_cmd`` (1 ACT, 2 PRE, 3 REF), ``row_addr``;
- column port: ``col_valid``, ``col_cmd`` (1 MAC, 2 GBWR, 3 RDACC), ``col_addr``
  (column in the open row / buffer column / accumulator column), ``col_acc``
  (accumulator of a MAC), ``col_in`` (input-buffer column of a MAC),
  ``col_wdata`` (GBWR data: ``E`` int8 lanes);
- preload port (test only, models the bank's stored weights): ``ld_en``,
  ``ld_addr`` (row * row_columns + column), ``ld_data``;
- outputs: ``out_valid`` / ``out_data`` (an RDACC's ``column_bytes // 4``
  int32 accumulators, ``tCL`` cycles after the command), ``ready`` (the bank
  is closed, ``tRP`` has passed since PRE and ``tRFC`` since REF: it may take
  an ACT), ``busy`` (a MAC is in flight), ``error`` (sticky: a command broke
  tRCD, tRAS, tRP, tRTP, tRFC or the bank state).

Datapath: a MAC reads its column from the bank memory and its slice of the
input buffer (synchronous reads), carries them through a ``tCL - 1`` stage
delay line (the column read latency), multiplies the ``E`` lane pairs, sums
them with an adder tree and adds the sum into the accumulator in the cycle
``tCL`` after the command (``mac_pipeline_cycles = 1``: visible the cycle
after). The first MAC after an RDACC clears the accumulators (a new group).
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.back import verilog
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

ACT, PRE, REF = 1, 2, 3
MAC, GBWR, RDACC = 1, 2, 3


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


class PimBankUnit(wiring.Component):
    def __init__(self, params):
        p = params
        if p.mac_precision != "int8":
            raise ValueError("PimBankUnit: only int8 MAC units are generated")
        if p.mac_lanes < p.column_elements or p.mac_pipeline_cycles != 1 or p.tCL < 2:
            raise ValueError("PimBankUnit: needs mac_lanes >= column_elements, mac_pipeline_cycles = 1, tCL >= 2")
        self.p = p
        self.E = p.column_elements
        self.rows = p.rows_per_bank
        self.depth = p.rows_per_bank * p.row_columns
        self.buf_cols = p.input_buffer_bytes // p.column_bytes
        self.A = p.acc_registers
        self.out_lanes = p.column_bytes // 4
        super().__init__({
            "row_valid": In(1), "row_cmd": In(2), "row_addr": In(_bits(self.rows)),
            "col_valid": In(1), "col_cmd": In(2), "col_addr": In(16), "col_acc": In(_bits(self.A)),
            "col_in": In(_bits(self.buf_cols)), "col_wdata": In(8 * self.E),
            "ld_en": In(1), "ld_addr": In(_bits(self.depth)), "ld_data": In(8 * self.E),
            "out_valid": Out(1), "out_data": Out(32 * self.out_lanes),
            "ready": Out(1), "busy": Out(1), "error": Out(1),
        })

    def elaborate(self, platform):
        p, E = self.p, self.E
        m = Module()
        bank = memory.Memory(shape=unsigned(8 * E), depth=self.depth, init=[])
        buf = memory.Memory(shape=unsigned(8 * E), depth=max(2, self.buf_cols), init=[])
        m.submodules.bank = bank
        m.submodules.buf = buf
        ld = bank.write_port()
        rd = bank.read_port()
        bw = buf.write_port()
        br = buf.read_port()
        m.d.comb += [ld.en.eq(self.ld_en), ld.addr.eq(self.ld_addr), ld.data.eq(self.ld_data)]

        # ---------------------------------------------------------------- bank state and timing counters
        cw = 16
        is_open = Signal()
        open_row = Signal.like(self.row_addr)
        since_act = Signal(cw, init=(1 << cw) - 1)
        since_pre = Signal(cw, init=(1 << cw) - 1)
        since_rd = Signal(cw, init=(1 << cw) - 1)
        since_ref = Signal(cw, init=(1 << cw) - 1)
        for c in (since_act, since_pre, since_rd, since_ref):
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
        with m.If(is_mac & (~is_open | (since_act < p.tRCD) | (self.col_addr >> 0 >= p.row_columns))):
            m.d.sync += err.eq(1)
        with m.If(is_mac):
            m.d.sync += since_rd.eq(1)
        m.d.comb += [
            rd.addr.eq(open_row * p.row_columns + self.col_addr[:_bits(p.row_columns) if p.row_columns > 1 else 1]),
            rd.en.eq(1),
            br.addr.eq(self.col_in), br.en.eq(1),
            bw.en.eq(is_gbwr), bw.addr.eq(self.col_addr), bw.data.eq(self.col_wdata),
        ]
        # delay line: stage 0 is the cycle after the command (memory data valid), the MAC happens
        # in the cycle tCL after the command
        n_stage = p.tCL  # stages 1 .. tCL-1 carry the data; the valid/acc tags start at stage 0
        v = [Signal(name=f"mac_v{i}") for i in range(n_stage)]
        a = [Signal(_bits(self.A), name=f"mac_acc{i}") for i in range(n_stage)]
        w = [Signal(8 * E, name=f"mac_w{i}") for i in range(n_stage)]
        x = [Signal(8 * E, name=f"mac_x{i}") for i in range(n_stage)]
        m.d.sync += [v[0].eq(is_mac), a[0].eq(self.col_acc)]
        m.d.comb += [w[0].eq(rd.data), x[0].eq(br.data)]
        for i in range(1, n_stage):
            m.d.sync += [v[i].eq(v[i - 1]), a[i].eq(a[i - 1]), w[i].eq(w[i - 1]), x[i].eq(x[i - 1])]
        last = n_stage - 1
        m.d.comb += self.busy.eq(Cat(*v).any())

        prods = []
        for lane in range(E):
            wl = w[last][8 * lane:8 * lane + 8].as_signed()
            xl = x[last][8 * lane:8 * lane + 8].as_signed()
            prods.append(wl * xl)
        while len(prods) > 1:  # adder tree
            nxt = []
            for i in range(0, len(prods), 2):
                nxt.append(prods[i] + prods[i + 1] if i + 1 < len(prods) else prods[i])
            prods = nxt
        col_sum = Signal(signed(32))
        m.d.comb += col_sum.eq(prods[0])

        accs = Array(Signal(signed(32), name=f"acc{i}") for i in range(self.A))
        fresh = Signal(init=1)
        with m.If(v[last]):
            with m.If(fresh):
                for i in range(self.A):
                    m.d.sync += accs[i].eq(Mux(a[last] == i, col_sum, 0))
                m.d.sync += fresh.eq(0)
            with m.Else():
                m.d.sync += accs[a[last]].eq(accs[a[last]] + col_sum)

        # RDACC: snapshot the column of accumulators, present it tCL cycles after the command
        ov = [Signal(name=f"out_v{i}") for i in range(p.tCL)]
        od = [Signal(32 * self.out_lanes, name=f"out_d{i}") for i in range(p.tCL)]
        col_words = []
        for lane in range(self.out_lanes):
            idx = self.col_addr * self.out_lanes + lane
            col_words.append(Mux(idx < self.A, accs[idx[:_bits(self.A)]], 0))
        m.d.sync += [ov[0].eq(is_rdacc), od[0].eq(Cat(*[cw_.as_unsigned() for cw_ in col_words]))]
        with m.If(is_rdacc):
            m.d.sync += fresh.eq(1)
        for i in range(1, p.tCL):
            m.d.sync += [ov[i].eq(ov[i - 1]), od[i].eq(od[i - 1])]
        m.d.comb += [self.out_valid.eq(ov[p.tCL - 1]), self.out_data.eq(od[p.tCL - 1])]
        return m


def bank_verilog(params, name: str = "pim_bank") -> str:
    return verilog.convert(PimBankUnit(params), name=name, emit_src=False)
