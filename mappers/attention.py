"""Mapper of the attention template: three attention mappings on one 2D + 1D array.

Attention ops (one iteration = one batch item x kv head; ``repeat = batch *
kv_heads``; the ``heads / kv_heads`` query heads of a group stack along the
query rows) are mapped by ``options.template.attention_mapping``:

- ``fusemax`` (default): one pass with online softmax. Query tiles of ``rows``
  queries; K and V stay on chip when they fit in half the buffer (loaded once
  per head), else they stream in chunks (double-buffered, a quarter of the
  buffer each) shared by a group of query tiles whose running state (fp32
  partial output, max, sum) stays on chip. Buffers do not grow with the
  sequence. The query tiles sharing K/V run as one multi-pass tile (one
  continuous pipeline, :mod:`archsim.templates.attention.tile`) per chunk on
  ``array2d``, with its ``rescale`` companion on ``array1d``.
- ``flat``: FLAT's row-granular fused dataflow: a query tile's whole row of
  scores stays on chip, so the tile has ``min(rows, 3 buffer / (16 seq_kv))``
  queries (two tiles of 2-byte scores in flight, normalised in place, in three
  quarters of the buffer); phases ``qk`` (2D), ``softmax`` (1D) and ``av``
  (2D), software-pipelined over query tiles. Where the K and V re-reads of
  those small tiles would move more bytes than spilling the scores (from 256K
  tokens at 32 MiB), FLAT spills them as unfused does (so does the FuseMax
  artifact's FLAT: its traffic there equals unfused's).
- ``unfused``: ``rows``-query tiles; the scores go to DRAM after QK^T (key
  chunk by key chunk), are read back for the softmax on the 1D array (groups of
  whole rows), the probabilities are written and read back for .V; pipelined
  over query tiles so the DMA streams Q.K^T's and P.V's transfers while the 1D
  array normalises (:meth:`AttentionMapper._spilled`).

The buffer each mapping tiles for is option ``buffer_bytes`` (by mapping),
else the spec's.
K and V are re-read per query tile by flat and unfused unless they fit in a
quarter of the buffer. Scores in DRAM and on chip count 2 bytes each (16-bit).

Every other op goes through the systolic template's mapper on the same 2D
array (weight stationary, double-buffered preload), with the arch's
``output_ops`` applied in the array's output path (:mod:`mappers.fusion`); its
vector work runs on the 1D array (unit ``array1d``).
"""
from __future__ import annotations

import dataclasses
from math import ceil, floor

from archsim.errors import MappingError
from archsim.program import Compute, LayerProgram, Load, Store, VectorOp
from archsim.templates.attention.model import gemm_params
from archsim.templates.attention.options import AttentionOptions
from archsim.templates.attention.tile import AttentionTile
from archsim.templates.attention.topk import TopkTile
from archsim.templates.systolic.options import SystolicOptions
from mappers.lower import op_key
from mappers.registry import Mapper, arch_key
from mappers.systolic import SystolicMapper

ELEM_BYTES = 2  # 16-bit operands, scores and probabilities
STATE_BYTES = 4  # fp32 partial outputs
BUF = "unified"
#: the systolic mapper's unit -> this template's (GEMM folds on the 2D array, vector work on the 1D one)
_UNIT_OF = {"array": "array2d", "vector": "array1d"}


class _Cmds:
    """Command list with ids; ``later_store`` holds a head's last store until the next head's
    commands are out, so the in-order DMA loads the next head before it writes this one's output."""

    def __init__(self):
        self.cmds: list = []
        self.deferred: list = []

    def later_store(self, deps, operand, nbytes, slot=0) -> None:
        self.deferred.append((deps, operand, nbytes, slot))

    def flush(self, upto: int) -> None:
        """Emit the first ``upto`` held stores."""
        for item in self.deferred[:upto]:
            self.store(*item)
        self.deferred = self.deferred[upto:]

    def load(self, deps, operand, nbytes, slot=0) -> int:
        i = len(self.cmds)
        self.cmds.append(Load(i, tuple(d for d in deps if d is not None), operand, BUF, slot, int(nbytes)))
        return i

    def store(self, deps, operand, nbytes, slot=0) -> int:
        i = len(self.cmds)
        self.cmds.append(Store(i, tuple(d for d in deps if d is not None), operand, BUF, slot, int(nbytes)))
        return i

    def compute(self, deps, tile) -> int:
        i = len(self.cmds)
        self.cmds.append(Compute(i, tuple(d for d in deps if d is not None), tile, (), tile.unit))
        return i


class AttentionMapper(Mapper):
    """``make_mapper(arch, options)`` result: call it with an op."""

    def __init__(self, arch, options):
        self.arch = arch
        p = arch.params
        self.p = p
        own = options.template or AttentionOptions()
        self.own = own
        self.mapping = own.attention_mapping
        if own.prunes and p.topk_parallelism < 1:
            raise MappingError("token_keep/head_keep: cascade pruning ranks importance on a top-k engine; "
                               "set params.topk_parallelism (the spatten preset has 16)")
        self._k_bits, self._v_bits = own.kv_fetch_bits()
        self._head_end: dict[int, int | None] = {}
        self._tiles: dict = {}
        #: FLAT on chip: the last softmax and P.V of the head just emitted, run after the next
        #: head's first Q.K^T so the 1D array goes from one head's softmax to the next's
        self._flat_tail = None
        own_bytes = own.buffer_bytes_of(self.mapping)
        #: the mapping's design point's buffer (option ``buffer_bytes``), else the spec's
        self.capacity = own_bytes or sum(int(b.bytes) for b in arch.buffers.values())
        self._own_bytes = own_bytes
        shim = dataclasses.replace(arch, params=gemm_params(p), template="systolic")
        self.gemm_mapper = _ArrayGemmMapper(shim, dataclasses.replace(options, template=SystolicOptions(dataflow="ws")))
        #: element-wise classes the 2D array's output path runs after a GEMM (mappers.fusion)
        self.output_ops = self.gemm_mapper.output_ops

    def arch_key(self, op) -> str | None:
        if op.kind == "attention":
            return arch_key(self.arch, ("params", "buffers"), mapping=self.mapping, buffer_bytes=self._own_bytes)
        return None  # the whole arch

    def prepare_graph(self, graph):
        """SpAtten's cascade token / head pruning (options ``token_keep``, ``head_keep``) and
        progressive quantization's LSB refetch (``progressive_quant.requant_fraction`` > 0)."""
        from workloads.transforms.spatten import cascade_prune, lsb_refetch

        if self.own.prunes:
            graph = cascade_prune(graph, self.own.token_keep, self.own.head_keep)
        if self.own.progressive_quant is not None:
            _msb, lsb, fraction = self.own.progressive_quant
            graph = lsb_refetch(graph, lsb, fraction)
        return graph

    def _k_bytes(self, rows: int, d: int) -> int:
        """DRAM bytes of ``rows`` K rows of ``d`` values (16-bit, or progressive quantization's
        MSBs; the LSB refetch is its own layer, :meth:`_lsb_refetch`)."""
        return ceil(rows * d * self._k_bits / 8)

    def _v_bytes(self, rows: int, d: int) -> int:
        """DRAM bytes of the V rows fetched for ``rows`` keys: ``max(1, floor(value_keep * rows))``
        of them (the authors' traces: 184 of 921), at 16 bits or the MSBs."""
        kept = rows if self.own.value_keep == 1 else max(1, floor(self.own.value_keep * rows + 1e-9))
        return ceil(kept * d * self._v_bits / 8)

    def _topk(self, op) -> LayerProgram:
        """Importance accumulation on the 1D array, then the top-k engine, once per batch item."""
        e = _Cmds()
        acc = None
        if op.accumulate_adds:
            acc = len(e.cmds)
            e.cmds.append(VectorOp(acc, (), "add", op.accumulate_adds // op.count, 1, "array1d"))
        e.compute((acc,), TopkTile(op.n, op.k))
        mapping = {"topk_target": op.target, "topk_n": op.n, "topk_k": op.k}
        return LayerProgram(op.name, op.kind, 0, e.cmds, ("attention-topk", op_key(op)), mapping,
                            arch_key=None, repeat=op.count)

    def _lsb_refetch(self, op) -> LayerProgram:
        """Progressive quantization's refetch, once per head with low-confidence rows (``op.heads``
        iterations of ``ceil(rows / heads)`` rows: rounded up): load the head's K LSBs,
        ``ceil(keys * head_dim * lsb_bits / 8)`` bytes, then per block of up to ``rows`` (array)
        query rows recompute the scores (a FLAT ``qk`` tile; K's MSBs are still on chip) and the
        softmax on the 1D array (``softmax`` tile). P.V is not redone: it runs after the decision."""
        e = _Cmds()
        kl = e.load((), "weight", ceil(op.keys * op.head_dim * op.lsb_bits / 8))
        rows = -(-op.rows // op.heads)
        prev = None
        for q in [self.p.rows] * (rows // self.p.rows) + ([rows % self.p.rows] if rows % self.p.rows else []):
            qk = e.compute((kl,), self._tile("flat", q, op.keys, op.head_dim, "qk"))
            prev = e.compute((qk, prev), self._tile("flat", q, op.keys, op.head_dim, "softmax"))
        _drain_last(e.cmds)
        mapping = {"lsb_refetch_rows": op.rows, "heads": op.heads, "keys": op.keys, "lsb_bits": op.lsb_bits}
        return LayerProgram(op.name, op.kind, op.macs(), e.cmds, ("attention-lsb-refetch", op_key(op)),
                            mapping, arch_key=None, repeat=op.heads)

    def __call__(self, op, epilogue=None) -> LayerProgram:
        """Map ``op``; ``epilogue`` (:class:`mappers.fusion.Epilogue`, GEMM ops only):
        element-wise ops run in the 2D array's output path as the GEMM drains."""
        if op.kind == "topk":
            return self._topk(op)
        if op.kind == "lsb_refetch":
            return self._lsb_refetch(op)
        if op.kind != "attention":
            return self._other(op, epilogue)
        if op.heads % op.kv_heads:
            raise MappingError(f"{op.name}: heads ({op.heads}) not divisible by kv_heads ({op.kv_heads})")
        rows_total = (op.heads // op.kv_heads) * op.seq_q
        L, d = op.seq_kv, op.head_dim
        emit = {"fusemax": self._fusemax, "flat": self._flat, "unfused": self._unfused}[self.mapping]
        self._flat_tail = None
        repeat = op.batch * op.kv_heads
        e = _Cmds()
        blocks = self._query_blocks(rows_total, L, d)
        rows_total //= blocks
        info = emit(e, op.name, rows_total, L, d, 0)
        if blocks > 1:
            info["query_blocks_per_head"] = blocks
        per_head = len(e.cmds) + len(e.deferred)
        heads = 1
        for h in (8, 4, 2):  # several heads per iteration: the next head's loads overlap this one's compute
            if repeat % h == 0 and h * per_head <= 4000:
                heads = h
                break
        for i in range(1, heads):
            pending = len(e.deferred)
            emit(e, op.name, rows_total, L, d, i)
            e.flush(pending)  # the previous head's output goes out behind this head's loads
        if self._flat_tail is not None:
            self._flat_tail()
            self._flat_tail = None
        e.flush(len(e.deferred))
        _drain_last(e.cmds)
        mapping = {"attention_mapping": self.mapping, "heads_per_iteration": heads, **info}
        sig = ("attention", self.mapping, op_key(op))
        return LayerProgram(op.name, op.kind, op.macs(), e.cmds, sig, mapping,
                            arch_key=self.arch_key(op), repeat=repeat // heads * blocks)

    #: commands a spilled head may take before its query tiles are simulated in repeated blocks
    #: (256K tokens: ~1M commands, one block)
    MAX_HEAD_COMMANDS = 1_000_000

    def _query_blocks(self, rows_total, L, d) -> int:
        """Blocks a head's query tiles are cut into (1: none). With the scores spilled, groups of
        query tiles are independent (K and V stream per group) and a 1M-token head is ~15M
        commands; it is then simulated as ``k`` repeats of a block of ``nq / k`` tiles, each
        block filling and draining the pipeline once (1M tokens: 16 blocks, about +1.2%:
        docs/attention.md)."""
        R = self.p.rows
        spills = self.mapping == "unfused" or (self.mapping == "flat" and self._flat_spills(rows_total, L, d))
        if not spills or rows_total % R:
            return 1
        nq = rows_total // R
        G, kc, r, _resident = self._spill_layout(rows_total, L, d)
        per_tile = (2 + 4 / G) * -(-L // kc) + 3 * -(-R // max(1, r))
        k = 1
        while nq // k * per_tile > self.MAX_HEAD_COMMANDS and nq % (2 * k) == 0 and (nq // (2 * k)) % G == 0:
            k *= 2
        return k

    # -- other ops: the systolic mapper on the same array ------------------------------
    def _other(self, op, epilogue=None) -> LayerProgram:
        lp = self.gemm_mapper(op, epilogue)
        # the GEMM folds are already on array2d (_ArrayGemmMapper); vector work moves to array1d
        lp.commands = [c if c.unit not in _UNIT_OF else dataclasses.replace(c, unit=_UNIT_OF[c.unit])
                       for c in lp.commands]
        lp.signature = ("attention-gemm",) + tuple(lp.signature)
        lp.arch_key = None
        return lp

    # -- fusemax ----------------------------------------------------------------------
    def _fusemax(self, e, name, rows_total, L, d, head):
        R, C, B = self.p.rows, self.p.cols, self.capacity
        base = 8 * (head % 2)  # buffer slots of this head (heads alternate between two sets)
        prior = self._head_end.get(head - 2) if head >= 2 else None
        nq = -(-rows_total // R)
        q_rows = [min(R, rows_total - i * R) for i in range(nq)]
        kv_bytes = 2 * L * d * ELEM_BYTES
        state = R * d * (ELEM_BYTES + STATE_BYTES) + 3 * R * STATE_BYTES
        full, part = divmod(rows_total, R)
        if kv_bytes + 4 * state <= B:  # K and V resident: the query tiles stream through in one pipeline
            kl = e.load((prior,), "weight", self._k_bytes(L, d), base)
            vl = e.load((prior,), "weight", self._v_bytes(L, d), base + 1)
            # runs of query tiles: each a multi-pass tile over all L keys (its Q loaded before, O stored after)
            run = max(1, min(full or 1, (B // 4) // state))
            runs = [(R, min(run, full - i)) for i in range(0, full, run)] + ([(part, 1)] if part else [])
            prev = [None, None]
            a = None
            for i, (q, n) in enumerate(runs):
                ql = e.load((prev[i % 2],), "input", n * q * d * ELEM_BYTES, base + 2 + i % 2)
                a = e.compute((kl, vl, ql), self._tile("fusemax", q, L, d, passes=n))
                b = e.compute((kl, vl, ql), self._tile("fusemax", q, L, d, "rescale", passes=n))
                if i == len(runs) - 1:
                    e.later_store((a, b), "output", n * q * d * ELEM_BYTES, base + 2 + i % 2)
                else:
                    prev[i % 2] = e.store((a, b), "output", n * q * d * ELEM_BYTES, base + 2 + i % 2)
            self._head_end[head] = a
            return {"q_tile": R, "kv_resident": True, "chunk_keys": L, "q_group": run}
        chunk = max(C, (B // 4) // (2 * d * ELEM_BYTES) // C * C)
        chunk = min(chunk, L)
        nch = -(-L // chunk)
        group = max(1, min(nq, (B // 4) // state))
        if 2 * chunk * d * ELEM_BYTES * 2 + group * state > B:
            raise MappingError(f"{name}: no fusemax tiling of head dim {d} fits the {B}-byte buffer")
        last_use = {0: prior, 1: prior}  # chunk slot -> last compute reading it
        for g0 in range(0, nq, group):
            members = list(range(g0, min(nq, g0 + group)))
            runs = [(R, sum(1 for i in members if q_rows[i] == R))]
            runs = [r for r in runs if r[1]] + [(q_rows[i], 1) for i in members if q_rows[i] != R]
            qload = e.load((), "input", sum(q_rows[i] for i in members) * d * ELEM_BYTES, base + 2)
            done: list = []
            for c in range(nch):
                kv = min(chunk, L - c * chunk)
                slot = c % 2
                kl = e.load((last_use[slot],), "weight", self._k_bytes(kv, d), base + slot)
                vl = e.load((last_use[slot],), "weight", self._v_bytes(kv, d), base + slot)
                done = []
                for q, n in runs:
                    first, last = c == 0, c == nch - 1
                    a = e.compute((kl, vl, qload), self._tile("fusemax", q, kv, d, "all", first, last, n))
                    b = e.compute((kl, vl, qload), self._tile("fusemax", q, kv, d, "rescale", first, last, n))
                    done += [a, b]
                last_use[slot] = done[-2]
            nbytes = sum(q_rows[i] for i in members) * d * ELEM_BYTES
            if g0 + group >= nq:
                e.later_store(tuple(done), "output", nbytes, base + 2)
            else:
                e.store(tuple(done), "output", nbytes, base + 2)
        self._head_end[head] = last_use[(nch - 1) % 2]
        return {"q_tile": R, "kv_resident": False, "chunk_keys": chunk, "q_group": group}

    # -- flat / unfused ---------------------------------------------------------------
    def _flat_on_chip(self, e, name, rows_total, L, d, head, q_tile):
        """FLAT with each query tile's rows of scores on chip: Q.K^T, softmax, P.V, software-
        pipelined over query tiles (Q.K^T of tile i+1 beside the softmax of tile i) and across
        heads (``_flat_tail``). K and V
        stay on chip when they fit in a quarter of the buffer, else they stream through it in
        double-buffered key chunks (Q.K^T and P.V per chunk) once per query tile."""
        B, C = self.capacity, self.p.cols
        base = 8 * (head % 2)
        prior = self._head_end.get(head - 2) if head >= 2 else None
        nq = -(-rows_total // q_tile)
        q_rows = [min(q_tile, rows_total - i * q_tile) for i in range(nq)]
        kv_one = L * d * ELEM_BYTES
        resident = 2 * kv_one <= B // 4
        if resident:
            chunks = [L]
            k_all = e.load((prior,), "weight", self._k_bytes(L, d), base)
            v_all = e.load((prior,), "weight", self._v_bytes(L, d), base + 1)
        else:  # two K and two V chunks in a quarter of the buffer
            kc = min(L, max(C, (B // 4) // (4 * d * ELEM_BYTES) // C * C))
            chunks = [min(kc, L - c) for c in range(0, L, kc)]
        qk_done: dict[int, list] = {}
        sm_slot_free = {0: None, 1: None}  # score slot -> the P.V that last read it
        out_prev = {0: None, 1: None}
        last_reader = {("k", 0): prior, ("k", 1): prior, ("v", 0): prior, ("v", 1): prior}
        n_loaded = {"k": 0, "v": 0}

        def chunk_load(kind, kv, slot_base):
            if resident:
                return k_all if kind == "k" else v_all
            j = n_loaded[kind] % 2
            n_loaded[kind] += 1
            nbytes = self._k_bytes(kv, d) if kind == "k" else self._v_bytes(kv, d)
            return e.load((last_reader[(kind, j)],), "weight", nbytes, slot_base), j

        def front(i):
            q = q_rows[i]
            ql = e.load((out_prev[i % 2],), "input", q * d * ELEM_BYTES, base + 2 + i % 2)
            done = []
            for kv in chunks:
                got = chunk_load("k", kv, base)
                kl, j = (got, None) if resident else got
                a = e.compute((ql, kl, sm_slot_free[i % 2]), self._tile("flat", q, kv, d, "qk"))
                if j is not None:
                    last_reader[("k", j)] = a
                done.append(a)
            qk_done[i] = done

        def back(i):
            q = q_rows[i]
            sm = e.compute(tuple(qk_done.pop(i)), self._tile("flat", q, L, d, "softmax"))
            a = None
            for kv in chunks:
                got = chunk_load("v", kv, base + 1)
                vl, j = (got, None) if resident else got
                a = e.compute((sm, vl), self._tile("flat", q, kv, d, "av"))
                if j is not None:
                    last_reader[("v", j)] = a
            sm_slot_free[i % 2] = a
            if i == nq - 1:
                e.later_store((a,), "output", q * d * ELEM_BYTES, base + 2 + i % 2)
            else:
                out_prev[i % 2] = e.store((a,), "output", q * d * ELEM_BYTES, base + 2 + i % 2)
            self._head_end[head] = a

        for i in range(nq):
            front(i)
            if i == 0 and self._flat_tail is not None:  # the previous head's last P.V behind this head's first Q.K^T
                self._flat_tail()
                self._flat_tail = None
            if i >= 1:
                back(i - 1)
        self._flat_tail = lambda: back(nq - 1)  # run by the next head, or by __call__ after the last
        return {"q_tile": q_tile, "kv_resident": resident, "chunk_keys": chunks[0]}

    def _flat(self, e, name, rows_total, L, d, head):
        """FLAT: row-granular on chip, or -- where that moves more bytes (K and V re-read by
        many small query tiles at long sequences) -- the scores spilled to DRAM, as the
        FuseMax artifact's FLAT does from 256K on (its traffic equals unfused's there)."""
        if not self._flat_spills(rows_total, L, d):
            return {**self._flat_on_chip(e, name, rows_total, L, d, head, self._flat_q_tile(rows_total, L)),
                    "scores": "on chip"}
        return {**self._spilled(e, name, rows_total, L, d, head), "scores": "DRAM"}

    def _flat_q_tile(self, rows_total, L) -> int:
        """Two query tiles of scores in flight (the softmax normalises in place) in three quarters of the buffer."""
        return min(self.p.rows, rows_total, 3 * self.capacity // (16 * L))

    def _flat_spills(self, rows_total, L, d) -> bool:
        """Whether FLAT moves fewer DRAM bytes spilling its scores than re-reading K and V per small tile."""
        B = self.capacity
        q_tile = self._flat_q_tile(rows_total, L)
        if q_tile < 1:
            return True
        kv_two = 2 * L * d * ELEM_BYTES
        onchip_bytes = 0 if kv_two <= B // 4 else -(-rows_total // q_tile) * kv_two
        q_spill = min(self.p.rows, rows_total)
        spill_bytes = 4 * rows_total * L * ELEM_BYTES + (0 if kv_two <= B // 4 else -(-rows_total // q_spill) * kv_two)
        return onchip_bytes > spill_bytes

    def _unfused(self, e, name, rows_total, L, d, head):
        return {**self._spilled(e, name, rows_total, L, d, head), "scores": "DRAM"}

    #: query tiles sharing each streamed K / V chunk in the spilled mappings (K and V not on chip)
    SPILL_GROUP = 8

    def _spill_layout(self, rows_total, L, d) -> tuple[int, int, int, bool]:
        """``(query tiles per group, keys per chunk, softmax rows per group, K/V resident)`` of
        the spilled mappings: K and V stay on chip when they fit a quarter of the buffer (one
        query tile per group), else each K / V chunk is shared by a group of query tiles; a
        K (or V) chunk and two score chunks of the group fit a quarter of the buffer, four
        groups of whole score rows half of it."""
        B, R, C = self.capacity, self.p.rows, self.p.cols
        q_tile = min(R, rows_total)
        resident = 2 * L * d * ELEM_BYTES <= B // 4
        group = 1 if resident else min(self.SPILL_GROUP, -(-rows_total // q_tile))
        kc = min(L, max(C, (B // 4) // (2 * group * q_tile * ELEM_BYTES + d * ELEM_BYTES) // C * C))
        r = min(q_tile, (B // 2) // (4 * L * ELEM_BYTES))
        return group, kc, r, resident

    def _spilled(self, e, name, rows_total, L, d, head):
        """Scores to DRAM and back. Per group of query tiles (of ``rows`` queries): Q.K^T in key
        chunks (each chunk's scores stored as it finishes), the softmax on the 1D array in
        groups of whole score rows (loaded, normalised, stored), then P.V in key chunks. A
        streamed K or V chunk is loaded once per group (:meth:`_spill_layout`).

        Software-pipelined over groups so that the in-order DMA does not wait on the softmax:
        step ``t`` runs Q.K^T of group t, the softmax of group t-1 and P.V of group t-3
        (whose probabilities were stored during step t-1), their commands interleaved in
        proportion (a key chunk of Q.K^T, a row group of the softmax, a key chunk of P.V, ...)
        so the transfers of Q.K^T and P.V fill the DMA while the 1D array normalises. A
        probability store trails its softmax by two row groups."""
        B, R = self.capacity, self.p.rows
        base = 8 * (head % 2)
        prior = self._head_end.get(head - 2) if head >= 2 else None
        q_tile = min(R, rows_total)
        nq = -(-rows_total // q_tile)
        q_rows = [min(q_tile, rows_total - i * q_tile) for i in range(nq)]
        G, kc, r, resident = self._spill_layout(rows_total, L, d)
        groups = [list(range(g, min(nq, g + G))) for g in range(0, nq, G)]
        ng = len(groups)
        chunks = [min(kc, L - c) for c in range(0, L, kc)]
        if r < 1:
            raise MappingError(f"{name}: {self.mapping}: the softmax's four rows of {L} scores in flight: "
                               f"that does not fit half the {B}-byte buffer; use attention_mapping=fusemax")
        kv_one = L * d * ELEM_BYTES
        k_all = v_all = None
        if resident:
            k_all = e.load((prior,), "weight", self._k_bytes(L, d), base)
            v_all = e.load((prior,), "weight", self._v_bytes(L, d), base + 1)
        s_stores: dict[int, list] = {}
        p_stores: dict[int, list] = {}
        pending_p: list = []  # (deps, nbytes, group) of probability stores trailing their softmax
        ql: dict[int, int] = {}

        def store_p():
            deps, nbytes, owner = pending_p.pop(0)
            p_stores.setdefault(owner, []).append(e.store(deps, "scores", nbytes, base + 6))

        def qk_items(g):  # Q.K^T of group g, key chunk by key chunk; a chunk's scores are stored
            held: list = []  # behind the next chunk's K load, so the DMA does not wait on Q.K^T

            def store_held():
                deps, nbytes = held.pop()
                s_stores.setdefault(g, []).append(e.store(deps, "scores", nbytes, base + 4))

            def chunk(kv, first, last):
                kl = k_all if resident else e.load((), "weight", self._k_bytes(kv, d), base)
                if held:
                    store_held()
                done = []
                for i in groups[g]:
                    q = q_rows[i]
                    if first:
                        ql[i] = e.load((), "input", q * d * ELEM_BYTES, base + 2 + i % 2)
                    done.append(e.compute((ql[i], kl), self._tile("flat", q, kv, d, "qk")))
                held.append((tuple(done), sum(q_rows[i] for i in groups[g]) * kv * ELEM_BYTES))
                if last:
                    store_held()
            n = len(chunks)
            return [lambda kv=kv, c=c: chunk(kv, c == 0, c == n - 1) for c, kv in enumerate(chunks)]

        def softmax_items(g):  # the group's softmax in groups of r whole rows
            def rows(n):
                sl = e.load(tuple(s_stores[g]), "scores", n * L * ELEM_BYTES, base + 5)
                sm = e.compute((sl,), self._tile("flat", n, L, d, "softmax"))
                pending_p.append(((sm,), n * L * ELEM_BYTES, g))
                while len(pending_p) > 2:  # a probability store trails its softmax by two row groups
                    store_p()
            return [lambda n=min(r, q_rows[i] - j): rows(n) for i in groups[g] for j in range(0, q_rows[i], r)]

        def av_items(g):  # P.V of group g, key chunk by key chunk, then its outputs
            done: dict[int, int] = {}

            def chunk(kv, first):
                if first:
                    while pending_p and pending_p[0][2] <= g:
                        store_p()
                vl = v_all if resident else e.load((), "weight", self._v_bytes(kv, d), base + 1)
                nbytes = sum(q_rows[i] for i in groups[g]) * kv * ELEM_BYTES  # the group's chunk of probabilities
                pl = e.load(tuple(p_stores[g]), "scores", nbytes, base + 7)
                for i in groups[g]:
                    done[i] = e.compute((pl, vl), self._tile("flat", q_rows[i], kv, d, "av"))
                    self._head_end[head] = done[i]

            def out():
                for i in groups[g]:
                    nbytes = q_rows[i] * d * ELEM_BYTES
                    if i == nq - 1:
                        e.later_store((done[i],), "output", nbytes, base + 2 + i % 2)
                    else:
                        e.store((done[i],), "output", nbytes, base + 2 + i % 2)
                p_stores.pop(g)
                s_stores.pop(g)
            return [lambda kv=kv, f=(c == 0): chunk(kv, f) for c, kv in enumerate(chunks)] + [out]

        for t in range(ng + 3):
            streams = []
            if t < ng:
                streams.append(qk_items(t))
            if 1 <= t <= ng:
                streams.append(softmax_items(t - 1))
            if t >= 3:
                streams.append(av_items(t - 3))
            # interleave in proportion: item j of a stream of n sits at (j + 1/2) / n
            merged = sorted(((j + 0.5) / len(items), k, j) for k, items in enumerate(streams) for j in range(len(items)))
            for _pos, k, j in merged:
                streams[k][j]()
        return {"q_tile": q_tile, "kv_resident": resident, "q_tiles_per_kv_chunk": G, "chunk_keys": kc,
                "softmax_rows": r}

    def _tile(self, mapping, q, kv, d, phase="all", first=True, last=True, passes=1) -> AttentionTile:
        """A tile that does not drain the wave (the iteration's last 2D tile does: :func:`_drain_last`)."""
        key = (mapping, q, kv, d, phase, first, last, passes)
        t = self._tiles.get(key)
        if t is None:
            t = self._tiles[key] = AttentionTile(mapping, q, kv, d, phase, first, last, False, passes)
        return t


class _OnArray2d:
    """An :class:`~mappers.emit.Emitter` seen through :func:`mappers.tiling.emit_gemm`:
    its compute blocks go to unit ``array2d``, everything else is the emitter's."""

    __slots__ = ("em",)

    def __init__(self, em):
        self.em = em

    def __getattr__(self, name):
        return getattr(self.em, name)

    def compute_block(self, tiles, reads, out_index, unit="array"):
        self.em.compute_block(tiles, reads, out_index, "array2d")


class _ArrayGemmMapper(SystolicMapper):
    """The systolic mapper emitting its GEMM folds straight onto ``array2d``: relabelling
    them afterwards (200k commands on a 7-8B LLM's FFN and LM head) took a third of a run's CPU time."""

    def _emit_gemm(self, em, g, plan, state) -> None:
        super()._emit_gemm(_OnArray2d(em), g, plan, state)


def _drain_last(cmds: list) -> None:
    """The iteration's last 2D-array tile drains the wave (its ``drain`` flag)."""
    for i in range(len(cmds) - 1, -1, -1):
        c = cmds[i]
        if isinstance(c, Compute) and c.unit == "array2d":
            cmds[i] = dataclasses.replace(c, tile=dataclasses.replace(c.tile, drain=True))
            return


def make_mapper(arch, options) -> AttentionMapper:
    return AttentionMapper(arch, options)
