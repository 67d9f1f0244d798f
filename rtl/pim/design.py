"""Amaranth design of one PIM bank's near-bank unit (:class:`PimBankUnit`): the command decoder with
the bank's timing checks (:mod:`rtl.pim.controller`), the input buffer, the MAC datapath (lane
products + adder tree, :mod:`rtl.pim.mac`) and the accumulators (:mod:`rtl.pim.accumulators`).

The DRAM array itself is outside the unit (a DRAM macro, not logic): the unit asks it for one
column per RD-MAC on ``dram_rd`` / ``dram_row`` / ``dram_col`` and takes the column on
``dram_rdata`` :func:`array_latency` cycles later (the cosim driver plays the array). So
synthesis counts are the unit's logic.

Ports (one row-command port and one column-command port, as HBM's separate row and column command
buses; a command is sampled when its ``*_valid`` is high at a rising edge) are listed with their
meaning in :data:`rtl.pim.rtl_design.PORT_DOCS`.

Timing: a MAC reads its slice of the input buffer in the command's cycle (synchronous read) and
carries it through a delay line to meet the column from the array; the MAC datapath takes
``mac_latency`` cycles (its pipeline depth: ``mul_stages``, ``add_stages``) and its column sum is
added into its accumulator at the edge ``tCL + mac_pipeline_cycles - 1`` cycles after the command
(visible ``mac_drain = tCL + mac_pipeline_cycles`` cycles after it, the models' figure). The
datapath's pipeline fits in that time (``mac_latency <= tCL + mac_pipeline_cycles - 2``); the array
answers in the rest. int8: exact products, int32 wrap; bf16: fp32 products, fp32 tree and
accumulators, round to nearest even (:mod:`rtl.lib`). The first MAC after an RDACC starts a new
group: the accumulators restart from zero. An RDACC's column is on ``out_data`` ``rdacc_latency`` cycles
after the command (``tCL``, or the interleaved partials' reduction when longer: the models charge it).
"""
from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.pipe import delay
from rtl.pim.accumulators import READ_LATENCY, PimAccumulators
from rtl.pim.controller import ACT, GBWR, MAC, PRE, RDACC, REF, PimBankController, bits_for
from rtl.pim.interleaved import TAG_LATENCY, PimInterleavedAccumulators
from rtl.pim.mac import LANE_BITS, PimMacDatapath, mac_latency

__all__ = ["ACT", "PRE", "REF", "MAC", "GBWR", "RDACC", "LANE_BITS", "PimBankUnit", "check_params",
           "pim_signature", "pipeline_budget", "default_stages", "array_latency"]

_bits = bits_for


def pipeline_budget(p) -> int:
    """Cycles the MAC datapath may take: ``tCL + mac_pipeline_cycles - 2`` (the rest of the read
    latency is the array's, at least 0 cycles; one cycle is the buffer read), less the ``P - 1``
    extra cycles of a ``P``-deep accumulate adder (``accumulator_interleave``)."""
    return p.tCL + p.mac_pipeline_cycles - 2 - (p.accumulator_interleave - 1)


def default_stages(p) -> tuple[int, int]:
    """``(mul_stages, add_stages)``: the deepest of a fixed preference list that fits the budget and
    leaves the DRAM array at least one cycle (the host engine's array memory needs it), else the
    deepest that fits the budget."""
    E = p.column_elements
    prefs = [(1, 1), (1, 0), (0, 0)] if p.mac_precision == "int8" else \
        [(3, 2), (2, 2), (2, 1), (1, 1), (1, 0), (0, 0)]
    for spare in (1, 0):
        for ms, ad in prefs:
            if mac_latency(p.mac_precision, E, ms, ad) <= pipeline_budget(p) - spare:
                return ms, ad
    return 0, 0


def check_params(p, mul_stages: int | None = None, add_stages: int | None = None) -> None:
    """``ValueError`` (one line) if the unit cannot be generated for ``p`` with these pipeline depths."""
    p.validate()
    if p.mac_lanes < p.column_elements:
        raise ValueError(f"mac_lanes: the RTL needs one multiplier per column element ({p.column_elements}), "
                         f"got {p.mac_lanes}")
    if p.mac_pipeline_cycles < 1:
        raise ValueError(f"mac_pipeline_cycles: the RTL has one accumulate stage (needs >= 1), "
                         f"got {p.mac_pipeline_cycles}")
    if p.tCL < 2:
        raise ValueError(f"tCL: the RTL needs tCL >= 2, got {p.tCL}")
    P = p.accumulator_interleave
    if P > 1 and p.tCL + p.mac_pipeline_cycles - 1 < P + TAG_LATENCY + 2:
        raise ValueError(f"accumulator_interleave: the RTL counts a MAC's column in {TAG_LATENCY} cycles and "
                         f"fetches its partial 3 cycles before its {P}-cycle accumulate; needs tCL + "
                         f"mac_pipeline_cycles >= {P + TAG_LATENCY + 3}")
    if P > 1 and (p.column_bytes // 4) & (p.column_bytes // 4 - 1):
        raise ValueError(f"column_bytes: the interleaved accumulators need column_bytes // 4 a power of two, "
                         f"got {p.column_bytes // 4}")
    ms, ad = default_stages(p)
    ms = ms if mul_stages is None else mul_stages
    ad = ad if add_stages is None else add_stages
    lat = mac_latency(p.mac_precision, p.column_elements, ms, ad)
    if lat > pipeline_budget(p):
        raise ValueError(f"mul_stages/add_stages: the MAC datapath's {lat} cycles exceed tCL + mac_pipeline_cycles "
                         f"- 2 - (accumulator_interleave - 1) = {pipeline_budget(p)} (raise mac_pipeline_cycles in "
                         f"the arch to pay for them)")


#: the input buffer's kinds (:class:`PimBankUnit`'s ``buffer``)
BUFFERS = ("inferred", "ecp5_outreg")


def check_buffer(p, buffer: str, mac_latency_cycles: int, external_buffer: bool = False) -> None:
    """``ValueError`` (one line) if the input buffer ``buffer`` cannot be built for ``p``: ``"ecp5_outreg"``
    reads a cycle longer (the block's output register), a cycle the buffer slice's delay line must have
    (``tCL + mac_pipeline_cycles - 1 - (accumulator_interleave - 1) - 1 - mac_latency >= 1``), and holds at most
    1024 columns (one DP16KD's 18-bit words)."""
    if buffer not in BUFFERS:
        raise ValueError(f"buffer: expected one of {', '.join(BUFFERS)}, got {buffer!r}")
    if buffer == "inferred":
        return
    from rtl.lib.ecp5 import DP16KD_X18_DEPTH

    if external_buffer:
        raise ValueError("buffer: a channel's banks read the channel's buffer; 'ecp5_outreg' is one bank's own")
    cols = p.input_buffer_bytes // p.column_bytes
    if cols > DP16KD_X18_DEPTH:
        raise ValueError(f"buffer: 'ecp5_outreg' holds at most {DP16KD_X18_DEPTH} columns, the input buffer has {cols}")
    spare = p.tCL + p.mac_pipeline_cycles - 1 - (p.accumulator_interleave - 1) - 1 - mac_latency_cycles
    if spare < 1:
        raise ValueError(f"buffer: 'ecp5_outreg' reads in 2 cycles, the input slice has {spare + 1} before the MAC "
                         f"datapath (raise mac_pipeline_cycles, or fewer mul_stages/add_stages)")


def array_latency(p, mul_stages: int, add_stages: int) -> int:
    """Cycles from ``dram_rd`` to the column on ``dram_rdata``."""
    return pipeline_budget(p) - mac_latency(p.mac_precision, p.column_elements, mul_stages, add_stages)


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
    (read by a channel's gather, one cycle after an RDACC)."""

    def __init__(self, params, external_buffer: bool = False, mul_stages: int | None = None,
                 add_stages: int | None = None, mul: str = "dsp", buffer: str = "inferred"):
        check_params(params, mul_stages, add_stages)
        p = self.p = params
        ms, ad = default_stages(p)
        self.mul_stages = ms if mul_stages is None else mul_stages
        self.add_stages = ad if add_stages is None else add_stages
        self.E = p.column_elements
        self.lb = LANE_BITS[p.mac_precision]
        self.buf_cols = p.input_buffer_bytes // p.column_bytes
        self.A = p.acc_registers
        self.out_lanes = p.column_bytes // 4
        self.mac_latency = mac_latency(p.mac_precision, self.E, self.mul_stages, self.add_stages)
        self.external_buffer = external_buffer
        self.mul = mul
        check_buffer(params, buffer, self.mac_latency, external_buffer)
        #: the input buffer: "inferred" (a memory yosys maps; its block RAM's read has no output register), or
        #: "ecp5_outreg" (DP16KD blocks with their output register: the read a cycle longer, taken from the
        #: slice's delay line, so no cycle of the unit changes)
        self.buffer = buffer
        self.buf_data = Signal(self.lb * self.E, name="buf_data")
        self.accs = [Signal(32, name=f"acc{i}") for i in range(self.A)]
        super().__init__(pim_signature(p))

    def elaborate(self, platform):
        p = self.p
        m = Module()
        ctrl = m.submodules.ctrl = PimBankController(p, len(self.col_addr))
        mac = m.submodules.mac = PimMacDatapath(p.mac_precision, self.E, self.mul_stages, self.add_stages, self.mul)
        P = p.accumulator_interleave
        if P == 1:
            accu = m.submodules.accs = PimAccumulators(p.mac_precision, self.A, self.out_lanes, len(self.col_addr))
        else:
            accu = m.submodules.accs = PimInterleavedAccumulators(p.mac_precision, self.A, self.out_lanes,
                                                                  len(self.col_addr), P)
        for name in ("row_valid", "row_cmd", "row_addr", "col_valid", "col_cmd", "col_addr"):
            m.d.comb += getattr(ctrl, name).eq(getattr(self, name))
        for name in ("dram_rd", "dram_row", "dram_col", "ready", "error"):
            m.d.comb += getattr(self, name).eq(getattr(ctrl, name))
        is_mac = self.col_valid & (self.col_cmd == MAC)
        is_rdacc = self.col_valid & (self.col_cmd == RDACC)
        # the accumulate starts in cycle T = L - (P - 1) after the command (a P-deep adder lands at L + 1)
        T = p.tCL + p.mac_pipeline_cycles - 1 - (P - 1)
        slice_delay = T - 1 - mac.latency  # registers between the buffer's read data and the datapath
        if self.buffer == "ecp5_outreg":  # the read data two cycles after the command, from the block's register
            from rtl.lib.ecp5 import dp16kd_x18

            buf_q = Signal(self.lb * self.E, name="buf_q")
            dp16kd_x18(m, self.col_addr, self.col_wdata, self.col_valid & (self.col_cmd == GBWR), self.col_in, buf_q,
                       output_reg=True, name="buf")
            slice_delay -= 1
        elif not self.external_buffer:
            buf = m.submodules.buf = memory.Memory(shape=self.lb * self.E, depth=max(2, self.buf_cols), init=[])
            bw, br = buf.write_port(), buf.read_port()
            m.d.comb += [br.addr.eq(self.col_in), br.en.eq(1), bw.en.eq(self.col_valid & (self.col_cmd == GBWR)),
                         bw.addr.eq(self.col_addr), bw.data.eq(self.col_wdata), self.buf_data.eq(br.data)]
        # tags of the MACs in flight: v[i] / a[i] in the cycle i + 1 after the command; the accumulate is
        # in cycle L = tCL + mac_pipeline_cycles - 1 after it
        L = p.tCL + p.mac_pipeline_cycles - 1
        v = [Signal(name=f"mac_v{i}") for i in range(L)]
        a = [Signal(_bits(self.A), name=f"mac_acc{i}") for i in range(L)]
        m.d.sync += [v[0].eq(is_mac), a[0].eq(self.col_acc)]
        m.d.sync += [x.eq(y) for x, y in zip(v[1:] + a[1:], v[:-1] + a[:-1])]
        m.d.comb += self.busy.eq(Cat(*v).any())
        # the buffer slice (valid the cycle after the command; two with the block's output register) waits for
        # the array's column
        slice_q = buf_q if self.buffer == "ecp5_outreg" else self.buf_data
        m.d.comb += [mac.x.eq(delay(m, slice_q, slice_delay, "mac_x")), mac.w.eq(self.dram_rdata)]
        m.d.comb += [accu.valid.eq(v[T - 1]), accu.idx.eq(a[T - 1]), accu.col_sum.eq(mac.sum),
                     accu.rd.eq(is_rdacc), accu.rd_col.eq(self.col_addr)]
        if P == 1:
            m.d.comb += [accu.next_idx.eq(a[L - 2]), accu.rdacc.eq(is_rdacc)]
            m.d.comb += [acc.eq(accu.accs[32 * i:32 * i + 32]) for i, acc in enumerate(self.accs)]
            read_latency = READ_LATENCY
        else:  # the partial and 'first' tags, from the command-time counters, ride beside v / a
            m.d.comb += [accu.cmd_mac.eq(is_mac), accu.cmd_acc.eq(self.col_acc), accu.cmd_rdacc.eq(is_rdacc)]
            # part[i] / first[i] beside v[i] (the tags come TAG_LATENCY cycles after the command)
            part, first = [None] * (TAG_LATENCY - 1) + [accu.tag_part], [None] * (TAG_LATENCY - 1) + [accu.tag_first]
            for i in range(TAG_LATENCY, T):
                part.append(delay(m, part[-1], 1, f"mac_part{i}_"))
                first.append(delay(m, first[-1], 1, f"mac_first{i}_"))
            m.d.comb += [accu.part.eq(part[T - 1]), accu.pre_valid.eq(v[T - 2]), accu.pre_idx.eq(a[T - 2]),
                         accu.pre_part.eq(part[T - 2]), accu.pre_first.eq(first[T - 2]), accu.pre2_idx.eq(a[T - 3]),
                         accu.pre2_part.eq(part[T - 3]), accu.pre2_valid.eq(v[T - 3]), accu.pre2_first.eq(first[T - 3]),
                         accu.pre4_idx.eq(a[T - 5])]
            read_latency = accu.read_latency
            assert read_latency == p.rdacc_reduction_cycles, "the RTL's RDACC reduction differs from the models'"
        # RDACC: the column is presented rdacc_latency (tCL, or the reduction when longer) after the command
        extra = p.rdacc_latency - read_latency
        m.d.comb += [self.out_valid.eq(delay(m, accu.rd_valid, extra, "out_v")),
                     self.out_data.eq(delay(m, accu.rd_data, extra, "out_d"))]
        return m
