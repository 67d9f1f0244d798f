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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass
class Op:
    name: str
    act_precision: str = "int8"
    weight_precision: str = "int8"
    acc_precision: str = "int32"
    kind: ClassVar[str] = "op"


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
        eff = self.dilation_h * (self.kernel_h - 1) + 1
        return (self.in_h + self.pad_top + self.pad_bottom - eff) // self.stride_h + 1

    @property
    def out_w(self) -> int:
        eff = self.dilation_w * (self.kernel_w - 1) + 1
        return (self.in_w + self.pad_left + self.pad_right - eff) // self.stride_w + 1

    def gemm_dims(self) -> tuple[int, int, int, int]:
        """(groups, M, K, N) of the im2col GEMM: M = batch*out_h*out_w,
        K = kernel_h*kernel_w*in_channels/groups, N = out_channels/groups."""
        return (
            self.groups,
            self.batch * self.out_h * self.out_w,
            self.kernel_h * self.kernel_w * (self.in_channels // self.groups),
            self.out_channels // self.groups,
        )


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


@dataclass
class Softmax(Op):
    shape: tuple[int, ...] = (1,)
    axis: int = -1
    kind: ClassVar[str] = "softmax"


@dataclass
class LayerNorm(Op):
    shape: tuple[int, ...] = (1,)
    normalized_size: int = 1  # elements normalised together (last dims)
    affine: bool = True
    kind: ClassVar[str] = "layernorm"


@dataclass
class RMSNorm(Op):
    shape: tuple[int, ...] = (1,)
    normalized_size: int = 1
    affine: bool = True
    kind: ClassVar[str] = "rmsnorm"


@dataclass
class Elementwise(Op):
    """``fn`` in add, sub, mul, div, relu, relu6, gelu, silu, sigmoid, tanh,
    erf, exp, ... ; ``num_inputs`` tensors of ``shape`` (broadcast allowed)."""

    fn: str = "add"
    shape: tuple[int, ...] = (1,)
    num_inputs: int = 1
    kind: ClassVar[str] = "elementwise"


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


@dataclass
class Embedding(Op):
    vocab: int = 1
    dim: int = 1
    tokens: int = 1  # batch * seq
    kind: ClassVar[str] = "embedding"


@dataclass
class ShapeOp(Op):
    """reshape, transpose, concat, split, flatten, ...: cost nothing, carry shapes.
    ``fn`` names which; ``in_shapes`` and ``out_shapes`` are explicit."""

    fn: str = "reshape"
    in_shapes: tuple[tuple[int, ...], ...] = ((1,),)
    out_shapes: tuple[tuple[int, ...], ...] = ((1,),)
    kind: ClassVar[str] = "shape"
