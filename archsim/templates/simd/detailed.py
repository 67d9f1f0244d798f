"""Detailed (cycle-by-cycle) model of the SIMD PE array.

Registers per PE: the output accumulator, the group accumulator and (bit-serial)
the partial product of each lane. Each loop iteration below is one clock cycle
of the array: every active PE of the round reads its lane operands, multiplies
(array: whole products; shift_add: one shift-add per integer weight bit within
the cycle; bit_serial: one weight bit per cycle), reduces the lanes in the
fixed fp32 tree (or exactly for integers) and accumulates. Vectorized over the
PEs of a round only, so it really walks the schedule of :mod:`.tile`.
"""
from __future__ import annotations

import numpy as np

from archsim.numerics import get_format
from archsim.templates.simd import interleave
from archsim.templates.simd.tile import (CANONICAL_NAN_BITS, SimdTile, cycles_per_step, exact_integer_output,
                                         integer_path, lanes)

_F32_NAN = np.array(CANONICAL_NAN_BITS, np.uint32).view(np.float32)


class SimdArrayDetailed:
    """``SimdArrayDetailed(params).run_tile(tile, operands) -> (values, cycles)``."""

    def __init__(self, params):
        self.params = params

    # ------------------------------------------------------------------ helpers
    def _weights(self, tile: SimdTile, operands: dict):
        """(weight values (K, N) float64, weight two's-complement ints or None)."""
        p = self.params
        wf = get_format(tile.weight_format)
        codes = np.asarray(operands["weight"]).astype(np.int64)
        w = wf.decode(codes)
        if p.dequant:  # the dequantizer stage in front of the lanes: fp32 scale multiply, then round
            w32 = w.astype(np.float32)
            if tile.group_size:
                scale = np.asarray(operands["scale"], np.float32)
                with np.errstate(over="ignore", invalid="ignore"):
                    w32 = w32 * scale[np.arange(tile.k) // tile.group_size, :]
            dq = get_format(p.dequant_format)
            return dq.decode(dq.encode(w32.astype(np.float64))), None
        if wf.kind == "int":
            return w, w.astype(np.int64)
        return w, None

    def _lane_products(self, a_l, w_l, wint_l, bit: int | None, wb: int):
        """Exact lane products (float64), or with ``bit`` only that weight bit's partial product."""
        if bit is None:
            return a_l * w_l
        # two's complement bit b of the weight, the sign bit weighing -2**(wb-1)
        bits = (wint_l >> bit) & 1
        weight = -(2.0 ** bit) if bit == wb - 1 else 2.0 ** bit
        return a_l * bits * weight

    # ------------------------------------------------------------------ one tile
    def run_tile(self, tile: SimdTile, operands: dict, trace: list | None = None):
        p = self.params
        M, N = tile.m, tile.n
        P = p.pes
        L = lanes(tile, p)
        a = get_format(tile.activation_format).decode(np.asarray(operands["input"]).astype(np.int64))
        w, wint = self._weights(tile, operands)
        int_path = integer_path(tile, p)
        exact_int = exact_integer_output(tile, p)
        serial = p.multiplier == "bit_serial"
        shift_add = p.multiplier == "shift_add" and wint is not None
        wb = get_format(tile.weight_format).bits
        bit_cycles = cycles_per_step(tile, p)
        scale = (np.asarray(operands["scale"], np.float32) if tile.group_size and not p.dequant else None)
        groups = tile.groups(p.dequant)
        psum = operands.get("psum") if tile.accumulate else None
        out = np.zeros((M, N), np.int64 if exact_int else np.float32)
        cycles = 0
        total = M * N
        errs = np.errstate(over="ignore", invalid="ignore")
        errs.__enter__()
        try:
            for r in range(-(-total // P)):
                o = np.arange(r * P, min(total, (r + 1) * P))
                mi, ni = o // N, o % N
                if exact_int:
                    acc_out = (np.asarray(psum, np.int64)[mi, ni] if psum is not None
                               else np.zeros(len(o), np.int64))
                else:
                    acc_out = (np.asarray(psum, np.float32)[mi, ni].copy() if psum is not None
                               else np.zeros(len(o), np.float32))
                A = p.accumulators
                round_cycle0 = cycles
                group_results = []  # (round cycle of the group's end, result) for the interleaved output sum
                for g, (start, length) in enumerate(groups):
                    acc_g = np.zeros(len(o), np.int64) if int_path else np.zeros(len(o), np.float32)
                    group_cycle0 = cycles
                    arrivals = []  # (group cycle, cycle sum) for the interleaved group sum
                    for s in range(-(-length // L)):
                        k = start + s * L + np.arange(L)
                        valid = k < start + length
                        kk = np.where(valid, k, 0)
                        a_l = np.where(valid, a[mi[:, None], kk[None, :]], 0.0)
                        w_l = np.where(valid, w[kk[None, :], ni[:, None]], 0.0)
                        wi_l = np.where(valid, wint[kk[None, :], ni[:, None]], 0) if wint is not None else None
                        partial = np.zeros((len(o), L), np.float64)
                        for b in range(bit_cycles):  # one clock cycle each
                            if serial:
                                partial = partial + self._lane_products(a_l, w_l, wi_l, b, wb)
                            elif shift_add:
                                for bb in range(wb):  # all weight bits' shifted adds within the cycle
                                    partial = partial + self._lane_products(a_l, w_l, wi_l, bb, wb)
                            else:
                                partial = self._lane_products(a_l, w_l, wi_l, None, wb)
                            cycles += 1
                        if serial or shift_add:  # inf/NaN activations: the special-value path, not bit sums
                            special = ~np.isfinite(a_l)
                            if special.any():
                                partial = np.where(special, a_l * w_l, partial)
                        if int_path:
                            acc_g = acc_g + partial.astype(np.int64).sum(axis=1)
                        else:
                            lane = np.where(valid[None, :], partial.astype(np.float32), np.float32(0.0))
                            if A > 1:
                                arrivals.append((cycles - 1 - group_cycle0, self._tree(lane)))
                            else:
                                acc_g = acc_g + self._tree(lane)
                        if trace is not None and len(o):
                            trace.append(f"cycle {cycles - 1}: round {r} group {g} step {s} "
                                         f"PE0 out[{mi[0]},{ni[0]}] acc_g={acc_g[0]}")
                    if exact_int:
                        acc_out = acc_out + acc_g
                        continue
                    if A > 1 and not int_path:
                        acc_g = interleave.ring_sum(arrivals, cycles - group_cycle0, A, len(o))
                    gr = acc_g.astype(np.float32)
                    if scale is not None:
                        gr = gr * scale[g, ni]
                    if A > 1:
                        group_results.append((cycles - 1 - round_cycle0, gr))
                    else:
                        acc_out = acc_out + gr
                if A > 1 and not exact_int:
                    acc_out = acc_out + interleave.ring_sum(group_results, cycles - round_cycle0, A, len(o))
                out[mi, ni] = acc_out
        finally:
            errs.__exit__(None, None, None)
        if not exact_int:
            out[np.isnan(out)] = _F32_NAN
        return out, cycles + p.pipeline_cycles

    @staticmethod
    def _tree(lane: np.ndarray) -> np.ndarray:
        """The adder tree of one cycle: level by level, pairs (0,1), (2,3), ...; odd last passes."""
        level = [lane[:, j] for j in range(lane.shape[1])]
        while len(level) > 1:
            nxt = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0]

    def tile_cycles(self, tile: SimdTile) -> int:
        """Cycles without operands: walk the controller's counters (rounds, groups, steps, bits)."""
        p = self.params
        L = lanes(tile, p)
        per_output = 0
        for _start, length in tile.groups(p.dequant):
            for _s in range(-(-length // L)):
                per_output += cycles_per_step(tile, p)
        cycles = 0
        for _r in range(-(-tile.outputs // p.pes)):
            cycles += per_output
        return cycles + p.pipeline_cycles
