"""Attention-only workloads with the dimensions FuseMax evaluates (Nayak et al.,
MICRO 2024, after FLAT): one multi-head self-attention block (QK^T, softmax,
AV) without the Q/K/V/O projections.

==========  =======  =====  ========
name        d_model  heads  head dim
==========  =======  =====  ========
attn_bert   768      12     64
attn_trxl   1024     16     64
attn_t5     512      8      64
attn_xlm    2048     16     128
==========  =======  =====  ========
"""
from __future__ import annotations

from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive

DIMS = {"attn_bert": (768, 12), "attn_trxl": (1024, 16), "attn_t5": (512, 8), "attn_xlm": (2048, 16)}


def attention_block(name: str, *, batch: int = 1, seq_len: int = 4096, weight_precision: str = "bf16",
                    act_precision: str = "bf16", acc_precision: str = "fp32") -> Graph:
    check_positive(name, batch=batch, seq_len=seq_len)
    d_model, heads = DIMS[name]
    hd = d_model // heads
    net = Net(name, weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    shape = (batch, seq_len, d_model)
    q, k, v = (net.input(n, shape) for n in ("q", "k", "v"))
    net.attention("attn", q, k, v, batch=batch, heads=heads, kv_heads=heads, seq_q=seq_len, seq_kv=seq_len,
                  head_dim=hd, causal=False)
    return net.graph
