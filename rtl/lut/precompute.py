"""One table-entry generator of the LUT core's precompute unit, pipelined to a given latency.

``entry = sum_j +-a_j`` over the ``group_k`` activations of one row (``+`` where
bit j of the entry's index is 1): int8 activations exactly, fp16 / bf16 ones in
fp32 with the first term exact and then one RNE add per term in j order (the
contract of :mod:`archsim.templates.lut.tile`).

Structure for ``latency`` L (the params' ``precompute_pipeline_cycles``):

- L = 0: one combinational chain (decode, negate, K - 1 adds);
- L >= 1: the signed terms are registered (1 cycle), then the K - 1 adds are
  chained, each a :func:`fp32_adder` of ``stages`` =
  ``min(max_stages, (L - 1) // (K - 1))`` (its declared ``latency``; the int
  adds get as many registers; with the forcing as data and room for it, the
  adder with its significand add split, one stage more), and the result is
  delayed by the rest of L.

The entry therefore leaves exactly ``latency`` cycles after its operands.
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.pipe import delay as pipe_delay
from rtl.lib.units import Fp32AddFinite, FpAdd
from rtl.lut.arith import FpArith, IntArith


def delay(m: Module, x, cycles: int, name: str):
    """``x`` through ``cycles`` registers named ``{name}_d{i}`` (:func:`rtl.lib.pipe.delay`)."""
    return pipe_delay(m, x, cycles, f"{name}_d")


def fp_add_max_stages(split_add: bool = False) -> int:
    """Register stages the library's finite fp32 adder offers (``split_add``: :func:`fp32_adder`'s with its
    significand add over two stages, one more)."""
    unit = FpAdd("fp32", 0, split_add=True) if split_add else Fp32AddFinite(stages=0)
    unit._MustUse__silence = True  # only asked for its size, never elaborated
    return unit.max_stages


def fp32_adder(stages: int, forcing_as_data: bool = False, split_add: bool = False):
    """The LUT core's pipelined fp32 adder (``rne(a + b)`` of finite operands, ``stages`` cycles):
    :class:`rtl.lib.units.Fp32AddFinite`, or with ``forcing_as_data`` the library's IEEE fp32 adder
    with its forced values and zero fills as data (``specials_as_data``, ``zero_fill_as_data``,
    ``packed_round``: the SIMD ring's) -- the same bits for finite operands and the same latency, but no
    constant mux before a stage register, which yosys maps onto its flip-flops' synchronous reset (a
    logic-driven, high-fan-out net: the A16 build's limit in round 3d). ``split_add`` (with
    ``forcing_as_data``): its significand add over two stages (:attr:`rtl.lib.pipe.Pipe.split_add`; one more
    cut point, same bits: the A16 build's limit in round 3e was that add's stage)."""
    if split_add and not forcing_as_data:
        raise ValueError("fp32_adder: split_add is built with the forcing as data only")
    if forcing_as_data:
        return FpAdd("fp32", stages, specials_as_data=True, zero_fill_as_data=True, packed_round=True,
                     split_add=split_add)
    return Fp32AddFinite(stages=stages)


class TableGenerator(wiring.Component):
    """``entry`` = the table entry of ``word`` (``group_k`` activation lanes of ``act_bits``) at
    index ``idx``, ``latency`` cycles after ``word`` / ``idx`` / ``is_fp`` / ``fp16``;
    ``forcing_as_data``: :func:`fp32_adder`'s."""

    def __init__(self, group_k: int, act_bits: int, entry_bits: int, int_bits: int | None, fp: bool,
                 latency: int, forcing_as_data: bool = False):
        if int_bits is None and not fp:
            raise ValueError("TableGenerator: expected an int and / or an fp arithmetic")
        self.group_k, self.act_bits, self.entry_bits = group_k, act_bits, entry_bits
        self.int_bits, self.fp, self.latency = int_bits, fp, latency
        self.forcing_as_data = forcing_as_data
        adds = group_k - 1
        #: the fp adds split their significand add (room for the split adder's every stage, as data)
        self.split_add = bool(fp and forcing_as_data and adds and latency
                              and (latency - 1) // adds >= fp_add_max_stages(True))
        if latency == 0:
            self.add_stages, self.pad = 0, 0
        elif adds == 0:
            self.add_stages, self.pad = 0, latency - 1
        else:
            self.add_stages = min(fp_add_max_stages(self.split_add) if fp else latency, (latency - 1) // adds)
            self.pad = latency - 1 - adds * self.add_stages
        super().__init__({"word": In(group_k * act_bits), "idx": In(group_k), "is_fp": In(1), "fp16": In(1),
                          "entry": Out(entry_bits)})

    def _ariths(self):
        out = []
        if self.int_bits is not None:
            out.append(("int", IntArith(self.int_bits)))
        if self.fp:
            out.append(("fp", FpArith()))
        return out

    def elaborate(self, platform):
        m = Module()
        K, ab, L = self.group_k, self.act_bits, self.latency
        vals = {}
        for kind, ar in self._ariths():
            terms = []
            for j in range(K):
                a = ar.activation(m, self.word[j * ab:(j + 1) * ab], self.fp16, f"{kind}_a{j}")
                t = Signal(ar.width, name=f"{kind}_term{j}")
                m.d.comb += t.eq(Mux(self.idx[j], a, ar.neg(m, a, f"{kind}_n{j}")))
                terms.append(delay(m, t, 1 if L else 0, f"{kind}_term{j}"))
            total = terms[0]
            for j in range(1, K):  # in j order (fp: each add rounded)
                term = delay(m, terms[j], (j - 1) * self.add_stages, f"{kind}_term{j}_wait")
                if kind == "fp" and L:
                    add = fp32_adder(self.add_stages, self.forcing_as_data, self.split_add)
                    m.submodules[f"fp_add{j}"] = add
                    m.d.comb += [add.in_valid.eq(1), add.a.eq(total), add.b.eq(term)]
                    assert add.latency == self.add_stages
                    total = add.out
                else:
                    total = delay(m, ar.add(m, total, term, f"{kind}_s{j}"), self.add_stages, f"{kind}_s{j}")
            vals[kind] = total
        if len(vals) == 1:
            out = next(iter(vals.values()))
        else:
            out = Mux(delay(m, self.is_fp, L - self.pad, "is_fp"), vals["fp"], vals["int"])
        entry = Signal(self.entry_bits, name="entry_r")
        m.d.comb += entry.eq(out)
        m.d.comb += self.entry.eq(delay(m, entry, self.pad, "entry"))
        return m


class PrecomputeUnit(wiring.Component):
    """The precompute unit: ``entries_per_cycle`` :class:`TableGenerator` s writing the tables of one step
    (``tile_m`` rows x ``entries`` stored entries, row major) into table bank ``step % 2``.

    ``restart`` (with ``build``) resets it at a command (step 0, entry 0; ``build`` = the tile builds its
    tables); ``go`` starts the build of the next step (from the controller, registered); a build reads
    activation entry ``act_addr`` (= its step) for ``pre_cycles`` cycles, and its entries land
    ``precompute_latency`` cycles after they were read. ``tables`` holds both banks, bank b row r entry
    e at bits ``((b * tile_m + r) * entries + e) * entry_bits``.
    """

    def __init__(self, cfg):
        self.cfg = cfg
        c = cfg
        super().__init__({
            "restart": In(1), "build": In(1), "go": In(1), "is_fp": In(1), "fp16": In(1),
            "act_addr": Out(32), "act_data": In(c.act_word),
            "tables": Out(2 * c.tile_m * c.entries * c.entry_bits),
        })

    def elaborate(self, platform):
        from amaranth import Array, Cat, Const

        c = self.cfg
        m = Module()
        tm, K, E, ab, eb, rate = c.tile_m, c.group_k, c.entries, c.act_bits, c.entry_bits, c.entries_per_cycle
        active = Signal()
        pc = Signal(range(c.pre_cycles + 1))  # cycle of the build
        ps = Signal(32)  # step being built
        n_gen = min(rate, tm * E)
        # generator i's entry f_i = pc * rate + i with no adder before the row select. With rate = 2**z * odd
        # its low z bits are i's (a constant: no register, which yosys 0.70 would refuse as a constant flip-flop
        # with an init value) and its high bits pc * odd + (i >> z): pc itself when rate is a power of two,
        # else counted in the generator's own register
        z = (rate & -rate).bit_length() - 1
        odd = rate >> z
        his = [pc if odd == 1 else Signal(range(c.pre_cycles * odd + (i >> z) + 1), name=f"gen{i}_f_hi", init=i >> z)
               for i in range(n_gen)]
        counted = [(i, h) for i, h in enumerate(his) if h is not pc]
        with m.If(self.restart):
            m.d.sync += [active.eq(self.build), pc.eq(0), ps.eq(0)] + [h.eq(i >> z) for i, h in counted]
        pre_act = active | self.go
        m.d.comb += self.act_addr.eq(ps)
        with m.If(pre_act & ~self.restart):
            with m.If(pc != c.pre_cycles - 1):  # (pc + 1 < pre_cycles: pc never exceeds pre_cycles - 1)
                m.d.sync += [pc.eq(pc + 1), active.eq(1)] + [h.eq(h + odd) for _i, h in counted]
            with m.Else():  # this step's tables are done: rest at the next step's start
                m.d.sync += [pc.eq(0), ps.eq(ps + 1), active.eq(0)] + [h.eq(i >> z) for i, h in counted]
        rows = Array(self.act_data[r * K * ab:(r + 1) * K * ab] for r in range(tm))
        lb = (E - 1).bit_length() if E > 1 else 0
        outs = []
        for i in range(n_gen):
            f_i = Signal(range(c.pre_cycles * rate + rate + 1), name=f"gen{i}_f")
            m.d.comb += f_i.eq(Cat(Const(i % (1 << z), z), his[i]) if z else his[i])
            local = f_i[:lb] if lb else Const(0, 1)
            gen = TableGenerator(K, ab, eb, c.p_bits if c.has_int else None, c.has_fp, c.precompute_latency,
                                 c.fp_forcing_as_data)
            m.submodules[f"gen{i}"] = gen
            m.d.comb += [gen.word.eq(rows[f_i >> lb]), gen.idx.eq(Cat(local, Const(1, 1)) if c.symmetric else local),
                         gen.is_fp.eq(self.is_fp), gen.fp16.eq(self.fp16)]
            outs.append(gen.entry)
        # the table writes follow the generators' latency
        wr_act = delay(m, pre_act, c.precompute_latency, "pre_wr")
        wr_bank = delay(m, ps[0], c.precompute_latency, "pre_wr_bank")
        wr_pc = delay(m, pc, c.precompute_latency, "pre_wr_pc")
        regs = []
        for b in range(2):
            for f in range(tm * E):
                t = Signal(eb, name=f"tab{b}_r{f // E}_e{f % E}")
                with m.If(wr_act & (wr_bank == b) & (wr_pc == f // rate)):
                    m.d.sync += t.eq(outs[f % rate])
                regs.append(t)
        m.d.comb += self.tables.eq(Cat(*regs))
        return m
