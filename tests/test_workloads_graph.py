"""Op arithmetic and the Graph IR (hand-worked expectations)."""
from __future__ import annotations

import pytest

from archsim.errors import WorkloadError
from workloads import (Attention, Conv2d, Elementwise, Embedding, Graph, LayerNorm, MatMul, Pool, RMSNorm,
                       ShapeOp, Softmax)


def test_conv_strided_dilated_grouped():
    # 3x3 dilated by 2 (effective 5x5), stride 2, pad 2 on 15x15: (15 + 4 - 5) // 2 + 1 = 8
    c = Conv2d("c", batch=2, in_channels=8, out_channels=12, in_h=15, in_w=15, kernel_h=3, kernel_w=3,
               stride_h=2, stride_w=2, pad_top=2, pad_left=2, pad_bottom=2, pad_right=2, dilation_h=2,
               dilation_w=2, groups=4, bias=True)
    assert c.output_shape() == (2, 12, 8, 8)
    # per group: M = 2*8*8 = 128, K = 3*3*(8/4) = 18, N = 12/4 = 3
    assert c.gemm_dims() == (4, 128, 18, 3)
    assert c.macs() == 4 * 128 * 18 * 3 == 27_648
    assert c.params() == 12 * 2 * 9 + 12
    # int8: input 2*8*15*15, weights 228, output 2*12*8*8
    assert c.operand_bytes() == {"input": 3600, "weight": 228, "output": 1536}


def test_depthwise():
    c = Conv2d("dw", in_channels=32, out_channels=32, in_h=10, in_w=10, kernel_h=3, kernel_w=3, pad_top=1,
               pad_left=1, pad_bottom=1, pad_right=1, groups=32)
    assert c.depthwise and c.macs() == 10 * 10 * 9 * 32 and c.params() == 288


def test_matmul_and_attention():
    mm = MatMul("mm", batch=3, m=4, k=5, n=6, weight_is_param=False)
    assert mm.macs() == 360 and mm.params() == 0
    assert mm.input_shapes() == [(3, 4, 5), (3, 5, 6)]
    lin = MatMul("lin", m=4, k=5, n=6, bias=True, weight_precision="int4")
    assert lin.params() == 36 and lin.operand_bytes()["weight"] == 18
    assert MatMul("t", m=4, k=5, n=6, transpose_a=True).input_shapes() == [(1, 5, 4)]
    full = Attention("a", batch=2, heads=8, kv_heads=2, seq_q=16, seq_kv=16, head_dim=32)
    assert full.macs() == 2 * 2 * 8 * 16 * 16 * 32
    causal = Attention("c", heads=1, kv_heads=1, seq_q=4, seq_kv=4, head_dim=1, causal=True)
    assert causal.score_pairs() == 1 + 2 + 3 + 4
    # 3 new queries at the end of 6 keys see 4, 5 and 6 keys
    chunk = Attention("k", heads=2, kv_heads=1, seq_q=3, seq_kv=6, head_dim=8, causal=True)
    assert chunk.score_pairs() == 4 + 5 + 6 and chunk.macs() == 2 * 2 * 15 * 8
    assert chunk.input_shapes() == [(1, 3, 16), (1, 6, 8), (1, 6, 8)]


def test_vector_and_shape_ops():
    assert LayerNorm("ln", shape=(2, 3, 8), normalized_size=8).params() == 16
    assert RMSNorm("rms", shape=(2, 3, 8), normalized_size=8).params() == 8
    assert Softmax("s", shape=(4, 4)).macs() == 0
    assert Elementwise("e", fn="add", shape=(2, 4), num_inputs=2, const_params=4).params() == 4
    p = Pool("p", channels=3, in_h=7, in_w=7, kernel_h=3, kernel_w=3, stride_h=2, stride_w=2)
    assert p.output_shape() == (1, 3, 3, 3)
    assert Pool("g", mode="avg", global_pool=True, channels=3, in_h=7, in_w=7).output_shape() == (1, 3, 1, 1)
    e = Embedding("emb", vocab=100, dim=8, tokens=5)
    assert e.params() == 800 and e.output_shape() == (5, 8)
    sp = ShapeOp("sp", fn="split", in_shapes=((4, 6),), out_shapes=((4, 2), (4, 4)))
    assert sp.output_shapes() == [(4, 2), (4, 4)] and sp.params() == 0


@pytest.mark.parametrize("op,message", [
    (Conv2d("c", in_channels=6, out_channels=4, in_h=8, in_w=8, groups=4),
     r"^c: groups: expected in_channels \(6\) and out_channels \(4\) divisible by groups \(4\)$"),
    (Conv2d("k", in_h=4, in_w=4, kernel_h=3, kernel_w=3, dilation_h=2),
     r"^k: kernel 3x3 \(dilated 5x3\) is larger than the padded input 4x4; expected a window that fits$"),
    (Attention("a", heads=6, kv_heads=4), r"^a: kv_heads: expected a divisor of heads \(6\), got 4$"),
    (Attention("d", seq_q=5, seq_kv=3, causal=True), r"^d: seq_kv: expected >= seq_q \(5\) for causal attention"),
    (MatMul("m", k=0), r"^m: k: expected a positive integer, got 0$"),
    (ShapeOp("r", in_shapes=((2, 3),), out_shapes=((7,),)),
     r"^r: reshape of \(2, 3\) to \(7,\): expected the same number of elements$"),
    (Softmax("s", shape=(4,), act_precision="int7"), r"^s: act_precision: expected one of int1, .*, got 'int7'$"),
])
def test_op_checks(op, message):
    with pytest.raises(WorkloadError, match=message):
        op.check()


def _chain() -> Graph:
    g = Graph("chain")
    g.add(Conv2d("conv", in_channels=3, out_channels=8, in_h=8, in_w=8, kernel_h=3, kernel_w=3, pad_top=1,
                 pad_left=1, pad_bottom=1, pad_right=1))
    g.add(Elementwise("relu", fn="relu", shape=(1, 8, 8, 8)), ["conv"])
    g.add(Conv2d("side", in_channels=8, out_channels=8, in_h=8, in_w=8), ["relu"])
    g.add(Elementwise("add", fn="add", shape=(1, 8, 8, 8), num_inputs=2), ["relu", "side"])
    return g


def test_graph_api():
    g = _chain()
    assert len(g) == 4 and g.name == "chain"
    assert [op.name for op in g.ops()] == ["conv", "relu", "side", "add"]
    assert g.inputs_of("add") == ["relu", "side"] and g.inputs_of("conv") == [None]
    assert g.total_macs() == 64 * 27 * 8 + 64 * 8 * 8
    edge = g.nx.edges["conv", "relu"]
    assert (edge["shape"], edge["precision"], edge["bytes"]) == ((1, 8, 8, 8), "int8", 512)
    g.validate()


def test_topological_order_is_insertion_order_among_ready():
    g = Graph("order")
    for name in ["b", "a", "c"]:
        g.add(Elementwise(name, fn="relu", shape=(4,)))
    g.add(Elementwise("z", fn="add", shape=(4,), num_inputs=2), ["c", "b"])
    g.add(Elementwise("y", fn="relu", shape=(4,)), ["a"])
    assert [op.name for op in g.ops()] == ["b", "a", "c", "z", "y"]


def test_same_producer_twice_and_split_ports():
    g = Graph("ports")
    g.add(ShapeOp("split", fn="split", in_shapes=((4, 6),), out_shapes=((4, 3), (4, 3))))
    g.add(Elementwise("sq", fn="mul", shape=(4, 3), num_inputs=2), ["split:1", "split:1"])
    g.add(Elementwise("sum", fn="add", shape=(4, 3), num_inputs=2), ["split", "sq"])
    assert g.inputs_of("sq") == ["split:1", "split:1"]
    assert g.inputs_of("sum") == ["split", "sq"]
    g.validate()


def test_shared_weights_counted_once():
    g = Graph("tied")
    g.add(Embedding("wte", vocab=50, dim=8, tokens=3, weight_name="wte"))
    g.add(MatMul("head", m=3, k=8, n=50, weight_name="wte"), ["wte"])
    assert g.total_params() == 400
    assert sum(op.params() for op in g.ops()) == 800


def test_graph_errors():
    g = _chain()
    with pytest.raises(WorkloadError, match=r"^graph 'chain': shape mismatch relu -> bad: relu produces "
                                            r"\[1, 8, 8, 8\] but bad \(conv2d\) expects input 0 of \[1, 4, 8, 8\]$"):
        g.add(Conv2d("bad", in_channels=4, out_channels=4, in_h=8, in_w=8), ["relu"])
    assert "bad" not in g
    with pytest.raises(WorkloadError, match=r"^graph 'chain': duplicate op name 'conv'"):
        g.add(Elementwise("conv", shape=(1,)))
    with pytest.raises(WorkloadError, match=r"^graph 'chain': x reads 'nope', which is not an op added before it$"):
        g.add(Elementwise("x", shape=(1,)), ["nope"])
    with pytest.raises(WorkloadError, match=r"^graph 'chain': no op named 'ghost'$"):
        g.op("ghost")
    # a field changed after adding is caught by validate()
    g.op("side").in_channels = 16
    with pytest.raises(WorkloadError, match=r"shape mismatch relu -> side"):
        g.validate()
