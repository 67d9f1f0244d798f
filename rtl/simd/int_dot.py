"""The integer dot product of a SIMD PE's lanes with ``pe_style: tpe`` (Wu et al., HPCA 2025: the
bit-weight transformation of a multiplier-adder tree).

``standard`` lanes (:mod:`rtl.simd.pe`) form each lane's complete product (magnitudes multiplied,
then negated by the sign) and add the ``L`` products in a tree of carry-propagate adders. ``tpe``
lanes take the two's-complement codes straight from the operand words, recode every lane's weight
into radix-4 Booth rows (:func:`rtl.lib.csa.booth_rows`) and compress the rows of *all* lanes
together in one 3:2 tree (:func:`rtl.lib.csa.compress`) to a carry-save pair; one carry-propagate
adder resolves the pair into the cycle's integer sum. Same values (every int x int mode's sum fits
the tree's width), same registers in the same cycles (the pair takes the place of the lane products
at the product register), so tile cycles do not change.
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal, signed

from rtl.lib.csa import booth_rows, compress
from rtl.simd.accumulate import delayed


def dot_width(modes) -> int:
    """Bits that hold any integer x integer mode's cycle sum: ``ab + wb`` per signed product, plus
    ``ceil(log2(lanes))`` for the sum of a mode's lanes."""
    return max(md.activation.bits + md.weight.bits + (md.lanes - 1).bit_length() for md in modes if md.integer)


def _lane_operand(m: Module, word, j: int, side: str, lane_modes, regs, name: str):
    """Lane ``j``'s signed integer operand of the modes in ``lane_modes`` (formats muxed by per-format
    select registers loaded with the mode), sign-extended to the widest of them (an even width)."""
    fmts = {}
    for md in lane_modes:
        f = md.activation if side == "a" else md.weight
        fmts.setdefault(f.name, f)
    bits = max(f.bits for f in fmts.values())
    out = None
    for fname, f in fmts.items():
        code = Signal(signed(f.bits), name=f"{name}_{fname}")
        m.d.comb += code.eq(word[j * f.bits:(j + 1) * f.bits])
        if out is None:
            out = code
            continue
        mine = {md.index for md in lane_modes if (md.activation if side == "a" else md.weight).name == fname}
        sel = regs.reg(f"{name}_is_{fname}", 1, lambda md, mine=mine: md.index in mine)
        out = Mux(sel, code, out)
    op = Signal(signed(bits), name=name)
    m.d.comb += op.eq(out)
    return op


def carry_save_int_dot(m: Module, cfg, a_word, w_word, lane_on: list, regs, operand_delay: int,
                       pair_delay: int) -> Signal:
    """The cycle's integer dot product of the lanes (``pe_style: tpe``), as a signed
    :func:`dot_width`-bit value.

    ``lane_on[j]``: lane ``j`` contributes (its mask and the integer mode), at the operands' cycle.
    ``operand_delay``: registers between the operand words and that cycle (the decode cuts);
    ``pair_delay``: registers on the carry-save pair (the product register and the lane stages),
    before the one carry-propagate add."""
    width = dot_width(cfg.modes)
    rows = []
    for j in range(cfg.max_lanes):
        lane_modes = [md for md in cfg.modes if md.integer and md.lanes > j]
        if not lane_modes:
            continue
        a = delayed(m, _lane_operand(m, a_word, j, "a", lane_modes, regs, f"l{j}_ta"), operand_delay, f"l{j}_ta")
        w = delayed(m, _lane_operand(m, w_word, j, "w", lane_modes, regs, f"l{j}_tw"), operand_delay, f"l{j}_tw")
        w_on = Signal(signed(len(w)), name=f"l{j}_tw_on")
        m.d.comb += w_on.eq(Mux(lane_on[j], w, 0))  # a zero weight has no Booth row
        rows += booth_rows(m, a, w_on, width, f"l{j}_tb")
    s, c = compress(m, rows, width, "tdot")
    s, c = delayed(m, s, pair_delay, "tdot_s"), delayed(m, c, pair_delay, "tdot_c")
    dot = Signal(signed(width), name="tdot")
    m.d.comb += dot.eq(s + c)  # modulo 2**width: the sum fits, so this is its signed value
    return dot

