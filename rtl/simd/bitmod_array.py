"""The SIMD array with BitMoD's bit-serial PE (``pe: bitmod``): ``P`` :class:`rtl.simd.bitserial.BitmodPE`
behind the simd template's buffers (:class:`rtl.simd.buffers.SimdBuffers`) and host interface
(:class:`rtl.simd.host.SimdEngine`), cycle for cycle the contract of
:mod:`archsim.templates.simd.bitserial` (``tile = ceil(M*N / P) * T + pipeline_cycles``).

- **Modes.** One per (weights, activations) pair of the params (``cmd_mode``, the order of
  :meth:`SimdParams.pairs`). A BitMoD width's four types share one decoder (the group's selector
  picks the type), so modes that differ only in that share a PE *kind*; the array builds ``P`` PEs
  of each kind (lanes, activation bits, weight width) and the command's mode starts one kind.
- **Buffers** (the simd layout): operand entry ``round * steps + step``, PE ``p``'s activation word
  at ``[p*EW, p*EW + AW)``, its weight word at ``[p*EW + AW, ...)``; scale entry
  ``round * groups + group`` (one group of K when ``G = 0``), PE ``p``'s 32 bits: the 8-bit scale
  code at ``[32p, 32p + 8)``, the 2-bit datatype selector at ``[32p + 8, 32p + 10)``; output
  entry ``round``, PE ``p``'s int64 at ``[64p, 64p + 64)`` (units of 1/2).
- **Rounds.** The ``P`` PEs of a round compute in lockstep (same K, groups and control); PE 0 of
  the running kind paces the controller: its ``take`` advances the operand and scale addresses
  (the next entry is addressed in the cycle of the take, so its data is there the cycle after),
  its ``done`` writes the round's outputs (``result`` + the old entry with ``accumulate``) and
  starts the next round in the next cycle. ``tile_done`` is ``pipeline_cycles`` cycles after the
  last round's ``done``; ``tile_cycles`` counts from ``tile_start`` (the first term cycle, the
  cycle after the command is taken) through ``tile_done``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring

from archsim.numerics import bits_of
from archsim.numerics._bitmod import MIXTURES
from archsim.templates.simd import bitserial
from archsim.templates.simd.bitmod_fp16 import FP16
from rtl.simd.bitmod_fp16 import FP32_BITS, BitmodFp16PE
from rtl.simd.bitserial import ACC_BITS, BUGS, BitmodPE
from rtl.simd.buffers import SimdBuffers
from rtl.simd.config import DIM_BITS, SimdRtlOptions
from rtl.simd.design import simd_signature
from rtl.simd.host import SimdEngine

#: default buffer depths of a BitMoD build: groups as short as one lane step need a scale entry each
DEFAULT_OPTIONS = {"op_depth": 512, "scale_depth": 512, "out_depth": 32}


@dataclass(frozen=True)
class BitmodMode:
    """One (weights, activations) pair: its lanes and the PE kind that runs it."""

    index: int
    weight: str
    activation: str
    lanes: int

    @property
    def weight_bits(self) -> int:
        return bits_of(self.weight)

    @property
    def act_bits(self) -> int:
        return bits_of(self.activation)

    @property
    def kind(self) -> tuple[int, int | str, str]:
        """(lanes, activation bits -- or ``"fp16"`` --, the weight format the PE is built for: a width's
        first BitMoD type)."""
        w = MIXTURES[self.weight_bits][0] if self.weight in bitserial.BITMOD_FORMATS else self.weight
        return (self.lanes, FP16 if self.activation == FP16 else self.act_bits, w)


@dataclass
class BitmodConfig:
    """What the BitMoD array is generated from (the fields :class:`SimdBuffers` and the host top read)."""

    pes: int
    lane_bits: int
    pipeline_cycles: int
    modes: list[BitmodMode]
    options: SimdRtlOptions = field(default_factory=lambda: SimdRtlOptions(**DEFAULT_OPTIONS))
    #: a planted bug of every PE (:data:`rtl.simd.bitserial.BUGS`; :data:`rtl.simd.bitmod_fp16.FP16_BUGS`: the
    #: fp16 PEs only), for the co-simulation's own tests
    bug: str | None = None

    @staticmethod
    def from_params(params, options: SimdRtlOptions | None = None) -> "BitmodConfig":
        params.validate()
        modes = [BitmodMode(i, w, a, params.lanes(w, a)) for i, (w, a) in enumerate(params.pairs())]
        if not modes:
            raise ValueError("formats: no (weights, activations) pair runs on the bit-serial PE")
        return BitmodConfig(params.pes, params.lane_bits, params.pipeline_cycles, modes,
                            options or SimdRtlOptions(**DEFAULT_OPTIONS))

    @property
    def kinds(self) -> list[tuple[int, int, str]]:
        """The PE kinds, in the order of their first mode."""
        return list(dict.fromkeys(md.kind for md in self.modes))

    @property
    def fp16_kinds(self) -> list[int]:
        """Indices of the kinds with fp16 activations (:class:`rtl.simd.bitmod_fp16.BitmodFp16PE`)."""
        return [i for i, k in enumerate(self.kinds) if k[1] == FP16]

    @property
    def act_word_bits(self) -> int:
        return max(md.lanes * md.act_bits for md in self.modes)

    @property
    def weight_word_bits(self) -> int:
        return max(md.lanes * md.weight_bits for md in self.modes)

    @property
    def entry_bits(self) -> int:
        return self.act_word_bits + self.weight_word_bits

    out_bits = ACC_BITS

    @property
    def data_bits(self) -> int:
        return self.pes * max(self.entry_bits, 32, self.out_bits)

    def as_dict(self) -> dict:
        return {"pes": self.pes, "lane_bits": self.lane_bits, "pe": "bitmod", "pipeline_cycles": self.pipeline_cycles,
                "modes": [[md.weight, md.activation, md.lanes] for md in self.modes],
                "kinds": [list(k) for k in self.kinds], "act_word_bits": self.act_word_bits,
                "weight_word_bits": self.weight_word_bits, "entry_bits": self.entry_bits, "out_bits": self.out_bits,
                "data_bits": self.data_bits, "op_depth": self.options.op_depth,
                "scale_depth": self.options.scale_depth, "out_depth": self.options.out_depth,
                **({"bug": self.bug} if self.bug else {})}


class BitmodArray(wiring.Component):
    """The buffers, the round controller and ``P`` bit-serial PEs per kind (the plain datapath ports of
    :func:`rtl.simd.design.simd_signature`; :class:`BitmodEngine` puts the host interface around it)."""

    def __init__(self, cfg: BitmodConfig):
        self.cfg = cfg
        super().__init__(simd_signature(cfg))

    def elaborate(self, platform):
        cfg, o = self.cfg, self.cfg.options
        P, EW, AW, OW, PC = cfg.pes, cfg.entry_bits, cfg.act_word_bits, cfg.out_bits, cfg.pipeline_cycles
        kinds = cfg.kinds
        m = Module()
        buf = m.submodules.buffers = SimdBuffers(cfg)
        m.d.comb += [getattr(buf, k).eq(getattr(self, k)) for k in ("wr_en", "wr_buf", "wr_addr", "wr_data",
                                                                    "rd_en", "rd_addr", "bank")]
        m.d.comb += [self.rd_data.eq(buf.rd_data), self.rd_valid.eq(buf.rd_valid), self.wr_ready.eq(buf.wr_ready),
                     self.rd_ready.eq(buf.rd_ready)]

        # ---- command registers
        running, first_cycle = Signal(name="running"), Signal(name="first_cycle")
        done_line = Signal(max(PC, 1), name="done_line")  # tile_done delay line from the last round's done
        lingering = done_line.any() if PC else C(0, 1)
        take = Signal(name="cmd_take")
        m.d.comb += [self.cmd_ready.eq(~running & ~lingering), take.eq(self.cmd_valid & self.cmd_ready),
                     self.busy.eq(running | lingering), self.tile_start.eq(running & first_cycle),
                     buf.busy.eq(self.busy | take)]  # the bank is the tile's from the take on
        # the command's PE kind and lanes, registered at the take (no constant tables: Icarus leaves a
        # combinational block that reads only a register never written undriven)
        kind, lanes_now = Signal(range(len(kinds)), name="kind"), Signal(DIM_BITS, name="lanes_now")
        with m.If(take):
            with m.Switch(self.cmd_mode):
                for md in cfg.modes:
                    with m.Case(md.index):
                        m.d.sync += [kind.eq(kinds.index(md.kind)), lanes_now.eq(md.lanes)]
        k_len, g_len, acc = Signal(DIM_BITS, name="k_len"), Signal(DIM_BITS, name="g_len"), Signal(name="acc")
        mn, wb_base = Signal(2 * DIM_BITS, name="mn"), Signal(2 * DIM_BITS, name="wb_base")

        # ---- the step counters (advanced by the running kind's PE 0 taking a word)
        kg, gk0 = Signal(DIM_BITS, name="kg"), Signal(DIM_BITS, name="gk0")
        op_reg, sc_reg = Signal(range(o.op_depth), name="op_reg"), Signal(range(o.scale_depth), name="sc_reg")
        wb_round = Signal(range(o.out_depth), name="wb_round")
        remaining, grp = Signal(DIM_BITS, name="remaining"), Signal(DIM_BITS, name="group_len")
        m.d.comb += [remaining.eq(k_len - gk0),
                     grp.eq(Mux((g_len != 0) & (remaining > g_len), g_len, remaining))]
        group_last, out_last = Signal(name="group_last"), Signal(name="out_last")
        m.d.comb += [group_last.eq(kg + lanes_now >= grp), out_last.eq(group_last & (gk0 + grp == k_len))]
        pe_take, pe_done = Signal(name="pe_take"), Signal(name="pe_done")
        last_round = Signal(name="last_round")
        m.d.comb += last_round.eq(wb_base + P >= mn)
        restart = Signal(name="restart")
        m.d.comb += restart.eq(running & pe_done & ~last_round)
        m.d.comb += [buf.op_addr.eq(Mux(take, 0, op_reg + pe_take)),
                     buf.sc_addr.eq(Mux(take, 0, sc_reg + (pe_take & group_last)))]
        fp_kinds = cfg.fp16_kinds
        if fp_kinds:  # an fp16 PE reads its output's old entry from its first cycle on: address the next round's
            m.d.comb += buf.old_addr.eq(Mux(take, 0, Mux(restart, wb_round + 1, wb_round)))
        else:
            m.d.comb += buf.old_addr.eq(wb_round)

        # ---- the PEs: P of each kind, the running kind's results written back
        results = [Signal(ACC_BITS, name=f"pe{p}_result") for p in range(P)]
        old = [buf.old_data[p * OW:(p + 1) * OW] for p in range(P)]
        for ki, (lanes, ab, wf) in enumerate(kinds):
            wb = bits_of(wf)
            for p in range(P):
                if ab == FP16:  # fp32 outputs: the PE adds its groups to the old entry itself (init)
                    pe = m.submodules[f"k{ki}_pe{p}"] = BitmodFp16PE(lanes, wf, bug=cfg.bug)
                    init, a_bits = Mux(acc, old[p][:FP32_BITS], 0), 16
                else:
                    int_bug = cfg.bug if cfg.bug in BUGS else None
                    pe = m.submodules[f"k{ki}_pe{p}"] = BitmodPE(lanes, ab, wf, bug=int_bug)
                    init, a_bits = 0, ab
                entry, sc = buf.op_data[p * EW:(p + 1) * EW], buf.sc_data[32 * p:32 * (p + 1)]
                starts_kind = Cat(*(self.cmd_mode == md.index for md in cfg.modes if md.kind == kinds[ki]))
                m.d.comb += [pe.start.eq((take & starts_kind.any()) | (restart & (kind == ki))),
                             pe.init.eq(init), pe.a.eq(entry[:lanes * a_bits]), pe.w.eq(entry[AW:AW + lanes * wb]),
                             pe.scale.eq(sc[:bitserial.SCALE_BITS]), pe.sel.eq(sc[8:10]),
                             pe.group_last.eq(group_last), pe.tile_last.eq(out_last), pe.noscale.eq(g_len == 0)]
                with m.If(kind == ki):
                    m.d.comb += results[p].eq(pe.result)
                    if p == 0:
                        m.d.comb += [pe_take.eq(pe.take), pe_done.eq(pe.done)]
        adds_old = acc  # integer kinds: result + the old entry; fp16 kinds wrote it in through init
        if fp_kinds:
            adds_old = acc & ~Cat(*(kind == ki for ki in fp_kinds)).any()
        m.d.comb += [buf.wb_en.eq(running & pe_done), buf.wb_addr.eq(wb_round),
                     buf.wb_data.eq(Cat(*((results[p] + Mux(adds_old, old[p], 0))[:OW] for p in range(P))))]

        with m.If(take):
            m.d.sync += [running.eq(1), first_cycle.eq(1), k_len.eq(self.cmd_k),
                         g_len.eq(self.cmd_g), acc.eq(self.cmd_accumulate), mn.eq(self.cmd_m * self.cmd_n),
                         kg.eq(0), gk0.eq(0), op_reg.eq(0), sc_reg.eq(0), wb_round.eq(0), wb_base.eq(0)]
        with m.If(running):
            m.d.sync += first_cycle.eq(0)
            with m.If(pe_take):
                m.d.sync += [op_reg.eq(op_reg + 1), kg.eq(kg + lanes_now)]
                with m.If(group_last):
                    m.d.sync += [kg.eq(0), gk0.eq(gk0 + grp), sc_reg.eq(sc_reg + 1)]
                    with m.If(out_last):
                        m.d.sync += gk0.eq(0)
            with m.If(pe_done):
                m.d.sync += [wb_round.eq(wb_round + 1), wb_base.eq(wb_base + P)]
                with m.If(last_round):
                    m.d.sync += running.eq(0)

        # ---- tile_done and the hardware cycle counter
        tile_end = running & pe_done & last_round
        if PC:
            m.d.sync += done_line.eq(Cat(tile_end, done_line[:-1]))
            m.d.comb += self.tile_done.eq(done_line[PC - 1])
        else:
            m.d.comb += self.tile_done.eq(tile_end)
        count = Signal(32, name="cycle_count")
        with m.If(take):
            m.d.sync += count.eq(0)
        with m.Elif(self.busy):
            m.d.sync += count.eq(count + 1)
        with m.If(self.tile_done):
            m.d.sync += [self.tile_cycles.eq(count + 1), self.tiles_done.eq(self.tiles_done + 1)]
        return m


class BitmodEngine(SimdEngine):
    """The host-interface top of the simd template (:class:`SimdEngine`) around :class:`BitmodArray`."""

    def __init__(self, cfg: BitmodConfig):
        super().__init__(cfg, pe_instances=False)

    def make_array(self) -> wiring.Component:
        return BitmodArray(self.cfg)
