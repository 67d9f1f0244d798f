"""Low-bit LLMs: BitNet b1.58 (ternary weights, int8 activations) and weight-quantized Llamas.

The linear layers of the decoder blocks carry the low-bit ``weight_precision``
(ternary, int1..int4) and ``act_precision``; the token embedding and the LM head
keep their usual 16-bit precision (``head_precision``, weights and activations),
as the models ship them (BitNet b1.58 2B4T: bf16 embedding tied to the LM head;
GPTQ / AWQ-style W4A16 and 2-bit Llamas: fp16 embedding and LM head).

BitNet b1.58 2B4T (Ma et al. 2025, arXiv:2504.12285; config of Hugging Face
microsoft/bitnet-b1.58-2B-4T): Llama-style blocks with squared-ReLU gated MLP,
"subln" (an extra RMSNorm before the attention output projection and before the
MLP down projection), GQA 20 heads / 5 KV heads, tied embeddings.
BitNet b1.58 3B (the reproduction 1bitLLM/bitnet_b1_58-3B of Ma et al. 2024,
arXiv:2402.17764): a Llama block (SwiGLU, no subln), 3200 wide, 26 layers.
"""
from __future__ import annotations

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo._net import Net, check_phase, check_positive
from workloads.zoo._transformer import Block


def lowbit_decoder(*, hidden: int, layers: int, heads: int, kv_heads: int, ffn: int, vocab: int, act: str,
                   subln: bool, tie_embeddings: bool, name: str, batch: int = 1, seq_len: int = 128,
                   phase: str = "prefill", kv_len: int | None = None, weight_precision: str = "ternary",
                   act_precision: str = "int8", head_precision: str = "bf16") -> Graph:
    """A Llama-style decoder whose block linears are low-bit and whose embedding / LM head are 16-bit
    (integer activations accumulate in int32, float ones in fp32)."""
    acc_precision = "int32" if str(act_precision).startswith("int") else "fp32"
    check_positive(name, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab,
                   batch=batch, seq_len=seq_len)
    check_phase(name, phase, kv_len)
    if hidden % heads or heads % kv_heads:
        raise WorkloadError(f"{name}: heads / kv_heads: expected divisors of hidden / heads")
    cfg = Block(hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, bias=False, act=act, gated=True,
                rope=True, causal=True)
    net = Net(name, weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    head = Net(name, weight_precision=head_precision, act_precision=head_precision, acc_precision="fp32").precision
    body = dict(net.precision)
    seq_q = seq_len if phase == "prefill" else 1
    shared = "embed_tokens" if tie_embeddings else ""
    net.precision = head
    x = net.embedding("embed_tokens", net.input("input_ids", (batch, seq_q)), vocab, hidden,
                      (batch, seq_q, hidden), weight_name=shared)
    net.precision = body
    norm = {**body, "weight_precision": head_precision}  # norm scales stay 16-bit
    for i in range(layers):
        x = _layer(net, f"layers{i}", x, cfg, subln, norm, batch=batch, seq_q=seq_q,
                   kv_len=kv_len if phase == "decode" else None)
    x = _rmsnorm(net, norm, "norm", x)
    net.precision = head
    net.linear("lm_head", x, vocab, bias=False, weight_name=shared)
    return net.graph


def _rmsnorm(net: Net, precision: dict, name: str, x: str) -> str:
    body, net.precision = net.precision, precision
    try:
        return net.rmsnorm(name, x)
    finally:
        net.precision = body


def _layer(net: Net, p: str, x: str, cfg: Block, subln: bool, norm: dict, *, batch: int, seq_q: int,
           kv_len: int | None) -> str:
    hd = cfg.head_dim
    h = _rmsnorm(net, norm, f"{p}.input_layernorm", x)
    q = net.eltwise(f"{p}.self_attn.q_rope", "rope", net.linear(f"{p}.self_attn.q_proj", h, cfg.heads * hd, bias=False))
    k = net.eltwise(f"{p}.self_attn.k_rope", "rope",
                    net.linear(f"{p}.self_attn.k_proj", h, cfg.kv_heads * hd, bias=False))
    v = net.linear(f"{p}.self_attn.v_proj", h, cfg.kv_heads * hd, bias=False)
    seq_kv = seq_q
    if kv_len is not None:
        kvd = cfg.kv_heads * hd
        seq_kv = kv_len + 1
        if kv_len > 0:
            full = (batch, seq_kv, kvd)
            k = net.shape_op(f"{p}.self_attn.k_concat", "concat", [net.input(f"{p}.k_cache", (batch, kv_len, kvd)), k],
                             [full])
            v = net.shape_op(f"{p}.self_attn.v_concat", "concat", [net.input(f"{p}.v_cache", (batch, kv_len, kvd)), v],
                             [full])
    a = net.attention(f"{p}.self_attn.attn", q, k, v, batch=batch, heads=cfg.heads, kv_heads=cfg.kv_heads,
                      seq_q=seq_q, seq_kv=seq_kv, head_dim=hd, causal=True)
    if subln:
        a = _rmsnorm(net, norm, f"{p}.self_attn.attn_sub_norm", a)
    x = net.eltwise(f"{p}.add1", "add", x, net.linear(f"{p}.self_attn.o_proj", a, cfg.hidden, bias=False))
    h = _rmsnorm(net, norm, f"{p}.post_attention_layernorm", x)
    gate = net.linear(f"{p}.mlp.gate_proj", h, cfg.ffn, bias=False)
    up = net.linear(f"{p}.mlp.up_proj", h, cfg.ffn, bias=False)
    m = net.eltwise(f"{p}.mlp.mul", "mul", net.eltwise(f"{p}.mlp.{cfg.act}", cfg.act, gate), up)
    if subln:
        m = _rmsnorm(net, norm, f"{p}.mlp.ffn_sub_norm", m)
    return net.eltwise(f"{p}.add2", "add", x, net.linear(f"{p}.mlp.down_proj", m, cfg.hidden, bias=False))


def bitnet_b158_2b(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
                   weight_precision: str = "ternary", act_precision: str = "int8", head_precision: str = "bf16"
                   ) -> Graph:
    """BitNet b1.58 2B4T: 2560 wide, 30 layers, 20 heads / 5 KV heads, FFN 6912 (ReLU^2 GLU), vocab 128256, tied."""
    return lowbit_decoder(hidden=2560, layers=30, heads=20, kv_heads=5, ffn=6912, vocab=128256, act="relu2",
                          subln=True, tie_embeddings=True, name="bitnet-b1.58-2b", batch=batch, seq_len=seq_len,
                          phase=phase, kv_len=kv_len, weight_precision=weight_precision, act_precision=act_precision,
                          head_precision=head_precision)


def bitnet_b158_3b(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
                   weight_precision: str = "ternary", act_precision: str = "int8", head_precision: str = "fp16"
                   ) -> Graph:
    """BitNet b1.58 3B (1bitLLM reproduction): 3200 wide, 26 layers, 32 heads, FFN 8640 (SwiGLU), vocab 32002.

    Its published 3.32 B parameters equal the blocks plus ONE 32002 x 3200 table, so
    the table is shared by the embedding and the LM head here."""
    return lowbit_decoder(hidden=3200, layers=26, heads=32, kv_heads=32, ffn=8640, vocab=32002, act="silu",
                          subln=False, tie_embeddings=True, name="bitnet-b1.58-3b", batch=batch, seq_len=seq_len,
                          phase=phase, kv_len=kv_len, weight_precision=weight_precision, act_precision=act_precision,
                          head_precision=head_precision)


def _llama_lowbit(config: str, default_weights: str, batch: int, seq_len: int, phase: str, kv_len: int | None,
                  weight_precision: str | None, act_precision: str, head_precision: str) -> Graph:
    """Weight-only quantized Llama-2-7B / Llama-3-8B (GPTQ / AWQ style: low-bit block linears, fp16
    activations, fp16 embedding and LM head)."""
    shapes = {"llama2_7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000),
              "llama3_8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=128256)}[config]
    wp = weight_precision or default_weights
    return lowbit_decoder(**shapes, act="silu", subln=False, tie_embeddings=False, name=f"{config}-{default_weights}",
                          batch=batch, seq_len=seq_len, phase=phase, kv_len=kv_len, weight_precision=wp,
                          act_precision=act_precision, head_precision=head_precision)


def llama2_7b_w4a16(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
                    weight_precision: str = "int4", act_precision: str = "fp16", head_precision: str = "fp16") -> Graph:
    """Llama-2-7B with int4 block weights, fp16 activations (GPTQ / AWQ W4A16)."""
    return _llama_lowbit("llama2_7b", "int4", batch, seq_len, phase, kv_len, weight_precision, act_precision,
                         head_precision)


def llama2_7b_w2a16(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
                    weight_precision: str = "int2", act_precision: str = "fp16", head_precision: str = "fp16") -> Graph:
    """Llama-2-7B with 2-bit block weights, fp16 activations (2-bit weight-only quantization)."""
    return _llama_lowbit("llama2_7b", "int2", batch, seq_len, phase, kv_len, weight_precision, act_precision,
                         head_precision)


def llama3_8b_w4a16(*, batch: int = 1, seq_len: int = 128, phase: str = "prefill", kv_len: int | None = None,
                    weight_precision: str = "int4", act_precision: str = "fp16", head_precision: str = "fp16") -> Graph:
    """Llama-3-8B with int4 block weights, fp16 activations (GPTQ / AWQ W4A16)."""
    return _llama_lowbit("llama3_8b", "int4", batch, seq_len, phase, kv_len, weight_precision, act_precision,
                         head_precision)
