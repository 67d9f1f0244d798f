"""Low-bit zoo models: published parameter counts (within 1 %), exact counts from their configs,
and the weight format of every layer."""
from __future__ import annotations

import pytest

import workloads


def within(measured: int, published: float, tol: float = 0.01) -> bool:
    return abs(measured - published) <= tol * published


PUBLISHED = [
    # Hugging Face microsoft/bitnet-b1.58-2B-4T-bf16 (the master weights): 2.41 B parameters
    ("bitnet-b1.58-2b", 2.41e9),
    # Hugging Face 1bitLLM/bitnet_b1_58-3B: 3.32 B parameters
    ("bitnet-b1.58-3b", 3.32e9),
    # the quantized Llamas keep their base models' parameters (HF meta-llama/Llama-2-7b-hf 6,738,415,616;
    # meta-llama/Meta-Llama-3-8B 8,030,261,248)
    ("llama2_7b_w4a16", 6_738_415_616),
    ("llama2_7b_w2a16", 6_738_415_616),
    ("llama3_8b_w4a16", 8_030_261_248),
]


@pytest.mark.parametrize("name, params", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_published_parameter_counts(name, params):
    assert within(workloads.load(name, seq_len=8).total_params(), params)


def test_bitnet_2b4t_exact_params():
    """Config: hidden 2560, 30 layers, 20 heads / 5 KV heads (head dim 128), FFN 6912, vocab 128256, tied.
    Per layer: q, o 2560^2; k, v 2560 x 640; gate, up, down 2560 x 6912; norms 2560 x 3 (input,
    post-attention, attention sub-norm) + 6912 (FFN sub-norm)."""
    d, f, kv = 2560, 6912, 640
    layer = 2 * d * d + 2 * d * kv + 3 * d * f + 3 * d + f
    assert workloads.load("bitnet-b1.58-2b").total_params() == 30 * layer + 128256 * d + d == 2_412_820_480


def test_weight_format_per_layer():
    g = workloads.load("bitnet-b1.58-2b", phase="decode")
    ops = {op.name: op for op in g.ops()}
    assert (ops["layers0.mlp.down_proj"].weight_precision, ops["layers0.mlp.down_proj"].act_precision) == \
        ("ternary", "int8")
    assert ops["layers29.self_attn.k_proj"].n == 640
    assert ops["lm_head"].weight_precision == ops["embed_tokens"].weight_precision == "bf16"
    assert ops["lm_head"].act_precision == "bf16"
    assert ops["layers0.mlp.ffn_sub_norm"].weight_precision == "bf16"  # norm scales stay 16-bit
    linears = [op for op in g.ops() if op.kind == "matmul" and op.params()]
    assert sum(op.weight_precision == "ternary" for op in linears) == 30 * 7
    # --weights int2 --activations int8 changes the block linears only
    g2 = workloads.load("bitnet-b1.58-2b", weight_precision="int2", act_precision="int8")
    assert {op.weight_precision for op in g2.ops() if op.kind == "matmul" and op.params()} == {"int2", "bf16"}
    g3 = workloads.load("llama2_7b_w4a16", seq_len=4)
    assert {(op.weight_precision, op.act_precision) for op in g3.ops() if op.kind == "matmul" and op.params()} \
        == {("int4", "fp16"), ("fp16", "fp16")}


def test_decode_macs():
    """Decode of one token: the block linears (2.08 G weights) + the 328 M LM head, plus attention."""
    g = workloads.load("bitnet-b1.58-2b", phase="decode", kv_len=0)
    d, f, kv = 2560, 6912, 640
    linear = 30 * (2 * d * d + 2 * d * kv + 3 * d * f) + d * 128256
    attn = 30 * 2 * 20 * 1 * 128  # one query, one key (itself), head dim 128: QK + AV
    assert g.total_macs() == linear + attn
