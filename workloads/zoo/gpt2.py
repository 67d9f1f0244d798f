"""GPT-2 (Radford et al. 2019) in its four sizes, prefill or decode.

Pre-norm layers with biased projections, GELU MLP of 4x width, learned
position embeddings (1024 positions), vocabulary 50257, and an LM head tied to
the token embedding: both carry ``weight_name="wte"`` so the table is counted
once (124,439,808 parameters for the small model, as Hugging Face reports).
The LM head produces logits for every input token.
"""
from __future__ import annotations

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo._net import Net, check_phase, check_positive
from workloads.zoo._transformer import Block, pre_norm_layer

VOCAB, MAX_POSITIONS = 50257, 1024
SIZES = {  # size: (hidden, layers, heads)
    "small": (768, 12, 12),
    "medium": (1024, 24, 16),
    "large": (1280, 36, 20),
    "xl": (1600, 48, 25),
}


def gpt2(*, size: str = "small", batch: int = 1, seq_len: int = 128, phase: str = "prefill",
         kv_len: int | None = None, weight_precision: str = "int8", act_precision: str = "int8",
         acc_precision: str = "int32") -> Graph:
    """GPT-2 of ``size`` small/medium/large/xl; decode runs one token against ``kv_len`` cached ones."""
    if size not in SIZES:
        raise WorkloadError(f"gpt2: size: expected one of {', '.join(SIZES)}, got {size!r}")
    name = "gpt2" if size == "small" else f"gpt2-{size}"
    # The context window bounds what a prefill processes and what a KV cache can
    # hold. Decode with a full cache (kv_len == 1024) is the usual "context 1024"
    # benchmark point (PIM-GPT, LLMCompass); its one extra position costs the
    # same position-table lookup as any other, so it is allowed.
    return gpt_decoder(name, *SIZES[size], max_positions=MAX_POSITIONS, batch=batch, seq_len=seq_len,
                       phase=phase, kv_len=kv_len, weight_precision=weight_precision,
                       act_precision=act_precision, acc_precision=acc_precision)


def gpt_decoder(name: str, hidden: int, layers: int, heads: int, *, max_positions: int, batch: int,
                seq_len: int, phase: str, kv_len: int | None, weight_precision: str, act_precision: str,
                acc_precision: str, vocab: int = VOCAB) -> Graph:
    """The GPT-2 / GPT-3 architecture: pre-norm layers with biased projections, GELU MLP of 4x
    width, learned positions (``max_positions``), LM head tied to the token embedding."""
    check_positive(name, batch=batch, seq_len=seq_len)
    check_phase(name, phase, kv_len)
    positions, key = (seq_len, "seq_len") if phase == "prefill" else (kv_len, "kv_len")
    if positions > max_positions:
        raise WorkloadError(f"{name}: {key}: expected at most {max_positions} positions, got {positions}")
    cfg = Block(hidden=hidden, heads=heads, kv_heads=heads, ffn=4 * hidden, bias=True, act="gelu", gated=False,
                rope=False, causal=True)
    net = Net(name, weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    seq_q = seq_len if phase == "prefill" else 1
    shape = (batch, seq_q, hidden)
    tok = net.embedding("wte", net.input("input_ids", (batch, seq_q)), vocab, hidden, shape, weight_name="wte")
    pos = net.embedding("wpe", net.input("position_ids", (batch, seq_q)), max_positions, hidden, shape)
    x = net.eltwise("embed_sum", "add", tok, pos)
    for i in range(layers):
        x = pre_norm_layer(net, f"h{i}", x, cfg, "layernorm", batch=batch, seq_q=seq_q,
                           kv_len=kv_len if phase == "decode" else None)
    x = net.layernorm("ln_f", x)
    net.linear("lm_head", x, vocab, bias=False, weight_name="wte")
    return net.graph
