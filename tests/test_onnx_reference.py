"""workloads.onnx_reference: the independent MAC count, on tiny hand-built graphs.

Every expected count is the closed-form formula written out by hand in the
test, from the shapes chosen here (never from the module's own output).
"""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from workloads.onnx_reference import ReferenceError, count_macs  # noqa: E402

F = TensorProto.FLOAT


def _init(name, shape, dtype=np.float32, fill=None):
    arr = (np.full(shape, fill, dtype=dtype) if fill is not None
           else np.random.default_rng(0).standard_normal(shape).astype(dtype))
    return numpy_helper.from_array(arr, name)


def _model(nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = 8
    return m


def _vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def test_conv_grouped_strided():
    # x [2,8,10,10], W [12, 8/4, 3, 3], stride 2, pad 1 -> y [2,12,5,5]
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], group=4, strides=[2, 2], pads=[1, 1, 1, 1])],
               [_vi("x", [2, 8, 10, 10])], [_vi("y", None)], [_init("w", (12, 2, 3, 3))])
    ref = count_macs(m)
    assert ref.total_macs == 2 * 12 * 5 * 5 * 2 * 3 * 3
    assert ref.per_node["Conv_0"] == ("Conv", 2 * 12 * 5 * 5 * 2 * 3 * 3)


def test_conv_transpose_formula_from_issue():
    # N*Cin*Hin*Win*(Cout/g)*kH*kW with N=1, Cin=8, 5x6 input, Cout=6, g=2, 3x3 kernel, stride 2
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=2, strides=[2, 2])],
               [_vi("x", [1, 8, 5, 6])], [_vi("y", None)], [_init("w", (8, 3, 3, 3))])
    assert count_macs(m).total_macs == 1 * 8 * 5 * 6 * (6 // 2) * 3 * 3


def test_gemm_trans_a_and_matmul_broadcast():
    # Gemm: A^T with A [K=7, M=4], B [7, 5] -> 4*5*7; MatMul [2,1,4,5] x [3,5,6] -> [2,3,4,6] * K=5
    nodes = [helper.make_node("Gemm", ["a", "b"], ["g"], transA=1),
             helper.make_node("MatMul", ["p", "q"], ["r"])]
    m = _model(nodes, [_vi("a", [7, 4]), _vi("p", [2, 1, 4, 5]), _vi("q", [3, 5, 6])],
               [_vi("g", None), _vi("r", None)], [_init("b", (7, 5))])
    ref = count_macs(m)
    assert ref.per_node["Gemm_0"][1] == 4 * 5 * 7
    assert ref.per_node["MatMul_1"][1] == 2 * 3 * 4 * 6 * 5
    assert ref.total_macs == 4 * 5 * 7 + 2 * 3 * 4 * 6 * 5


def test_matmul_vector_operands():
    # [5] x [5,3] -> [3]: 15 MACs; [2,4,5] x [5] -> [2,4]: 40 MACs
    nodes = [helper.make_node("MatMul", ["v", "w"], ["a"]), helper.make_node("MatMul", ["x", "v"], ["b"])]
    m = _model(nodes, [_vi("v", [5]), _vi("x", [2, 4, 5])], [_vi("a", None), _vi("b", None)],
               [_init("w", (5, 3))])
    assert count_macs(m).total_macs == 15 + 40


def test_einsum_pairwise_and_ellipsis():
    # bij,bjk->bik: b=2,i=3,j=4,k=5 -> 120; "...ij,jk" with batch dims (2,3): 2*3*4*5*6
    nodes = [helper.make_node("Einsum", ["a", "b"], ["c"], equation="bij,bjk->bik"),
             helper.make_node("Einsum", ["x", "w"], ["y"], equation="...ij,jk->...ik")]
    m = _model(nodes, [_vi("a", [2, 3, 4]), _vi("b", [2, 4, 5]), _vi("x", [2, 3, 4, 5])],
               [_vi("c", None), _vi("y", None)], [_init("w", (5, 6))], opset=12)
    ref = count_macs(m)
    assert ref.per_node["Einsum_0"][1] == 2 * 3 * 4 * 5
    assert ref.per_node["Einsum_1"][1] == 2 * 3 * 4 * 5 * 6


@pytest.mark.parametrize("op,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
def test_recurrent_gate_gemms(op, gates):
    # seq 6, batch 2, input 5, hidden 7, bidirectional: 2 dirs * 6 steps * 2 batch * gates*7 * (5 + 7)
    seq, batch, inp, hid, dirs = 6, 2, 5, 7, 2
    node = helper.make_node(op, ["x", "w", "r"], ["y"], hidden_size=hid, direction="bidirectional")
    m = _model([node], [_vi("x", [seq, batch, inp])], [_vi("y", None)],
               [_init("w", (dirs, gates * hid, inp)), _init("r", (dirs, gates * hid, hid))])
    assert count_macs(m).total_macs == dirs * seq * batch * gates * hid * (inp + hid)


def test_lstm_sequence_lens_shorten_the_count():
    # batch of 3 with lengths 4, 2, 1 (seq 4): 7 steps * 4*3 * (2+3)
    node = helper.make_node("LSTM", ["x", "w", "r", "", "lens"], ["y"], hidden_size=3)
    m = _model([node], [_vi("x", [4, 3, 2]), _vi("lens", [3], TensorProto.INT32)], [_vi("y", None)],
               [_init("w", (1, 12, 2)), _init("r", (1, 12, 3))])
    ref = count_macs(m, input_values={"lens": np.array([4, 2, 1], dtype=np.int32)})
    assert ref.total_macs == 7 * 12 * (2 + 3)


def _if_model():
    """If(flag > 0): then a [1,8]x[8,16] MatMul, else a [1,8]x[8,4] one."""
    then_g = helper.make_graph([helper.make_node("MatMul", ["x", "wt"], ["yt"])], "then", [], [_vi("yt", None)])
    else_g = helper.make_graph([helper.make_node("MatMul", ["x", "we"], ["ye"])], "else", [], [_vi("ye", None)])
    nodes = [helper.make_node("Greater", ["flag", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return _model(nodes, [_vi("x", [1, 8]), _vi("flag", [], TensorProto.INT64)], [_vi("y", None)],
                  [_init("wt", (8, 16)), _init("we", (8, 4)), _init("zero", (), np.int64, 0)])


def test_if_counts_the_branch_taken():
    assert count_macs(_if_model(), input_values={"flag": 1}).total_macs == 8 * 16
    ref = count_macs(_if_model(), input_values={"flag": 0})
    assert ref.total_macs == 8 * 4
    assert ref.per_node["If_1/MatMul_0"] == ("MatMul", 8 * 4)


def test_loop_counts_every_iteration_and_grows_with_the_state():
    # Loop n times: s <- Concat(s, s) then a MatMul of s [1, 2^i * 2] ... keep it simple and shape-changing:
    # body: y = x @ w (x [2,4], w [4,4]) -> 32 MACs per iteration; trip count from the input value
    body = helper.make_graph(
        [helper.make_node("MatMul", ["s", "w"], ["s2"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("s", [2, 4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("s2", [2, 4])])
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["out"], body=body)]
    m = _model(nodes, [_vi("x", [2, 4]), _vi("n", [], TensorProto.INT64)], [_vi("out", None)],
               [_init("w", (4, 4))])
    assert count_macs(m, input_values={"n": 5}).total_macs == 5 * 2 * 4 * 4
    assert count_macs(m, input_values={"n": 0}).total_macs == 0


def test_data_dependent_shape_is_observed():
    # NonZero of a mask picks rows; the MatMul's M is the number of nonzeros, known only at run time
    nodes = [helper.make_node("NonZero", ["mask"], ["nz"]),
             helper.make_node("Squeeze", ["nz", "ax"], ["idx"]),
             helper.make_node("Gather", ["x", "idx"], ["rows"], axis=0),
             helper.make_node("MatMul", ["rows", "w"], ["y"])]
    m = _model(nodes, [_vi("x", [10, 6]), _vi("mask", [10], TensorProto.BOOL)], [_vi("y", None)],
               [_init("w", (6, 3)), _init("ax", (1,), np.int64, 0)])
    mask = np.zeros(10, dtype=bool)
    mask[[1, 4, 7]] = True
    assert count_macs(m, input_values={"mask": mask}).total_macs == 3 * 6 * 3


def test_quantized_integer_ops():
    # MatMulInteger [3,8]x[8,5]; QLinearMatMul [3,8]x[8,5]; QLinearConv 1x4x6x6 * W[2,4,3,3] (valid) -> 1x2x4x4
    u8, i8 = np.uint8, np.int8
    inits = [_init("b", (8, 5), u8, 1), _init("s", (), np.float32, 0.1), _init("zu", (), u8, 0),
             _init("zi", (), i8, 0), _init("qw", (8, 5), i8, 1), _init("cw", (2, 4, 3, 3), i8, 1)]
    nodes = [helper.make_node("MatMulInteger", ["a", "b"], ["y1"]),
             helper.make_node("QLinearMatMul", ["a", "s", "zu", "qw", "s", "zi", "s", "zu"], ["y2"]),
             helper.make_node("QLinearConv", ["img", "s", "zu", "cw", "s", "zi", "s", "zu"], ["y3"])]
    m = _model(nodes, [_vi("a", [3, 8], TensorProto.UINT8), _vi("img", [1, 4, 6, 6], TensorProto.UINT8)],
               [_vi("y1", None), _vi("y2", None), _vi("y3", None)], inits, opset=13)
    ref = count_macs(m)
    assert ref.per_node["MatMulInteger_0"][1] == 3 * 8 * 5
    assert ref.per_node["QLinearMatMul_1"][1] == 3 * 8 * 5
    assert ref.per_node["QLinearConv_2"][1] == 1 * 2 * 4 * 4 * 4 * 3 * 3


def test_matmul_nbits_per_com_microsoft_spec():
    # A [2,3,64] x 4-bit B (N=16, K=64, block 32): B [N, K/32, 32*4/8], scales [N * K/32]
    n, k, block = 16, 64, 32
    blocks = k // block
    node = helper.make_node("MatMulNBits", ["a", "b", "scales"], ["y"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block)
    m = _model([node], [_vi("a", [2, 3, k])], [_vi("y", None)],
               [_init("b", (n, blocks, block // 2), np.uint8, 0x88), _init("scales", (n * blocks,), np.float32, 0.5)],
               opset=17, extra_opsets=[helper.make_opsetid("com.microsoft", 1)])
    assert count_macs(m).total_macs == 2 * 3 * n * k


def test_zero_mac_ops_are_listed_and_unknown_ones_apart():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Softmax", ["a"], ["b"]),
             helper.make_node("Det", ["b"], ["c"])]
    m = _model(nodes, [_vi("x", [3, 3])], [_vi("c", None)])
    ref = count_macs(m)
    assert ref.total_macs == 0
    assert ref.zero_mac_ops == {"Det": 1, "Relu": 1, "Softmax": 1}
    assert ref.unknown_ops == {"Det": 1}


def test_unbound_symbolic_input_is_one_clear_error():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 4])], [_vi("y", None)])
    with pytest.raises(ReferenceError, match=r"input_shapes: x \['batch', 4\]"):
        count_macs(m)
    assert count_macs(m, input_shapes={"x": (2, 4)}).nodes == 1
    with pytest.raises(ReferenceError, match="no model input named nope"):
        count_macs(m, input_shapes={"nope": (1,)})


def test_cli_prints_the_count(tmp_path, capsys):
    from workloads.onnx_reference import main

    path = tmp_path / "if.onnx"
    onnx.save(_if_model(), str(path))
    assert main([str(path), "--input-value", "flag=1"]) == 0
    assert f"{8 * 16:,} MACs" in capsys.readouterr().out


def test_einsum_three_operands_contract_left_to_right():
    # ij,jk,kl->il with i=2, j=3, k=4, l=5: (ij,jk) over i,j,k = 24, then (ik,kl) over i,k,l = 40
    node = helper.make_node("Einsum", ["a", "b", "c"], ["y"], equation="ij,jk,kl->il")
    m = _model([node], [_vi("a", [2, 3]), _vi("b", [3, 4]), _vi("c", [4, 5])], [_vi("y", None)], opset=12)
    assert count_macs(m).total_macs == 2 * 3 * 4 + 2 * 4 * 5
