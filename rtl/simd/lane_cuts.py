"""Cut points of a SIMD lane's front end (operand decode, multiply and round to fp32): how many
``lane_stages`` a pipelined PE takes (:class:`rtl.simd.config.SimdConfig` checks the parameter with it,
:mod:`rtl.simd.pe` builds the lanes with it)."""
from __future__ import annotations

from amaranth import Module, Signal, signed

from rtl.lib import fp
from rtl.lib.formats import EXP_W, Decoded, FormatHw
from rtl.lib.pipe import Pipe


def _lane_widths(cfg, j: int) -> tuple[int, int, bool]:
    """Significand widths (activation, weight) of lane ``j``'s decoded operands, and whether it builds
    the float product (some mode of the lane multiplies a float)."""
    lane_modes = [md for md in cfg.modes if md.lanes > j]
    aw = max(md.activation.sig_bits for md in lane_modes)
    ww = FormatHw.of(cfg.dequant_format).sig_bits if cfg.dequant else max(md.weight.sig_bits for md in lane_modes)
    return aw, ww, cfg.dequant or any(not md.integer for md in lane_modes)


def product_cut_points(aw: int, ww: int, given_product: bool, mul: str) -> int:
    """Cut points of the lane's :func:`rtl.lib.fp.product` (a dry run into a scratch module)."""
    m = Module()
    m._MustUse__silence = True  # a scratch module, never elaborated
    pipe = Pipe(m, 0, 1 << 30, "count")

    def operand(w):
        return Decoded(Signal(), Signal(), Signal(), Signal(signed(EXP_W)), Signal(w))

    fp.product(m, operand(aw), operand(ww), aw, ww, "count", pipe=pipe,
               sig_product=Signal(aw + ww) if given_product else None, mul=mul)
    return pipe._next


def lane_cut_points(cfg) -> int:
    """Most ``lane_stages`` this PE takes: the fewest cut points of a lane's multiply-and-round (a lane
    without float modes has no product to cut: its integer product is delayed alongside), plus one
    inside the operand decode, which is the last one used (``lane_stages`` = this number)."""
    given = cfg.multiplier != "array"
    counts = [product_cut_points(aw, ww, given, cfg.rtl_multiplier) for aw, ww, has_f in
              (_lane_widths(cfg, j) for j in range(cfg.max_lanes)) if has_f]
    return (min(counts) if counts else 0) + 1
