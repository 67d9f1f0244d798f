"""Detailed (cycle-by-cycle, register-level) model of the systolic array.

One numpy step per clock cycle over the whole ``R x C`` PE grid, carrying real
values (two's-complement wrap in the accumulator width, like the hardware).
The timing contract it implements is in :mod:`archsim.templates.systolic.tile`;
the cycle count it returns is *observed*, not computed: every operand token
carries a tag (its row of A in WS, its column of W in IS, its k index in OS)
through the PE registers, outputs are collected at the array's output ports
by their tags, and the tile ends in the cycle the last token's result leaves
the bottom-right PE.

Registers per PE (``P = mult_pipeline_stages``):

- WS / IS: ``x`` (streamed operand, forwarded right, with its tag),
  ``psum`` (forwarded down), ``stat_active`` and ``stat_shadow`` (the
  stationary operand; the shadow bank shifts down one row per preload cycle
  and is copied to the active bank at the start of streaming), ``prod`` if P=1.
- OS: ``a`` (forwarded right, with its tag), ``w`` (forwarded down), ``acc``
  (cleared at the tile's cycle 0), ``prod`` if P=1; a result bus per column
  onto which a PE drives ``acc + product`` in the cycle of its final MAC.

A sequence of tiles (:meth:`SystolicArrayDetailed.run_sequence`) runs back to
back on the same registers; a tile with ``preload_hidden`` gets its stationary
operand shifted into the shadow bank during the previous tile, in the R cycles
starting at that tile's bank swap (its cycle L; cycle 0 for an OS tile). A
hidden tile first in a sequence has its shadow loaded before the sequence
(those R cycles are not counted, as if a previous tile had run).

``trace=True`` (print) or ``trace=<callable>`` gives one line per cycle, in
the style of PyMTL3's ``line_trace()``, e.g.::

    ws  t=  33 STR | in r0..: 5 -3 . . | sh: - | out: [2,0]=-114 [1,1]=87 |

(``.`` is an empty/invalid slot; ``sh`` shows the shadow-bank row shifted in.)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from archsim.templates.systolic.fast import ACC_DTYPES, check_operands, wrap
from archsim.templates.systolic.params import PRECISION_BITS, SystolicParams
from archsim.templates.systolic.tile import SystolicTile

TraceArg = bool | Callable[[str], None] | None


def _fmt_row(vals: np.ndarray, tags: np.ndarray, limit: int = 6) -> str:
    items = [(str(int(v)) if t >= 0 else ".") for v, t in zip(vals[:limit], tags[:limit])]
    if len(vals) > limit:
        items.append("…")
    return " ".join(items)


class SystolicArrayDetailed:
    """Register-level model of one ``rows x cols`` array (state persists across tiles)."""

    def __init__(self, params: SystolicParams):
        params.validate()
        self.params = params
        R, C = params.rows, params.cols
        self.R, self.C, self.P = R, C, params.mult_pipeline_stages
        self.acc_bits = PRECISION_BITS[params.acc_precision]
        self.acc_dtype = ACC_DTYPES[params.acc_precision]
        # operand/tag registers: int32 is enough unless the accumulator is 64-bit
        self.op_dtype = np.int64 if self.acc_bits > 32 else np.int32
        # stationary banks: shadow has an extra row 0 = top-edge input of the shift chain
        self.shadow = np.zeros((R + 1, C), self.op_dtype)
        self.active = np.zeros((R, C), self.op_dtype)
        self.cycle = 0  # global cycle counter across tiles
        self.line_trace = ""  # the last trace line

    # ------------------------------------------------------------------
    def run_tile(self, tile: SystolicTile, operands: dict[str, np.ndarray], trace: TraceArg = None
                 ) -> tuple[np.ndarray, int]:
        """Run one tile; return (values, cycles)."""
        return self.run_sequence([(tile, operands)], trace=trace)[0]

    def run_sequence(self, items: Sequence[tuple[SystolicTile, dict[str, np.ndarray]]],
                     trace: TraceArg = None) -> list[tuple[np.ndarray, int]]:
        """Run tiles back to back; return [(values, cycles)] per tile."""
        p = self.params
        emit = print if trace is True else (trace or None)
        prepared = []
        for tile, ops in items:
            tile.check(p.rows, p.cols, p.preload)
            prepared.append((tile, *check_operands(tile, ops, p)))
        results = []
        for j, (tile, a, w, psum) in enumerate(prepared):
            nxt = prepared[j + 1] if j + 1 < len(prepared) else None
            next_stat = None
            if nxt is not None and nxt[0].preload_hidden:
                next_stat = self._stationary(nxt[0], nxt[1], nxt[2])
            if tile.preload_hidden and j == 0:
                # first tile of a sequence: as if a previous tile had loaded the shadow bank
                self.shadow[1:] = self._stationary(tile, a, w)
            if tile.dataflow == "os":
                out, cycles = self._run_os(tile, a, w, next_stat, nxt, emit)
            else:
                out, cycles = self._run_stationary(tile, a, w, next_stat, nxt, emit)
            if psum is not None:  # accumulate at the output port
                out = out.astype(np.int64) + psum
            results.append((wrap(out, self.acc_bits).astype(self.acc_dtype), cycles))
            self.cycle += cycles
        return results

    # ------------------------------------------------------------------
    def _stationary(self, tile: SystolicTile, a: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The R x C stationary operand of a WS/IS tile, zero-padded."""
        s = np.zeros((self.R, self.C), self.op_dtype)
        if tile.dataflow == "ws":
            s[: tile.k, : tile.n] = w  # PE(r, c) = W[r, c]
        else:
            s[: tile.k, : tile.m] = a.T  # PE(r, c) = A[c, r]
        return s

    def _run_stationary(self, tile, a, w, next_stat, nxt, emit):
        """WS (stream rows of A through W) and IS (stream columns of W through A^T)."""
        R, C, P = self.R, self.C, self.P
        if tile.dataflow == "ws":
            X, used_cols = a, tile.n  # X[i, r]: streamed token i, row r
        else:
            X, used_cols = w.T, tile.m
        T = X.shape[0]
        L = 0 if tile.preload_hidden else R
        own_stat = None if tile.preload_hidden else self._stationary(tile, a, w)
        limit = L + T + R + C + P + 4  # safety bound; the loop ends on the last tag
        # skewed left-edge inputs: data and tag per cycle; token i reaches row r at L + i + r
        xs = np.zeros((limit, 2, R), self.op_dtype)
        xs[:, 1, :] = -1
        ii, rr = np.meshgrid(np.arange(T), np.arange(R), indexing="ij")
        xs[L + ii + rr, 0, rr] = np.pad(X, ((0, 0), (0, R - X.shape[1])))
        xs[L + ii + rr, 1, rr] = ii
        # registers
        xb = np.zeros((2, R, C + 1), self.op_dtype)  # [:, :, 0] left edge, [:, :, 1:] x registers
        xb[1] = -1
        ps = np.zeros((R + 1, C), self.acc_dtype)  # ps[0] = 0 (top edge), ps[1:] psum registers
        prod = np.zeros((R, C), self.acc_dtype)
        hist_v = np.zeros((limit, C), self.acc_dtype)  # bottom output port per cycle
        hist_t = np.full((limit, C), -1, np.int64)  # tag of the value on the port
        shadow, active = self.shadow, self.active
        xin, xtag_bottom = xb[0, :, :C], xb[1, R - 1, :C]
        pt = np.full(C, -1, np.int64)  # tag of the bottom row's product register (P = 1)
        done = -1
        next_start = L  # next tile's hidden preload shifts in cycles [L, L + R)
        for t in range(limit):
            if t == L:  # bank swap: the stationary operand is active from the first streaming cycle
                active[...] = shadow[1:]
            # -- stationary shift chain (own preload, or the next tile's hidden one)
            sh_row = None
            if own_stat is not None and t < R:
                sh_row = own_stat[R - 1 - t]
            elif next_stat is not None and next_start <= t < next_start + R:
                sh_row = next_stat[R - 1 - (t - next_start)]
            if sh_row is not None:
                shadow[0] = sh_row
                shadow[1:] = shadow[:R]
            # -- streaming: left edge in, MAC, psum down
            xb[:, :, 0] = xs[t]
            if P:
                np.add(ps[:R], prod, out=ps[1:])
                np.multiply(xin, active, out=prod, casting="unsafe")
                hist_t[t] = pt
                pt[...] = xtag_bottom
            else:
                np.multiply(xin, active, out=prod, casting="unsafe")
                np.add(ps[:R], prod, out=ps[1:])
                hist_t[t] = xtag_bottom
            hist_v[t] = ps[R]
            if emit is not None:
                self._trace(emit, tile, t, L, xs[t], sh_row, hist_v[t], hist_t[t])
            if hist_t[t, C - 1] == T - 1:  # last token's result leaves the bottom-right PE
                done = t
                break
            xb[:, :, 1:] = xb[:, :, :C]  # x registers forward right
        if done < 0:
            raise RuntimeError(f"detailed model: {tile} did not finish in {limit} cycles")
        # collect outputs by tag: port c at a cycle with tag i carries O[i, c]
        tags = hist_t[: done + 1]
        cyc, col = np.nonzero(tags >= 0)
        O = np.zeros((T, C), np.int64)
        got = np.zeros((T, C), np.int64)
        O[tags[cyc, col], col] = hist_v[cyc, col]
        np.add.at(got, (tags[cyc, col], col), 1)
        if not (got == 1).all():
            raise RuntimeError(f"detailed model: {tile} outputs not seen exactly once")
        O = O[:, :used_cols]
        return (O if tile.dataflow == "ws" else O.T), done + 1

    def _run_os(self, tile, a, w, next_stat, nxt, emit):
        """OS: A flows right, W flows down, outputs stay; result bus per column."""
        R, C, P = self.R, self.C, self.P
        m, k, n = tile.m, tile.k, tile.n
        limit = k + R + C + P + 4
        # skewed edge inputs: A[i, t] reaches PE(i, 0) at i + t; W[t, j] reaches PE(0, j) at t + j
        xa = np.zeros((limit, 2, R), self.op_dtype)
        xa[:, 1, :] = -1
        ii, tt = np.meshgrid(np.arange(R), np.arange(k), indexing="ij")
        xa[ii + tt, 0, ii] = np.pad(a, ((0, R - m), (0, 0)))  # padded rows: zero data, real tags
        xa[ii + tt, 1, ii] = tt
        xw = np.zeros((limit, C), self.op_dtype)
        tt2, jj = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
        xw[tt2 + jj, jj] = w
        ab = np.zeros((2, R, C + 1), self.op_dtype)
        ab[1] = -1
        wb = np.zeros((R + 1, C), self.op_dtype)
        acc = np.zeros((R, C), self.acc_dtype)  # cleared at the tile's cycle 0
        prod = np.zeros((R, C), self.acc_dtype)
        ptag = np.full((R, C), -1, self.op_dtype)
        rowidx = np.arange(R, dtype=np.int64)[:, None]
        hist_v = np.zeros((limit, C), np.int64)
        hist_r = np.full((limit, C), -1, np.int64)
        ain, atag = ab[0, :, :C], ab[1, :, :C]
        shadow = self.shadow
        last_injected = -1  # tag of the last A slice injected by the controller
        done = -1
        for t in range(limit):
            sh_row = None
            if next_stat is not None and t < R:  # shadow bank is free during an OS tile
                sh_row = next_stat[R - 1 - t]
                shadow[0] = sh_row
                shadow[1:] = shadow[:R]
            ab[:, :, 0] = xa[t]
            wb[0] = xw[t]
            if xa[t, 1, 0] == k - 1:
                last_injected = k - 1
            if P:
                np.add(acc, prod, out=acc)
                fin_tag = ptag
                np.multiply(ain, wb[:R], out=prod, casting="unsafe")
            else:
                np.multiply(ain, wb[:R], out=prod, casting="unsafe")
                np.add(acc, prod, out=acc)
                fin_tag = atag
            if last_injected == k - 1:  # result bus enabled once the last k-slice is in
                fin = fin_tag == k - 1
                hist_v[t] = np.where(fin, acc, 0).sum(axis=0)
                hist_r[t] = np.where(fin, rowidx, -1).max(axis=0)
            if P:
                ptag[...] = atag
            if emit is not None:
                self._trace(emit, tile, t, 0, xa[t], sh_row, hist_v[t], hist_r[t])
            if hist_r[t, C - 1] == R - 1:
                done = t
                break
            ab[:, :, 1:] = ab[:, :, :C]
            wb[1:] = wb[:R]
        if done < 0:
            raise RuntimeError(f"detailed model: {tile} did not finish in {limit} cycles")
        rows = hist_r[: done + 1]
        cyc, col = np.nonzero(rows >= 0)
        O = np.zeros((R, C), np.int64)
        got = np.zeros((R, C), np.int64)
        O[rows[cyc, col], col] = hist_v[cyc, col]
        np.add.at(got, (rows[cyc, col], col), 1)
        if not (got == 1).all():
            raise RuntimeError(f"detailed model: {tile} outputs not seen exactly once")
        return O[:m, :n], done + 1

    # ------------------------------------------------------------------
    def _trace(self, emit, tile, t, L, edge, sh_row, port_v, port_tag):
        phase = "PRE" if t < L else "STR"
        sh = "-" if sh_row is None else _fmt_row(sh_row, np.zeros(len(sh_row), np.int64), 4)
        outs = [
            (f"[{int(g)},{c}]={int(v)}" if tile.dataflow != "is" else f"[{c},{int(g)}]={int(v)}")
            for c, (v, g) in enumerate(zip(port_v, port_tag)) if g >= 0
        ]
        line = (f"{tile.dataflow}  t={self.cycle + t:5d} {phase} | in r0..: {_fmt_row(edge[0], edge[1])} "
                f"| sh: {sh} | out: {' '.join(outs[:6])}{' …' if len(outs) > 6 else ''} |")
        self.line_trace = line
        emit(line)


def detailed_tile(params: SystolicParams, tile: SystolicTile, operands: dict[str, np.ndarray],
                  trace: TraceArg = None) -> tuple[np.ndarray, int]:
    """Run one tile on a fresh array; return (values, cycles)."""
    return SystolicArrayDetailed(params).run_tile(tile, operands, trace=trace)


def detailed_sequence(params: SystolicParams,
                      items: Sequence[tuple[SystolicTile, dict[str, np.ndarray]]],
                      trace: TraceArg = None) -> list[tuple[np.ndarray, int]]:
    """Run tiles back to back on one array; return [(values, cycles)]."""
    return SystolicArrayDetailed(params).run_sequence(items, trace=trace)


__all__ = ["SystolicArrayDetailed", "detailed_tile", "detailed_sequence"]
