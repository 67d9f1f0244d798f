"""A small helper that zoo builders use to add ops with inferred input shapes.

It keeps each tensor's *logical* shape (e.g. ``[batch, seq, hidden]`` for a
token tensor, even when a linear layer's MatMul views it as
``[1, batch*seq, hidden]``), so that norms and element-wise ops carry the
shape a reader expects.
"""
from __future__ import annotations

from math import prod

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.ops import (Attention, Conv2d, Elementwise, Embedding, LayerNorm, MatMul, Pool, RMSNorm,
                           ShapeOp, Softmax)
from workloads.precision import PRECISIONS

Shape = tuple[int, ...]


def check_positive(model: str, **values) -> None:
    """Zoo parameters must be positive integers."""
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise WorkloadError(f"{model}: {key}: expected a positive integer, got {value!r}")


def check_phase(model: str, phase: str, kv_len: int | None) -> None:
    if phase not in ("prefill", "decode"):
        raise WorkloadError(f"{model}: phase: expected 'prefill' or 'decode', got {phase!r}")
    if phase == "prefill" and kv_len is not None:
        raise WorkloadError(f"{model}: kv_len: only used with phase='decode' (prefill has no KV cache)")
    if phase == "decode":
        if kv_len is None:
            raise WorkloadError(f"{model}: kv_len: expected the KV-cache length for phase='decode'")
        if not isinstance(kv_len, int) or isinstance(kv_len, bool) or kv_len < 0:
            raise WorkloadError(f"{model}: kv_len: expected a non-negative integer, got {kv_len!r}")


class Net:
    """Builds a Graph, inferring each op's input shape from its producer."""

    def __init__(self, name: str, *, weight_precision: str, act_precision: str, acc_precision: str):
        for key, value in (("weight_precision", weight_precision), ("act_precision", act_precision),
                           ("acc_precision", acc_precision)):
            if value not in PRECISIONS:
                raise WorkloadError(f"{name}: {key}: expected one of {', '.join(PRECISIONS)}, got {value!r}")
        self.graph = Graph(name)
        self.precision = dict(weight_precision=weight_precision, act_precision=act_precision,
                              acc_precision=acc_precision)
        self.shapes: dict[str, Shape] = {}

    def _add(self, cls, name: str, inputs, logical: Shape, **fields) -> str:
        fields.setdefault("source", "zoo")
        self.graph.add(cls(name=name, **self.precision, **fields), inputs)
        self.shapes[name] = tuple(logical)
        return name

    # -- CNN ops -----------------------------------------------------------------
    def conv(self, name, x, out_channels, kernel, stride=1, padding=0, groups=1, bias=True):
        b, c, h, w = self.shapes[x]
        op = Conv2d(name=name, batch=b, in_channels=c, out_channels=out_channels, in_h=h, in_w=w,
                    kernel_h=kernel, kernel_w=kernel, stride_h=stride, stride_w=stride, pad_top=padding,
                    pad_left=padding, pad_bottom=padding, pad_right=padding, groups=groups, bias=bias,
                    source="zoo", **self.precision)
        self.graph.add(op, self._refs(x))
        self.shapes[name] = op.output_shape()
        return name

    def pool(self, name, x, mode, kernel=1, stride=1, padding=0, global_pool=False):
        b, c, h, w = self.shapes[x]
        op = Pool(name=name, mode=mode, global_pool=global_pool, batch=b, channels=c, in_h=h, in_w=w,
                  kernel_h=kernel, kernel_w=kernel, stride_h=stride, stride_w=stride, pad_top=padding,
                  pad_left=padding, pad_bottom=padding, pad_right=padding, source="zoo", **self.precision)
        self.graph.add(op, self._refs(x))
        self.shapes[name] = op.output_shape()
        return name

    # -- generic ops -------------------------------------------------------------
    def input(self, name: str, shape: Shape) -> str:
        """Declare a graph input's logical shape (no node: a name to read from)."""
        self.shapes[name] = tuple(shape)
        return name

    def _refs(self, *xs):
        """Names that are ops become edges; declared inputs become graph inputs (None)."""
        return [x if x in self.graph else None for x in xs]

    def eltwise(self, name, fn, *xs, const_params=0):
        shape = self.shapes[xs[0]]
        return self._add(Elementwise, name, self._refs(*xs), shape, fn=fn, shape=shape, num_inputs=len(xs),
                         const_params=const_params)

    def linear(self, name, x, n, bias=True, weight_name=""):
        shape = self.shapes[x]
        k, m = shape[-1], prod(shape[:-1])
        return self._add(MatMul, name, self._refs(x), shape[:-1] + (n,), batch=1, m=m, k=k, n=n,
                         weight_is_param=True, bias=bias, weight_name=weight_name)

    def layernorm(self, name, x):
        shape = self.shapes[x]
        return self._add(LayerNorm, name, self._refs(x), shape, shape=shape, normalized_size=shape[-1])

    def rmsnorm(self, name, x):
        shape = self.shapes[x]
        return self._add(RMSNorm, name, self._refs(x), shape, shape=shape, normalized_size=shape[-1])

    def softmax(self, name, x):
        shape = self.shapes[x]
        return self._add(Softmax, name, self._refs(x), shape, shape=shape, axis=-1)

    def embedding(self, name, ids, vocab, dim, logical: Shape, weight_name=""):
        tokens = prod(logical[:-1])
        return self._add(Embedding, name, self._refs(ids), logical, vocab=vocab, dim=dim, tokens=tokens,
                         weight_name=weight_name)

    def shape_op(self, name, fn, xs, out_shapes: list[Shape]):
        in_shapes = tuple(self.shapes[x] for x in xs)
        self._add(ShapeOp, name, self._refs(*xs), out_shapes[0], fn=fn, in_shapes=in_shapes,
                  out_shapes=tuple(tuple(s) for s in out_shapes))
        return name

    def attention(self, name, q, k, v, *, batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal):
        return self._add(Attention, name, self._refs(q, k, v), (batch, seq_q, heads * head_dim), batch=batch,
                         heads=heads, kv_heads=kv_heads, seq_q=seq_q, seq_kv=seq_kv, head_dim=head_dim,
                         causal=causal)
