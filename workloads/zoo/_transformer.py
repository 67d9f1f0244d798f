"""Transformer pieces shared by the BERT, ViT, GPT-2 and Llama-style builders.

One attention sub-block (Q/K/V projections, optional rotary embedding, an
optional KV cache for decode, the attention core, the output projection) and
one MLP sub-block (plain ``fc1 -> act -> fc2`` or gated ``down(act(gate) *
up)``). Residual adds and norms are placed by the callers, since pre-norm
(GPT-2, ViT, Llama) and post-norm (BERT) differ.

Decode convention: one new token per sequence attends to a KV cache of
``kv_len`` earlier tokens plus itself, so the attention core has
``seq_q = 1`` and ``seq_kv = kv_len + 1``. The cache is a graph input that a
``concat`` shape op joins with the new token's K (and V).
"""
from __future__ import annotations

from dataclasses import dataclass

from workloads.zoo._net import Net


@dataclass(frozen=True)
class Block:
    """Shape of one transformer layer."""

    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    bias: bool  # projections and MLP carry biases (GPT-2, BERT, ViT) or not (Llama)
    act: str  # "gelu" | "silu" | "relu"
    gated: bool  # gated MLP (SwiGLU) with gate/up/down projections
    rope: bool  # rotary position embedding applied to Q and K
    causal: bool

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def attention(net: Net, p: str, x: str, cfg: Block, *, batch: int, seq_q: int, kv_len: int | None) -> str:
    """Self-attention of ``x`` ([batch, seq_q, hidden]); returns the O projection."""
    hd = cfg.head_dim
    q = net.linear(f"{p}.q_proj", x, cfg.heads * hd, bias=cfg.bias)
    k = net.linear(f"{p}.k_proj", x, cfg.kv_heads * hd, bias=cfg.bias)
    v = net.linear(f"{p}.v_proj", x, cfg.kv_heads * hd, bias=cfg.bias)
    if cfg.rope:
        q = net.eltwise(f"{p}.q_rope", "rope", q)
        k = net.eltwise(f"{p}.k_rope", "rope", k)
    seq_kv = seq_q
    if kv_len is not None:  # decode: join the cache with the new token's K and V
        kvd = cfg.kv_heads * hd
        seq_kv = kv_len + 1
        full = (batch, seq_kv, kvd)
        if kv_len > 0:
            k_cache = net.input(f"{p}.k_cache", (batch, kv_len, kvd))
            v_cache = net.input(f"{p}.v_cache", (batch, kv_len, kvd))
            k = net.shape_op(f"{p}.k_concat", "concat", [k_cache, k], [full])
            v = net.shape_op(f"{p}.v_concat", "concat", [v_cache, v], [full])
    a = net.attention(f"{p}.attn", q, k, v, batch=batch, heads=cfg.heads, kv_heads=cfg.kv_heads, seq_q=seq_q,
                      seq_kv=seq_kv, head_dim=hd, causal=cfg.causal)
    return net.linear(f"{p}.o_proj", a, cfg.hidden, bias=cfg.bias)


def mlp(net: Net, p: str, x: str, cfg: Block) -> str:
    if cfg.gated:
        gate = net.linear(f"{p}.gate_proj", x, cfg.ffn, bias=cfg.bias)
        up = net.linear(f"{p}.up_proj", x, cfg.ffn, bias=cfg.bias)
        act = net.eltwise(f"{p}.{cfg.act}", cfg.act, gate)
        h = net.eltwise(f"{p}.mul", "mul", act, up)
        return net.linear(f"{p}.down_proj", h, cfg.hidden, bias=cfg.bias)
    h = net.linear(f"{p}.fc1", x, cfg.ffn, bias=cfg.bias)
    h = net.eltwise(f"{p}.{cfg.act}", cfg.act, h)
    return net.linear(f"{p}.fc2", h, cfg.hidden, bias=cfg.bias)


def pre_norm_layer(net: Net, p: str, x: str, cfg: Block, norm: str, *, batch: int, seq_q: int,
                   kv_len: int | None) -> str:
    """``x + attn(norm(x))`` then ``x + mlp(norm(x))`` (GPT-2, ViT, Llama)."""
    normed = getattr(net, norm)(f"{p}.norm1", x)
    x = net.eltwise(f"{p}.add1", "add", x, attention(net, f"{p}.self_attn", normed, cfg, batch=batch,
                                                        seq_q=seq_q, kv_len=kv_len))
    normed = getattr(net, norm)(f"{p}.norm2", x)
    return net.eltwise(f"{p}.add2", "add", x, mlp(net, f"{p}.mlp", normed, cfg))


def post_norm_layer(net: Net, p: str, x: str, cfg: Block, *, batch: int, seq_q: int) -> str:
    """``norm(x + attn(x))`` then ``norm(x + mlp(x))`` (BERT)."""
    x = net.eltwise(f"{p}.add1", "add", x, attention(net, f"{p}.self_attn", x, cfg, batch=batch, seq_q=seq_q,
                                                        kv_len=None))
    x = net.layernorm(f"{p}.norm1", x)
    x = net.eltwise(f"{p}.add2", "add", x, mlp(net, f"{p}.mlp", x, cfg))
    return net.layernorm(f"{p}.norm2", x)
