"""Mapper of the systolic template: tiles, dataflow / loop-order search, emission.

For each GEMM of a lowered op (:mod:`mappers.lower`) the mapper

1. enumerates candidate plans (:class:`mappers.tiling.TilePlan`): for every
   allowed dataflow, buffer tile sizes of the two *stationary* dims
   (multiples of the array extent: powers of two, balanced splits, the full
   dim) with the *streamed* dim as long as the buffers allow (and its
   balanced split), in each loop order (``mnk``, ``nmk``, ``nkm`` with
   resident or spilled partial sums);
2. scores all candidates at once with numpy: compute cycles in the closed
   form of the timing contract (:mod:`archsim.templates.systolic.tile`; the
   same sum :func:`~archsim.templates.systolic.fast.gemm_fold_cycles` gives
   per buffer tile), DRAM bytes (:func:`mappers.tiling.traffic`), estimated
   cycles ``max(compute, dram_bytes / bandwidth)`` plus pipeline fill and drain,
   and energy ``dram_bytes * dram_pj + sram_bytes * sram_pj`` (the MACs are
   the same for every candidate);
3. picks the least ``objective`` (ties: the other objective, then fewer
   commands) and emits it (:func:`mappers.tiling.emit_gemm`): one Compute
   per array fold, folds in SCALE-Sim's order (column folds outer, row folds
   inner), ``accumulate`` on every fold that continues a reduction and
   ``preload_hidden`` on every WS/IS fold but the layer's first when
   ``params.preload == "double_buffered"``.

Dataflow: the ``dataflow`` option if given, else ``params.dataflow``; ``"auto"``
searches ws, os and is per layer. Fold limits per dataflow (R x C array):
WS ``k <= R, n <= C`` (m streamed), IS ``k <= R, m <= C`` (n streamed), OS
``m <= R, n <= C`` (k streamed).

Column groups (speed and memory): a GEMM whose array folds would exceed
:data:`FOLD_LIMIT` (an LLM's LM head: 4096 x 128256 is 513k folds on a
32x32 array) is mapped as ``G`` identical groups of ``n / G`` columns
(``LayerProgram.repeat``; ``mapping["column_groups"]``), ``G`` the smallest
divisor of ``n / cols`` that brings a group under the limit, so every fold
keeps its shape. The groups are independent (disjoint weights and outputs);
what is lost is the overlap of one group's drain with the next one's fill
(a few thousand cycles per group: +0.1 % on Llama-3-8B's LM head, +0.007 %
on the whole decode step) and, when the input fits one tile, its reloads per
group. Stall-free SCALE-Sim presets keep their cycles exactly. Not for IS,
which streams n.

Periods (speed and memory): a layer whose only part is a long GEMM (an LLM's
LM head at prefill on a 16x16 array: 64k buffer tiles) runs as ``count``
identical periods of its command stream (``LayerProgram.repeat``;
``mapping["periods"]``) cut from the middle of the stream by
:func:`mappers.periods.periodic_slice` (at least :data:`PERIOD_STEPS` buffer
tiles each; DRAM bytes and tiles checked against the closed form). Bytes,
energy, tiles and commands are the whole stream's exactly; the cycles lose the
layer's fill and drain (first loads, last store, two latencies) and, with a
double-buffered WS/IS preload, the first fold's R preload cycles (every fold
of a period has its preload hidden; ``compute_cycles`` -R); when DRAM-bound
each period may add a latency. A GEMM runs as periods only if that bound
(:meth:`SystolicMapper.period_error_bound`) is under :data:`PERIOD_ERROR` of
its estimated cycles. Never on ``scalesim_compat`` presets (their cycles stay
SCALE-Sim's exactly). Column groups and periods combine (repeat multiplies).
``PERIODS = False`` always emits the whole stream.

SCALE-Sim compatibility (option ``scalesim_compat``, set by the ``scalesim-*``
presets; convolutions then default to ``conv_lowering="scalesim"``): every fold streams the
whole free dimension, as SCALE-Sim's stall-free mode does: the streamed
operand and the outputs flow through their buffers, so only the stationary
operand's tile must fit.
"""
from __future__ import annotations

import numpy as np

from archsim.errors import MappingError
from archsim.program import LayerProgram, Store
from archsim.templates.systolic.options import SystolicOptions
from archsim.templates.systolic.tile import GEOMETRY, SystolicTile
from mappers.emit import BufferLayout, Emitter, emit_gather, emit_vector
from mappers.fusion import with_epilogue
from mappers.lower import Gather, Gemm, VectorWork, lower_op
from mappers.periods import periodic_slice
from mappers.registry import Mapper, arch_key
from mappers.tiling import (ORDERS, MemoryCosts, TilePlan, a_load_bytes, class_sum, dim_candidates, emit_gemm,
                            nbytes, occupancy, traffic)
from workloads.precision import precision_bits

ALL_DATAFLOWS = ("ws", "os", "is")
#: array folds above which a GEMM is mapped as identical column groups (see the module docstring)
FOLD_LIMIT = 65536
#: run a long GEMM as ``count`` identical periods of its command stream (module docstring,
#: "Periods"; :mod:`mappers.periods`); False: always the whole stream
PERIODS = True
#: buffer tiles (steps) per period at least
PERIOD_STEPS = 256
#: periods only when their cycles may differ from the whole stream's by at most this fraction
PERIOD_ERROR = 1e-4
_ORDER_CODE = {o: i for i, o in enumerate(ORDERS)}


class SystolicMapper(Mapper):
    """``make_mapper(arch, options)`` result: call it with an op."""

    def __init__(self, arch, options):
        p = arch.params
        self.arch = arch
        self.options = options
        self.R, self.C = int(p.rows), int(p.cols)
        self.P = int(p.mult_pipeline_stages) + int(p.drain_cycles)
        self.preload = p.preload
        own = options.template or SystolicOptions()
        dataflow = str(own.dataflow or p.dataflow).lower()
        self.dataflows = ALL_DATAFLOWS if dataflow == "auto" else (dataflow,)
        self.layout = BufferLayout.from_arch(arch)
        self.compat = bool(own.scalesim_compat)
        self.conv_lowering = options.conv_lowering or ("scalesim" if self.compat else "im2col_padded")
        self.objective = options.objective
        costs = MemoryCosts.of(arch)
        self.inv_bw, self.latency, self.e_dram, self.e_sram = costs.inv_bw, costs.latency, costs.e_dram, costs.e_sram
        self._gemm_key = self._vector_key = None
        #: element-wise classes the output path runs (mappers.fusion); SCALE-Sim has no such unit
        self.output_ops = () if self.compat else tuple(arch.output_ops)

    # -- what a layer's mapping reads of the arch (mappers.registry) ----------
    def arch_key(self, op) -> str:
        """The arch fields the mapping of ``op`` reads.

        An op with a GEMM reads the template params (array shape, dataflow,
        preload, pipeline), the buffers, the DRAM bandwidth and latency and
        the tech table (the plan search's estimates), and whether the arch
        is a SCALE-Sim one. An op with only vector work and gathers reads
        the buffer layout alone (:func:`mappers.emit.emit_vector` /
        :func:`~mappers.emit.emit_gather` chunk by slot bytes): not the
        params, DRAM, vector unit, clock or tech.
        """
        low = lower_op(op, self.conv_lowering)
        if any(isinstance(part, Gemm) for part in low.parts):
            if self._gemm_key is None:
                self._gemm_key = arch_key(self.arch, ("params", "buffers", "dram.bytes_per_cycle",
                                                      "dram.latency_cycles", "tech"), compat=self.compat)
            return self._gemm_key
        if self._vector_key is None:
            lay = self.layout
            self._vector_key = arch_key(self.arch, (), layout=[lay.unified, lay.capacity])
        return self._vector_key

    # -- one op -------------------------------------------------------------
    def __call__(self, op, epilogue=None) -> LayerProgram:
        """Map ``op``; ``epilogue`` (:class:`mappers.fusion.Epilogue`): element-wise
        ops run in the output path as the op's GEMM drains."""
        low = with_epilogue(lower_op(op, self.conv_lowering), epilogue)
        low, groups = self._column_groups(low)
        em = Emitter(self.layout)
        state = {"first": True}
        plans, mappings, periods = [], [], 1
        for part in low.parts:
            start = len(em.commands)
            if isinstance(part, Gemm):
                plan, est = self.choose(part, op.name)
                plans.append(plan)
                mp = plan.as_mapping(part)
                mp.update(role=part.role, m=part.m, k=part.k, n=part.n, **est)
                if part.epilogue:  # the fused layers name this one (mapping["fused_into"])
                    mp["epilogue"] = list(part.epilogue)
                cut = self._periods(part, plan, est) if len(low.parts) == 1 else None
                if cut is None:
                    self._emit_gemm(em, part, plan, state)
                else:
                    em.commands.extend(cut[0])
                    periods = cut[1]
                    mp["periods"] = {"count": cut[1], "steps": cut[2]}
                mappings.append(mp)
            elif isinstance(part, VectorWork):
                emit_vector(em, part, self.layout)
            elif isinstance(part, Gather):
                emit_gather(em, part, self.layout)
            stores = [c.id for c in em.commands[start:] if isinstance(c, Store)]
            em.after_input = (stores[-1],) if stores else ()
        mapping: dict = {"column_groups": groups} if groups > 1 else {}
        if mappings:
            mapping.update({k: v for k, v in mappings[0].items()})
            if len(mappings) > 1:
                mapping["gemms"] = mappings
        # the SCALE-Sim flag matters to GEMM plans only (see arch_key)
        signature = ("systolic", self.compat if plans else None, low, tuple(plans), periods)
        return LayerProgram(op.name, op.kind, op.macs(), em.commands, signature, mapping,
                            repeat=low.repeat * periods)

    def period_error_bound(self, g: Gemm, plan: TilePlan, count: int, est: dict) -> float:
        """Cycles by which ``count`` periods may differ from the whole stream (module docstring,
        "Periods"): the layer's fill and drain (first loads, last store, latencies), one buffer
        tile and the first fold's preload; when DRAM-bound, also a latency and a tile per period."""
        R, C = self.R, self.C
        tm, tk, tn = min(plan.tm, g.m), min(plan.tk, g.k), min(plan.tn, g.n)
        edge_bytes = (a_load_bytes(g, tm, tk) + nbytes(tk * tn, precision_bits(g.b_precision))
                      + 2 * nbytes(tm * tn, max(precision_bits(g.out_precision), precision_bits(g.acc_precision))))
        d_rows, d_cols, d_str = GEOMETRY[plan.dataflow]
        d = {"m": tm, "k": tk, "n": tn}
        tile = -(-d[d_rows] // R) * -(-d[d_cols] // C) * (R + C + self.P + d[d_str] + R)
        edge = edge_bytes * self.inv_bw + 2 * self.latency + tile + R
        if est["est_compute_cycles"] < est["est_dram_bytes"] * self.inv_bw:
            edge += count * (self.latency + tile)
        return edge

    def _periods(self, g: Gemm, plan: TilePlan, est: dict):
        """``(commands, count, steps)`` of ONE of ``count`` identical periods of ``g``'s stream
        (:func:`mappers.periods.periodic_slice`; every fold's preload hidden where the layer's
        are), or None: periods off, a SCALE-Sim preset (its cycles stay SCALE-Sim's exactly), or
        a bound on the cycles they may move over :data:`PERIOD_ERROR` of the GEMM's; also None for
        a subclass that emits its GEMMs its own way (``_emit_gemm``: mappers.attention's 2D array)."""
        if not PERIODS or self.compat or type(self)._emit_gemm is not SystolicMapper._emit_gemm:
            return None
        R, C = self.R, self.C
        hide = self.preload == "double_buffered" and plan.dataflow != "os"
        df = plan.dataflow
        wbits = self._packed_bits(g)
        cache: dict = {}

        def split(sm, sk, sn, acc):  # the middle of the stream: every WS/IS fold hidden when double-buffered
            key = (sm, sk, sn, acc)
            if key not in cache:
                cache[key] = _folds(df, R, C, sm, sk, sn, acc, hide, wbits)
            return cache[key]

        cut = periodic_slice(g, plan, split, self.layout, PERIOD_STEPS)
        if cut is not None and self.period_error_bound(g, plan, cut[1], est) > PERIOD_ERROR * est["est_cycles"]:
            return None
        return cut

    def _packed_bits(self, g: Gemm) -> int:
        """:func:`packed_weight_bits` of ``g`` on this array."""
        width = self.arch.params.weight_precision
        return packed_weight_bits(g, precision_bits(width)) if width else 0

    def _column_groups(self, low):
        """``(low, G)``: ``low`` with its single GEMM split into ``G`` column groups
        run as repeats when its folds exceed :data:`FOLD_LIMIT` (G = 1: unchanged)."""
        if "is" in self.dataflows or len(low.parts) != 1 or not isinstance(low.parts[0], Gemm):
            return low, 1  # IS streams n: column groups would not cut its folds
        g = low.parts[0]
        R, C = self.R, self.C
        # folds: WS k x n (m streamed), OS m x n (k streamed); the fewer of the allowed ones
        folds = -(-g.n // C) * min(-(-(g.k if df == "ws" else g.m) // R) for df in self.dataflows)
        if folds <= FOLD_LIMIT or g.n % C:
            return low, 1
        cols = g.n // C
        for groups in range(2, cols + 1):
            if cols % groups == 0 and folds // groups <= FOLD_LIMIT:
                break
        else:
            return low, 1
        import dataclasses

        part = dataclasses.replace(g, n=g.n // groups)
        return dataclasses.replace(low, parts=(part,), repeat=low.repeat * groups), groups

    def _emit_gemm(self, em, g: Gemm, plan: TilePlan, state: dict) -> None:
        R, C = self.R, self.C
        hide_ok = self.preload == "double_buffered" and plan.dataflow != "os"
        df = plan.dataflow
        wbits = self._packed_bits(g)

        cache: dict = {}

        def folds(sm, sk, sn, acc, hidden):
            return _folds(df, R, C, sm, sk, sn, acc, hidden, wbits)

        def split(sm, sk, sn, acc):
            key = (sm, sk, sn, acc)
            tiles = cache.get(key)
            if tiles is None:
                tiles = cache[key] = folds(sm, sk, sn, acc, hide_ok)
            if state["first"]:
                state["first"] = False
                if hide_ok:  # the layer's first fold cannot have its preload hidden
                    return folds(sm, sk, sn, acc, False)[:1] + tiles[1:]
            return tiles

        emit_gemm(em, g, plan, split)

    # -- search ---------------------------------------------------------------
    def candidates(self, g: Gemm, dataflow: str):
        """Arrays (tm, tk, tn, order_code, spill) of the candidate plans of one dataflow."""
        R, C = self.R, self.C
        d_rows, d_cols, d_str = GEOMETRY[dataflow]
        dims = {"m": g.m, "k": g.k, "n": g.n}
        bits = {"input": precision_bits(g.a_precision), "weight": precision_bits(g.b_precision),
                # a fused residual tile sits beside each accumulator tile (mappers.tiling.occupancy)
                "output": precision_bits(g.acc_precision) + (precision_bits(g.out_precision) if g.residual else 0)}
        operand_dims = {"input": ("m", "k"), "weight": ("k", "n"), "output": ("m", "n")}
        stationary_operand = {"ws": "weight", "is": "input", "os": "output"}[dataflow]
        c1 = dim_candidates(dims[d_rows], R)
        c2 = dim_candidates(dims[d_cols], C)
        rows = []
        D3 = dims[d_str]
        unified = self.layout.unified
        cap = self.layout.capacity
        for s1 in c1:
            for s2 in c2:
                fixed = {d_rows: s1, d_cols: s2}
                if self.compat:
                    # only the stationary operand must fit (2 slots)
                    od = operand_dims[stationary_operand]
                    need = 2 * nbytes(fixed[od[0]] * fixed[od[1]], bits[stationary_operand])
                    avail = cap["unified"] if unified else cap[stationary_operand]
                    if need <= avail:
                        rows.append((fixed, D3))
                    continue
                # largest streamed length t with every operand's 2 slots fitting
                if unified:
                    const_bits = 0
                    per_t_bits = 0
                    for operand, (da, db) in operand_dims.items():
                        if d_str in (da, db):
                            other = fixed[db if da == d_str else da]
                            per_t_bits += 2 * other * bits[operand]
                        else:
                            const_bits += 2 * fixed[da] * fixed[db] * bits[operand]
                    t = (cap["unified"] * 8 - const_bits - 48) // per_t_bits
                else:
                    t = D3
                    ok = True
                    for operand, (da, db) in operand_dims.items():
                        if d_str in (da, db):
                            other = fixed[db if da == d_str else da]
                            t = min(t, (cap[operand] // 2 * 8) // (other * bits[operand]))
                        elif 2 * nbytes(fixed[da] * fixed[db], bits[operand]) > cap[operand]:
                            ok = False
                    if not ok:
                        continue
                t = min(t, D3)
                if t < 1:
                    continue
                rows.append((fixed, t))
                bal = -(-D3 // -(-D3 // t))
                if bal != t:
                    rows.append((fixed, bal))
        if not rows:
            return None
        out = []
        for fixed, t in rows:
            tm = fixed.get("m", t)
            tk = fixed.get("k", t)
            tn = fixed.get("n", t)
            nm, nk = -(-g.m // tm), -(-g.k // tk)
            out.append((tm, tk, tn, 0, False))
            out.append((tm, tk, tn, 1, False))
            if nk > 1 and nm > 1 and not self.compat:
                occ = occupancy(g, tm, tk, tn, nm)
                if self.layout.fits(occ):
                    out.append((tm, tk, tn, 2, False))
                else:
                    out.append((tm, tk, tn, 2, True))
        arr = np.array([o[:4] for o in out], dtype=np.int64)
        spill = np.array([o[4] for o in out], dtype=bool)
        return arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], spill

    def score(self, g: Gemm, dataflow: str, tm, tk, tn, order, spill):
        """(est_cycles, energy_pj, compute_cycles, dram_bytes, steps) arrays."""
        R, C, P = self.R, self.C, self.P
        d_rows, d_cols, d_str = GEOMETRY[dataflow]

        def folds_and_stream(sm, sk, sn):
            d = {"m": sm, "k": sk, "n": sn}
            return -(-d[d_rows] // R) * -(-d[d_cols] // C), d[d_str]

        def fold_cycles(sm, sk, sn):
            f, s = folds_and_stream(sm, sk, sn)
            return f * (R + C - 2 + P + s)

        def fold_count(sm, sk, sn):
            return folds_and_stream(sm, sk, sn)[0]

        compute = class_sum(g, tm, tk, tn, fold_cycles)
        nfolds = class_sum(g, tm, tk, tn, fold_count)
        if dataflow != "os":
            compute = compute + (R if self.preload == "double_buffered" else nfolds * R)
        tr = traffic(g, tm, tk, tn, order, spill)
        dram = tr.total
        abits, bbits, pbits = (precision_bits(g.a_precision), precision_bits(g.b_precision),
                               precision_bits(g.acc_precision))

        def sram(sm, sk, sn):
            d = {"m": sm, "k": sk, "n": sn}
            f1 = -(-d[d_rows] // R)
            f2 = -(-d[d_cols] // C)
            a = nbytes(sm * sk, abits)
            w = nbytes(sk * sn, bbits)
            o = nbytes(sm * sn, pbits)
            if dataflow == "ws":  # A streamed once per column fold; psums per row fold
                return a * f2 + w + o * (2 * f1 - 1)
            if dataflow == "is":  # W streamed once per column (m) fold
                return a + w * f2 + o * (2 * f1 - 1)
            return a * f2 + w * f1 + o  # os

        sram_bytes = class_sum(g, tm, tk, tn, sram) + dram  # every DRAM byte is also written/read on chip
        first = (a_load_bytes(g, np.minimum(tm, g.m), np.minimum(tk, g.k))
                 + nbytes(np.minimum(tk, g.k) * np.minimum(tn, g.n), bbits))
        last = nbytes(np.minimum(tm, g.m) * np.minimum(tn, g.n), precision_bits(g.out_precision))
        # overlap bound + pipeline fill (first tiles in) and drain (last tile out)
        est = (np.maximum(compute, dram * self.inv_bw) + 2 * self.latency
               + (first + last) * self.inv_bw)
        energy = dram * self.e_dram + sram_bytes * self.e_sram
        steps = (-(-g.m // tm)) * (-(-g.k // tk)) * (-(-g.n // tn))
        return est, energy, compute, dram, steps

    def evaluate(self, g: Gemm, dataflows=None):
        """All candidates of ``dataflows`` (default: the allowed ones) with scores.

        Returns a list of (dataflow, arrays dict) for tests and reports.
        """
        res = []
        for df in dataflows or self.dataflows:
            cand = self.candidates(g, df)
            if cand is None:
                continue
            tm, tk, tn, order, spill = cand
            est, energy, compute, dram, steps = self.score(g, df, tm, tk, tn, order, spill)
            res.append((df, {"tm": tm, "tk": tk, "tn": tn, "order": order, "spill": spill, "est_cycles": est,
                             "energy_pj": energy, "compute_cycles": compute, "dram_bytes": dram,
                             "steps": steps}))
        return res

    #: plans within this fraction of the best objective count as equal; among
    #: them the one with the fewest buffer tiles (commands) wins
    TOLERANCE = 0.01

    def choose(self, g: Gemm, name: str = "", dataflows=None):
        """The best plan under the objective and its estimates."""
        pool = []
        for df, c in self.evaluate(g, dataflows):
            est = np.asarray(c["est_cycles"], dtype=float)
            en = np.asarray(c["energy_pj"], dtype=float)
            primary, secondary = (est, en) if self.objective == "cycles" else (en, est)
            pool.append((df, c, primary, secondary))
        if not pool:
            raise MappingError(
                f"{name}: a {g.m}x{g.k}x{g.n} GEMM does not fit the buffers of {self.arch.name} "
                f"(no tile of one array fold fits)")
        best_primary = min(float(p.min()) for _, _, p, _ in pool)
        limit = best_primary * (1.0 + self.TOLERANCE)
        best = None
        for df, c, primary, secondary in pool:
            steps = np.where(primary <= limit, c["steps"], np.iinfo(np.int64).max)
            idx = int(np.lexsort((secondary, primary, steps))[0])
            if primary[idx] > limit:
                continue
            key = (int(steps[idx]), float(primary[idx]), float(secondary[idx]))
            if best is None or key < best[0]:
                best = (key, df, c, idx)
        _, df, c, i = best
        plan = TilePlan(df, int(c["tm"][i]), int(c["tk"][i]), int(c["tn"][i]), ORDERS[int(c["order"][i])],
                        bool(c["spill"][i]))
        est = {"est_cycles": int(c["est_cycles"][i]), "est_energy_pj": float(c["energy_pj"][i]),
               "est_compute_cycles": int(c["compute_cycles"][i]), "est_dram_bytes": int(c["dram_bytes"][i])}
        return plan, est


def _folds(df: str, R: int, C: int, sm: int, sk: int, sn: int, acc: bool, hidden: bool, wbits: int = 0) -> list:
    """The array folds of one ``sm x sk x sn`` buffer tile in SCALE-Sim's order (module docstring);
    ``wbits``: packed bits per weight in the buffer (0: the array's own width)."""
    if df == "ws":
        return [SystolicTile("ws", sm, min(R, sk - k0), min(C, sn - n0), acc or k0 > 0, hidden, wbits)
                for n0 in range(0, sn, C) for k0 in range(0, sk, R)]
    if df == "is":
        return [SystolicTile("is", min(C, sm - m0), min(R, sk - k0), sn, acc or k0 > 0, hidden, wbits)
                for m0 in range(0, sm, C) for k0 in range(0, sk, R)]
    return [SystolicTile("os", min(R, sm - m0), sk, min(C, sn - n0), acc, False, wbits)
            for n0 in range(0, sn, C) for m0 in range(0, sm, R)]


def packed_weight_bits(g: Gemm, array_weight_bits: int) -> int:
    """Bits per weight of ``g``'s B operand as the weight buffer holds it when narrower than the
    array's operands (packed sub-byte codes, as they come from DRAM); 0 = the array's own width."""
    bits = precision_bits(g.b_precision)
    return bits if bits < array_weight_bits else 0


def make_mapper(arch, options) -> SystolicMapper:
    return SystolicMapper(arch, options)
