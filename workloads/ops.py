"""Typed operators of the workload IR (contract version: fields are fixed).

Every op is a dataclass with concrete shapes. Common interface:

- ``kind``: class-level op name ("conv2d", "matmul", "attention", ...).
- ``name``: unique node name in its Graph.
- ``macs() -> int``: multiply-accumulates (0 for ops that do none).
- ``params() -> int``: learned parameters it owns (weights + bias).
- ``operand_bytes() -> dict[str, int]``: bytes of each operand, keys
  ``"input"`` (all activation inputs together), ``"weight"`` (parameters,
  0 if none) and ``"output"``.
- ``output_shape() -> tuple[int, ...]`` and ``input_shapes()``.

Precision per tensor kind: ``act_precision`` (activations in and out),
``weight_precision`` and ``acc_precision`` (accumulators).

Layouts: activations of CNN ops are NCHW; matmul operands are
``[batch, m, k] x [k, n]`` (after transposes) -> ``[batch, m, n]``.
Attention takes and returns token-major tensors with the heads packed in the
last dimension: Q ``[batch, seq_q, heads*head_dim]``, K and V
``[batch, seq_kv, kv_heads*head_dim]``.

Added to the contract (keyword-only, so positional construction is unchanged):

- ``weight_name``: identifier of the parameter tensor an op reads. Ops that
  share a non-empty ``weight_name`` share their parameters (e.g. GPT-2's LM
  head tied to the token embedding); ``Graph.total_params`` counts them once.
- ``source``: where the op came from (``"zoo"``, ``"onnx:<node>"``,
  ``"scalesim:<file>:<line>"``, ``"yaml:<file>:layers[i]"``); the mapper may
  use it, e.g. to reproduce SCALE-Sim's operand-matrix view of a conv.
- ``check()``: raises :class:`WorkloadError` when the op's fields are
  impossible (kernel larger than the padded input, channels not divisible by
  groups, ...). ``Graph.add`` calls it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import ClassVar

from archsim.errors import WorkloadError
from workloads.precision import tensor_bytes

Shape = tuple[int, ...]


def _positive(op: "Op", **values: int) -> None:
    """Raise WorkloadError naming the first field that is not a positive int."""
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise WorkloadError(f"{op.name}: {key}: expected a positive integer, got {value!r}")


def _non_negative(op: "Op", **values: int) -> None:
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise WorkloadError(f"{op.name}: {key}: expected a non-negative integer, got {value!r}")


def _out_size(size: int, pad: int, kernel: int, stride: int, dilation: int = 1) -> int:
    """Output length of a (dilated) sliding window over ``size`` inputs with ``pad`` padding in all."""
    return (size + pad - dilation * (kernel - 1) - 1) // stride + 1


def _shape_ok(op: "Op", key: str, shape) -> None:
    if (not isinstance(shape, tuple) or not shape
            or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in shape)):
        raise WorkloadError(f"{op.name}: {key}: expected a non-empty tuple of positive integers, got {shape!r}")


@dataclass
class Op:
    name: str
    act_precision: str = "int8"
    weight_precision: str = "int8"
    acc_precision: str = "int32"
    kind: ClassVar[str] = "op"
    weight_name: str = field(default="", kw_only=True)
    source: str = field(default="", kw_only=True)

    # -- interface every op implements -------------------------------------
    def macs(self) -> int:
        """Multiply-accumulates; 0 for ops that only move or transform data."""
        return 0

    def params(self) -> int:
        """Learned parameters (weights + bias) this op reads."""
        return 0

    def input_shapes(self) -> list[Shape]:
        """Shapes of the activation inputs, in port order."""
        raise NotImplementedError

    def output_shapes(self) -> list[Shape]:
        """Shapes of every output (only shape ops like split have several)."""
        return [self.output_shape()]

    def output_shape(self) -> Shape:
        raise NotImplementedError

    def operand_bytes(self) -> dict[str, int]:
        """Bytes of the activation inputs, the parameters and the outputs."""
        return {
            "input": sum(tensor_bytes(prod(s), self.act_precision) for s in self.input_shapes()),
            "weight": tensor_bytes(self.params(), self.weight_precision),
            "output": sum(tensor_bytes(prod(s), self.act_precision) for s in self.output_shapes()),
        }

    def check(self) -> None:
        """Raise WorkloadError if the fields describe an impossible op."""
        from workloads.precision import PRECISIONS

        if not isinstance(self.name, str) or not self.name:
            raise WorkloadError(f"op name: expected a non-empty string, got {self.name!r}")
        for key in ("act_precision", "weight_precision", "acc_precision"):
            value = getattr(self, key)
            if value not in PRECISIONS:
                raise WorkloadError(
                    f"{self.name}: {key}: expected one of {', '.join(PRECISIONS)}, got {value!r}")


@dataclass
class Conv2d(Op):
    """2-D convolution; depthwise is ``groups == in_channels == out_channels``."""

    batch: int = 1
    in_channels: int = 1
    out_channels: int = 1
    in_h: int = 1
    in_w: int = 1
    kernel_h: int = 1
    kernel_w: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    dilation_h: int = 1
    dilation_w: int = 1
    groups: int = 1
    bias: bool = False
    kind: ClassVar[str] = "conv2d"

    @property
    def out_h(self) -> int:
        return _out_size(self.in_h, self.pad_top + self.pad_bottom, self.kernel_h, self.stride_h, self.dilation_h)

    @property
    def out_w(self) -> int:
        return _out_size(self.in_w, self.pad_left + self.pad_right, self.kernel_w, self.stride_w, self.dilation_w)

    def gemm_dims(self) -> tuple[int, int, int, int]:
        """(groups, M, K, N) of the im2col GEMM: M = batch*out_h*out_w,
        K = kernel_h*kernel_w*in_channels/groups, N = out_channels/groups."""
        return (
            self.groups,
            self.batch * self.out_h * self.out_w,
            self.kernel_h * self.kernel_w * (self.in_channels // self.groups),
            self.out_channels // self.groups,
        )

    @property
    def depthwise(self) -> bool:
        return self.groups == self.in_channels == self.out_channels and self.groups > 1

    def macs(self) -> int:
        groups, m, k, n = self.gemm_dims()
        return groups * m * k * n

    def params(self) -> int:
        weights = self.out_channels * (self.in_channels // self.groups) * self.kernel_h * self.kernel_w
        return weights + (self.out_channels if self.bias else 0)

    def input_shapes(self) -> list[Shape]:
        return [(self.batch, self.in_channels, self.in_h, self.in_w)]

    def output_shape(self) -> Shape:
        return (self.batch, self.out_channels, self.out_h, self.out_w)

    def check(self) -> None:
        super().check()
        _positive(self, batch=self.batch, in_channels=self.in_channels, out_channels=self.out_channels,
                  in_h=self.in_h, in_w=self.in_w, kernel_h=self.kernel_h, kernel_w=self.kernel_w,
                  stride_h=self.stride_h, stride_w=self.stride_w, dilation_h=self.dilation_h,
                  dilation_w=self.dilation_w, groups=self.groups)
        _non_negative(self, pad_top=self.pad_top, pad_left=self.pad_left,
                      pad_bottom=self.pad_bottom, pad_right=self.pad_right)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise WorkloadError(
                f"{self.name}: groups: expected in_channels ({self.in_channels}) and out_channels "
                f"({self.out_channels}) divisible by groups ({self.groups})")
        _check_window(self, "kernel", self.kernel_h, self.kernel_w, self.dilation_h, self.dilation_w)


@dataclass
class MatMul(Op):
    """``[batch, m, k] x [k, n] -> [batch, m, n]`` (covers linear, GEMM, batched).

    ``weight_is_param``: B is a learned weight (a linear layer) rather than an
    activation (e.g. Q x K^T). ``transpose_a/b`` record the source layout.
    """

    batch: int = 1
    m: int = 1
    k: int = 1
    n: int = 1
    transpose_a: bool = False
    transpose_b: bool = False
    weight_is_param: bool = True
    bias: bool = False
    kind: ClassVar[str] = "matmul"

    def macs(self) -> int:
        return self.batch * self.m * self.k * self.n

    def params(self) -> int:
        if not self.weight_is_param:
            return 0
        return self.k * self.n + (self.n if self.bias else 0)

    def input_shapes(self) -> list[Shape]:
        """A is ``[batch, m, k]`` (``[batch, k, m]`` if ``transpose_a``); B,
        ``[batch, k, n]`` (``[batch, n, k]`` if ``transpose_b``), is an input
        only when it is an activation: a weight B is a parameter, not an input."""
        shapes = [(self.batch, self.k, self.m) if self.transpose_a else (self.batch, self.m, self.k)]
        if not self.weight_is_param:
            shapes.append((self.batch, self.n, self.k) if self.transpose_b else (self.batch, self.k, self.n))
        return shapes

    def output_shape(self) -> Shape:
        return (self.batch, self.m, self.n)

    def check(self) -> None:
        super().check()
        _positive(self, batch=self.batch, m=self.m, k=self.k, n=self.n)
        if self.bias and not self.weight_is_param:
            raise WorkloadError(f"{self.name}: bias: expected False when B is an activation (weight_is_param=False)")


@dataclass
class Attention(Op):
    """Scaled dot-product attention core (QK^T, softmax, AV), without the
    Q/K/V/O projections (those are MatMul nodes). ``kv_heads < heads`` is
    grouped-query attention. ``causal`` masks future keys."""

    batch: int = 1
    heads: int = 1
    kv_heads: int = 1
    seq_q: int = 1
    seq_kv: int = 1
    head_dim: int = 1
    causal: bool = False
    kind: ClassVar[str] = "attention"

    def score_pairs(self) -> int:
        """(query, key) pairs whose score is computed, per batch and head.

        Non-causal: ``seq_q * seq_kv``. Causal: the queries are the *last*
        ``seq_q`` positions of the ``seq_kv`` keys (prefill: seq_q == seq_kv;
        decode: seq_q = 1 against kv_len + 1 keys), and query ``i`` sees keys
        ``0 .. seq_kv - seq_q + i``; only these unmasked pairs are counted:
        ``seq_q * (seq_kv - seq_q) + seq_q * (seq_q + 1) / 2``.
        """
        if not self.causal:
            return self.seq_q * self.seq_kv
        return self.seq_q * (self.seq_kv - self.seq_q) + self.seq_q * (self.seq_q + 1) // 2

    def macs(self) -> int:
        """QK^T plus AV: ``2 * batch * heads * score_pairs() * head_dim``."""
        return 2 * self.batch * self.heads * self.score_pairs() * self.head_dim

    def input_shapes(self) -> list[Shape]:
        kv = (self.batch, self.seq_kv, self.kv_heads * self.head_dim)
        return [(self.batch, self.seq_q, self.heads * self.head_dim), kv, kv]

    def output_shape(self) -> Shape:
        return (self.batch, self.seq_q, self.heads * self.head_dim)

    def check(self) -> None:
        super().check()
        _positive(self, batch=self.batch, heads=self.heads, kv_heads=self.kv_heads,
                  seq_q=self.seq_q, seq_kv=self.seq_kv, head_dim=self.head_dim)
        if self.heads % self.kv_heads:
            raise WorkloadError(
                f"{self.name}: kv_heads: expected a divisor of heads ({self.heads}), got {self.kv_heads}")
        if self.causal and self.seq_kv < self.seq_q:
            raise WorkloadError(
                f"{self.name}: seq_kv: expected >= seq_q ({self.seq_q}) for causal attention, got {self.seq_kv}")


@dataclass
class Softmax(Op):
    shape: tuple[int, ...] = (1,)
    axis: int = -1
    kind: ClassVar[str] = "softmax"

    def input_shapes(self) -> list[Shape]:
        return [self.shape]

    def output_shape(self) -> Shape:
        return self.shape

    def check(self) -> None:
        super().check()
        _shape_ok(self, "shape", self.shape)
        if not -len(self.shape) <= self.axis < len(self.shape):
            raise WorkloadError(f"{self.name}: axis: expected an axis of shape {self.shape}, got {self.axis}")


@dataclass
class _Normalization(Op):
    """Shared shape and checks of LayerNorm and RMSNorm."""

    shape: tuple[int, ...] = (1,)
    normalized_size: int = 1  # elements normalised together (last dims)
    affine: bool = True

    def input_shapes(self) -> list[Shape]:
        return [self.shape]

    def output_shape(self) -> Shape:
        return self.shape

    def check(self) -> None:
        super().check()
        _shape_ok(self, "shape", self.shape)
        _positive(self, normalized_size=self.normalized_size)
        if prod(self.shape) % self.normalized_size:
            raise WorkloadError(f"{self.name}: normalized_size: expected a divisor of the "
                                f"{prod(self.shape)} elements of {self.shape}, got {self.normalized_size}")


@dataclass
class LayerNorm(_Normalization):
    kind: ClassVar[str] = "layernorm"

    def params(self) -> int:
        """Scale and shift (gamma, beta) per normalised element."""
        return 2 * self.normalized_size if self.affine else 0


@dataclass
class RMSNorm(_Normalization):
    kind: ClassVar[str] = "rmsnorm"

    def params(self) -> int:
        """Scale (gamma) per normalised element; RMSNorm has no shift."""
        return self.normalized_size if self.affine else 0


@dataclass
class Elementwise(Op):
    """``fn`` in add, sub, mul, div, relu, relu6, gelu, silu, sigmoid, tanh,
    erf, exp, ... ; ``num_inputs`` tensors of ``shape`` (broadcast allowed)."""

    fn: str = "add"
    shape: tuple[int, ...] = (1,)
    num_inputs: int = 1
    kind: ClassVar[str] = "elementwise"
    #: elements of learned constant operands (a bias, a scale, a position
    #: table added to the input); counted as parameters
    const_params: int = field(default=0, kw_only=True)
    #: explicit input shapes when they are not all ``shape`` (a reduction, or
    #: a generic vector op such as an unknown ONNX op mapped with
    #: ``unknown_ops="vector"``); empty means ``[shape] * num_inputs``
    in_shapes: tuple[tuple[int, ...], ...] = field(default=(), kw_only=True)

    def params(self) -> int:
        return self.const_params

    def input_shapes(self) -> list[Shape]:
        if self.in_shapes:
            return [tuple(s) for s in self.in_shapes]
        return [self.shape] * self.num_inputs

    def output_shape(self) -> Shape:
        return self.shape

    def check(self) -> None:
        super().check()
        _shape_ok(self, "shape", self.shape)
        _non_negative(self, num_inputs=self.num_inputs, const_params=self.const_params)
        for i, s in enumerate(self.in_shapes):
            _shape_ok(self, f"in_shapes[{i}]", tuple(s))


@dataclass
class Pool(Op):
    """``mode`` in max, avg; ``global_pool`` reduces the whole H x W."""

    mode: str = "max"
    global_pool: bool = False
    batch: int = 1
    channels: int = 1
    in_h: int = 1
    in_w: int = 1
    kernel_h: int = 1
    kernel_w: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    kind: ClassVar[str] = "pool"

    @property
    def out_h(self) -> int:
        if self.global_pool:
            return 1
        return _out_size(self.in_h, self.pad_top + self.pad_bottom, self.kernel_h, self.stride_h)

    @property
    def out_w(self) -> int:
        if self.global_pool:
            return 1
        return _out_size(self.in_w, self.pad_left + self.pad_right, self.kernel_w, self.stride_w)

    def window_elements(self) -> int:
        """Input elements each output reduces (H*W for a global pool)."""
        return self.in_h * self.in_w if self.global_pool else self.kernel_h * self.kernel_w

    def input_shapes(self) -> list[Shape]:
        return [(self.batch, self.channels, self.in_h, self.in_w)]

    def output_shape(self) -> Shape:
        return (self.batch, self.channels, self.out_h, self.out_w)

    def check(self) -> None:
        super().check()
        if self.mode not in ("max", "avg"):
            raise WorkloadError(f"{self.name}: mode: expected 'max' or 'avg', got {self.mode!r}")
        _positive(self, batch=self.batch, channels=self.channels, in_h=self.in_h, in_w=self.in_w,
                  kernel_h=self.kernel_h, kernel_w=self.kernel_w, stride_h=self.stride_h, stride_w=self.stride_w)
        _non_negative(self, pad_top=self.pad_top, pad_left=self.pad_left,
                      pad_bottom=self.pad_bottom, pad_right=self.pad_right)
        if not self.global_pool:
            _check_window(self, "kernel", self.kernel_h, self.kernel_w, 1, 1)


@dataclass
class Embedding(Op):
    vocab: int = 1
    dim: int = 1
    tokens: int = 1  # batch * seq
    kind: ClassVar[str] = "embedding"

    def params(self) -> int:
        return self.vocab * self.dim

    def input_shapes(self) -> list[Shape]:
        """Token ids (one per token)."""
        return [(self.tokens,)]

    def output_shape(self) -> Shape:
        return (self.tokens, self.dim)

    def operand_bytes(self) -> dict[str, int]:
        """Ids are 4-byte integers; ``weight`` is the whole table (what a
        parameter store holds), although a lookup reads ``tokens`` rows."""
        return {
            "input": 4 * self.tokens,
            "weight": tensor_bytes(self.params(), self.weight_precision),
            "output": tensor_bytes(self.tokens * self.dim, self.act_precision),
        }

    def check(self) -> None:
        super().check()
        _positive(self, vocab=self.vocab, dim=self.dim, tokens=self.tokens)


@dataclass
class ShapeOp(Op):
    """reshape, transpose, concat, split, flatten, ...: cost nothing, carry shapes.
    ``fn`` names which; ``in_shapes`` and ``out_shapes`` are explicit."""

    fn: str = "reshape"
    in_shapes: tuple[tuple[int, ...], ...] = ((1,),)
    out_shapes: tuple[tuple[int, ...], ...] = ((1,),)
    kind: ClassVar[str] = "shape"

    def input_shapes(self) -> list[Shape]:
        return [tuple(s) for s in self.in_shapes]

    def output_shapes(self) -> list[Shape]:
        return [tuple(s) for s in self.out_shapes]

    def output_shape(self) -> Shape:
        return tuple(self.out_shapes[0])

    def check(self) -> None:
        super().check()
        if not self.out_shapes:
            raise WorkloadError(f"{self.name}: out_shapes: expected at least one shape")
        for key, shapes in (("in_shapes", self.in_shapes), ("out_shapes", self.out_shapes)):
            for i, s in enumerate(shapes):
                _shape_ok(self, f"{key}[{i}]", tuple(s))
        if self.fn in ("reshape", "flatten", "squeeze", "unsqueeze", "transpose") and self.in_shapes:
            if prod(self.in_shapes[0]) != prod(self.out_shapes[0]):
                raise WorkloadError(
                    f"{self.name}: {self.fn} of {tuple(self.in_shapes[0])} to {tuple(self.out_shapes[0])}: "
                    f"expected the same number of elements")


@dataclass
class TopK(Op):
    """Rank ``n`` importance scores and keep the ``k`` largest, ``count`` times (one per batch item,
    or per batch item and kv head), after accumulating them with ``accumulate_adds`` additions
    (SpAtten's cumulative attention probabilities). Inserted by cascade pruning
    (:mod:`workloads.transforms.spatten`); it reads the attention's probabilities, not a tensor
    of the graph, so it has no inputs, and its output is the ``k`` kept indices."""

    n: int = 1
    k: int = 1
    count: int = 1
    accumulate_adds: int = 0
    target: str = "tokens"  # "tokens" | "heads"
    kind: ClassVar[str] = "topk"

    def input_shapes(self) -> list[Shape]:
        return []

    def output_shape(self) -> Shape:
        return (self.count, self.k)

    def check(self) -> None:
        super().check()
        _positive(self, n=self.n, k=self.k, count=self.count)
        if self.k > self.n:
            raise WorkloadError(f"{self.name}: k: expected at most n = {self.n} kept, got {self.k}")
        if self.target not in ("tokens", "heads"):
            raise WorkloadError(f"{self.name}: target: expected tokens or heads, got {self.target!r}")


@dataclass
class LsbRefetch(Op):
    """SpAtten's progressive-quantization refetch: for ``rows`` query rows whose attention was not
    confident (max probability below the threshold), spread over ``heads`` (batch, head) pairs,
    fetch the ``lsb_bits`` of each such head's ``keys`` K rows of ``head_dim`` values once and
    recompute the rows' scores and softmax (Q.K: ``rows * keys * head_dim`` MACs). Inserted after
    its attention layer by :func:`workloads.transforms.spatten.lsb_refetch`; like :class:`TopK` it
    has no graph inputs."""

    rows: int = 1
    heads: int = 1
    keys: int = 1
    head_dim: int = 1
    lsb_bits: int = 4
    kind: ClassVar[str] = "lsb_refetch"

    def input_shapes(self) -> list[Shape]:
        return []

    def output_shape(self) -> Shape:
        return (self.rows, self.keys)

    def macs(self) -> int:
        return self.rows * self.keys * self.head_dim

    def check(self) -> None:
        super().check()
        _positive(self, rows=self.rows, heads=self.heads, keys=self.keys, head_dim=self.head_dim,
                  lsb_bits=self.lsb_bits)
        if self.heads > self.rows:
            raise WorkloadError(f"{self.name}: heads: expected at most rows = {self.rows}, got {self.heads}")


def _check_window(op: Op, what: str, kh: int, kw: int, dh: int, dw: int) -> None:
    """A (dilated) window must fit in the padded input."""
    eff_h, eff_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    padded_h = op.in_h + op.pad_top + op.pad_bottom
    padded_w = op.in_w + op.pad_left + op.pad_right
    if eff_h > padded_h or eff_w > padded_w:
        raise WorkloadError(
            f"{op.name}: {what} {kh}x{kw} (dilated {eff_h}x{eff_w}) is larger than the padded input "
            f"{padded_h}x{padded_w}; expected a window that fits")
