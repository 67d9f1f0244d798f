"""Lowering onto the PIM template (DRAM banks with near-bank MAC units + an ASIC).

Every layer becomes per-channel :class:`~archsim.templates.pim.PimTile`
Compute commands (units ``"pim.ch<i>"``) and VectorOps on the ASIC (unit
``"asic"``). Choices (docs/pim.md has the reasoning):

- **GEMV / linear layers** (``y = W x``, W learned): W's output rows are split
  over channel groups and the banks of a channel (all banks in lockstep); the
  reduction dimension k may also be split over ``s`` channels (``s`` in 1, 2,
  4, ... up to ``channels``): each channel then gets only its slice of x and
  the ASIC adds the ``s`` partial outputs (``n * (s - 1)`` adds, after the
  gather). The split with the fewest cycles (PIM tile + ASIC reduction) wins.
  Bias adds run on the ASIC.
- **GEMM** (prefill, ``m > 1`` tokens): repeated GEMVs, one per token
  (``LayerProgram.repeat = m``): the weights are re-streamed from the rows for
  each token. Simple and pessimistic; PIM is meant for decode.
- **Attention** (decode, one query per sequence): query heads are spread over
  channels (head h on channel ``h % C``); a head's cached tokens are spread
  over the channel's banks. The new token's K and V rows are first appended
  (single-bank write bursts). ``QK^T`` is a dot-mode GEMV against the K cache
  (one weight row per cached token, in-buffer q of every head of the
  channel), softmax runs on the ASIC, ``A.V`` is an axpy-mode bank GEMV
  against the V cache (one row per token, scores broadcast), and the ASIC adds
  the banks' partial outputs (``heads * head_dim * (banks - 1)`` adds).
  Grouped-query heads re-read their shared K/V. Prefill attention repeats the
  decode form once per query position (no causal saving).
- **Non-linear and element-wise ops** (softmax, layernorm, rmsnorm, gelu,
  silu, residual adds, ...) and activation x activation matmuls run on the
  ASIC; an embedding lookup is a read of ``tokens * dim`` elements by the ASIC.
- Every tile's refresh phase is mid-interval (``ref_due = tREFI // 2``), so a
  tile of L cycles pays on average the right number of REFs; the driver
  caches mappings per op, so tiles cannot carry a global refresh clock.

Weights and KV cache are stored in the PIM's ``mac_precision`` whatever the
graph's precision (the PIM computes only in its own format).

Operator fusion: the banks' MAC units have no output path of their own (a
GEMV's outputs go to the ASIC, which runs every element-wise op anyway), so a
spec declaring ``output_ops`` is a one-line :class:`~archsim.errors.SpecError`.
"""
from __future__ import annotations

from math import ceil
from typing import Callable

from archsim.errors import MappingError, SpecError
from archsim.program import Compute, LayerProgram, VectorOp
from archsim.templates.pim.tile import PimTile, plan_steps, step_counts
from mappers.lower import Gather, Gemm, VectorWork, lower_op, op_key
from mappers.registry import FunctionMapper, arch_key

ASIC = "asic"


class _Layer:
    """Accumulates one layer's commands and its PIM bookkeeping."""

    def __init__(self, arch):
        self.arch = arch
        self.p = arch.params
        self.model = arch.model()
        self.commands: list = []
        self.io_bytes = 0
        self.pim_cycles = 0

    def tile(self, tile: PimTile, channel: int, deps: tuple[int, ...] = ()) -> int:
        try:
            steps = plan_steps(tile, self.p)
        except ValueError as err:
            raise MappingError(str(err)) from None
        n = step_counts(steps)
        self.io_bytes += (n["GBWR"] + n["RDACC"] + n["WR"]) * self.p.column_bytes
        i = len(self.commands)
        self.commands.append(Compute(i, deps, tile, (), f"pim.ch{channel}"))
        return i

    def vector(self, op: str, elements: int, deps: tuple[int, ...] = (), reads: int = 1) -> int | None:
        if elements <= 0:
            return None
        i = len(self.commands)
        self.commands.append(VectorOp(i, deps, op, int(elements), reads, ASIC))
        return i


def _gemv_candidates(p, n: int, k: int) -> list[tuple[int, PimTile]]:
    out = []
    s = 1
    while s <= p.n_channels:
        groups = p.n_channels // s  # channel groups splitting the rows
        banks = min(p.banks_per_channel, max(1, ceil(n / groups)))
        rows = ceil(n / (groups * banks))
        kk = ceil(k / s)
        out.append((s, PimTile("gemv", rows=rows, k=kk, banks=banks, ref_due=p.tREFI // 2)))
        s *= 2
    return out


def _emit_gemv(layer: _Layer, n: int, k: int, bias: bool) -> dict:
    """One GEMV ``[n x k] . [k]`` over all channels; returns its mapping record."""
    p, model = layer.p, layer.model
    vec = layer.arch.vector_unit
    best = None
    for s, tile in _gemv_candidates(p, n, k):
        cyc = model.tile_cycles(tile)
        red = n * (s - 1)
        cyc += ceil(red * vec.cycles_per_op.get("add", vec.default_cycles) / vec.lanes) if red else 0
        if best is None or cyc < best[0]:
            best = (cyc, s, tile)
    _cyc, s, tile = best
    used = (p.n_channels // s) * s
    ids = tuple(layer.tile(tile, ch) for ch in range(used))
    last = layer.vector("add", n * (s - 1), ids)
    if bias:
        layer.vector("add", n, (last,) if last is not None else ids)
    return {"k_split": s, "rows_per_bank": tile.rows, "k_per_channel": tile.k, "banks": tile.banks}


def _emit_attention_decode(layer: _Layer, heads: int, kv_heads: int, seq_kv: int, hd: int) -> dict:
    p = layer.p
    B, C = p.banks_per_channel, p.n_channels
    eb = p.element_bytes
    per_ch = [list(range(c, heads, C)) for c in range(C)]
    tpb = ceil(seq_kv / B)  # cached tokens of a head per bank
    # tokens a bank may take per A.V tile: the scores of all banks must fit the input buffer
    chunk = max(1, min(tpb, p.input_buffer_bytes // eb // B))
    qk_ids, av_ids = [], []
    for c, hs in enumerate(per_ch):
        if not hs:
            continue
        # append this token's K and V rows (one write burst each per head), then QK^T
        w = layer.tile(PimTile("write", rows=2 * len(hs), k=hd, banks=B, ref_due=p.tREFI // 2), c)
        qk_ids.append(layer.tile(PimTile("gemv", rows=len(hs) * tpb, k=hd, banks=B, in_elements=len(hs) * hd,
                                         ref_due=p.tREFI // 2), c, (w,)))
    sm = layer.vector("softmax", heads * seq_kv, tuple(qk_ids))
    # V rows wider than the accumulators are stored as column pieces, one axpy pass per piece
    piece = max(p.column_elements, min(hd, p.acc_registers // p.column_elements * p.column_elements))
    for c, hs in enumerate(per_ch):
        for _h in hs:
            for t0 in range(0, tpb, chunk):
                rows = min(chunk, tpb - t0)
                for d0 in range(0, hd, piece):
                    av_ids.append(layer.tile(PimTile("gemv", rows=rows, k=min(piece, hd - d0), banks=B,
                                                     mode="axpy", ref_due=p.tREFI // 2), c, (sm,)))
    layer.vector("add", heads * hd * (B * ceil(tpb / chunk) - 1), tuple(av_ids))
    return {"heads_per_channel": max(len(h) for h in per_ch), "tokens_per_bank": tpb, "av_chunk": chunk,
            "av_piece": piece,
            "kv_heads": kv_heads}


def make_mapper(arch, options) -> Callable:
    if arch.output_ops:  # not ignored: a spec that says the PIM fuses would report figures it does not model
        raise SpecError(f"{arch.name}: output_ops: expected none for the pim template (its element-wise "
                        f"ops run on the ASIC; there is no GEMM output path to fuse into), "
                        f"got {', '.join(arch.output_ops)}")
    p = arch.params
    eb = p.element_bytes

    def map_op(op) -> LayerProgram:
        layer = _Layer(arch)
        mapping: dict = {}
        repeat_total = 1
        weight_bytes = 0
        kv_bytes = 0
        if op.kind == "attention":
            if op.heads % op.kv_heads:
                raise MappingError(f"{op.name}: heads ({op.heads}) not divisible by kv_heads ({op.kv_heads})")
            mapping.update(_emit_attention_decode(layer, op.heads, op.kv_heads, op.seq_kv, op.head_dim))
            repeat_total = op.batch * op.seq_q
            kv_bytes = 2 * op.batch * op.kv_heads * op.seq_kv * op.head_dim * eb
            macs = op.macs()
        else:
            lowered = lower_op(op, options.conv_lowering or "im2col_padded")
            macs = lowered.macs()
            repeat = lowered.repeat
            gemv_repeat = 1
            for part in lowered.parts:
                if isinstance(part, Gemm) and part.b_is_param:
                    # part.m tokens: repeated GEMVs over the same weights
                    mapping.update(_emit_gemv(layer, part.n, part.k, bool(getattr(op, "bias", False))))
                    gemv_repeat = part.m
                    weight_bytes += part.k * part.n * eb * repeat
                elif isinstance(part, Gemm):
                    layer.vector("matmul", part.m * part.n, reads=part.k)
                elif isinstance(part, VectorWork):
                    layer.vector(part.op, part.elements, reads=part.reads_per_element)
                elif isinstance(part, Gather):
                    layer.vector("embedding", part.nbytes)
                    weight_bytes += op.vocab * op.dim * eb if op.kind == "embedding" else 0
            repeat_total = repeat * gemv_repeat
        # whole layer: bytes the banks read in place, and over the channels' I/O to the ASIC
        internal = {"weight": weight_bytes, "kv": kv_bytes, "io": layer.io_bytes * repeat_total}
        return LayerProgram(op.name, op.kind, macs, layer.commands, ("pim",) + op_key(op), mapping,
                            repeat=repeat_total, internal_bytes=internal)

    keys: dict = {}

    def arch_key_of(op) -> str | None:
        """The arch fields the mapping of ``op`` reads (see :mod:`mappers.registry`):
        learned-weight GEMVs pick their k split with the PIM model's tile cycles
        and the vector unit (the whole arch); attention reads the PIM params;
        ASIC-only ops (vector work, activation matmuls, gathers) read only the
        PIM element size (an embedding's ``pim_weight_bytes``)."""
        if op.kind == "attention":
            kind = "params"
        else:
            lowered = lower_op(op, options.conv_lowering or "im2col_padded")
            if any(isinstance(part, Gemm) and part.b_is_param for part in lowered.parts):
                return None
            kind = "asic"
        key = keys.get(kind)
        if key is None:
            key = keys[kind] = (arch_key(arch, ("params",)) if kind == "params"
                                else arch_key(arch, (), element_bytes=eb))
        return key

    return FunctionMapper(map_op, arch_key=arch_key_of, check_graph=lambda graph: check_graph(graph, arch))


def model_bytes(graph, arch) -> dict[str, int]:
    """Bytes the PIM DRAM must hold for ``graph``: weights (shared tables counted
    once) and the KV cache of every attention op, in the PIM's ``mac_precision``."""
    eb = arch.params.element_bytes
    weights = graph.total_params() * eb
    kv = sum(2 * op.batch * op.kv_heads * op.seq_kv * op.head_dim * eb for op in graph.ops() if op.kind == "attention")
    return {"weights": weights, "kv_cache": kv, "total": weights + kv}


def check_graph(graph, arch) -> None:
    """One-line :class:`MappingError` if ``graph``'s weights + KV cache do not fit the PIM DRAM."""
    b = model_bytes(graph, arch)
    cap = arch.params.capacity_bytes
    if b["total"] > cap:
        raise MappingError(
            f"{getattr(graph, 'name', 'workload')}: weights ({b['weights'] / 2**30:.2f} GiB) + KV cache "
            f"({b['kv_cache'] / 2**30:.2f} GiB) do not fit the {cap / 2**30:.2f} GiB of {arch.name}'s PIM DRAM")
