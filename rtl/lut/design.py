"""Amaranth design of the LUT tensor core: table precompute unit, double-buffered tables,
``tile_m x tile_n`` lookup array with bit-serial shift-add, output accumulators, controller.

The timing and value contract is :mod:`archsim.templates.lut.tile`; a tile
command runs in exactly ``pre + (steps - 1) * max(pre, look) + look +
pipeline_cycles`` cycles. Ports and buffer layouts: :data:`rtl.lut.rtl_design.PORT_DOCS`
and ``docs/lut_rtl.md``.

Datapath of one step (row block mb, K-group g):

- **precompute** (``pre`` cycles): each cycle ``precompute_entries_per_cycle``
  generators each build one stored entry ``T[idx] = sum_j +-a_j`` of one row
  (entries row-major), reading the step's activations from the activation
  buffer (asynchronous read), into the free table bank ``step % 2``.
  fp: the first term exact, then fp32 adds RNE in j order.
- **lookup** (``look = col_blocks * b`` cycles, MSB plane first): stage 0
  reads one weight-plane word (``tile_n`` columns x K bits); stage 1 forms
  each column's index, reads its row's table (negated when the top index bit
  is 0, with ``symmetric``) and shift-adds ``p = rne(2p + T)`` (the first plane
  loads ``p = T``); after the last plane stage 2 forms ``r = rne(p - S) * 0.5``
  (``r = p`` for int1) and reads the accumulators; stage 3 writes
  ``rne(acc + r)`` (0 instead of acc for the first group unless
  ``accumulate``; the previous cycle's write is forwarded).

The precompute of step s+1 starts in the cycle the lookups of step s start;
the lookups of a step start in the cycle after its tables are complete. A
tile's last write lands 3 cycles after its last lookup cycle; ``tile_done``
is raised ``pipeline_cycles`` (>= 3) cycles after it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from math import ceil
from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl.lut.arith import FpArith, IntArith

#: command codes of the weight / activation formats
WFMT = {"int1": 0, "ternary": 1, "int2": 2, "int3": 3, "int4": 4}
AFMT = {"int8": 0, "fp16": 1, "bf16": 2}
PLANES = (1, 2, 2, 3, 4)  # by WFMT code
BUFS = {"act": 0, "weight": 1, "out": 2, "table": 3}
#: the RTL's own pipeline: weight read, lookup + shift-add, r + accumulator read, accumulator write
RTL_PIPELINE = 3
ACC_BITS = 32
DIM_BITS = 16


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


@dataclass(frozen=True)
class LutConfig:
    """Everything the hardware depends on (derived from ``LutParams`` + RTL options)."""

    tile_m: int
    tile_n: int
    group_k: int
    symmetric: bool
    entries_per_cycle: int
    weight_formats: tuple[str, ...]
    activation_formats: tuple[str, ...]
    pipeline_cycles: int
    act_depth: int = 64
    weight_depth: int = 128
    out_depth: int = 64
    table_depth: int = 64
    external_buffers: bool = False

    @classmethod
    def from_params(cls, p, options: dict | None = None) -> "LutConfig":
        p.validate()
        if p.scale != "none":
            raise ValueError(f"scale: the lut RTL has no scale multipliers (scale: none), got {p.scale!r}")
        if p.pipeline_cycles < RTL_PIPELINE:
            raise ValueError(f"pipeline_cycles: the lut RTL's pipeline has {RTL_PIPELINE} stages, "
                             f"got {p.pipeline_cycles}")
        opts = dict(options or {})
        for key in ("act_depth", "weight_depth", "out_depth", "table_depth"):
            v = opts.get(key, 64 if key != "weight_depth" else 128)
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ValueError(f"{key}: expected an integer >= 2, got {v!r}")
            opts[key] = v
        ext = opts.get("external_buffers", False)
        if not isinstance(ext, bool):
            raise ValueError(f"external_buffers: expected true or false, got {ext!r}")
        unknown = set(opts) - {"act_depth", "weight_depth", "out_depth", "table_depth", "external_buffers"}
        if unknown:
            raise ValueError(f"{', '.join(sorted(unknown))}: not an option of the lut RTL "
                             f"(it has act_depth, weight_depth, out_depth, table_depth, external_buffers)")
        order_w = [f for f in WFMT if f in p.weight_formats]
        order_a = [f for f in AFMT if f in p.activation_formats]
        return cls(p.tile_m, p.tile_n, p.group_k, p.symmetric, p.precompute_entries_per_cycle,
                   tuple(order_w), tuple(order_a), p.pipeline_cycles, **opts)

    # ---- derived sizes
    @property
    def entries(self) -> int:
        return 2 ** (self.group_k - 1) if self.symmetric else 2 ** self.group_k

    @property
    def pre_cycles(self) -> int:
        return ceil(self.tile_m * self.entries / self.entries_per_cycle)

    @property
    def has_int(self) -> bool:
        return "int8" in self.activation_formats

    @property
    def has_fp(self) -> bool:
        return any(f != "int8" for f in self.activation_formats)

    @property
    def max_planes(self) -> int:
        return max(PLANES[WFMT[f]] for f in self.weight_formats)

    @property
    def act_bits(self) -> int:
        """Bits of one activation lane: 16 when fp16/bf16 are built, else 8."""
        return 16 if self.has_fp else 8

    @property
    def int_entry_bits(self) -> int:
        return (self.group_k * 128).bit_length() + 1

    @property
    def entry_bits(self) -> int:
        """Bits of one stored table entry (fp32 when any fp format is built)."""
        return 32 if self.has_fp else self.int_entry_bits

    @property
    def p_bits(self) -> int:
        """Bits of the shift-add register and of ``r``."""
        return 32 if self.has_fp else self.int_entry_bits + self.max_planes

    @property
    def act_word(self) -> int:
        return self.tile_m * self.group_k * self.act_bits

    @property
    def weight_word(self) -> int:
        return self.tile_n * self.group_k

    @property
    def out_word(self) -> int:
        return self.tile_m * self.tile_n * ACC_BITS

    @property
    def table_word(self) -> int:
        return self.tile_m * self.entries * self.entry_bits

    @property
    def data_bits(self) -> int:
        return max(self.act_word, self.weight_word, self.out_word, self.table_word)

    @property
    def addr_bits(self) -> int:
        return _bits(max(self.act_depth, self.weight_depth, self.out_depth, self.table_depth))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["weight_formats"] = list(self.weight_formats)
        d["activation_formats"] = list(self.activation_formats)
        d.update(entries=self.entries, pre_cycles=self.pre_cycles, entry_bits=self.entry_bits,
                 p_bits=self.p_bits, act_bits=self.act_bits, acc_bits=ACC_BITS, rtl_pipeline=RTL_PIPELINE)
        return d


def lut_signature(c: LutConfig) -> dict:
    sig = {
        "cmd_valid": In(1), "cmd_ready": Out(1),
        "cmd_row_blocks": In(DIM_BITS), "cmd_groups": In(DIM_BITS), "cmd_col_blocks": In(DIM_BITS),
        "cmd_wfmt": In(3), "cmd_afmt": In(2), "cmd_accumulate": In(1), "cmd_precomputed": In(1),
    }
    if c.external_buffers:  # the buffers' read / write ports (act: asynchronous read; others: data next cycle)
        sig.update({
            "act_raddr": Out(_bits(c.act_depth)), "act_rdata": In(c.act_word),
            "weight_raddr": Out(_bits(c.weight_depth)), "weight_rdata": In(c.weight_word),
            "table_raddr": Out(_bits(c.table_depth)), "table_rdata": In(c.table_word),
            "out_raddr": Out(_bits(c.out_depth)), "out_rdata": In(c.out_word),
            "out_waddr": Out(_bits(c.out_depth)), "out_wdata": Out(c.out_word), "out_we": Out(1),
        })
    else:
        sig.update({
            "wr_en": In(1), "wr_buf": In(2), "wr_addr": In(c.addr_bits), "wr_data": In(c.data_bits),
            "rd_en": In(1), "rd_addr": In(c.addr_bits), "rd_data": Out(c.out_word),
        })
    sig.update({
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1),
        "tile_cycles": Out(32), "tiles_done": Out(32), "error": Out(1),
    })
    return sig


class LutCore(wiring.Component):
    """The LUT tensor core with its operand / output buffers (see the module docstring)."""

    def __init__(self, cfg: LutConfig):
        self.cfg = cfg
        super().__init__(lut_signature(cfg))

    # ------------------------------------------------------------------ helpers
    def _arithmetics(self):
        c = self.cfg
        out = []
        if c.has_int:
            out.append(("int", IntArith(c.p_bits)))
        if c.has_fp:
            out.append(("fp", FpArith()))
        return out

    @staticmethod
    def _by_kind(values: dict, is_fp):
        """One value from the per-arithmetic values (a mux when both are built)."""
        if len(values) == 1:
            return next(iter(values.values()))
        return Mux(is_fp, values["fp"], values["int"])

    def elaborate(self, platform):
        c = self.cfg
        m = Module()
        tm, tn, K, E = c.tile_m, c.tile_n, c.group_k, c.entries
        ab, eb, pb = c.act_bits, c.entry_bits, c.p_bits
        ariths = self._arithmetics()

        # ---------------------------------------------------------- buffers
        if c.external_buffers:  # SRAM macros outside: their ports are the component's
            act_r = SimpleNamespace(addr=self.act_raddr, data=self.act_rdata)
            wgt_r = SimpleNamespace(addr=self.weight_raddr, data=self.weight_rdata)
            tab_r = SimpleNamespace(addr=self.table_raddr, data=self.table_rdata)
            out_r = SimpleNamespace(addr=self.out_raddr, data=self.out_rdata, en=Signal())
            out_w = SimpleNamespace(addr=self.out_waddr, data=self.out_wdata, en=self.out_we)
        else:
            m.submodules.act_buf = act = Memory(shape=c.act_word, depth=c.act_depth, init=[])
            m.submodules.weight_buf = wgt = Memory(shape=c.weight_word, depth=c.weight_depth, init=[])
            m.submodules.out_buf = obuf = Memory(shape=c.out_word, depth=c.out_depth, init=[])
            m.submodules.table_buf = tbuf = Memory(shape=c.table_word, depth=c.table_depth, init=[])
            act_w, act_r = act.write_port(), act.read_port(domain="comb")
            wgt_w, wgt_r = wgt.write_port(), wgt.read_port()
            tab_w, tab_r = tbuf.write_port(), tbuf.read_port()
            out_w, out_r = obuf.write_port(), obuf.read_port()

        # ---------------------------------------------------------- command
        running = Signal()
        error = Signal()
        wfmt, afmt = Signal(3), Signal(2)
        acc_cmd, precomp = Signal(), Signal()
        planes = Signal(3)
        groups, col_blocks = Signal(DIM_BITS), Signal(DIM_BITS)
        row_blocks = Signal(DIM_BITS)
        mb = Signal(DIM_BITS)  # row block of the lookup step
        last_step = Signal()
        look = Signal(DIM_BITS + 3)
        slot = Signal(DIM_BITS + 3)
        is_fp = Signal()
        fp16 = Signal()
        int1 = Signal()
        m.d.comb += [is_fp.eq(afmt != AFMT["int8"]), fp16.eq(afmt == AFMT["fp16"]), int1.eq(wfmt == WFMT["int1"])]
        m.d.comb += [self.busy.eq(running), self.cmd_ready.eq(~running), self.error.eq(error)]

        w_ok = Const(sum(1 << WFMT[f] for f in c.weight_formats), 8).bit_select(self.cmd_wfmt, 1)
        a_ok = Const(sum(1 << AFMT[f] for f in c.activation_formats), 4).bit_select(self.cmd_afmt, 1)
        dims_ok = (self.cmd_row_blocks != 0) & (self.cmd_groups != 0) & (self.cmd_col_blocks != 0)
        cmd_planes = Array(Const(v, 3) for v in PLANES + (0, 0, 0))[self.cmd_wfmt]
        cmd_look = Signal(DIM_BITS + 3)
        m.d.comb += cmd_look.eq(self.cmd_col_blocks * cmd_planes)
        cmd_pre = Mux(self.cmd_precomputed, 0, c.pre_cycles)

        # lookup sequencer state
        lk_wait = Signal(range(c.pre_cycles + 1))
        lk_done = Signal()
        sc = Signal(DIM_BITS + 3)  # cycle within the step's slot
        s = Signal(2 * DIM_BITS)  # step
        g = Signal(DIM_BITS)  # K-group of the step
        q = Signal(3)  # plane position (0 = MSB plane)
        w_base = Signal(2 * DIM_BITS + 3)
        o_base = Signal(2 * DIM_BITS)
        nb = Signal(DIM_BITS)
        tail_active = Signal()
        tail = Signal(range(c.pipeline_cycles + 1))
        t = Signal(32)
        # precompute state
        pre_active = Signal()
        pc = Signal(range(c.pre_cycles + 1))
        ps = Signal(2 * DIM_BITS)

        with m.If(self.cmd_valid & ~running):
            with m.If(w_ok & a_ok & dims_ok):
                m.d.sync += [
                    running.eq(1), t.eq(0),
                    wfmt.eq(self.cmd_wfmt), afmt.eq(self.cmd_afmt), acc_cmd.eq(self.cmd_accumulate),
                    precomp.eq(self.cmd_precomputed), planes.eq(cmd_planes),
                    groups.eq(self.cmd_groups), col_blocks.eq(self.cmd_col_blocks),
                    row_blocks.eq(self.cmd_row_blocks), mb.eq(0), look.eq(cmd_look),
                    slot.eq(Mux(cmd_look > cmd_pre, cmd_look, cmd_pre)),
                    lk_wait.eq(cmd_pre), lk_done.eq(0), sc.eq(0), s.eq(0), g.eq(0), q.eq(0), nb.eq(0),
                    w_base.eq(0), o_base.eq(0), tail_active.eq(0),
                    pre_active.eq(~self.cmd_precomputed), pc.eq(0), ps.eq(0),
                ]
            with m.Else():
                m.d.sync += error.eq(1)

        # ---------------------------------------------------------- lookup sequencer (stage 0)
        seq = running & (lk_wait == 0) & ~lk_done
        issue = Signal()
        m.d.comb += issue.eq(seq & (sc < look))
        m.d.comb += last_step.eq((mb == row_blocks - 1) & (g == groups - 1))  # counters: no multiplier
        last_issue = issue & last_step & (sc == look - 1)
        with m.If(running):
            m.d.sync += t.eq(t + 1)
            with m.If(lk_wait != 0):
                m.d.sync += lk_wait.eq(lk_wait - 1)
        with m.If(issue):
            with m.If(q == planes - 1):
                m.d.sync += [q.eq(0), nb.eq(nb + 1)]
            with m.Else():
                m.d.sync += q.eq(q + 1)
        with m.If(last_issue):
            m.d.sync += [lk_done.eq(1), tail_active.eq(1), tail.eq(c.pipeline_cycles)]
        with m.Elif(seq & (sc == slot - 1)):
            m.d.sync += [sc.eq(0), q.eq(0), nb.eq(0), s.eq(s + 1)]
            with m.If(g == groups - 1):
                m.d.sync += [g.eq(0), mb.eq(mb + 1), w_base.eq(0), o_base.eq(o_base + col_blocks)]
            with m.Else():
                m.d.sync += [g.eq(g + 1), w_base.eq(w_base + look)]
        with m.Elif(seq):
            m.d.sync += sc.eq(sc + 1)

        done = Signal()
        m.d.comb += done.eq(tail_active & (tail == 1))
        with m.If(tail_active):
            m.d.sync += tail.eq(tail - 1)
        with m.If(done):
            m.d.sync += [running.eq(0), tail_active.eq(0), self.tile_cycles.eq(t + 1),
                         self.tiles_done.eq(self.tiles_done + 1)]
        m.d.comb += [self.tile_start.eq(running & (t == 0)), self.tile_done.eq(done)]

        m.d.comb += [wgt_r.addr.eq(w_base + sc), tab_r.addr.eq(s)]
        s1_valid, s1_first, s1_last, s1_bank, s1_fg = Signal(), Signal(), Signal(), Signal(), Signal()
        s1_oaddr = Signal(range(c.out_depth))
        m.d.sync += [s1_valid.eq(issue), s1_first.eq(q == 0), s1_last.eq(q == planes - 1), s1_bank.eq(s[0]),
                     s1_oaddr.eq(o_base + nb), s1_fg.eq((g == 0) & ~acc_cmd)]

        # ---------------------------------------------------------- precompute unit
        tables = [[[Signal(eb, name=f"tab{b}_r{r}_e{e}") for e in range(E)] for r in range(tm)] for b in range(2)]
        # The precompute of step s+1 starts in the first lookup cycle of step s (not the last step).
        # ``pre_go`` is that cycle, registered one cycle ahead from the sequencer's next state, and
        # pc / ps rest at the next build's start (0, step) between builds: the generators and the
        # table write enables see registers only (no path from the sequencer's compares).
        pre_go = Signal()
        next_last = Signal()  # the step after this one is the tile's last
        g_wrap = g == groups - 1
        m.d.comb += next_last.eq(Mux(g_wrap, (mb + 1 == row_blocks - 1) & (groups == 1),
                                     (mb == row_blocks - 1) & (g + 1 == groups - 1)))
        first_look = running & (lk_wait == 1) & (sc == 0) & ~last_step  # step 0's lookups start next cycle
        advance = seq & (sc == slot - 1) & ~last_step  # the next step's lookups start next cycle
        m.d.sync += pre_go.eq(~precomp & (first_look | (advance & ~next_last)))
        pre_act = pre_active | pre_go
        pc_eff, ps_eff = pc, ps
        m.d.comb += act_r.addr.eq(ps)
        with m.If(pre_act):
            with m.If(pc + 1 < c.pre_cycles):
                m.d.sync += [pc.eq(pc + 1), pre_active.eq(1)]
            with m.Else():  # this step's tables are done: rest at the next step's start
                m.d.sync += [pc.eq(0), ps.eq(ps + 1), pre_active.eq(0)]
        rows = Array(act_r.data[r * K * ab:(r + 1) * K * ab] for r in range(tm))
        n_gen = min(c.entries_per_cycle, tm * E)
        gen_out = []
        for i in range(n_gen):
            f_i = Signal(range(c.pre_cycles * c.entries_per_cycle + n_gen + 1), name=f"gen{i}_f")
            m.d.comb += f_i.eq(pc_eff * c.entries_per_cycle + i)
            lb = _bits(E) if E > 1 else 0
            row_i = f_i >> lb
            local = f_i[:lb] if lb else Const(0, 1)
            idx = Cat(local, Const(1, 1)) if c.symmetric else local
            word = Signal(K * ab, name=f"gen{i}_a")
            m.d.comb += word.eq(rows[row_i])
            vals = {}
            for kind, ar in ariths:
                terms = []
                for j in range(K):
                    a = ar.activation(m, word[j * ab:(j + 1) * ab], fp16, f"gen{i}_{kind}_a{j}")
                    terms.append(Mux(idx[j], a, ar.neg(m, a, f"gen{i}_{kind}_n{j}")))
                total = terms[0]
                for j in range(1, K):  # in j order (fp: each add rounded)
                    total = ar.add(m, total, terms[j], f"gen{i}_{kind}_s{j}")
                vals[kind] = total
            out = Signal(eb, name=f"gen{i}_t")
            m.d.comb += out.eq(self._by_kind(vals, is_fp))
            gen_out.append(out)
        for b in range(2):
            for r in range(tm):
                for e in range(E):
                    f = r * E + e
                    with m.If(pre_act & (ps_eff[0] == b) & (pc_eff == f // c.entries_per_cycle)):
                        m.d.sync += tables[b][r][e].eq(gen_out[f % c.entries_per_cycle])

        # ---------------------------------------------------------- stage 1: lookup, negate, shift-add
        row_tab = []
        for r in range(tm):
            entries = []
            for e in range(E):
                v = Signal(eb, name=f"look_r{r}_e{e}")
                base = (r * E + e) * eb
                m.d.comb += v.eq(Mux(precomp, tab_r.data[base:base + eb],
                                     Mux(s1_bank, tables[1][r][e], tables[0][r][e])))
                entries.append(v)
            row_tab.append(entries)
        preg = [[Signal(pb, name=f"p_r{r}_c{col}") for col in range(tn)] for r in range(tm)]
        s2_S = [Signal(eb, name=f"S_r{r}") for r in range(tm)]
        for col in range(tn):
            idx = wgt_r.data[col * K:(col + 1) * K]
            if c.symmetric:
                top = idx[K - 1]
                local = Mux(top, idx[:K - 1], ~idx[:K - 1]) if K > 1 else Const(0, 1)
            else:
                top, local = Const(1, 1), idx
            for r in range(tm):
                t_raw = Signal(eb, name=f"t_r{r}_c{col}")
                m.d.comb += t_raw.eq(Array(row_tab[r])[local])
                new = {}
                for kind, ar in ariths:
                    name = f"l_{kind}_r{r}_c{col}"
                    tv = Signal(ar.width, name=f"{name}_t")
                    m.d.comb += tv.eq(Mux(top, ar._s(t_raw) if kind == "int" else t_raw,
                                          ar.neg(m, t_raw, f"{name}_n")))
                    if c.max_planes == 1:  # int1-only build: one plane, no shift-add
                        new[kind] = tv
                    else:
                        new[kind] = Mux(s1_first, tv, ar.double_add(m, preg[r][col], tv, f"{name}_sa"))
                with m.If(s1_valid):
                    m.d.sync += preg[r][col].eq(self._by_kind(new, is_fp))
        s2_valid, s2_fg = Signal(), Signal()
        s2_oaddr = Signal.like(s1_oaddr)
        m.d.sync += [s2_valid.eq(s1_valid & s1_last), s2_oaddr.eq(s1_oaddr), s2_fg.eq(s1_fg)]
        with m.If(s1_valid & s1_last):
            m.d.sync += [s2_S[r].eq(row_tab[r][E - 1]) for r in range(tm)]

        # ---------------------------------------------------------- stage 2: r = (p - S) / 2, accumulator read
        rreg = [[Signal(pb, name=f"r_r{r}_c{col}") for col in range(tn)] for r in range(tm)]
        for r in range(tm):
            for col in range(tn):
                vals = {}
                for kind, ar in ariths:
                    if c.weight_formats == ("int1",):
                        vals[kind] = preg[r][col]
                        continue
                    half = ar.half_sub(m, preg[r][col], s2_S[r], f"h_{kind}_r{r}_c{col}")
                    vals[kind] = Mux(int1, preg[r][col], half) if "int1" in c.weight_formats else half
                m.d.sync += rreg[r][col].eq(self._by_kind(vals, is_fp))
        with m.If(running):
            m.d.comb += out_r.addr.eq(s2_oaddr)
        s3_valid, s3_fg = Signal(), Signal()
        s3_oaddr = Signal.like(s1_oaddr)
        m.d.sync += [s3_valid.eq(s2_valid), s3_oaddr.eq(s2_oaddr), s3_fg.eq(s2_fg)]

        # ---------------------------------------------------------- stage 3: acc + r, write
        fw_valid = Signal()
        fw_addr = Signal.like(s1_oaddr)
        fw_data = Signal(c.out_word)
        old = Mux(fw_valid & (fw_addr == s3_oaddr), fw_data, out_r.data)
        sums = []
        acc_int = IntArith(ACC_BITS)
        for r in range(tm):
            for col in range(tn):
                lane = (r * tn + col) * ACC_BITS
                acc_old = Signal(ACC_BITS, name=f"acc_r{r}_c{col}")
                m.d.comb += acc_old.eq(Mux(s3_fg, 0, old[lane:lane + ACC_BITS]))
                vals = {}
                for kind, _ar in ariths:
                    if kind == "int":
                        vals[kind] = acc_int.add(m, acc_old, rreg[r][col][:c.p_bits], f"sum_int_r{r}_c{col}")
                    else:
                        vals[kind] = FpArith().add(m, acc_old, rreg[r][col], f"sum_fp_r{r}_c{col}")
                v = Signal(ACC_BITS, name=f"sum_r{r}_c{col}")
                m.d.comb += v.eq(self._by_kind(vals, is_fp))
                sums.append(v)
        m.d.sync += [fw_valid.eq(s3_valid), fw_addr.eq(s3_oaddr), fw_data.eq(Cat(*sums))]

        # ---------------------------------------------------------- host ports
        if c.external_buffers:
            m.d.comb += [out_w.addr.eq(s3_oaddr), out_w.data.eq(Cat(*sums)), out_w.en.eq(s3_valid)]
            return m
        host_wr = self.wr_en & ~running
        m.d.comb += [
            act_w.addr.eq(self.wr_addr), act_w.data.eq(self.wr_data), act_w.en.eq(host_wr & (self.wr_buf == BUFS["act"])),
            wgt_w.addr.eq(self.wr_addr), wgt_w.data.eq(self.wr_data),
            wgt_w.en.eq(host_wr & (self.wr_buf == BUFS["weight"])),
            tab_w.addr.eq(self.wr_addr), tab_w.data.eq(self.wr_data),
            tab_w.en.eq(host_wr & (self.wr_buf == BUFS["table"])),
            self.rd_data.eq(out_r.data),
        ]
        with m.If(~running):  # the host reads through the accumulators' read port while no tile runs
            m.d.comb += [out_r.addr.eq(self.rd_addr), out_r.en.eq(self.rd_en)]
        with m.If(s3_valid):
            m.d.comb += [out_w.addr.eq(s3_oaddr), out_w.data.eq(Cat(*sums)), out_w.en.eq(1)]
        with m.Else():
            m.d.comb += [out_w.addr.eq(self.wr_addr), out_w.data.eq(self.wr_data),
                         out_w.en.eq(host_wr & (self.wr_buf == BUFS["out"]))]
        return m
