"""The pipelined SIMD PE (``accumulators: A > 1``): every fp32 unit a pipeline, no loop-carried fp32 add.

Timing, in cycles from ``D`` (the cycle the decoded operands are in registers: the
issue + 2)::

  D        decoded operands (registered); products formed (``lane_stages`` Lf
           register stages inside the multiply-and-round), registered         -> D + 1 + Lf
  D+1+Lf   lane tree: tree_levels(L) levels of FpAdd (S stages each)          -> C = D + 1 + Lf + T*S
  C        group accumulator: InterleavedSum(A) over the group's cycles; the
           int64 group sum beside it (one 64-bit add per step)              -> Gt = C + R
  Gt       group result: int64 -> fp32 (IntToFp), x scale (FpMul, Sm stages) -> O = Gt + Sm
  O        output accumulator: InterleavedSum(A) over the round's cycles     -> Rt = O + R
  Rt       out = rne(init + reduced) (FpAdd, S stages); int x int, G = 0:
           init + group sum (int64)                                          -> F = Rt + S
  F        the output register; written to the output buffer at issue + F + 3

``S = A`` (the ring's adder must have exactly ``A`` stages; the tree adders use the
same), ``R`` = ``InterleavedSum.latency``, ``Sm`` = ``scale_stages`` or by default ``min(A, FpMul max stages)``
(``rtl_multiplier``: its significand multiplier, DSP blocks or fabric; ``"dsp_reg"`` has the cut points
of ``"dsp"``). The
write latency :func:`write_latency` is what ``pipeline_cycles`` must cover. The
order of the sums is :mod:`archsim.templates.simd.interleave` (the models').
"""
from __future__ import annotations

from functools import lru_cache

from amaranth import Const, Module, Mux, Signal, signed
from amaranth.lib.wiring import In

from rtl.lib.delay_ram import ram_delayed
from rtl.lib.units import FpAdd, FpMul, IntToFp
from rtl.simd.accumulate import InterleavedSum, _level_nodes, add_tree, delayed, tree_levels

#: ports the pipelined PE adds to the PE's (all at the decoded-operand cycle D)
STEP_FLAGS = ("p_step", "p_gfirst", "p_gstart", "p_gend", "p_rstart", "p_rend")


@lru_cache(maxsize=None)
def _max_stages(kind: str, mul: str = "dsp") -> int:
    unit = FpMul("fp32", 1, mul) if kind == "mul" else IntToFp(64, "fp32", 1)
    unit._MustUse__silence = True  # only asked for its depth, never elaborated
    return unit.max_stages


def scale_cut_points(cfg) -> int:
    """Most stages of the group-scale multiply (``scale_stages``): the fp32 ``FpMul``'s, by multiplier."""
    return _max_stages("mul", cfg.rtl_multiplier)


def timing(cfg) -> dict[str, int]:
    """Cycle offsets from ``D`` (see the module docstring) and the unit stages of a pipelined PE."""
    A = cfg.accumulators
    S = A
    R = A + tree_levels(A) * S
    Sm = cfg.scale_stages or min(A, _max_stages("mul", cfg.rtl_multiplier))
    Si = min(A, _max_stages("i2f"), R - 1)
    C = 1 + cfg.lane_stages + tree_levels(cfg.max_lanes) * S
    Gt = C + R
    O = Gt + Sm
    Rt = O + R
    F = Rt + S
    return {"Lf": cfg.lane_stages, "S": S, "R": R, "Sm": Sm, "Si": Si, "C": C, "Gt": Gt, "O": O, "Rt": Rt, "F": F}


def write_latency(cfg) -> int:
    """Cycles from a round's last issue to its output buffer write (``pipeline_cycles`` must cover it)."""
    return timing(cfg)["F"] + 3


def int_sum_tree(m: Module, values: list, cycles: int):
    """The sum of the lanes' exact integer products, ``cycles`` cycles later: a pairwise tree of adds with a
    register after each level (the lane tree's latency leaves room for ``tree_levels`` of them), the rest of
    the cycles a delay line."""
    node, lev = list(values), 0
    while len(node) > 1 and lev < cycles:
        nxt = []
        for i in range(0, len(node), 2):
            pair = node[i:i + 2]
            total = pair[0] + pair[1] if len(pair) == 2 else pair[0]
            nxt.append(delayed(m, total, 1, f"sum_i{lev}_{i // 2}"))
        node, lev = nxt, lev + 1
    total = node[0]
    for x in node[1:]:  # (not reached: cycles >= the lane tree's levels >= this tree's)
        total = total + x
    return delayed(m, total, cycles - lev, "sum_i")


def pipelined_pe_ports(cfg) -> dict:
    return {k: In(1) for k in STEP_FLAGS}


def elaborate_pipelined(pe, cfg, m: Module, regs, int_mode, prods_f, prods_i):
    """Everything after the lane products (registered at D + 1 + lane_stages) of a pipelined PE."""
    t = timing(cfg)
    S, OW = t["S"], cfg.out_bits
    flags = {k: getattr(pe, k) for k in STEP_FLAGS}

    def at(name, cycle):  # a D-timed flag at D + cycle
        return delayed(m, flags[name], cycle, f"{name}_{cycle}")

    # ---- lane tree (D+1+Lf -> C)
    def has_right(lev, i):
        return regs.reg(f"t{lev}_{i // 2}_r", 1, lambda md: i + 1 < _level_nodes(md.lanes, lev))

    cs_f = add_tree(m, prods_f, S, "lt", has_right) if cfg.float_lanes else Const(0, 32)
    C = t["C"]
    # ---- group accumulators (C -> Gt)
    grp_f = Const(0, 32)
    if cfg.float_lanes:
        ring = m.submodules.gring = InterleavedSum(cfg.accumulators)
        m.d.comb += [ring.in_valid.eq(at("p_step", C)), ring.in_x.eq(cs_f), ring.start.eq(at("p_gstart", C)),
                     ring.end.eq(at("p_gend", C))]
        grp_f = ring.out
    gacc_i = Signal(signed(64), name="gacc_i")
    src = grp_f
    if cfg.has_int:
        cs_i = int_sum_tree(m, prods_i, C - 1 - t["Lf"])  # the products are at D + 1 + Lf
        step_c, gfirst_c = at("p_step", C), at("p_gfirst", C)  # (delay lines built outside any m.If)
        with m.If(step_c):
            m.d.sync += gacc_i.eq(Mux(gfirst_c, 0, gacc_i) + cs_i)
        i2f = m.submodules.int_to_fp = IntToFp(64, "fp32", t["Si"], specials_as_data=True, packed_round=True)
        m.d.comb += [i2f.a.eq(gacc_i), i2f.in_valid.eq(1)]
        conv = ram_delayed(m, i2f.out, t["R"] - 1 - t["Si"], "i2f")  # long: in a RAM (rtl/lib/delay_ram.py)
        src = Mux(int_mode, conv, grp_f) if cfg.float_lanes else conv
    grp_src = Signal(32, name="group_sum_f")
    m.d.comb += grp_src.eq(src)
    # ---- group result (Gt -> O)
    plain = delayed(m, grp_src, t["Sm"], "grp_src")
    if cfg.dequant:
        grp_res = plain
    else:
        mul = m.submodules.scale_mul = FpMul("fp32", t["Sm"], cfg.mul_kind, specials_as_data=True,
                                                  packed_round=True)
        m.d.comb += [mul.a.eq(grp_src), mul.b.eq(pe.scale), mul.in_valid.eq(1)]
        grp_res = Mux(pe.g_zero, plain, mul.out)
    # ---- output accumulator (O -> Rt)
    O = t["O"]
    oring = m.submodules.oring = InterleavedSum(cfg.accumulators)
    m.d.comb += [oring.in_valid.eq(at("p_gend", O)), oring.in_x.eq(grp_res), oring.start.eq(at("p_rstart", O)),
                 oring.end.eq(at("p_rend", O))]
    # ---- out = init + reduced (Rt -> F)
    init = Signal(OW, name="init")
    m.d.comb += init.eq(Mux(pe.accumulate, pe.old, 0))
    fin = m.submodules.final_add = FpAdd("fp32", S, specials_as_data=True, zero_fill_as_data=True, packed_round=True)
    m.d.comb += [fin.a.eq(init[:32]), fin.b.eq(oring.out), fin.in_valid.eq(1)]
    outs = Signal(OW, name="out_acc")
    m.d.comb += pe.out.eq(outs)
    rend_f = at("p_rend", t["F"])
    if cfg.has_int:  # init + group sum (int64) added a cycle ahead, into its own register
        gsum = ram_delayed(m, gacc_i, t["F"] - C - 2, "gsum_i")  # ~130 x 64 bits at A = 11: in a RAM
        init_f = delayed(m, init, S - 1, "init")
        isum = Signal(signed(OW), name="int_out")
        m.d.sync += isum.eq(init_f.as_signed() + gsum)
    with m.If(rend_f):
        if cfg.has_int:
            with m.If(int_mode & pe.g_zero):
                m.d.sync += outs.eq(isum)
            with m.Else():
                m.d.sync += outs.eq(fin.out)
        else:
            m.d.sync += outs.eq(fin.out)

