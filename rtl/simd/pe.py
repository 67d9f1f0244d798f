"""One SIMD PE (module ``archsim_simd_pe``): lanes (decode, multiply, round to fp32), the pairwise
lane tree, the group and output accumulators -- stages 1-3 of :mod:`rtl.simd.design`'s datapath, or
with ``accumulators > 1`` the pipelined datapath of :mod:`rtl.simd.pipelined`. Generated once and
instantiated ``P`` times by :class:`rtl.simd.design.SimdArray`."""
from __future__ import annotations

from amaranth import Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.formats import EXP_W, Decoded, FormatHw, decode, decode_cut_points, decode_fp32
from rtl.lib.pipe import Pipe
from rtl.simd.int_dot import carry_save_int_dot
from rtl.simd.lane_cuts import lane_cut_points, product_cut_points
from rtl.simd.config import CUT_ORDER, Mode, SimdConfig, _bits, _delayed, _level_nodes  # noqa: F401

def _cut_decoded(m: Module, d, on: bool, name: str):
    """A decoded operand, registered when ``on`` (the decode cut)."""
    if not on:
        return d
    regs = [Signal(v.shape(), name=f"{name}_r{k}") for k, v in zip("nies", (d.nan, d.inf, d.sign, d.exp))]
    regs.append(Signal(d.sig.shape(), name=f"{name}_rm"))
    m.d.sync += [r.eq(v) for r, v in zip(regs, (d.nan, d.inf, d.sign, d.exp, d.sig))]
    return Decoded(*regs)


PE_TOP = "archsim_simd_pe"


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

    def _lane_decode(self, m, word, side: str, j: int, lane_modes: list[Mode], regs: _ModeRegs, name: str,
                     cut: bool = False):
        """Decoded operand of lane ``j`` (formats muxed by mode); ``side`` "a" or "w". ``cut``: one register
        stage inside every format's decode (the last of a posit's own cut points; the code of the other
        kinds, which have none), before the mux. The pipelined PE muxes the formats one-hot (an OR of
        selected fields, ~log depth; a lane the mode does not use decodes to zeros, which its mask drops);
        the one-cycle PE keeps its chain of muxes."""
        fmts: dict[str, FormatHw] = {}
        for md in lane_modes:
            f = md.activation if side == "a" else md.weight
            fmts.setdefault(f.name, f)
        decs = {}
        for fname, f in fmts.items():
            code = word[j * f.bits:(j + 1) * f.bits]
            pipe = None
            if cut and f.kind == "posit":
                pipe = Pipe(m, 1, decode_cut_points(f), f"{name}_{fname}_dc")
            elif cut:
                code = _delayed(m, code, 1, f"{name}_{fname}_code")
            decs[fname] = (f, decode(m, f, code, f"{name}_{fname}", pipe))
            if pipe is not None:
                pipe.finish()
        sw = max(f.sig_bits for f, _ in decs.values())
        out = Decoded(Signal(name=f"{name}_nan"), Signal(name=f"{name}_inf"), Signal(name=f"{name}_s"),
                            Signal(signed(EXP_W), name=f"{name}_e"), Signal(sw, name=f"{name}_m"))
        onehot = self.cfg.accumulators > 1 and len(decs) > 1
        fields = None
        for fname, (_f, d) in decs.items():  # muxes on per-format select registers
            vals = (d.nan, d.inf, d.sign, d.exp, d.sig)
            if fields is None and not onehot:  # the chain's default: the first format
                fields = vals
                continue
            mine = {md.index for md in lane_modes if (md.activation if side == "a" else md.weight).name == fname}
            sel = regs.reg(f"{name}_is_{fname}", 1, lambda md, mine=mine: md.index in mine)
            if onehot:
                picked = tuple(Mux(sel, v, 0) for v in vals)
                fields = picked if fields is None else tuple(o | v for v, o in zip(picked, fields))
            else:
                fields = tuple(Mux(sel, v, o) for v, o in zip(vals, fields))
        m.d.comb += [out.nan.eq(fields[0]), out.inf.eq(fields[1]), out.sign.eq(fields[2]),
                     out.exp.eq(fields[3]), out.sig.eq(fields[4])]
        return out, sw

    def _dequant_weight(self, m, word, scale, j, lane_modes, regs, name, cut: bool = False):
        """Lane ``j``'s dequantized weight ``round_to(dequant_format, rne(decode(w) * scale))``, decoded."""
        w, ww = self._lane_decode(m, word, "w", j, lane_modes, regs, f"{name}_raw", cut)
        scale = _delayed(m, scale, int(cut), f"{name}_scale")
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
        s1_bit, s1_first_bit, s1_v = self._s1
        m.d.comb += partial.eq(Mux(w.sig.bit_select(s1_bit, 1), a.sig << s1_bit, 0)
                               + Mux(s1_first_bit, 0, acc))
        with m.If(s1_v):
            m.d.sync += acc.eq(partial)
        return partial

    def _lanes(self, m, regs, int_mode, pipelined: bool):
        """Stage 1 up to the products: per lane, both operands decoded (formats muxed by mode), the
        significand product, the exactly rounded fp32 product and the exact integer product beside it
        (masked lanes give +0.0 / 0). The pipelined PE registers the decoded operands and cuts the
        multiply-and-round at ``lane_stages`` of its cut points (:class:`rtl.lib.pipe.Pipe`: its latency
        is exactly ``lane_stages``, the mask rides alongside). Returns (fp32 products, integer products)."""
        cfg = self.cfg
        AW, WW = cfg.act_word_bits, cfg.weight_word_bits
        entry = self.entry
        a_word, w_word = entry[:AW], entry[AW:AW + WW]
        Lf = cfg.lane_stages if pipelined else 0
        dc = int(Lf > lane_cut_points(cfg) - 1)  # the decode cut: the last lane stage added
        # the step's controls at the decoded-operand register (the decode cut delays it)
        self._s1 = tuple(_delayed(m, v, dc, f"s1_{k}") for k, v in
                         (("bit", self.s1_bit), ("first_bit", self.s1_first_bit), ("v", self.s1_v)))
        given = cfg.multiplier != "array"
        tpe = cfg.pe_style == "tpe"  # the integer dot product in carry-save form (rtl.simd.int_dot)
        prods_f, prods_i, lane_on = [], [], []
        for j in range(cfg.max_lanes):
            lane_modes = [md for md in cfg.modes if md.lanes > j]
            name = f"l{j}"
            if tpe:  # the lane's integer operands go to the carry-save dot product (rtl.simd.int_dot)
                lane_on.append(_delayed(m, self.s1_mask[j], dc, f"{name}_ton") & int_mode)
                if all(md.integer for md in lane_modes):  # no float product either: nothing else to build
                    prods_f.append(Const(0, 32))
                    continue
            a, aw = self._lane_decode(m, a_word, "a", j, lane_modes, regs, f"{name}_a", bool(dc))
            if cfg.dequant:
                scale = entry[AW + WW + 32 * j:AW + WW + 32 * (j + 1)]
                w, ww = self._dequant_weight(m, w_word, scale, j, lane_modes, regs, f"{name}_w", bool(dc))
            else:
                w, ww = self._lane_decode(m, w_word, "w", j, lane_modes, regs, f"{name}_w", bool(dc))
            a = _cut_decoded(m, a, "decode" in cfg.cuts or pipelined, f"{name}_a")
            w = _cut_decoded(m, w, "decode" in cfg.cuts or pipelined, f"{name}_w")
            mask = _delayed(m, self.s1_mask[j], Lf, f"{name}_mask")
            sig_p = self._sig_product(m, a, aw, w, ww, name)
            if cfg.dequant or any(not md.integer for md in lane_modes):
                mul = cfg.mul_kind
                cuts = product_cut_points(aw, ww, given, cfg.rtl_multiplier)  # dsp_reg: the cuts of dsp
                pipe = Pipe(m, Lf - dc, cuts, f"{name}_fe") if pipelined else None
                pf, praw, psign = fp.product(m, a, w, aw, ww, f"{name}_prod", sig_product=sig_p, pipe=pipe,
                                             mul=mul)
                if pipe is not None:
                    pipe.finish()
                pfm = Signal(32, name=f"{name}_pf")
                m.d.comb += pfm.eq(Mux(mask, pf, 0))
                prods_f.append(pfm)
            else:  # integer-only lane: the exact product alone
                praw = Signal(aw + ww, name=f"{name}_p")
                m.d.comb += praw.eq(a.sig * w.sig if sig_p is None else sig_p)
                praw = _delayed(m, praw, Lf - dc, f"{name}_p")
                psign = _delayed(m, a.sign ^ w.sign, Lf - dc, f"{name}_ps")
                prods_f.append(Const(0, 32))
            if cfg.has_int and not tpe and any(md.integer for md in lane_modes):
                pim = Signal(signed(aw + ww + 1), name=f"{name}_pi")
                m.d.comb += pim.eq(Mux(mask & int_mode, Mux(psign, -praw, praw), 0))
                prods_i.append(pim)
        prod_cut = int("prod" in cfg.cuts or pipelined)
        if prod_cut:
            prods_f = [_delayed(m, x, 1, f"l{j}_pfc") for j, x in enumerate(prods_f)]
            prods_i = [_delayed(m, x, 1, f"l{j}_pic") for j, x in enumerate(prods_i)]
        if tpe:  # operands at the decoded-operand register, the pair where the products are registered
            prods_i = [carry_save_int_dot(m, cfg, a_word, w_word, lane_on, regs,
                                          dc + int("decode" in cfg.cuts or pipelined), Lf - dc + prod_cut)]
        return prods_f, prods_i

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        regs = _ModeRegs()
        int_mode = regs.reg("int_mode", 1, lambda md: md.integer and not cfg.dequant)
        pipelined = cfg.accumulators > 1
        prods_f, prods_i = self._lanes(m, regs, int_mode, pipelined)
        if pipelined:
            from rtl.simd.pipelined import elaborate_pipelined

            elaborate_pipelined(self, cfg, m, regs, int_mode, prods_f, prods_i)
        else:
            self._accumulate(m, regs, int_mode, prods_f, prods_i)
        regs.emit(m, self.take, self.mode, cfg.modes)
        return m

    def _accumulate(self, m, regs, int_mode, prods_f, prods_i):
        """The one-stage datapath after the products (``accumulators`` 1): the lane tree with its cuts,
        the group accumulators (stage 2), the group result and the output accumulator (stage 3)."""
        cfg = self.cfg
        OW = cfg.out_bits
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


def pe_verilog(cfg: SimdConfig) -> str:
    """Verilog of the PE module ``archsim_simd_pe``."""
    from amaranth.back import verilog

    return verilog.convert(SimdPE(cfg), name=PE_TOP, emit_src=False)
