"""T5 encoders (Raffel et al., JMLR 2020; v1.0 checkpoints ``t5-small``, ``t5-base``):
pre-norm layers with RMS layer norms (T5LayerNorm: no mean, no bias),
projections and ReLU FFN without biases, a shared token embedding (32128
entries) and a final norm, as in Hugging Face's ``T5EncoderModel``
(t5-small: 35,330,816 parameters; t5-base: 109,628,544).

The relative position bias (32 buckets x heads, in the first layer) is added
to the attention scores inside the attention core; it is counted here as the
parameters of an add on the first layer's input (its few adds are modelled
there, not on the scores).
"""
from __future__ import annotations

from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive
from workloads.zoo._transformer import Block, pre_norm_layer

VOCAB, BUCKETS = 32128, 32
SIZES = {"small": (512, 8, 2048, 6), "base": (768, 12, 3072, 12)}


def t5_encoder(*, size: str = "small", batch: int = 1, seq_len: int = 512, weight_precision: str = "int8",
               act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    check_positive(f"t5_{size}", batch=batch, seq_len=seq_len)
    hidden, heads, ffn, layers = SIZES[size]
    cfg = Block(hidden=hidden, heads=heads, kv_heads=heads, ffn=ffn, bias=False, act="relu", gated=False,
                rope=False, causal=False)
    net = Net(f"t5_{size}", weight_precision=weight_precision, act_precision=act_precision,
              acc_precision=acc_precision)
    x = net.embedding("shared_embed", net.input("input_ids", (batch, seq_len)), VOCAB, hidden,
                      (batch, seq_len, hidden))
    x = net.eltwise("rel_pos_bias", "add", x, const_params=BUCKETS * heads)
    for i in range(layers):
        x = pre_norm_layer(net, f"layer{i}", x, cfg, "rmsnorm", batch=batch, seq_q=seq_len, kv_len=None)
    net.rmsnorm("final_norm", x)
    return net.graph
