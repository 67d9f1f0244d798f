"""BERT-base (Devlin et al. 2019): 12 post-norm encoder layers of width 768,
12 heads, FFN 3072, GELU; word, position (512) and token-type (2) embeddings
with a layernorm; and the pooler (a tanh dense layer on the [CLS] token), as
in Hugging Face's ``BertModel`` (109,482,240 parameters).
"""
from __future__ import annotations

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive
from workloads.zoo._transformer import Block, post_norm_layer

VOCAB, MAX_POSITIONS, TYPES = 30522, 512, 2


def bert_base(*, batch: int = 1, seq_len: int = 128, weight_precision: str = "int8", act_precision: str = "int8",
              acc_precision: str = "int32") -> Graph:
    check_positive("bert_base", batch=batch, seq_len=seq_len)
    if seq_len > MAX_POSITIONS:
        raise WorkloadError(f"bert_base: seq_len: expected at most {MAX_POSITIONS} positions, got {seq_len}")
    hidden = 768
    cfg = Block(hidden=hidden, heads=12, kv_heads=12, ffn=3072, bias=True, act="gelu", gated=False, rope=False,
                causal=False)
    net = Net("bert_base", weight_precision=weight_precision, act_precision=act_precision,
              acc_precision=acc_precision)
    shape = (batch, seq_len, hidden)
    words = net.embedding("word_embed", net.input("input_ids", (batch, seq_len)), VOCAB, hidden, shape)
    pos = net.embedding("pos_embed", net.input("position_ids", (batch, seq_len)), MAX_POSITIONS, hidden, shape)
    types = net.embedding("type_embed", net.input("token_type_ids", (batch, seq_len)), TYPES, hidden, shape)
    x = net.layernorm("embed_norm", net.eltwise("embed_sum", "add", words, pos, types))
    for i in range(12):
        x = post_norm_layer(net, f"layer{i}", x, cfg, batch=batch, seq_q=seq_len)
    cls = net.shape_op("take_cls", "slice", [x], [(batch, hidden)])
    net.eltwise("pooler.tanh", "tanh", net.linear("pooler.dense", cls, hidden))
    return net.graph
