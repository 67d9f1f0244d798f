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
- ``pe_style="tpe_pipelined"``: the output port is ``D = 1`` register stage after
  the bottom PE / the result bus (the pipelined edge adder); ``tpe`` and
  ``standard`` present there directly (the carry-save pair's values are the
  integers modelled here; only their timing is the PE's).

The forwarded-operand registers of a row (or column) form a shift register;
the model stores it as a sliding window over the sequence injected at the
array edge (time reversed, so the window is a plain slice), so moving the
window one step per cycle is the shift and costs no copy.

A sequence of tiles (:meth:`SystolicArrayDetailed.run_sequence`) runs back to
back on the same registers; a tile with ``preload_hidden`` gets its stationary
operand shifted into the shadow bank during the previous tile, in the R cycles
starting at that tile's bank swap (its cycle L). A hidden tile first in a
sequence has its shadow loaded before the sequence (those R cycles are not
counted, as if a previous WS/IS tile had run); a hidden tile after an OS tile
is an error (the OS tile's W operand occupies the shadow chain).

``trace=True`` (print) or ``trace=<callable>`` gives one line per cycle, in
the style of PyMTL3's ``line_trace()``, e.g.::

    ws  t=  33 STR | in r0..: 5 -3 . . | sh: - | out: [2,0]=-114 [1,1]=87 |

(``.`` is an empty/invalid slot; ``sh`` shows the shadow-bank row shifted in.)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from archsim.templates.systolic.operands import ACC_DTYPES, check_operands, wrap
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
        # pe_style tpe_pipelined: the column's edge adder has a second register stage, so a value
        # reaches the output port D cycles after the bottom PE (or the OS result bus) presents it
        self.D = params.drain_cycles
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
        for j in range(1, len(prepared)):
            if prepared[j][0].preload_hidden and prepared[j - 1][0].dataflow == "os":
                raise ValueError(
                    f"preload_hidden: expected False for a tile following an os tile (tile {j})")
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

    def _shift_schedule(self, limit, own_stat, next_stat, next_start):
        """Per cycle: the row presented at the top of the shadow shift chain, or None."""
        R = self.R
        sched = [None] * limit
        if own_stat is not None:
            for t in range(R):
                sched[t] = own_stat[R - 1 - t]
        if next_stat is not None:
            for t in range(R):
                sched[next_start + t] = next_stat[R - 1 - t]
        return sched

    @staticmethod
    def _shift_register(edge: np.ndarray, length: int, fill) -> tuple[np.ndarray, int]:
        """A shift register of ``length`` stages fed by ``edge[t]`` (shape (T, ...)).

        Returns ``(z, base)``: stage ``s`` presents ``edge[t - s]`` to its PE in
        cycle t (``fill`` before the first cycle), and all stages in cycle t are
        ``z[..., base - t : base - t + length]`` (time reversed on the last,
        contiguous axis). Moving the window one step per cycle *is* the shift;
        there is no per-cycle copy.
        """
        pad = np.broadcast_to(np.asarray(fill, edge.dtype), (length - 1,) + edge.shape[1:])
        z = np.concatenate([pad, edge], axis=0)  # z[u] = edge[u - (length - 1)]
        n = z.shape[0]
        zr = np.ascontiguousarray(np.moveaxis(z[::-1], 0, -1))  # zr[..., v] = z[n - 1 - v]
        return zr, n - length

    @staticmethod
    def _stage_history(zr_lane: np.ndarray, base: int, length: int, cycles: int) -> np.ndarray:
        """(cycles, length): what each stage of one lane presented in cycles 0..cycles-1."""
        win = np.lib.stride_tricks.sliding_window_view(zr_lane, length)
        return win[base - np.arange(cycles)]

    def _run_stationary(self, tile, a, w, next_stat, nxt, emit):
        """WS (stream rows of A through W) and IS (stream columns of W through A^T)."""
        R, C, P, D = self.R, self.C, self.P, self.D
        if tile.dataflow == "ws":
            X, used_cols = a, tile.n  # X[i, r]: streamed token i, row r
        else:
            X, used_cols = w.T, tile.m
        T = X.shape[0]
        L = 0 if tile.preload_hidden else R
        own_stat = None if tile.preload_hidden else self._stationary(tile, a, w)
        limit = L + T + R + C + P + D + 4  # safety bound; the loop ends on the last tag
        # left-edge inputs per cycle (data, tag); token i reaches row r at L + i + r (the skew)
        xs = np.zeros((limit, 2, R), self.op_dtype)
        xs[:, 1, :] = -1
        ii, rr = np.meshgrid(np.arange(T), np.arange(R), indexing="ij")
        xs[L + ii + rr, 0, rr] = np.pad(X, ((0, 0), (0, R - X.shape[1])))
        xs[L + ii + rr, 1, rr] = ii
        # x registers of each row: shift register along the row (stage c = input of PE(r, c))
        zr, base = self._shift_register(xs, C, np.array([0, -1])[:, None])  # zr: (2, R, time)
        zx = zr[0]
        ps = np.zeros((R + 1, C), self.acc_dtype)  # ps[0] = 0 (top edge), ps[1:] psum registers
        prod = np.zeros((R, C), self.acc_dtype)
        hist_v = np.zeros((limit, C), self.acc_dtype)  # bottom output port per cycle
        shadow, active = self.shadow, self.active
        sched = self._shift_schedule(limit, own_stat, next_stat, L)
        mul, add = np.multiply, np.add
        ps_in, ps_out, bottom = ps[:R], ps[1:], ps[R]
        # tag of the bottom-right PE's MAC per cycle (stage C-1 of the last row's register)
        last_tag = zr[1, R - 1, base + C - 1 - np.arange(limit)].tolist()
        done = -1
        for t in range(limit):
            if t == L:  # bank swap: the stationary operand is active from the first streaming cycle
                active[...] = shadow[1:]
            sh_row = sched[t]
            if sh_row is not None:  # shadow shift chain moves down one row
                shadow[0] = sh_row
                shadow[1:] = shadow[:R]
            if P:  # product register: the add uses last cycle's product
                add(ps_in, prod, out=ps_out)
                mul(zx[:, base - t: base - t + C], active, out=prod, casting="unsafe")
            else:
                mul(zx[:, base - t: base - t + C], active, out=prod, casting="unsafe")
                add(ps_in, prod, out=ps_out)
            hist_v[t] = bottom
            if emit is not None:
                lag = P + D
                port_tag = zr[1, R - 1, base - t + lag: base - t + lag + C] if t >= lag else np.full(C, -1)
                self._trace(emit, tile, t, L, xs[t], sh_row, hist_v[t - D] if t >= D else hist_v[t] * 0, port_tag)
            if t >= P + D and last_tag[t - P - D] == T - 1:  # last token's result reaches the port
                done = t
                break
        if done < 0:
            raise RuntimeError(f"detailed model: {tile} did not finish in {limit} cycles")
        # the port of column c in cycle t carries O[tag, c], tag = that of the bottom PE's MAC
        tags = np.full((done + 1, C), -1, np.int64)
        tags[P + D:] = self._stage_history(zr[1, R - 1], base, C, done + 1 - P - D)
        port_v = np.zeros_like(hist_v[: done + 1])
        port_v[D:] = hist_v[: done + 1 - D]  # the edge adder's extra stage
        O = self._collect(tile, tags, port_v, (T, C))
        O = O[:, :used_cols]
        return (O if tile.dataflow == "ws" else O.T), done + 1

    def _collect(self, tile, tags, vals, shape):
        cyc, col = np.nonzero(tags >= 0)
        O = np.zeros(shape, np.int64)
        got = np.zeros(shape, np.int64)
        O[tags[cyc, col], col] = vals[cyc, col]
        np.add.at(got, (tags[cyc, col], col), 1)
        if not (got == 1).all():
            raise RuntimeError(f"detailed model: {tile} outputs not seen exactly once")
        return O

    def _run_os(self, tile, a, w, next_stat, nxt, emit):
        """OS: A flows right, W flows down, outputs stay; result bus per column."""
        R, C, P, D = self.R, self.C, self.P, self.D
        m, k, n = tile.m, tile.k, tile.n
        limit = k + R + C + P + D + 4
        # edge inputs: A[i, t] reaches PE(i, 0) at i + t; W[t, j] reaches PE(0, j) at t + j
        xa = np.zeros((limit, 2, R), self.op_dtype)
        xa[:, 1, :] = -1
        ii, tt = np.meshgrid(np.arange(R), np.arange(k), indexing="ij")
        xa[ii + tt, 0, ii] = np.pad(a, ((0, R - m), (0, 0)))  # padded rows: zero data, real tags
        xa[ii + tt, 1, ii] = tt
        xw = np.zeros((limit, C), self.op_dtype)
        tt2, jj = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
        xw[tt2 + jj, jj] = w
        za, base_a = self._shift_register(xa, C, np.array([0, -1])[:, None])  # (2, R, time)
        zw, base_w = self._shift_register(xw, R, 0)  # (C, time): stage r of column c
        zwT = zw.T  # (time, C): rows r of the window are the vertical stages
        acc = np.zeros((R, C), self.acc_dtype)  # cleared at the tile's cycle 0
        prod = np.zeros((R, C), self.acc_dtype)
        rowidx = np.arange(R, dtype=np.int64)[:, None]
        hist_v = np.zeros((limit, C), np.int64)
        hist_r = np.full((limit, C), -1, np.int64)
        mul, add = np.multiply, np.add
        bus_on = False  # result bus enabled once the controller has injected the last k-slice
        done = -1
        sh_row = None
        for t in range(limit):
            if xa[t, 1, 0] == k - 1:
                bus_on = True
            if P:
                add(acc, prod, out=acc)
                mul(za[0, :, base_a - t: base_a - t + C], zwT[base_w - t: base_w - t + R], out=prod,
                    casting="unsafe")
            else:
                mul(za[0, :, base_a - t: base_a - t + C], zwT[base_w - t: base_w - t + R], out=prod,
                    casting="unsafe")
                add(acc, prod, out=acc)
            if bus_on and t >= P:
                u = base_a - t + P
                fin = za[1, :, u: u + C] == k - 1  # this cycle's add is the PE's final MAC
                hist_v[t] = np.where(fin, acc, 0).sum(axis=0)
                hist_r[t] = np.where(fin, rowidx, -1).max(axis=0)
            if emit is not None:
                self._trace(emit, tile, t, 0, xa[t], sh_row, hist_v[t], hist_r[t])
            if t >= D and hist_r[t - D, C - 1] == R - 1:  # bottom-right PE's result reaches the port
                done = t
                break
        if done < 0:
            raise RuntimeError(f"detailed model: {tile} did not finish in {limit} cycles")
        port_r, port_v = np.full((done + 1, C), -1, np.int64), np.zeros((done + 1, C), np.int64)
        port_r[D:], port_v[D:] = hist_r[: done + 1 - D], hist_v[: done + 1 - D]  # the edge adder's extra stage
        O = self._collect(tile, port_r, port_v, (R, C))
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
