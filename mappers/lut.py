"""Mapper of the LUT template: low-bit GEMMs on the LUT array, everything else on the vector unit.

Each GEMM of a lowered op (:mod:`mappers.lower`) whose B is a learned weight in a
format the core is built for (``params.weight_formats``), with activations in a
built format (``params.activation_formats``), runs on the LUT array:

- K is padded with zero activations to a multiple of ``group_k`` (of
  ``scale_group`` with per-group scales): a zero activation adds nothing
  whatever its weight, so the result is unchanged and the padding costs cycles;
- buffer tiles ``tm x tk x tn`` and a loop order (``mnk``, ``nmk``, ``nkm``;
  :mod:`mappers.tiling`) are chosen by estimated cycles ``max(compute,
  DRAM bytes / bandwidth) + latency`` (the ``objective``; within 1 % of the best,
  the least DRAM + SRAM energy, then fewer tiles), the compute cycles being the
  closed form of :mod:`archsim.templates.lut.tile` summed over the tiles (a tile
  no wider than the array keeps its sums in the array's accumulators, a wider one
  moves them through the output buffer every K-group);
- one :class:`~archsim.templates.lut.tile.LutTile` per buffer tile (``accumulate``
  on every k tile but the first);
- weight bytes are the bit-plane layout: ``b`` bits per weight (int1 1,
  ternary 2, int3 3, ...), plus the fp32 scales (per group / per channel);
- table precompute: by default the LUT core's precompute unit builds the
  tables inside every tile (its cycles overlap the lookups, double-buffered).
  With the template option ``precompute_fusion: true`` the activations'
  producer builds them: the tiles run ``precomputed`` (no table-build cycles),
  the A loads carry the tables (``E`` entries of ``entry_bits`` per
  ``group_k`` activations) instead of the activations, and a ``lut_table``
  VectorOp (``K - 1`` adds per entry) stands for the producer's extra work; no
  LUT tile waits for it (the producer ran before the layer).

Periods (speed and memory): an ECP5-sized core cuts a 7B model's GEMM into
millions of buffer tiles. When a layer's only part is a LUT GEMM whose stream
repeats a *unit* (one output tile when K spans several tiles; else one row or
column of output tiles; every unit's loads, tiles and stores the same sizes),
it runs as ``count`` identical periods of at least :data:`PERIOD_STEPS` tiles
(``LayerProgram.repeat``; ``mapping["periods"]``). The period is cut from the
middle of the stream, just after a unit's last tile: in isolation it starts with
its first tile (its operands were prefetched by the period before) and its
previous unit's store overlaps it, as in the stream. DRAM and SRAM bytes,
tiles, energy and compute cycles are those of the whole stream exactly
(checked against the closed form, else the whole stream is emitted); the
layer's cycles lose its fill and drain (first loads, last store: a few hundred
cycles, -0.002 % on BitNet-2B's q_proj at prefill on lut-m2n8k4-ecp5), and
when DRAM-bound each period may add a latency. A GEMM runs as periods only if
that bound (:meth:`LutMapper.period_error_bound`) is under :data:`PERIOD_ERROR`
of its cycles. Rows of output tiles that end in a narrower tile are built from
tiles cut once from a 3-row sample (:func:`mappers.periods.row_period`). A GEMM on the vector
unit (a bf16 LM head) runs as periods of its weight-streaming chunks cut from
one continuous stream (:func:`vector_periods`; cycles within about one chunk's
op). ``PERIODS = False`` always emits the whole stream.

Fusion: with the arch's ``output_ops`` the element-wise ops after a LUT GEMM run
in its output path (:mod:`mappers.fusion`; ``mapping["epilogue"]``, a residual
tile per output tile counted in the search's room); a GEMM on the vector unit
has no output path (MappingError: the driver runs its ops unfused).

Each layer's ``mapping`` reports ``precompute_cycles`` (table-build cycles of
its tiles) and ``precompute_exposed_cycles`` (cycles they add to the tiles,
i.e. what fusion saves on the array). GEMMs of other formats (an LM head in
bf16, activation x activation matmuls of attention) and all other work run on
the vector unit (``mac``: one lane-cycle per MAC).
"""
from __future__ import annotations

import dataclasses
from math import ceil

import numpy as np

from archsim.errors import MappingError
from archsim.program import Compute, LayerProgram, Load, Store, VectorOp
from archsim.templates.lut.options import LutOptions
from archsim.templates.lut.tile import PLANES, LutTile, table_entry_bits, tile_cycles
from mappers.emit import (BufferLayout, Emitter, chunk_param_bytes, emit_gather, emit_vector, param_chunks,
                          split_even, vector_chunks)
from mappers.fusion import with_epilogue
from mappers.lower import Gather, Gemm, VectorWork, lower_op
from mappers.periods import periodic_slice
from mappers.registry import Mapper
from mappers.tiling import ORDERS, MemoryCosts, TilePlan, class_sum, dim_candidates, emit_gemm, nbytes, traffic
from workloads.precision import precision_bits, tensor_bytes


#: run a long LUT GEMM as ``count`` identical periods of its command stream
#: (``LayerProgram.repeat``; module docstring, "Periods"); False: always the whole stream
PERIODS = True
#: buffer tiles (steps) per period at least; a GEMM of fewer than 4 periods runs whole (mappers.periods)
PERIOD_STEPS = 1024
#: periods only when their cycles may differ from the whole stream's by at most this fraction
PERIOD_ERROR = 1e-4
#: chunks per period of a GEMM on the vector unit at most
VECTOR_PERIOD_CHUNKS = 1024


class LutMapper(Mapper):
    """``make_mapper(arch, options)`` result: call it with an op."""

    def __init__(self, arch, options):
        self.arch = arch
        self.p = arch.params
        own = options.template or LutOptions()
        self.fusion = bool(own.precompute_fusion)
        self.layout = BufferLayout.from_arch(arch)
        self.conv_lowering = options.conv_lowering or "im2col_padded"
        self.objective = options.objective
        costs = MemoryCosts.of(arch)
        self.inv_bw, self.latency, self.e_dram, self.e_sram = costs.inv_bw, costs.latency, costs.e_dram, costs.e_sram
        #: element-wise classes the output path runs (mappers.fusion); the shipped presets declare none
        self.output_ops = tuple(arch.output_ops)

    # -- one op -------------------------------------------------------------------
    def formats(self, g: Gemm) -> tuple[str, str] | None:
        """(weights, activations) the LUT array runs ``g`` in, or None (vector unit)."""
        p = self.p
        if g.b_is_param and g.b_precision in p.weight_formats and g.a_precision in p.activation_formats:
            return g.b_precision, g.a_precision
        return None

    def __call__(self, op, epilogue=None) -> LayerProgram:
        """Map ``op``; ``epilogue`` (:class:`mappers.fusion.Epilogue`): element-wise ops the
        output path applies as the op's LUT GEMM drains (a GEMM on the vector unit has no
        output path: MappingError, and the ops run unfused)."""
        low = with_epilogue(lower_op(op, self.conv_lowering), epilogue)
        em = Emitter(self.layout)
        mappings, formats, periods = [], None, 1
        alone = len(low.parts) == 1  # only a layer's sole GEMM may run as periods (LayerProgram.repeat)
        for part in low.parts:
            start = len(em.commands)
            if isinstance(part, Gemm):
                fmt = self.formats(part)
                if fmt is not None:
                    formats = formats or fmt
                    mp = self._emit_lut(em, part, *fmt, periodic=alone)
                    if part.epilogue:  # the fused layers name this one (mapping["fused_into"])
                        mp["epilogue"] = list(part.epilogue)
                    periods = mp.get("periods", {}).get("count", 1)
                else:
                    if part.epilogue:
                        raise MappingError(f"{op.name}: a GEMM on the vector unit has no output path to fuse "
                                           f"{', '.join(part.epilogue)} into")
                    slot = self.layout.slot_bytes({"input": 2, "weight": 2, "output": 2})["weight"]
                    works = _as_vector(part, slot)
                    cut = vector_periods(part, works, self.layout, self.arch.vector_unit) if alone and PERIODS else None
                    if cut is None:
                        for work in works:
                            emit_vector(em, work, self.layout)
                    else:
                        em.commands.extend(cut[0])
                        periods = cut[1]
                    mp = {"role": part.role, "unit": "vector", "m": part.m, "k": part.k, "n": part.n,
                          "reason": f"{part.b_precision} x {part.a_precision} not built into the LUT core"
                          if part.b_is_param else "activation x activation matmul"}
                    if cut is not None:
                        mp["periods"] = {"count": cut[1], "chunks": cut[2]}
                mappings.append(mp)
            elif isinstance(part, VectorWork):
                emit_vector(em, part, self.layout)
            elif isinstance(part, Gather):
                emit_gather(em, part, self.layout)
            stores = [c.id for c in em.commands[start:] if isinstance(c, Store)]
            em.after_input = (stores[-1],) if stores else ()
        mapping: dict = {}
        if mappings:
            mapping.update(mappings[0])
            if len(mappings) > 1:
                mapping["gemms"] = mappings
        signature = ("lut", self.fusion, low, periods)
        wf, af = formats or ("", "")
        return LayerProgram(op.name, op.kind, op.macs(), em.commands, signature, mapping, repeat=low.repeat * periods,
                            weight_format=wf, activation_format=af)

    # -- a GEMM on the LUT array ------------------------------------------------------
    def lut_gemm(self, g: Gemm, wf: str, af: str) -> Gemm:
        """``g`` with K padded and the LUT's operand formats (weights: bit planes)."""
        p = self.p
        step = p.scale_group if p.scale == "per_group" else p.group_k
        acc = "int32" if (af == "int8" and p.scale == "none") else "fp32"
        out = g.out_precision if g.epilogue else af  # a fused chain's result (e.g. requantized) leaves as it says
        return dataclasses.replace(g, k=ceil(g.k / step) * step, a_precision=af, b_precision=wf,
                                   acc_precision=acc, out_precision=out)

    def a_ratio(self, af: str) -> float:
        """DRAM / buffer bytes of the A operand per activation byte (tables when fused)."""
        if not self.fusion:
            return 1.0
        p = self.p
        return p.table_entries * table_entry_bits(p, af) / (p.group_k * precision_bits(af))

    def w_ratio(self, wf: str, tk):
        """Weight bytes per bit-plane byte: the fp32 scales ride with the weights."""
        p, b = self.p, PLANES[wf]
        if p.scale == "per_group":
            return (b + 32 / p.scale_group) / b
        if p.scale == "per_channel":
            return (b * tk + 32) / (b * tk)
        return 1.0 + 0 * tk

    def tile_cycles_closed(self, sm, sk, sn, wf: str):
        """Closed-form cycles of a buffer tile (numpy-vectorised :func:`~archsim.templates.lut.tile.tile_cycles`)."""
        p = self.p
        s = -(-sm // p.tile_m) * (sk // p.group_k)
        pre = 0 if self.fusion else (ceil(p.tile_m * p.table_entries / p.precompute_entries_per_cycle)
                                     + p.precompute_pipeline_cycles)
        d = p.lookup_interleave
        look = -(-(-(-sn // p.tile_n)) // d) * d * PLANES[wf]
        return pre + (s - 1) * np.maximum(pre, look) + look + p.pipeline_cycles

    def tile_sram_bytes(self, sm, sk, sn, g: Gemm):
        """Buffer bytes a buffer tile moves inside the chip (vectorised; as the model's tile_actions):
        activations once, weights once per row block, outputs once or every K-group when wider than
        the array's accumulators."""
        p = self.p
        groups = sk // p.group_k
        out_b = precision_bits(g.acc_precision) // 8
        w = nbytes(sk * sn, PLANES[g.b_precision]) * -(-sm // p.tile_m)
        out = np.where(sn <= p.tile_n, 1, 2 * groups - 1) * sm * sn * out_b
        return nbytes(sm * sk, precision_bits(g.a_precision)) + w + out

    def choose(self, g: Gemm, wf: str, af: str) -> tuple[TilePlan, dict]:
        p = self.p
        step = p.scale_group if p.scale == "per_group" else p.group_k
        tms, tks, tns = dim_candidates(g.m, p.tile_m), dim_candidates(g.k, step), dim_candidates(g.n, p.tile_n)
        grid = np.array([(tm, tk, tn, o) for tm in tms for tk in tks for tn in tns for o in range(len(ORDERS))],
                        dtype=np.int64)
        tm, tk, tn, order = grid.T
        abits, bbits, pbits = precision_bits(af), PLANES[wf], precision_bits(g.acc_precision)
        ar, wr = self.a_ratio(af), self.w_ratio(wf, tk)
        nm = -(-g.m // tm)
        out_slots = np.where(order == 2, np.maximum(2, nm), 2)
        need = {"input": 2 * np.ceil(nbytes(tm * tk, abits) * ar), "weight": 2 * np.ceil(nbytes(tk * tn, bbits) * wr),
                # a fused residual tile sits beside each accumulator tile (mappers.tiling.occupancy)
                "output": out_slots * nbytes(tm * tn, pbits)
                + (2 * nbytes(tm * tn, precision_bits(g.out_precision)) if g.residual else 0)}
        cap = self.layout.capacity
        if self.layout.unified:
            fits = need["input"] + need["weight"] + need["output"] <= cap["unified"]
        else:
            fits = (need["input"] <= cap["input"]) & (need["weight"] <= cap["weight"]) & (need["output"] <= cap["output"])
        if not fits.any():
            raise MappingError(f"a {g.m}x{g.k}x{g.n} GEMM does not fit the buffers of {self.arch.name} "
                               f"(no LUT tile of {p.tile_m} rows x {step} x {p.tile_n} columns fits)")
        tm, tk, tn, order, wr = tm[fits], tk[fits], tn[fits], order[fits], np.broadcast_to(wr, fits.shape)[fits]
        compute = class_sum(g, tm, tk, tn, lambda sm, sk, sn: self.tile_cycles_closed(sm, sk, sn, wf))
        tr = traffic(g, tm, tk, tn, order, np.zeros(len(tm), bool))
        dram = tr.a * ar + tr.b * wr + tr.out + tr.psum + tr.residual
        est = np.maximum(compute, dram * self.inv_bw) + 2 * self.latency
        steps = nm[fits] * -(-g.k // tk) * -(-g.n // tn)
        sram = class_sum(g, tm, tk, tn, lambda sm, sk, sn: self.tile_sram_bytes(sm, sk, sn, g))
        energy = dram * self.e_dram + sram * self.e_sram
        primary, secondary = (est, energy) if self.objective == "cycles" else (energy, est)
        # within 1 % of the best primary, the least secondary, then the fewest tiles
        near = primary <= primary.min() * 1.01
        i = int(np.lexsort((steps, secondary, ~near))[0])
        plan = TilePlan("lut", int(tm[i]), int(tk[i]), int(tn[i]), ORDERS[int(order[i])], False)
        return plan, {"est_cycles": int(est[i]), "est_compute_cycles": int(compute[i]), "est_dram_bytes": int(dram[i])}

    def period_error_bound(self, g: Gemm, plan: TilePlan, wf: str, af: str, count: int, est: dict) -> float:
        """Cycles by which ``count`` periods may differ from the whole stream (module docstring,
        "Periods"): the layer's fill and drain (first loads, last store, one tile); when DRAM-bound,
        also a latency and a tile per period."""
        p = self.p
        tile = float(self.tile_cycles_closed(plan.tm, plan.tk, plan.tn, wf))
        edge_bytes = (nbytes(plan.tm * plan.tk, precision_bits(af)) * self.a_ratio(af)
                      + nbytes(plan.tk * plan.tn, PLANES[wf]) * float(self.w_ratio(wf, plan.tk))
                      + 2 * nbytes(plan.tm * plan.tn, precision_bits(g.out_precision)))
        edge = edge_bytes * self.inv_bw + 2 * self.latency + tile + p.pipeline_cycles
        if est["est_compute_cycles"] < est["est_dram_bytes"] * self.inv_bw:
            edge += count * (self.latency + tile)
        return edge

    def _emit_lut(self, em: Emitter, g0: Gemm, wf: str, af: str, periodic: bool = False) -> dict:
        g = self.lut_gemm(g0, wf, af)
        plan, est = self.choose(g, wf, af)
        first = len(em.commands)
        cache: dict = {}

        def split(sm, sk, sn, acc):
            key = (sm, sk, sn, acc)
            if key not in cache:
                cache[key] = [LutTile(sm, sk, sn, wf, af, accumulate=acc, precomputed=self.fusion)]
            return cache[key]

        tables = g.m * (g.k // self.p.group_k) * self.p.table_entries  # lut_table elements (precompute fusion)
        cut = periodic_slice(g, plan, split, self.layout, PERIOD_STEPS) if periodic and PERIODS else None
        if cut is not None and self.period_error_bound(g, plan, wf, af, cut[1], est) > PERIOD_ERROR * est["est_cycles"]:
            cut = None
        if cut is not None and self.fusion and tables % cut[1]:
            cut = None
        count = 1
        if cut is None:
            emit_gemm(em, g, plan, split)
        else:
            em.commands.extend(cut[0])
            count = cut[1]
        ar, wr = self.a_ratio(af), float(self.w_ratio(wf, plan.tk))
        pre_cycles = exposed = 0
        per_tile: dict = {}  # tile -> (table-build cycles, cycles they add to the tile)
        cmds = em.commands
        for i in range(first, len(cmds)):
            c = cmds[i]
            cls = type(c)
            if cls is Compute:
                t = c.tile
                pe = per_tile.get(t)
                if pe is None:
                    steps = ceil(t.m / self.p.tile_m) * (t.k // self.p.group_k)
                    pe = per_tile[t] = (
                        steps * ceil(self.p.tile_m * self.p.table_entries / self.p.precompute_entries_per_cycle),
                        tile_cycles(dataclasses.replace(t, precomputed=False), self.p)
                        - tile_cycles(dataclasses.replace(t, precomputed=True), self.p))
                pre_cycles += pe[0]
                exposed += pe[1]
            elif cls is Load and c.operand == "input" and ar != 1.0:
                cmds[i] = dataclasses.replace(c, nbytes=ceil(c.nbytes * ar))
            elif cls is Load and c.operand == "weight" and wr != 1.0:
                cmds[i] = dataclasses.replace(c, nbytes=ceil(c.nbytes * wr))
        if self.fusion:  # the producer's extra work, once per row and group: K - 1 adds per entry (not waited for)
            em.commands.append(VectorOp(len(em.commands), (), "lut_table", tables // count,
                                        max(1, self.p.group_k - 1)))
        pre_cycles, exposed = pre_cycles * count, exposed * count
        mp = plan.as_mapping(g)
        mp.update(role=g.role, unit="array", m=g0.m, k=g0.k, k_padded=g.k, n=g.n, weight_format=wf,
                  activation_format=af, precompute_fusion=self.fusion, precompute_cycles=pre_cycles,
                  precompute_exposed_cycles=0 if self.fusion else exposed,
                  precompute_saved_cycles=exposed if self.fusion else 0, **est)
        if count > 1:
            mp["periods"] = {"count": count, "steps": cut[2]}
        return mp


def _chunks(work: VectorWork, layout: BufferLayout) -> int:
    """Chunks :func:`~mappers.emit.emit_vector` cuts ``work`` into."""
    sb = layout.slot_bytes({"input": 2, "weight": 2, "output": 2})
    chunks = vector_chunks(work, sb["input"], sb["output"])
    return param_chunks(work, chunks, sb["weight"]) if work.param_bytes > sb["weight"] else chunks


def _linear_chunks(w: VectorWork, chunks: int, vector_unit) -> tuple[int, int] | None:
    """``(count, chunks per period)`` for a work whose per-chunk figures are linear in its
    elements (weight share ``param_bytes * e / elements`` and op cycles ``e * reads * cycles /
    lanes`` whole numbers for every chunk size): periods of the same totals (elements, bytes,
    lane cycles) then give the whole's figures exactly whatever sizes their chunks have."""
    lanes = int(vector_unit.lanes)  # the engine times a VectorOp as ceil(elements * reads * cycles / lanes)
    per_element = w.reads_per_element * vector_unit.cycles_per_op.get(w.op, vector_unit.default_cycles)
    total = w.param_elements or w.elements
    counts = range(-(-chunks // VECTOR_PERIOD_CHUNKS), chunks // 3 + 1)
    # first as many chunks as the whole's (the same command count), else the nearest
    for count in [c for c in counts if chunks % c == 0] + [c for c in counts if chunks % c]:
        if w.elements % count or w.in_bytes % count or w.out_bytes % count or w.param_bytes % count:
            continue
        each = -(-chunks // count)  # never larger chunks than the whole's (they must fit their slots)
        q = w.elements // count // each
        sizes = {q, q + 1, w.elements // chunks, w.elements // chunks + 1}
        if all(w.param_bytes * e % total == 0 and e * per_element % lanes == 0 for e in sizes):
            return count, each
    return None


def vector_periods(g: Gemm, works: list[VectorWork], layout: BufferLayout, vector_unit):
    """``(commands, count, chunks)``: ONE of ``count`` identical periods of a vector-unit GEMM, or
    None (module docstring, "Periods"). A period is ``chunks`` consecutive chunks of a continuous
    stream (:func:`~mappers.emit.emit_vector`'s commands and dependencies), sized as one column
    group of ``n / count`` would be, whose chunks taken ``count`` times are the whole work's:
    same sizes, as many of each (or, where every chunk's figures are linear in its size, the same
    totals: :func:`_linear_chunks`)."""
    if len(works) != 1:
        return None
    w = works[0]
    weight_slot = layout.slot_bytes({"input": 2, "weight": 2, "output": 2})["weight"]
    if 0 < w.param_bytes <= weight_slot:  # a table loaded once for the whole work: not periodic
        return None
    chunks = _chunks(w, layout)
    if chunks < 4 * VECTOR_PERIOD_CHUNKS:
        return None
    totals = (w.elements, w.in_bytes, w.out_bytes)
    for count in range(-(-chunks // VECTOR_PERIOD_CHUNKS), chunks // 3 + 1):
        if g.n % count or w.param_bytes % count or any(t % count for t in totals):
            continue
        part = dataclasses.replace(w, elements=w.elements // count, in_bytes=w.in_bytes // count,
                                   out_bytes=w.out_bytes // count, row=w.row // count,
                                   param_bytes=w.param_bytes // count)
        each = _chunks(part, layout)
        # split_even: the whole's chunks and the groups' chunks have the same sizes, as many
        if each * count == chunks and all(t // chunks == (t // count) // each
                                          and t % chunks == count * ((t // count) % each) for t in totals):
            break
    else:
        found = _linear_chunks(w, chunks, vector_unit)
        if found is None:
            return None
        count, each = found
        part = dataclasses.replace(w, elements=w.elements // count, in_bytes=w.in_bytes // count,
                                   out_bytes=w.out_bytes // count, row=max(1, w.row // count),
                                   param_bytes=w.param_bytes // count)
    # a continuous stream of 3 groups' work: the commands and dependencies of every chunk
    em = Emitter(layout)
    emit_vector(em, dataclasses.replace(part, elements=3 * part.elements, in_bytes=3 * part.in_bytes,
                                        out_bytes=3 * part.out_bytes, param_bytes=3 * part.param_bytes), layout)
    cmds = em.commands
    ops = [i for i, c in enumerate(cmds) if isinstance(c, VectorOp)]
    if len(ops) < 2 * each + 2:
        return None
    # chunk j of a group (j = i mod each for the stream's chunk i): its sizes in the group's own stream
    elems = split_even(part.elements, each)
    size = {"input": split_even(part.in_bytes, each), "output": split_even(part.out_bytes, each),
            "weight": [chunk_param_bytes(w, e) for e in elems]}
    start, end = ops[each], ops[2 * each]  # from chunk `each`'s op to chunk 2*each's (its loads precede it)
    seen = {"input": 0, "weight": 0, "output": 0, "op": 0}
    out = []
    for i, c in enumerate(cmds[:end]):
        kind = "op" if isinstance(c, VectorOp) else c.operand
        j = seen[kind] % each
        seen[kind] += 1
        if i < start:
            continue
        deps = tuple(d - start for d in c.deps if d >= start)
        if kind == "op":
            out.append(dataclasses.replace(c, id=i - start, deps=deps, elements=elems[j]))
        else:
            out.append(dataclasses.replace(c, id=i - start, deps=deps, nbytes=size[kind][j]))
    # the periods must move the whole work's bytes and elements exactly (emit_vector's chunks, summed)
    q, r = divmod(w.elements, chunks)
    whole = {"op": w.elements, "input": w.in_bytes, "output": w.out_bytes,
             "weight": r * chunk_param_bytes(w, q + 1) + (chunks - r) * chunk_param_bytes(w, q) if w.param_bytes else 0}
    got = dict.fromkeys(whole, 0)
    for c in out:
        if isinstance(c, VectorOp):
            got["op"] += c.elements
        else:
            got[c.operand] += c.nbytes
    if any(got[k] * count != v for k, v in whole.items()):
        return None
    return out, count, each


def _as_vector(g: Gemm, weight_slot_bytes: int) -> list[VectorWork]:
    """A GEMM the LUT array does not run, as MACs on the vector unit (one lane-cycle each).

    Every output streams its share of the weights (the whole table once over the outputs); K is
    cut in slices whose column of weights fits a weight slot (each slice writes partial sums)."""
    wbytes = max(1, tensor_bytes(g.k, g.b_precision)) if g.b_is_param else 0
    slices = max(1, -(-wbytes // max(1, weight_slot_bytes)))
    out = []
    for i in range(slices):
        k = g.k // slices + (i < g.k % slices)
        a = tensor_bytes(g.m * k, g.a_precision)
        b = tensor_bytes(k * g.n, g.b_precision)
        o = tensor_bytes(g.m * g.n, g.out_precision if i == slices - 1 else g.acc_precision)
        if g.b_is_param:
            out.append(VectorWork("mac", g.m * g.n, a, o, reads_per_element=k, row=g.n, param_bytes=b))
        else:
            out.append(VectorWork("mac", g.m * g.n, a + b, o, reads_per_element=k, row=g.n))
    return out


def make_mapper(arch, options) -> LutMapper:
    return LutMapper(arch, options)
