"""ONNX import: real models built with onnx.helper; expected shapes, MACs and
parameters are worked out by hand in each test."""
from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import workloads
from archsim.errors import WorkloadError

F = TensorProto.FLOAT


def _init(name, shape, dtype=np.float32):
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def _save(tmp_path, graph, name="model.onnx", opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def _small_convnet(tmp_path, batch_dim=1):
    """x[1,3,32,32] -> Conv(8,3x3,p1,bias) -> Relu -> MaxPool 2x2/2 -> Conv(16,3x3,s2,p1,bias)
    -> GlobalAveragePool -> Flatten -> Gemm(16 -> 10, transB=1)."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wfc", "bfc"], ["y"], name="fc", transB=1),
    ]
    inits = [_init("w1", (8, 3, 3, 3)), _init("b1", (8,)), _init("w2", (16, 8, 3, 3)), _init("b2", (16,)),
             _init("wfc", (10, 16)), _init("bfc", (10,))]
    graph = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", F, [batch_dim, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    return _save(tmp_path, graph)


def test_small_convnet_shapes_macs_params(tmp_path):
    g = workloads.load(_small_convnet(tmp_path))
    kinds = [op.kind for op in g.ops()]
    assert kinds == ["conv2d", "elementwise", "pool", "conv2d", "pool", "shape", "matmul"]
    assert g.op("conv1").output_shape() == (1, 8, 32, 32)
    assert g.op("pool1").output_shape() == (1, 8, 16, 16)
    assert g.op("conv2").output_shape() == (1, 16, 8, 8)  # (16 + 2 - 3) // 2 + 1 = 8
    # conv1: 32*32 pixels * 8 filters * 27 taps; conv2: 8*8 * 16 * 72; fc: 16 * 10
    assert g.op("conv1").macs() == 32 * 32 * 8 * 27 == 221_184
    assert g.op("conv2").macs() == 8 * 8 * 16 * 72 == 73_728
    assert g.op("fc").macs() == 160
    assert g.total_macs() == 221_184 + 73_728 + 160
    # params: 8*27+8, 16*72+16, 16*10+10
    assert g.total_params() == 224 + 1168 + 170
    fc = g.op("fc")
    assert (fc.m, fc.k, fc.n, fc.transpose_b, fc.weight_is_param, fc.bias) == (1, 16, 10, True, True, True)
    assert fc.source == "onnx:fc"
    g.validate()


def test_symbolic_batch_needs_dims(tmp_path):
    path = _small_convnet(tmp_path, batch_dim="N")
    with pytest.raises(WorkloadError, match=r"^.*model\.onnx: symbolic input dim\(s\) N have no value; expected "
                                            r"--dim NAME=VALUE"):
        workloads.load(path)
    g = workloads.load(path, dims={"N": 4})
    assert g.op("conv1").output_shape() == (4, 8, 32, 32)
    assert g.total_macs() == 4 * (221_184 + 73_728 + 160)


def _mlp(tmp_path, trans_a=False):
    """x[4,20] -> Gemm(W1 [30,20], transB=1, b1) -> Relu -> Gemm(W2 [30,5], b2)."""
    a_shape = [20, 4] if trans_a else [4, 20]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transA=int(trans_a), transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2"),
    ]
    inits = [_init("w1", (30, 20)), _init("b1", (30,)), _init("w2", (30, 5)), _init("b2", (5,))]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, a_shape)],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    return _save(tmp_path, graph, "mlp.onnx")


@pytest.mark.parametrize("trans_a", [False, True])
def test_mlp_gemm_transposes(tmp_path, trans_a):
    g = workloads.load(_mlp(tmp_path, trans_a))
    fc1, fc2 = g.op("fc1"), g.op("fc2")
    # fc1: [4,20] x [20,30] whatever the stored layouts; fc2: [4,30] x [30,5]
    assert (fc1.m, fc1.k, fc1.n) == (4, 20, 30)
    assert (fc1.transpose_a, fc1.transpose_b) == (trans_a, True)
    assert (fc2.m, fc2.k, fc2.n, fc2.transpose_b) == (4, 30, 5, False)
    assert g.total_macs() == 4 * 20 * 30 + 4 * 30 * 5 == 3000
    assert g.total_params() == 20 * 30 + 30 + 30 * 5 + 5 == 785


def _transformer_block(tmp_path):
    """One pre-norm transformer layer, hidden 16, 2 heads of 8, seq 8, MLP 64.

    The first norm is the decomposed ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div
    pattern with an affine Mul/Add; the second is a LayerNormalization op.
    """
    S, D, H, HD, FF = 8, 16, 2, 8, 64
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["mu"], name="ln1_mean", keepdims=1),
        helper.make_node("Sub", ["x", "mu"], ["d"], name="ln1_sub"),
        helper.make_node("Pow", ["d", "two"], ["d2"], name="ln1_pow"),
        helper.make_node("ReduceMean", ["d2", "axes"], ["var"], name="ln1_var", keepdims=1),
        helper.make_node("Add", ["var", "eps"], ["ve"], name="ln1_add_eps"),
        helper.make_node("Sqrt", ["ve"], ["sd"], name="ln1_sqrt"),
        helper.make_node("Div", ["d", "sd"], ["xn"], name="ln1_div"),
        helper.make_node("Mul", ["xn", "gamma"], ["xg"], name="ln1_scale"),
        helper.make_node("Add", ["xg", "beta"], ["h"], name="ln1_shift"),
    ]
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", ["h", f"w{p}"], [f"{p}0"], name=f"{p}_proj"),
            helper.make_node("Add", [f"{p}0", f"b{p}"], [f"{p}1"], name=f"{p}_bias"),
            helper.make_node("Reshape", [f"{p}1", "heads_shape"], [f"{p}2"], name=f"{p}_split_heads"),
            helper.make_node("Transpose", [f"{p}2"], [f"{p}3"], name=f"{p}_transpose", perm=[0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("Transpose", ["k3"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q3", "kt"], ["s"], name="qk"),
        helper.make_node("Div", ["s", "scale"], ["s2"], name="qk_scale"),
        helper.make_node("Softmax", ["s2"], ["pr"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["pr", "v3"], ["ctx"], name="av"),
        helper.make_node("Transpose", ["ctx"], ["ctx2"], name="merge_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx2", "tokens_shape"], ["ctx3"], name="merge_heads"),
        helper.make_node("MatMul", ["ctx3", "wo"], ["o0"], name="o_proj"),
        helper.make_node("Add", ["o0", "bo"], ["o1"], name="o_bias"),
        helper.make_node("Add", ["x", "o1"], ["r1"], name="residual1"),
        helper.make_node("LayerNormalization", ["r1", "g2", "b2"], ["h2"], name="ln2", axis=-1),
        helper.make_node("MatMul", ["h2", "w_up"], ["u"], name="mlp_up"),
        helper.make_node("Gelu", ["u"], ["ug"], name="mlp_gelu", domain=""),
        helper.make_node("MatMul", ["ug", "w_down"], ["dn"], name="mlp_down"),
        helper.make_node("Add", ["r1", "dn"], ["y"], name="residual2"),
    ]
    inits = [i64("axes", [-1]), _init("two", ()), _init("eps", ()), _init("gamma", (D,)), _init("beta", (D,)),
             _init("scale", ()), i64("heads_shape", [1, S, H, HD]), i64("tokens_shape", [1, S, D]),
             _init("wo", (D, D)), _init("bo", (D,)), _init("g2", (D,)), _init("b2", (D,)),
             _init("w_up", (D, FF)), _init("w_down", (FF, D))]
    inits[1] = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    for p in "qkv":
        inits += [_init(f"w{p}", (D, D)), _init(f"b{p}", (D,))]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", F, [1, S, D])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    return _save(tmp_path, graph, "block.onnx", opset=20)


def test_transformer_block(tmp_path):
    g = workloads.load(_transformer_block(tmp_path))
    kinds = [op.kind for op in g.ops()]
    # the decomposed norm is one layernorm; no reductions or sqrt survive
    assert kinds.count("layernorm") == 2
    assert not any(op.kind == "elementwise" and op.fn in ("sqrt", "pow", "reduce_mean") for op in g.ops())
    ln1 = g.op("ln1_mean")
    assert (ln1.shape, ln1.normalized_size, ln1.affine) == ((1, 8, 16), 16, True)
    # QK^T, scale, softmax, AV: the zoo's attention op (batch 1, 2 heads of 8, 8 queries and keys)
    attn = g.op("qk.attention")
    assert (attn.kind, attn.batch, attn.heads, attn.seq_q, attn.seq_kv, attn.head_dim) == ("attention", 1, 2, 8, 8, 8)
    assert not any(op.kind == "softmax" for op in g.ops())
    assert g.op("q_proj").weight_is_param and (g.op("q_proj").m, g.op("q_proj").k) == (8, 16)
    # MACs: 4 projections 8*16*16; QK^T and AV 2 heads * 8*8*8 each; MLP 2 * 8*16*64
    assert g.total_macs() == 4 * 8 * 16 * 16 + 2 * (2 * 8 * 8 * 8) + 2 * 8 * 16 * 64 == 26_624
    # params: ln1 gamma+beta 32, q/k/v/o 4*(256+16), ln2 32, MLP 2*1024; the scalars 2, eps, scale are not params
    assert g.total_params() == 32 + 4 * (256 + 16) + 32 + 2 * 1024 == 3200
    g.validate()


def _with_unknown(tmp_path):
    nodes = [
        helper.make_node("Hardmax2", ["x"], ["a"], name="lrn1", domain="com.example"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Shrink2", ["b"], ["c"], name="inorm", domain="com.example"),
        helper.make_node("Hardmax2", ["c"], ["y"], name="lrn2", domain="com.example"),
    ]
    graph = helper.make_graph(nodes, "odd", [helper.make_tensor_value_info("x", F, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", F, [1, 4, 6, 6])], [_init("s", (4,)), _init("bb", (4,))],
                              value_info=[helper.make_tensor_value_info(t, F, [1, 4, 6, 6]) for t in "ac"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    path = tmp_path / "odd.onnx"
    onnx.save(model, path)
    return str(path)


def test_unknown_ops_are_one_error(tmp_path):
    path = _with_unknown(tmp_path)
    with pytest.raises(WorkloadError) as err:
        workloads.load(path)
    assert re.fullmatch(r".*odd\.onnx: cannot lower ONNX op\(s\): Hardmax2 \(lrn1, lrn2\); Shrink2 "
                        r"\(inorm\); expected supported ops \(or pass unknown_ops='vector', --unknown-ops vector, to run "
                        r"them on the vector unit\)", str(err.value))
    assert "\n" not in str(err.value)


def test_unknown_ops_as_vector(tmp_path):
    g = workloads.load(_with_unknown(tmp_path), unknown_ops="vector")
    assert [op.fn for op in g.ops()] == ["vector:Hardmax2", "relu", "vector:Shrink2", "vector:Hardmax2"]
    assert g.op("lrn1").output_shape() == (1, 4, 6, 6)
    assert g.total_macs() == 0


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07 this is not protobuf \xff\xfe")
    with pytest.raises(WorkloadError, match=r"junk\.onnx: not a readable ONNX model"):
        workloads.load(str(path))


def test_bad_group_count_names_node(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="bad_conv", kernel_shape=[3, 3], group=3)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", F, None)], [_init("w", (6, 2, 3, 3))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "badgroup.onnx"
    onnx.save(model, path)
    with pytest.raises(WorkloadError, match=r"^\S*badgroup\.onnx: node bad_conv \(Conv\): weight 'w' \[6, 2, 3, 3\]: "
                                            r"expected 4 input channels in all over group=3$"):
        workloads.load(str(path))


def test_embedding_gather_and_tied_weights(tmp_path):
    """Gather of an initializer table by token ids is an embedding; a MatMul reading the
    same table (transposed via Gemm transB) shares its parameters."""
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
        helper.make_node("Reshape", ["e", "flat"], ["e2"], name="flatten_tokens"),
        helper.make_node("Gemm", ["e2", "table"], ["logits"], name="lm_head", transB=1),
    ]
    inits = [_init("table", (100, 12)), numpy_helper.from_array(np.array([6, 12], dtype=np.int64), "flat")]
    graph = helper.make_graph(nodes, "lm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
                              [helper.make_tensor_value_info("logits", F, None)], inits)
    g = workloads.load(_save(tmp_path, graph, "lm.onnx"))
    emb = g.op("embed")
    assert (emb.kind, emb.vocab, emb.dim, emb.tokens) == ("embedding", 100, 12, 6)
    assert g.op("lm_head").macs() == 6 * 12 * 100
    assert g.total_params() == 100 * 12  # counted once


# -- models exported by torch (legacy TorchScript exporter) -----------------------------------------------------
def _torch():
    torch = pytest.importorskip("torch")
    return torch, torch.nn


def test_torch_convnet(tmp_path):
    torch, nn = _torch()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            x = nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
            x = torch.relu(self.c2(x)).mean((2, 3))
            return self.fc(x)

    net = Net()
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, torch.zeros(1, 3, 32, 32), str(path), dynamo=False)
    g = workloads.load(str(path))
    # c1: 32*32*8*27; c2 (groups 2): 8*8 px * 16 filters * 3*3*4 taps; fc 16*10
    assert g.total_macs() == 32 * 32 * 8 * 27 + 8 * 8 * 16 * 36 + 160
    assert g.total_params() == sum(p.numel() for p in net.parameters())
    assert [op.kind for op in g.ops() if op.kind != "elementwise"] == ["conv2d", "pool", "conv2d", "matmul"]


def test_torch_transformer_block(tmp_path):
    torch, nn = _torch()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(16)
            self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
            self.ln2 = nn.LayerNorm(16)
            self.mlp = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))

        def forward(self, x):
            h = self.ln(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    block = Block().eval()
    path = tmp_path / "block.onnx"
    torch.onnx.export(block, torch.zeros(1, 8, 16), str(path), dynamo=False)
    g = workloads.load(str(path))
    # fused QKV 8*16*48, out 8*16*16, QK^T and AV 2 heads * 8*8*8 each, MLP 2 * 8*16*64
    assert g.total_macs() == 8 * 16 * 48 + 8 * 16 * 16 + 2 * (2 * 8 * 8 * 8) + 2 * 8 * 16 * 64 == 26_624
    assert g.total_params() == sum(p.numel() for p in block.parameters()) == 3280
    assert sum(op.kind == "layernorm" for op in g.ops()) == 2 and sum(op.kind == "softmax" for op in g.ops()) == 1
