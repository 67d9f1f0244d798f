"""Amaranth design of the SIMD PE array: ``P`` PEs, each a ``lane_bits``-wide SIMD
dot-product unit whose lane count follows the command's precision mode.

The design runs :class:`~archsim.templates.simd.tile.SimdTile` commands with
the cycles and values of the contract in ``archsim/templates/simd/tile.py``.
A *mode* is one (weight format, activation format) pair of
:meth:`SimdParams.pairs` (``cmd_mode`` = its index in :func:`modes`); the
lanes ``L`` follow the pair. Lane ``j`` of a buffer word holds an element at
bits ``[j*b, (j+1)*b)`` (``b`` = the format's width), so one word is one lane
step, whatever the mode.

Datapath of one PE (a five-stage pipeline, shared control)::

  0 issue    counters (round, group, step in group, weight bit) -> operand buffer address
  1 lanes    decode both operands of every lane (per format, muxed by mode), multiply
             (array: a multiplier; shift_add: one shifted add per weight bit; bit_serial:
             one weight bit per cycle into a per-lane register), round each product to fp32,
             pairwise fp32 tree (a node passes its left child through when the mode has no
             right one), exact integer sum beside it
  2 group    acc_g = rne(acc_g + cycle_sum) (fp32), exact int64 group sum
  3 output   at group end: group result (x scale, int64 -> fp32 for int x int with G > 0),
             out = rne(out + group_result), or out += group sum (int x int, G = 0)
  4 write    at round end: the P outputs go to the output buffer

so a tile's last output is written ``4`` cycles after its last step is issued;
``tile_done`` is raised ``pipeline_cycles - 1`` cycles after that issue (the
contract's ``ceil(M*N/P) * steps + pipeline_cycles``); the design needs
``pipeline_cycles >= 4``.

At ``pipeline_cycles = 4`` stage 1 (decode, multiply, product rounding, the whole
tree) and stage 3 (int64 -> fp32, x scale, output add) are each one cycle, which
bounds the clock (ECP5: ~6 MHz). Each cycle beyond 4 adds one register stage
(:attr:`SimdConfig.cuts`, in :data:`CUT_ORDER`): after the lane products, after the
group sum's int64 -> fp32 conversion, after the scale multiply, after the operand
decode, then between tree levels (middle first); the shared control delays the
later stages' valid / group / round bits (and the scale and output-buffer reads) to
match, so values and the cycle contract are unchanged. The loops that cannot be cut
are the group accumulator (stage 2) and the output accumulator (one fp32 add each).

Buffers (written by the host through ``wr_*`` while the array is idle):

- operands: entry ``round * steps + step``; PE ``p``'s activation word at bits
  ``[p*EW, p*EW + AW)``, its weight word at ``[p*EW + AW, p*EW + AW + WW)`` and, in a
  ``dequant`` build, one fp32 scale per lane after them (``EW`` = entry bits per PE);
- scales (G > 0): entry ``round * groups + group``, PE ``p``'s fp32 scale at ``[32p, 32p+32)``;
- outputs: entry ``round``, PE ``p``'s result at ``[p*OW, p*OW + OW)`` (int64, or fp32 in the
  low 32 bits); read back through ``rd_*``; with ``cmd_accumulate`` the tile adds into it.

``dequant`` builds dequantize each weight in stage 1: ``w' = round_to(dequant_format,
rne(decode(w) * scale))`` (the host puts 1.0 as the scale of a tile without groups),
then the lane multiplies ``w'`` by the activation; the whole K is one group.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.formats import EXP_W, Decoded, FormatHw, decode, decode_fp32

#: latency of the datapath from a step's issue to its output's write (stages 1..4), without extra cuts
DATAPATH_STAGES = 4
#: the extra register stages ``pipeline_cycles > 4`` adds, in this order (see :attr:`SimdConfig.cuts`):
#: after the lane products; after the group sum's int64 -> fp32 conversion; after the group scale
#: multiply; after the operand decode; between levels of the lane tree
CUT_ORDER = ("prod", "group_src", "group_res", "decode", "tree")
DIM_BITS = 16  # width of cmd_m / cmd_n / cmd_k / cmd_g
BUF_CODES = {"operands": 0, "scales": 1, "outputs": 2}


@dataclass(frozen=True)
class Mode:
    """One precision mode: a (weight, activation) pair and its lanes."""

    index: int
    weight: FormatHw
    activation: FormatHw
    lanes: int

    @property
    def integer(self) -> bool:
        return self.weight.is_int and self.activation.is_int


def modes(params) -> list[Mode]:
    """Every (weights, activations) pair of ``params``, in :meth:`SimdParams.pairs` order (= ``cmd_mode``)."""
    return [Mode(i, FormatHw.of(w), FormatHw.of(a), params.lanes(w, a)) for i, (w, a) in enumerate(params.pairs())]


@dataclass
class SimdRtlOptions:
    """RTL-only options: buffer depths (entries)."""

    op_depth: int = 256
    scale_depth: int = 64
    out_depth: int = 32

    def __post_init__(self):
        for key in ("op_depth", "scale_depth", "out_depth"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ValueError(f"{key}: expected an integer >= 2, got {v!r}")


@dataclass
class SimdConfig:
    """Everything the hardware is generated from (derived from ``SimdParams`` + options)."""

    pes: int
    lane_bits: int
    multiplier: str
    pipeline_cycles: int
    dequant: bool
    dequant_format: str
    modes: list[Mode]
    options: SimdRtlOptions = field(default_factory=SimdRtlOptions)
    accumulators: int = 1

    @staticmethod
    def from_params(params, options: SimdRtlOptions | None = None) -> "SimdConfig":
        params.validate()
        accumulators = getattr(params, "accumulators", 1)
        if accumulators > 1:
            from rtl.simd.pipelined import write_latency

            ms = modes(params)
            cfg = SimdConfig(params.pes, params.lane_bits, params.multiplier, params.pipeline_cycles,
                             params.dequant, params.dequant_format, ms, options or SimdRtlOptions(), accumulators)
            need = write_latency(cfg)
            if params.pipeline_cycles < need:
                raise ValueError(f"pipeline_cycles: the RTL's datapath with accumulators={accumulators} takes "
                                 f"{need} cycles, got {params.pipeline_cycles}")
            if not ms:
                raise ValueError("formats: no (weights, activations) pair runs on this datapath")
            return cfg
        if params.pipeline_cycles < DATAPATH_STAGES:
            raise ValueError(f"pipeline_cycles: the RTL's datapath takes {DATAPATH_STAGES} cycles, "
                             f"got {params.pipeline_cycles}")
        ms = modes(params)
        if not ms:
            raise ValueError("formats: no (weights, activations) pair runs on this datapath")
        return SimdConfig(params.pes, params.lane_bits, params.multiplier, params.pipeline_cycles,
                          params.dequant, params.dequant_format, ms, options or SimdRtlOptions())

    # ---- derived widths ----
    @property
    def max_lanes(self) -> int:
        return max(md.lanes for md in self.modes)

    @property
    def act_word_bits(self) -> int:
        return max(md.lanes * md.activation.bits for md in self.modes)

    @property
    def weight_word_bits(self) -> int:
        return max(md.lanes * md.weight.bits for md in self.modes)

    @property
    def entry_bits(self) -> int:
        """Operand buffer bits per PE: activation word, weight word (and per-lane fp32 scales if dequant)."""
        return self.act_word_bits + self.weight_word_bits + (32 * self.max_lanes if self.dequant else 0)

    @property
    def has_int(self) -> bool:
        return not self.dequant and any(md.integer for md in self.modes)

    @property
    def float_lanes(self) -> bool:
        """Some mode multiplies a float operand (fp32 products and adder trees are built)."""
        return self.dequant or any(not md.integer for md in self.modes)

    @property
    def out_bits(self) -> int:
        return 64 if self.has_int else 32

    @property
    def data_bits(self) -> int:
        return self.pes * max(self.entry_bits, 32, self.out_bits)

    @property
    def max_bit_cycles(self) -> int:
        return max(self.bit_cycles(md) for md in self.modes)

    def bit_cycles(self, md: Mode) -> int:
        return md.weight.bits if self.multiplier == "bit_serial" else 1

    @property
    def tree_levels(self) -> int:
        """Levels of the pairwise lane tree (8 lanes: 3; 1 lane: 0)."""
        return (self.max_lanes - 1).bit_length()

    @property
    def cuts(self) -> tuple[str, ...]:
        """The extra register stages that ``pipeline_cycles`` beyond :data:`DATAPATH_STAGES` buys, in the
        order they are added (:data:`CUT_ORDER`; the tree cuts nearest the middle of the tree first).
        Cycles beyond the cuts this PE has are plain latency (``tile_done`` waits).
        A pipelined PE (``accumulators > 1``, :mod:`rtl.simd.pipelined`) has none of these cuts."""
        if self.accumulators > 1:
            return ()
        inner = sorted(range(self.tree_levels - 1), key=lambda lev: (abs(lev - (self.tree_levels - 2) / 2), lev))
        order = [c for c in CUT_ORDER if c != "tree"] + [f"tree{lev}" for lev in inner]
        return tuple(order[:max(0, self.pipeline_cycles - DATAPATH_STAGES)])

    def cut_count(self, *names: str) -> int:
        """How many of the cuts named (``"tree"``: every tree cut) this build has."""
        return sum(1 for c in self.cuts if c in names or ("tree" in names and c.startswith("tree")))

    def as_dict(self) -> dict:
        return {
            "pes": self.pes, "lane_bits": self.lane_bits, "multiplier": self.multiplier,
            "pipeline_cycles": self.pipeline_cycles, "accumulators": self.accumulators, "cuts": list(self.cuts),
            "dequant": self.dequant,
            "dequant_format": self.dequant_format if self.dequant else None,
            "modes": [[md.weight.name, md.activation.name, md.lanes] for md in self.modes],
            "act_word_bits": self.act_word_bits, "weight_word_bits": self.weight_word_bits,
            "entry_bits": self.entry_bits, "out_bits": self.out_bits, "data_bits": self.data_bits,
            "op_depth": self.options.op_depth, "scale_depth": self.options.scale_depth,
            "out_depth": self.options.out_depth,
        }


def _level_nodes(lanes: int, level: int) -> int:
    """Nodes at ``level`` of the pairwise tree over ``lanes`` products (odd ones pass through)."""
    for _ in range(level):
        lanes = -(-lanes // 2)
    return lanes


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def _delayed(m: Module, value, cycles: int, name: str):
    """``value`` through ``cycles`` registers (itself when 0)."""
    for i in range(cycles):
        reg = Signal(value.shape(), name=f"{name}_d{i + 1}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


def _cut_decoded(m: Module, d, on: bool, name: str):
    """A decoded operand, registered when ``on`` (the decode cut)."""
    if not on:
        return d
    regs = [Signal(v.shape(), name=f"{name}_r{k}") for k, v in zip("nies", (d.nan, d.inf, d.sign, d.exp))]
    regs.append(Signal(d.sig.shape(), name=f"{name}_rm"))
    m.d.sync += [r.eq(v) for r, v in zip(regs, (d.nan, d.inf, d.sign, d.exp, d.sig))]
    return Decoded(*regs)


PE_TOP = "archsim_simd_pe"


def simd_signature(cfg: SimdConfig) -> dict:
    return {
        "cmd_valid": In(1), "cmd_ready": Out(1), "cmd_mode": In(_bits(len(cfg.modes))),
        "cmd_m": In(DIM_BITS), "cmd_n": In(DIM_BITS), "cmd_k": In(DIM_BITS), "cmd_g": In(DIM_BITS),
        "cmd_accumulate": In(1),
        "wr_en": In(1), "wr_buf": In(2),
        "wr_addr": In(_bits(max(cfg.options.op_depth, cfg.options.scale_depth, cfg.options.out_depth))),
        "wr_data": In(cfg.data_bits),
        "rd_en": In(1), "rd_addr": In(_bits(cfg.options.out_depth)), "rd_data": Out(cfg.pes * cfg.out_bits),
        "rd_valid": Out(1),
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1), "tile_cycles": Out(32), "tiles_done": Out(32),
    }


def pe_signature(cfg: SimdConfig) -> dict:
    """Ports of one PE (module ``archsim_simd_pe``): the command's mode, the shared pipeline control,
    its slices of the operand / scale / output buffer read data, and its output register
    (a pipelined PE adds its step / group / round flags, :mod:`rtl.simd.pipelined`)."""
    extra = {}
    if cfg.accumulators > 1:
        from rtl.simd.pipelined import pipelined_pe_ports

        extra = pipelined_pe_ports(cfg)
    return extra | {
        "take": In(1), "mode": In(_bits(len(cfg.modes))), "accumulate": In(1), "g_zero": In(1),
        "s1_v": In(1), "s1_first_bit": In(1), "s1_bit": In(range(cfg.max_bit_cycles + 1)), "s1_mask": In(cfg.max_lanes),
        "s2_v": In(1), "s2_gstart": In(1),
        "s3_v": In(1), "s3_gend": In(1), "s3_first_g": In(1),
        "entry": In(cfg.entry_bits), "scale": In(32), "old": In(cfg.out_bits),
        "out": Out(cfg.out_bits),
    }


class _ModeRegs:
    """Registers loaded with a function of the command's mode when it is taken: mode-dependent
    constants live in registers, not in combinational case statements (which a Verilog simulator
    may leave at X until an input changes)."""

    def __init__(self):
        self.regs = []

    def reg(self, name: str, shape, value_of):
        sig = Signal(shape, name=name)
        self.regs.append((sig, value_of))
        return sig

    def emit(self, m: Module, take, mode, modes: list[Mode]):
        with m.If(take):
            with m.Switch(mode):
                for md in modes:
                    with m.Case(md.index):
                        m.d.sync += [sig.eq(int(value_of(md))) for sig, value_of in self.regs]


class SimdPE(wiring.Component):
    """One PE: lanes (decode, multiply, round to fp32), the pairwise tree, the group and output
    accumulators (stages 1-3 of the module docstring). Generated once and instantiated ``P`` times."""

    def __init__(self, cfg: SimdConfig):
        self.cfg = cfg
        super().__init__(pe_signature(cfg))

    def _lane_decode(self, m, word, side: str, j: int, lane_modes: list[Mode], regs: _ModeRegs, name: str):
        """Decoded operand of lane ``j`` (formats muxed by mode); ``side`` "a" or "w"."""
        fmts: dict[str, FormatHw] = {}
        for md in lane_modes:
            f = md.activation if side == "a" else md.weight
            fmts.setdefault(f.name, f)
        decs = {}
        for fname, f in fmts.items():
            code = word[j * f.bits:(j + 1) * f.bits]
            decs[fname] = (f, decode(m, f, code, f"{name}_{fname}"))
        sw = max(f.sig_bits for f, _ in decs.values())
        out = Decoded(Signal(name=f"{name}_nan"), Signal(name=f"{name}_inf"), Signal(name=f"{name}_s"),
                            Signal(signed(EXP_W), name=f"{name}_e"), Signal(sw, name=f"{name}_m"))
        fields = None
        for fname, (_f, d) in decs.items():  # a chain of muxes on per-format select registers
            vals = (d.nan, d.inf, d.sign, d.exp, d.sig)
            if fields is None:
                fields = vals
                continue
            mine = {md.index for md in lane_modes if (md.activation if side == "a" else md.weight).name == fname}
            sel = regs.reg(f"{name}_is_{fname}", 1, lambda md, mine=mine: md.index in mine)
            fields = tuple(Mux(sel, v, o) for v, o in zip(vals, fields))
        m.d.comb += [out.nan.eq(fields[0]), out.inf.eq(fields[1]), out.sign.eq(fields[2]),
                     out.exp.eq(fields[3]), out.sig.eq(fields[4])]
        return out, sw

    def _dequant_weight(self, m, word, scale, j, lane_modes, regs, name):
        """Lane ``j``'s dequantized weight ``round_to(dequant_format, rne(decode(w) * scale))``, decoded."""
        w, ww = self._lane_decode(m, word, "w", j, lane_modes, regs, f"{name}_raw")
        s = decode_fp32(m, scale, f"{name}_sc")
        prod32, _p, _s = fp.product(m, w, s, ww, 24, f"{name}_ws")
        df = FormatHw.of(self.cfg.dequant_format)
        code = fp.fp32_to_small(m, prod32, df, f"{name}_dq")
        return decode(m, df, code, f"{name}_dw"), df.sig_bits

    def _sig_product(self, m, a, aw, w, ww, name):
        """``a.sig * w.sig`` by the configured multiplier (the bit-serial one completes on the last bit)."""
        style = self.cfg.multiplier
        if style == "array":
            return None
        if style == "shift_add":
            total = Const(0, aw + ww)
            for i in range(ww):
                total = total + Mux(w.sig[i], a.sig << i, 0)
            out = Signal(aw + ww, name=f"{name}_sa")
            m.d.comb += out.eq(total)
            return out
        # bit_serial: one weight (magnitude) bit per cycle into a shift-add register
        acc = Signal(aw + ww, name=f"{name}_bs")
        partial = Signal(aw + ww, name=f"{name}_bsp")
        m.d.comb += partial.eq(Mux(w.sig.bit_select(self.s1_bit, 1), a.sig << self.s1_bit, 0)
                               + Mux(self.s1_first_bit, 0, acc))
        with m.If(self.s1_v):
            m.d.sync += acc.eq(partial)
        return partial

    def elaborate(self, platform):
        cfg = self.cfg
        Lmax = cfg.max_lanes
        AW, WW, OW = cfg.act_word_bits, cfg.weight_word_bits, cfg.out_bits
        m = Module()
        regs = _ModeRegs()
        int_mode = regs.reg("int_mode", 1, lambda md: md.integer and not cfg.dequant)
        entry = self.entry
        a_word, w_word = entry[:AW], entry[AW:AW + WW]
        pipelined = cfg.accumulators > 1

        # ---------------------------------------------------------------- stage 1: lanes and tree
        prods_f, prods_i = [], []
        for j in range(Lmax):
            lane_modes = [md for md in cfg.modes if md.lanes > j]
            name = f"l{j}"
            a, aw = self._lane_decode(m, a_word, "a", j, lane_modes, regs, f"{name}_a")
            if cfg.dequant:
                scale = entry[AW + WW + 32 * j:AW + WW + 32 * (j + 1)]
                w, ww = self._dequant_weight(m, w_word, scale, j, lane_modes, regs, f"{name}_w")
            else:
                w, ww = self._lane_decode(m, w_word, "w", j, lane_modes, regs, f"{name}_w")
            a = _cut_decoded(m, a, "decode" in cfg.cuts or pipelined, f"{name}_a")
            w = _cut_decoded(m, w, "decode" in cfg.cuts or pipelined, f"{name}_w")
            sig_p = self._sig_product(m, a, aw, w, ww, name)
            if cfg.dequant or any(not md.integer for md in lane_modes):
                pf, praw, psign = fp.product(m, a, w, aw, ww, f"{name}_prod", sig_product=sig_p)
                pfm = Signal(32, name=f"{name}_pf")
                m.d.comb += pfm.eq(Mux(self.s1_mask[j], pf, 0))
                prods_f.append(pfm)
            else:  # integer-only lane: the exact product alone
                praw = Signal(aw + ww, name=f"{name}_p")
                m.d.comb += praw.eq(a.sig * w.sig if sig_p is None else sig_p)
                psign = a.sign ^ w.sign
                prods_f.append(Const(0, 32))
            if cfg.has_int and any(md.integer for md in lane_modes):
                pim = Signal(signed(aw + ww + 1), name=f"{name}_pi")
                m.d.comb += pim.eq(Mux(self.s1_mask[j] & int_mode, Mux(psign, -praw, praw), 0))
                prods_i.append(pim)
        if "prod" in cfg.cuts or pipelined:
            prods_f = [_delayed(m, x, 1, f"l{j}_pfc") for j, x in enumerate(prods_f)]
            prods_i = [_delayed(m, x, 1, f"l{j}_pic") for j, x in enumerate(prods_i)]
        if pipelined:
            from rtl.simd.pipelined import elaborate_pipelined

            elaborate_pipelined(self, cfg, m, regs, int_mode, prods_f, prods_i)
            regs.emit(m, self.take, self.mode, cfg.modes)
            return m
        # fp32 tree: a node passes its left child through when the mode has no right one
        node = prods_f
        lev = 0
        while len(node) > 1:
            nxt = []
            for i in range(0, len(node), 2):
                if i + 1 >= len(node):
                    nxt.append(node[i])
                    continue
                has_right = regs.reg(f"t{lev}_{i // 2}_r", 1,
                                     lambda md, lev=lev, i=i: i + 1 < _level_nodes(md.lanes, lev))
                total = fp.fp32_add(m, node[i], node[i + 1], f"t{lev}_{i // 2}") \
                    if cfg.float_lanes else Const(0, 32)
                sel = Signal(32, name=f"t{lev}_{i // 2}_o")
                m.d.comb += sel.eq(Mux(has_right, total, node[i]))
                nxt.append(sel)
            if f"tree{lev}" in cfg.cuts:
                nxt = [_delayed(m, x, 1, f"t{lev}_{i}_c") for i, x in enumerate(nxt)]
            node, lev = nxt, lev + 1
        cs_f = Signal(32, name="cycle_sum_f")
        m.d.sync += cs_f.eq(node[0])
        cs_i = Signal(signed(40), name="cycle_sum_i")
        if prods_i:
            total_i = prods_i[0]
            for x in prods_i[1:]:
                total_i = total_i + x
            m.d.sync += cs_i.eq(_delayed(m, total_i, cfg.cut_count("tree"), "sum_i"))

        # ---------------------------------------------------------------- stage 2: group accumulators
        gacc_f = Signal(32, name="gacc_f")
        gacc_i = Signal(signed(64), name="gacc_i")
        with m.If(self.s2_v):
            if cfg.float_lanes:
                m.d.sync += gacc_f.eq(fp.fp32_add(m, Mux(self.s2_gstart, 0, gacc_f), cs_f, "gadd"))
            if cfg.has_int:
                m.d.sync += gacc_i.eq(Mux(self.s2_gstart, 0, gacc_i) + cs_i)

        # ---------------------------------------------------------------- stage 3: group result, output acc
        outs = Signal(OW, name="out_acc")
        m.d.comb += self.out.eq(outs)
        init = Signal(OW, name="init")
        m.d.comb += init.eq(Mux(self.accumulate, self.old, 0))
        acc_base = Signal(OW, name="out_base")
        m.d.comb += acc_base.eq(Mux(self.s3_first_g, init, outs))
        grp_src = Signal(32, name="group_sum_f")  # float outputs: every float mode, and int x int with G > 0
        if cfg.has_int:
            conv = fp.int_to_fp32(m, gacc_i, 64, "i2f")
            m.d.comb += grp_src.eq(Mux(int_mode, conv, gacc_f) if cfg.float_lanes else conv)
        else:
            m.d.comb += grp_src.eq(gacc_f)
        grp_src = _delayed(m, grp_src, cfg.cut_count("group_src"), "group_src")
        if cfg.dequant:  # no scale multiply; the group_res cut is a plain register
            grp_res = _delayed(m, grp_src, cfg.cut_count("group_res"), "group_res")
        else:
            scaled = fp.fp32_mul(m, grp_src, self.scale, "scale")
            grp_res = _delayed(m, Mux(self.g_zero, grp_src, scaled), cfg.cut_count("group_res"), "group_res")
        new_f = fp.fp32_add(m, acc_base[:32], grp_res, "oadd")
        gsum_i = _delayed(m, gacc_i, cfg.cut_count("group_src", "group_res"), "gacc_i")
        with m.If(self.s3_v & self.s3_gend):
            if cfg.has_int:
                with m.If(int_mode & self.g_zero):
                    m.d.sync += outs.eq(acc_base + gsum_i)
                with m.Else():
                    m.d.sync += outs.eq(new_f)
            else:
                m.d.sync += outs.eq(new_f)
        regs.emit(m, self.take, self.mode, cfg.modes)
        return m


class SimdArray(wiring.Component):
    """The SIMD PE array with its operand, scale and output buffers and the tile controller.

    ``pe_instances=True`` (the Verilog build): the PEs are instances of the separately converted
    module ``archsim_simd_pe`` (:func:`pe_verilog`), so a large array converts in the time of one PE.
    """

    def __init__(self, cfg: SimdConfig, pe_instances: bool = True):
        self.cfg = cfg
        self.pe_instances = pe_instances
        super().__init__(simd_signature(cfg))

    def elaborate(self, platform):
        from amaranth.hdl import ClockSignal, Instance, ResetSignal

        cfg = self.cfg
        P, Lmax = cfg.pes, cfg.max_lanes
        EW, OW = cfg.entry_bits, cfg.out_bits
        opt = cfg.options
        m = Module()

        # ---------------------------------------------------------------- buffers
        m.submodules.opbuf = opbuf = Memory(shape=P * EW, depth=opt.op_depth, init=[])
        m.submodules.scbuf = scbuf = Memory(shape=P * 32, depth=opt.scale_depth, init=[])
        m.submodules.outbuf = outbuf = Memory(shape=P * OW, depth=opt.out_depth, init=[])
        op_w, sc_w, out_w = opbuf.write_port(), scbuf.write_port(), outbuf.write_port()
        op_r, sc_r, out_r = opbuf.read_port(), scbuf.read_port(), outbuf.read_port()
        host_r = outbuf.read_port()
        m.d.comb += [
            op_w.en.eq(self.wr_en & (self.wr_buf == BUF_CODES["operands"])),
            op_w.addr.eq(self.wr_addr), op_w.data.eq(self.wr_data),
            sc_w.en.eq(self.wr_en & (self.wr_buf == BUF_CODES["scales"])),
            sc_w.addr.eq(self.wr_addr), sc_w.data.eq(self.wr_data),
            host_r.addr.eq(self.rd_addr), host_r.en.eq(self.rd_en),
            self.rd_data.eq(host_r.data),
        ]
        m.d.sync += self.rd_valid.eq(self.rd_en)

        # ---------------------------------------------------------------- command registers
        running = Signal()
        k_len = Signal(DIM_BITS, name="k_len")
        g_len = Signal(DIM_BITS, name="g_len")
        mn = Signal(2 * DIM_BITS, name="mn")
        accumulate = Signal(name="accumulate")
        first_cycle = Signal()
        take = Signal(name="take")
        m.d.comb += take.eq(self.cmd_valid & self.cmd_ready)
        done_line = Signal(cfg.pipeline_cycles)  # tile_done delay line from the last issue (covers stages 1..4)
        m.d.comb += self.cmd_ready.eq(~running & ~done_line.any())
        m.d.comb += self.busy.eq(running | done_line.any())
        regs = _ModeRegs()
        lanes_now = regs.reg("lanes_now", range(Lmax + 1), lambda md: md.lanes)
        bit = Signal(range(cfg.max_bit_cycles + 1), name="wbit")  # weight bit of a bit-serial step (else 0)
        last_bit = regs.reg("last_wbit", range(cfg.max_bit_cycles + 1), lambda md: cfg.bit_cycles(md) - 1)
        regs.emit(m, take, self.cmd_mode, cfg.modes)
        bit_last = Signal()
        m.d.comb += bit_last.eq(bit == last_bit)

        # ---------------------------------------------------------------- stage 0: issue
        o_base = Signal(2 * DIM_BITS, name="o_base")
        kg = Signal(DIM_BITS, name="kg")  # offset of this step in its group
        gk0 = Signal(DIM_BITS, name="gk0")  # first k of the group
        op_addr = Signal(range(opt.op_depth), name="op_addr")
        sc_addr = Signal(range(opt.scale_depth), name="sc_addr")
        rnd = Signal(range(opt.out_depth), name="round")
        remaining = Signal(DIM_BITS, name="remaining")
        m.d.comb += remaining.eq(k_len - gk0)
        grp = Signal(DIM_BITS, name="group_len")
        if cfg.dequant:  # one group of K
            m.d.comb += grp.eq(remaining)
        else:
            m.d.comb += grp.eq(Mux((g_len != 0) & (remaining > g_len), g_len, remaining))
        step_last = kg + lanes_now >= grp
        g_end = step_last & bit_last
        r_end = g_end & (gk0 + grp == k_len)
        t_end = r_end & (o_base + P >= mn)
        mask = Signal(Lmax, name="lane_mask")
        for j in range(Lmax):
            m.d.comb += mask[j].eq((j < lanes_now) & (kg + j < grp))

        m.d.comb += [op_r.addr.eq(op_addr), op_r.en.eq(1)]
        with m.If(take):
            m.d.sync += [running.eq(1), k_len.eq(self.cmd_k), g_len.eq(self.cmd_g),
                         mn.eq(self.cmd_m * self.cmd_n), accumulate.eq(self.cmd_accumulate),
                         o_base.eq(0), kg.eq(0), gk0.eq(0), bit.eq(0), op_addr.eq(0), sc_addr.eq(0),
                         rnd.eq(0), first_cycle.eq(1)]
        with m.If(running):
            m.d.sync += [first_cycle.eq(0), bit.eq(bit + 1)]
            with m.If(bit_last):
                m.d.sync += [bit.eq(0), op_addr.eq(op_addr + 1), kg.eq(kg + lanes_now)]
                with m.If(step_last):
                    m.d.sync += [kg.eq(0), gk0.eq(gk0 + grp), sc_addr.eq(sc_addr + 1)]
                    with m.If(r_end):
                        m.d.sync += [gk0.eq(0), rnd.eq(rnd + 1), o_base.eq(o_base + P)]
                        with m.If(t_end):
                            m.d.sync += running.eq(0)
        m.d.comb += self.tile_start.eq(running & first_cycle)

        # ---------------------------------------------------------------- pipeline control (stages 1..4)
        s1 = {k: Signal(name=f"s1_{k}") for k in ("v", "first_bit", "last_bit", "gstart", "gend", "rend",
                                                   "first_g")}
        s1_mask = Signal(Lmax, name="s1_mask")
        s1_bit = Signal.like(bit, name="s1_wbit")
        s1_sc, s1_rnd = Signal.like(sc_addr, name="s1_sc"), Signal.like(rnd, name="s1_round")
        m.d.sync += [s1["v"].eq(running), s1["first_bit"].eq(bit == 0), s1["last_bit"].eq(bit_last),
                     s1["gstart"].eq(kg == 0), s1["gend"].eq(g_end), s1["rend"].eq(r_end),
                     s1["first_g"].eq(gk0 == 0),
                     s1_mask.eq(mask), s1_bit.eq(bit), s1_sc.eq(sc_addr), s1_rnd.eq(rnd)]
        # extra cuts (cfg.cuts): the decode cut delays the PE's multiply-stage controls, every stage-1
        # cut delays stage 2, the group cuts delay the scale read and the output stage
        pipelined = cfg.accumulators > 1
        d_dec = 1 if pipelined else cfg.cut_count("decode")
        d_s1 = cfg.cut_count("decode", "prod", "tree")
        d_grp_src, d_grp = cfg.cut_count("group_src"), cfg.cut_count("group_src", "group_res")
        pe_s1 = {"v": _delayed(m, s1["v"], d_dec, "s1m_v"), "first_bit": _delayed(m, s1["first_bit"], d_dec, "s1m_fb"),
                 "bit": _delayed(m, s1_bit, d_dec, "s1m_bit"), "mask": _delayed(m, s1_mask, d_dec, "s1m_mask")}
        s2 = {k: Signal(name=f"s2_{k}") for k in ("v", "gstart", "gend", "rend", "first_g")}
        s2_sc, s2_rnd = Signal.like(sc_addr, name="s2_sc"), Signal.like(rnd, name="s2_round")
        m.d.sync += [s2["v"].eq(_delayed(m, s1["v"] & s1["last_bit"], d_s1, "s1_vl")),
                     s2_sc.eq(_delayed(m, s1_sc, d_s1, "s1_sc")), s2_rnd.eq(_delayed(m, s1_rnd, d_s1, "s1_round"))]
        m.d.sync += [s2[k].eq(_delayed(m, s1[k], d_s1, f"s1_{k}")) for k in ("gstart", "gend", "rend", "first_g")]
        s3 = {k: Signal(name=f"s3_{k}") for k in ("v", "gend", "rend", "first_g")}
        s3_rnd = Signal.like(rnd, name="s3_round")
        s3_old_addr = _delayed(m, s2_rnd, d_grp, "s2_round")
        m.d.sync += [s3[k].eq(_delayed(m, s2[k], d_grp, f"s2_{k}")) for k in s3] + [s3_rnd.eq(s3_old_addr)]
        s4_rend = Signal(name="s4_rend")
        s4_rnd = Signal.like(rnd, name="s4_round")
        if pipelined:  # issue-time addresses delayed to the pipelined PE's cycles (rtl.simd.pipelined.timing)
            from rtl.simd.pipelined import timing, write_latency

            tm, w_lat = timing(cfg), write_latency(cfg)
            m.d.comb += [sc_r.addr.eq(_delayed(m, sc_addr, 1 + tm["Gt"], "p_sc")), sc_r.en.eq(1),
                         out_r.addr.eq(_delayed(m, rnd, 1 + tm["Rt"], "p_old")), out_r.en.eq(1),
                         s4_rend.eq(_delayed(m, running & r_end, w_lat, "p_wr")),
                         s4_rnd.eq(_delayed(m, rnd, w_lat, "p_wr_round"))]
            flags_now = {"p_step": running & bit_last, "p_gfirst": kg == 0, "p_gstart": running & (kg == 0) & (bit == 0),
                         "p_gend": running & g_end, "p_rstart": running & (kg == 0) & (bit == 0) & (gk0 == 0),
                         "p_rend": running & r_end}
            pe_flags = {k: _delayed(m, v, 2, k) for k, v in flags_now.items()}
        else:
            m.d.comb += [sc_r.addr.eq(_delayed(m, s2_sc, d_grp_src, "s2_sc")), sc_r.en.eq(1),
                         out_r.addr.eq(s3_old_addr), out_r.en.eq(1)]
            m.d.sync += [s4_rend.eq(s3["v"] & s3["rend"]), s4_rnd.eq(s3_rnd)]
            pe_flags = {}

        # ---------------------------------------------------------------- the PEs
        outs = []
        for p in range(P):
            out = Signal(OW, name=f"pe{p}_out")
            ports = dict(
                take=take, mode=self.cmd_mode, accumulate=accumulate, g_zero=g_len == 0,
                s1_v=pe_s1["v"], s1_first_bit=pe_s1["first_bit"], s1_bit=pe_s1["bit"], s1_mask=pe_s1["mask"],
                s2_v=s2["v"], s2_gstart=s2["gstart"], s3_v=s3["v"], s3_gend=s3["gend"], s3_first_g=s3["first_g"],
                entry=op_r.data[p * EW:(p + 1) * EW], scale=sc_r.data[32 * p:32 * (p + 1)],
                old=out_r.data[p * OW:(p + 1) * OW], **pe_flags)
            if self.pe_instances:
                m.submodules[f"pe{p}"] = Instance(
                    PE_TOP, i_clk=ClockSignal(), i_rst=ResetSignal(), o_out=out,
                    **{f"i_{k}": v for k, v in ports.items()})
            else:
                pe = m.submodules[f"pe{p}"] = SimdPE(cfg)
                m.d.comb += [getattr(pe, k).eq(v) for k, v in ports.items()] + [out.eq(pe.out)]
            outs.append(out)

        # ---------------------------------------------------------------- stage 4: write back, done
        m.d.comb += [out_w.en.eq(s4_rend | (self.wr_en & (self.wr_buf == BUF_CODES["outputs"]))),
                     out_w.addr.eq(Mux(s4_rend, s4_rnd, self.wr_addr)),
                     out_w.data.eq(Mux(s4_rend, Cat(*outs), self.wr_data))]
        # tile_done: pipeline_cycles cycles after the last issue
        issue_end = running & t_end & bit_last
        m.d.sync += done_line.eq(Cat(issue_end, done_line[:-1]))
        m.d.comb += self.tile_done.eq(done_line[cfg.pipeline_cycles - 1])
        count = Signal(32, name="cycle_count")
        with m.If(take):
            m.d.sync += count.eq(0)
        with m.Elif(self.busy):
            m.d.sync += count.eq(count + 1)
        with m.If(self.tile_done):
            m.d.sync += [self.tile_cycles.eq(count + 1), self.tiles_done.eq(self.tiles_done + 1)]
        return m


def pe_verilog(cfg: SimdConfig) -> str:
    """Verilog of the PE module ``archsim_simd_pe``."""
    from amaranth.back import verilog

    return verilog.convert(SimdPE(cfg), name=PE_TOP, emit_src=False)


def array_verilog(cfg: SimdConfig, top: str) -> str:
    """Verilog of the whole design: the host-interface top (:class:`rtl.simd.host.SimdEngine`, the PEs as
    instances) followed by the PE module."""
    from amaranth.back import verilog

    from rtl.simd.host import SimdEngine

    return verilog.convert(SimdEngine(cfg), name=top, emit_src=False) + "\n" + pe_verilog(cfg)
