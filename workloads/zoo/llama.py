"""Llama-style decoders: a config-driven builder and named presets.

Pre-norm layers with RMSNorm, bias-free projections, rotary position
embeddings, a SwiGLU MLP (gate, up, down) and grouped-query attention when
``kv_heads < heads``; untied LM head unless ``tie_embeddings``.

``phase="prefill"`` runs ``seq_len`` tokens (causal self-attention);
``phase="decode"`` runs one new token per sequence against a KV cache of
``kv_len`` tokens, so attention has ``seq_q = 1`` and ``seq_kv = kv_len + 1``.
"""
from __future__ import annotations

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo._net import Net, check_phase, check_positive
from workloads.zoo._transformer import Block, pre_norm_layer


def decoder(*, hidden: int = 4096, layers: int = 32, heads: int = 32, kv_heads: int | None = None,
            ffn: int = 11008, vocab: int = 32000, batch: int = 1, seq_len: int = 128, phase: str = "prefill",
            kv_len: int | None = None, tie_embeddings: bool = False, name: str = "decoder",
            weight_precision: str = "int8", act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """A Llama-style decoder from its config (defaults are Llama-2-7B's)."""
    kv_heads = heads if kv_heads is None else kv_heads
    check_positive(name, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab,
                   batch=batch, seq_len=seq_len)
    check_phase(name, phase, kv_len)
    if hidden % heads:
        raise WorkloadError(f"{name}: heads: expected a divisor of hidden ({hidden}), got {heads}")
    if heads % kv_heads:
        raise WorkloadError(f"{name}: kv_heads: expected a divisor of heads ({heads}), got {kv_heads}")
    cfg = Block(hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, bias=False, act="silu", gated=True,
                rope=True, causal=True)
    net = Net(name, weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    seq_q = seq_len if phase == "prefill" else 1
    shared = "embed_tokens" if tie_embeddings else ""
    x = net.embedding("embed_tokens", net.input("input_ids", (batch, seq_q)), vocab, hidden,
                      (batch, seq_q, hidden), weight_name=shared)
    for i in range(layers):
        x = pre_norm_layer(net, f"layers{i}", x, cfg, "rmsnorm", batch=batch, seq_q=seq_q,
                           kv_len=kv_len if phase == "decode" else None)
    x = net.rmsnorm("norm", x)
    net.linear("lm_head", x, vocab, bias=False, weight_name=shared)
    return net.graph


def llama2_7b(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
              weight_precision: str = "int8", act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """Llama-2-7B (Touvron et al. 2023): 4096 wide, 32 layers, 32 heads, FFN 11008, vocab 32000."""
    return decoder(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000, batch=batch,
                   seq_len=seq_len, phase=phase, kv_len=kv_len, name="llama2_7b",
                   weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)


def llama3_8b(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
              weight_precision: str = "int8", act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """Llama-3-8B (Meta 2024): 4096 wide, 32 layers, 32 heads with 8 KV heads (GQA), FFN 14336, vocab 128256."""
    return decoder(hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=128256, batch=batch,
                   seq_len=seq_len, phase=phase, kv_len=kv_len, name="llama3_8b",
                   weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
