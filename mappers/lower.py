"""Template-independent lowering: one graph op -> GEMMs, vector work, gathers.

:func:`lower_op` turns an op of the workload IR into a :class:`Lowered`: a
short tuple of *parts* that every template's mapper then tiles onto its own
hardware:

- :class:`Gemm`: ``A[m, k] x B[k, n] -> C[m, n]``;
- :class:`VectorWork`: element-wise / reduction work for the vector unit;
- :class:`Gather`: pure DRAM traffic (an embedding lookup).

Repeated identical work
-----------------------
Grouped and depthwise convolutions, batched activation x activation matmuls
and attention heads are many *identical, independent* GEMMs. They are not
copied: ``Lowered.repeat`` says how many times the parts run back to back on
independent data. Mappers emit the commands of ONE iteration and record the
count in ``LayerProgram.mapping["repeat"]``; the engine multiplies the
layer's cycles, energy and bytes by it. A 512-channel depthwise conv is thus
one small GEMM (``m = out_h*out_w*batch, k = kh*kw, n = 1``) with
``repeat = 512``, not 512 copies of its commands.

Lowering rules
--------------
- conv2d, ``conv_lowering="im2col_padded"`` (default): per group,
  ``M = batch*out_h*out_w`` (padding honoured), ``K = kh*kw*C/groups``,
  ``N = out_channels/groups``; ``repeat = groups``. A's DRAM traffic is the
  ifmap, not the im2col matrix (the DMA expands windows on the way in), so
  ``Gemm.a_dram_ratio = ifmap elements / im2col elements`` (at most 1)
  scales the bytes of every A tile load. Buffers hold the expanded tile.
- conv2d, ``conv_lowering="scalesim"``: SCALE-Sim's operand matrices: no
  padding, ``Sr = ceil((H - Fh + S) / S) * ceil((W - Fw + S) / S)`` ofmap
  pixels (times batch), ``T = Fh*Fw*C/groups``, ``Sc = filters/groups``;
  A is loaded as the full im2col matrix (``a_dram_ratio = 1``).
- matmul: a learned B (``weight_is_param``) is shared by the batch, so the
  batch folds into M (one GEMM ``batch*m x k x n``); an activation B
  (e.g. ``Q x K^T``) differs per batch item: ``repeat = batch``.
- attention: per (batch, kv-head) group ``g = heads / kv_heads`` query heads
  share K and V, so their queries stack along M: ``QK^T`` is
  ``(g*sq) x d x skv``, softmax runs on ``g*sq*skv`` elements on the vector
  unit, ``AV`` is ``(g*sq) x skv x d``; ``repeat = batch*kv_heads``. MACs:
  ``2*b*h*sq*skv*d`` (dense: a causal mask is applied to the scores,
  masked tiles are not skipped, so the array does more MACs than a causal
  op's ``macs()``). Templates with a
  fused attention unit may lower attention themselves.
- softmax, layernorm, rmsnorm, elementwise, pool: one :class:`VectorWork`
  (``op`` = "softmax", "layernorm", "rmsnorm", the elementwise ``fn``,
  "maxpool" / "avgpool"; ``reads_per_element`` = window or input count).
- embedding: a :class:`Gather` of ``tokens*dim`` weight elements.
- shape ops: nothing (no parts: zero commands, zero cycles).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from math import prod

from archsim.errors import MappingError
from archsim.spec.options import CONV_LOWERINGS  # the spec loader checks it without the compiler
from workloads.precision import tensor_bytes


@dataclass(frozen=True, slots=True)
class Gemm:
    """``A[m, k] x B[k, n] -> C[m, n]``; the final C is stored in ``out_precision``.

    ``role`` names the GEMM inside its op ("conv", "matmul", "qk", "av").
    ``b_is_param``: B is a learned weight (else an activation from DRAM).
    ``a_dram_ratio``: DRAM bytes of an A tile per byte of the tile as held in
    the buffer (< 1 for convolutions, whose im2col rows overlap).
    ``epilogue``: element-wise ops fused into the array's output path
    (:mod:`mappers.fusion`: ``bias``, ``relu``, ``gelu``, ``residual``,
    ``requant``), applied as C drains; ``residual``: one ``out_precision``
    tensor of C's shape is read from DRAM per output tile and added on the way out.
    """

    role: str
    m: int
    k: int
    n: int
    a_precision: str = "int8"
    b_precision: str = "int8"
    acc_precision: str = "int32"
    out_precision: str = "int8"
    b_is_param: bool = True
    a_dram_ratio: float = 1.0
    epilogue: tuple[str, ...] = ()
    residual: bool = False

    def macs(self) -> int:
        return self.m * self.k * self.n


@dataclass(frozen=True, slots=True)
class VectorWork:
    """``elements`` outputs of vector op ``op``; ``row`` elements are reduced
    together (softmax / norm rows) so chunks keep whole rows. ``param_bytes``
    of learned constants (``param_elements`` of them: a bias, a norm's scale,
    a position table) are read with the input; a table larger than a buffer
    slot is streamed chunk by chunk like the input."""

    op: str
    elements: int
    in_bytes: int
    out_bytes: int
    reads_per_element: int = 1
    row: int = 1
    param_bytes: int = 0
    param_elements: int = 0


@dataclass(frozen=True, slots=True)
class Gather:
    """Rows gathered from a DRAM table: ``nbytes`` read, ``nbytes`` written."""

    op: str
    nbytes: int


Part = Gemm | VectorWork | Gather


@dataclass(frozen=True, slots=True)
class Lowered:
    """The parts of one op; they run ``repeat`` times on independent data."""

    parts: tuple[Part, ...]
    repeat: int = 1

    def gemms(self) -> list[Gemm]:
        return [p for p in self.parts if isinstance(p, Gemm)]

    def macs(self) -> int:
        """MACs of the lowered GEMMs over all repeats."""
        return self.repeat * sum(g.macs() for g in self.gemms())


_SKIP_FIELDS = frozenset({"name", "weight_name", "source"})
_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def op_key(op) -> tuple:
    """Hashable key of everything about ``op`` that its mapping depends on
    (kind, shapes, precisions; not its name or provenance)."""
    cls = type(op)
    names = _FIELD_CACHE.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(op) if f.name not in _SKIP_FIELDS)
        _FIELD_CACHE[cls] = names
    return (op.kind,) + tuple(_hashable(getattr(op, n)) for n in names)


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def lower_op(op, conv_lowering: str = "im2col_padded") -> Lowered:
    """Lower one graph op (see the module docstring for the rules)."""
    if conv_lowering not in CONV_LOWERINGS:
        raise MappingError(f"conv_lowering: expected one of {', '.join(CONV_LOWERINGS)}, got {conv_lowering!r}")
    return _lower_cached(op_key(op), op, conv_lowering)


_LOWER_CACHE: dict[tuple, Lowered] = {}


def _lower_cached(key: tuple, op, conv_lowering: str) -> Lowered:
    ckey = (key, conv_lowering if op.kind == "conv2d" else "")
    hit = _LOWER_CACHE.get(ckey)
    if hit is None:
        hit = _lower(op, conv_lowering)
        if len(_LOWER_CACHE) > 8192:
            _LOWER_CACHE.clear()
        _LOWER_CACHE[ckey] = hit
    return hit


def _lower(op, conv_lowering: str) -> Lowered:
    kind = op.kind
    fn = _LOWERERS.get(kind)
    if fn is None:
        raise MappingError(f"{op.name}: cannot lower op kind {kind!r}")
    return fn(op, conv_lowering)


def _lower_conv(op, conv_lowering: str) -> Lowered:
    groups = op.groups
    if conv_lowering == "scalesim":
        eff_h = op.dilation_h * (op.kernel_h - 1) + 1
        eff_w = op.dilation_w * (op.kernel_w - 1) + 1
        out_h = -(-(op.in_h - eff_h + op.stride_h) // op.stride_h)
        out_w = -(-(op.in_w - eff_w + op.stride_w) // op.stride_w)
        if out_h < 1 or out_w < 1:
            raise MappingError(f"{op.name}: conv_lowering=scalesim: kernel larger than the unpadded input")
        m = op.batch * out_h * out_w
        k = op.kernel_h * op.kernel_w * (op.in_channels // groups)
        n = op.out_channels // groups
        ratio = 1.0
    else:
        groups, m, k, n = op.gemm_dims()
        ifmap = op.batch * (op.in_channels // op.groups) * op.in_h * op.in_w
        ratio = min(1.0, ifmap / (m * k))
    gemm = Gemm("conv", m, k, n, op.act_precision, op.weight_precision, op.acc_precision,
                op.act_precision, True, ratio)
    return Lowered((gemm,), groups)


def _lower_matmul(op, conv_lowering: str) -> Lowered:
    if op.weight_is_param:
        gemm = Gemm("matmul", op.batch * op.m, op.k, op.n, op.act_precision, op.weight_precision,
                    op.acc_precision, op.act_precision, True)
        return Lowered((gemm,), 1)
    gemm = Gemm("matmul", op.m, op.k, op.n, op.act_precision, op.act_precision,
                op.acc_precision, op.act_precision, False)
    return Lowered((gemm,), op.batch)


def _lower_attention(op, conv_lowering: str) -> Lowered:
    if op.heads % op.kv_heads:
        raise MappingError(f"{op.name}: heads ({op.heads}) not divisible by kv_heads ({op.kv_heads})")
    g = op.heads // op.kv_heads
    rows = g * op.seq_q
    act, acc = op.act_precision, op.acc_precision
    qk = Gemm("qk", rows, op.head_dim, op.seq_kv, act, act, acc, act, False)
    scores = rows * op.seq_kv
    sbytes = tensor_bytes(scores, act)
    # The scores stay on chip between QK^T, softmax and AV when they fit; the
    # GEMM mappers store/reload them like any activation (unfused form).
    softmax = VectorWork("softmax", scores, sbytes, sbytes, 1, op.seq_kv)
    av = Gemm("av", rows, op.seq_kv, op.head_dim, act, act, acc, act, False)
    return Lowered((qk, softmax, av), op.batch * op.kv_heads)


def _vector(op, name: str, elements: int, reads: int = 1, row: int = 1) -> Lowered:
    ob = op.operand_bytes()
    return Lowered((VectorWork(name, elements, ob["input"], ob["output"], reads, row, ob["weight"],
                               op.params() if ob["weight"] else 0),), 1)


def _lower_softmax(op, conv_lowering: str) -> Lowered:
    return _vector(op, "softmax", prod(op.shape), 1, op.shape[op.axis])


def _lower_layernorm(op, conv_lowering: str) -> Lowered:
    return _vector(op, "layernorm", prod(op.shape), 1, op.normalized_size)


def _lower_rmsnorm(op, conv_lowering: str) -> Lowered:
    return _vector(op, "rmsnorm", prod(op.shape), 1, op.normalized_size)


def _lower_elementwise(op, conv_lowering: str) -> Lowered:
    return _vector(op, op.fn, prod(op.shape), max(1, op.num_inputs))


def _lower_pool(op, conv_lowering: str) -> Lowered:
    elements = op.batch * op.channels * op.out_h * op.out_w
    return _vector(op, f"{op.mode}pool", elements, op.window_elements())


def _lower_embedding(op, conv_lowering: str) -> Lowered:
    return Lowered((Gather("embedding", tensor_bytes(op.tokens * op.dim, op.weight_precision)),), 1)


def _lower_shape(op, conv_lowering: str) -> Lowered:
    return Lowered((), 1)


_LOWERERS = {
    "conv2d": _lower_conv,
    "matmul": _lower_matmul,
    "attention": _lower_attention,
    "softmax": _lower_softmax,
    "layernorm": _lower_layernorm,
    "rmsnorm": _lower_rmsnorm,
    "elementwise": _lower_elementwise,
    "pool": _lower_pool,
    "embedding": _lower_embedding,
    "shape": _lower_shape,
}
