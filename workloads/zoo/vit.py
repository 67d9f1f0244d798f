"""ViT-B/16 (Dosovitskiy et al. 2021): 16x16 patches, 12 pre-norm layers of
width 768, 12 heads, MLP 3072, a class token and learned position embeddings.

The class token is an :class:`Embedding` of one row looked up once per image;
the position table is the learned constant operand of an add
(``Elementwise.const_params``); the classifier reads the class token.
"""
from __future__ import annotations

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive
from workloads.zoo._transformer import Block, pre_norm_layer


def vit_b16(*, batch: int = 1, image_size: int = 224, num_classes: int = 1000, weight_precision: str = "int8",
            act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    check_positive("vit_b16", batch=batch, image_size=image_size, num_classes=num_classes)
    patch, hidden, layers = 16, 768, 12
    if image_size % patch:
        raise WorkloadError(f"vit_b16: image_size: expected a multiple of the 16-pixel patch, got {image_size}")
    cfg = Block(hidden=hidden, heads=12, kv_heads=12, ffn=3072, bias=True, act="gelu", gated=False, rope=False,
                causal=False)
    net = Net("vit_b16", weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    grid = image_size // patch
    tokens = grid * grid + 1
    x = net.conv("patch_embed", net.input("image", (batch, 3, image_size, image_size)), hidden, patch, patch)
    x = net.shape_op("patch_tokens", "transpose", [x], [(batch, grid * grid, hidden)])
    cls = net.embedding("cls_token", net.input("cls_index", (batch,)), 1, hidden, (batch, 1, hidden))
    x = net.shape_op("concat_cls", "concat", [cls, x], [(batch, tokens, hidden)])
    x = net.eltwise("pos_embed", "add", x, const_params=tokens * hidden)
    for i in range(layers):
        x = pre_norm_layer(net, f"layer{i}", x, cfg, "layernorm", batch=batch, seq_q=tokens, kv_len=None)
    x = net.layernorm("norm", x)
    x = net.shape_op("take_cls", "slice", [x], [(batch, hidden)])
    net.linear("head", x, num_classes)
    return net.graph
