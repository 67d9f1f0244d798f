"""ONNX operators real exports contain (issue 21, item 3): each graph is built here with onnx.helper,
and its expected MACs come from the operator's closed form worked out by hand (checked against the
independent onnxruntime-shape count of workloads.onnx_reference where it exists)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import workloads
from archsim.errors import WorkloadError

F = TensorProto.FLOAT


def _w(name, shape, dtype=np.float32, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(dtype), name)


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _save(tmp_path, nodes, inputs, inits=(), name="m.onnx", opset=17, outputs=("y",), domains=()):
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [helper.make_tensor_value_info(o, F, None) for o in outputs]
    graph = helper.make_graph(nodes, "g", ins, outs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


def _reference(path, **kw):
    from workloads.onnx_reference import count_macs

    return count_macs(path, **kw).total_macs


# ----------------------------------------------------------------------------- BatchNormalization
def _bn(name, x, y, c):
    inits = [_w(f"{name}_s", (c,)), _w(f"{name}_b", (c,), seed=1), _w(f"{name}_m", (c,), seed=2),
             numpy_helper.from_array(np.ones(c, np.float32), f"{name}_v")]
    node = helper.make_node("BatchNormalization", [x, f"{name}_s", f"{name}_b", f"{name}_m", f"{name}_v"], [y],
                            name=name)
    return node, inits


def test_batchnorm_folds_into_the_conv_before_it_else_is_a_vector_op(tmp_path):
    bn1, i1 = _bn("bn1", "c", "b", 8)
    bn2, i2 = _bn("bn2", "r2", "y", 8)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), bn1,
             helper.make_node("Relu", ["b"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "b"], ["r2"], name="add"), bn2]
    path = _save(tmp_path, nodes, [("x", F, [1, 4, 10, 10])], [_w("w", (8, 4, 3, 3))] + i1 + i2)
    g = workloads.load(path)
    conv = g.op("conv")
    assert conv.kind == "conv2d" and conv.bias  # BN's shift becomes the conv's bias
    assert "bn1" not in g  # folded
    assert g.op("bn2").kind == "elementwise" and g.op("bn2").fn == "batchnorm"
    assert g.op("bn2").params() == 4 * 8  # scale, shift, mean, variance per channel
    # 10x10 outputs * 8 filters * 4*3*3 taps
    assert g.total_macs() == 10 * 10 * 8 * 36 == _reference(path)
    assert g.inputs_of("relu") == ["conv"]


# ----------------------------------------------------------------------------- ConvTranspose
@pytest.mark.parametrize("group", [1, 2])
def test_conv_transpose_is_a_gemm_with_the_closed_form_macs(tmp_path, group):
    n, cin, h, w, cout, k = 2, 4, 5, 6, 6, 3
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", kernel_shape=[k, k],
                              strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1], group=group)]
    inits = [_w("w", (cin, cout // group, k, k)), _w("b", (cout,))]
    path = _save(tmp_path, nodes, [("x", F, [n, cin, h, w])], inits)
    g = workloads.load(path)
    expected = n * cin * h * w * (cout // group) * k * k  # every input pixel scatters into Cout/g x kH x kW
    assert g.total_macs() == expected == _reference(path)
    assert g.op("up").output_shape() == (n, cout, 2 * h, 2 * w)  # (h-1)*2 - 2 + 3 + 1
    assert g.total_params() == cin * (cout // group) * k * k + cout
    gemm = g.op("up.gemm")
    assert (gemm.batch, gemm.m, gemm.k, gemm.n) == (group, n * h * w, cin // group, cout // group * k * k)


# ----------------------------------------------------------------------------- Resize / Pad / shape ops
def test_resize_pad_and_shape_ops_have_no_macs_and_real_shapes(tmp_path):
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"], name="resize", mode="nearest"),
        helper.make_node("Pad", ["r", "pads"], ["p"], name="pad", mode="reflect"),
        helper.make_node("Split", ["p", "split"], ["s0", "s1"], name="split", axis=1),
        helper.make_node("Concat", ["s1", "s0"], ["c"], name="concat", axis=1),
        helper.make_node("Slice", ["c", "st", "en", "ax"], ["sl"], name="slice"),
        helper.make_node("Transpose", ["sl"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
        helper.make_node("ReduceMax", ["t"], ["y"], name="rmax", axes=[3], keepdims=0),
    ]
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             _i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]), _i64("split", [1, 3]), _i64("st", [0]), _i64("en", [5]),
             _i64("ax", [2])]
    path = _save(tmp_path, nodes, [("x", F, [1, 4, 4, 4])], inits)
    g = workloads.load(path)
    assert g.total_macs() == 0 == _reference(path)
    assert g.op("resize").output_shape() == (1, 4, 8, 8)
    assert g.op("pad").output_shape() == (1, 4, 10, 10)
    assert g.op("slice").output_shape() == (1, 4, 5, 10)
    assert g.op("rmax").output_shape() == (1, 5, 10)
    assert g.import_report["lowered"] == 7 and g.import_report["substituted"] == []


def test_index_ops_on_activations_lower_to_vector_work(tmp_path):
    """Gather / Where / Expand / Range / Cast / Equal / Not / Trilu / ConstantOfShape / CumSum on data."""
    nodes = [
        helper.make_node("ReduceMax", ["ids"], ["mx0"], name="max_id", keepdims=0),
        helper.make_node("Add", ["mx0", "ten"], ["mx"], name="plus_ten"),
        helper.make_node("Range", ["zero", "mx", "one"], ["rng"], name="range"),
        helper.make_node("Equal", ["ids", "three"], ["eq"], name="equal"),
        helper.make_node("Not", ["eq"], ["ne"], name="not"),
        helper.make_node("Cast", ["ne"], ["nef"], name="cast", to=F),
        helper.make_node("CumSum", ["nef", "axis1"], ["cs"], name="cumsum"),
        helper.make_node("Unsqueeze", ["cs", "axes2"], ["cs3"], name="unsq"),
        helper.make_node("Expand", ["cs3", "shape3"], ["ex"], name="expand"),
        helper.make_node("Trilu", ["ex"], ["tri"], name="trilu", upper=0),
        helper.make_node("Shape", ["rng"], ["rs"], name="shape_of_range"),
        helper.make_node("ConstantOfShape", ["rs"], ["zeros"], name="cos"),
        helper.make_node("Gather", ["tri", "ids"], ["ga"], name="gather", axis=2),
        helper.make_node("Where", ["eq", "nef", "cs"], ["wh"], name="where"),
        helper.make_node("Unsqueeze", ["wh", "axes23"], ["wh3"], name="unsq2"),
        helper.make_node("Add", ["ga", "wh3"], ["y"], name="add"),
    ]
    inits = [_i64("zero", 0), _i64("one", 1), _i64("ten", 10), _i64("three", 3), _i64("axis1", 1), _i64("axes2", [2]),
             _i64("axes23", [2, 3]), _i64("shape3", [2, 6, 6])]
    path = _save(tmp_path, nodes, [("ids", TensorProto.INT64, [2, 6])], inits, outputs=("y", "zeros"))
    g = workloads.load(path)
    assert g.total_macs() == 0
    fns = {op.name: getattr(op, "fn", op.kind) for op in g.ops()}
    for name in ("equal", "not", "cumsum", "expand", "trilu", "gather", "where"):
        assert name in fns
    assert g.op("trilu").output_shape() == (2, 6, 6)
    assert g.op("gather").output_shape() == (2, 6, 2, 6)
    # Range's length depends on the data: its shape came from the onnxruntime run on zero inputs
    assert "onnxruntime" in g.import_report["shape_resolution"]
    assert g.op("range").output_shape() == (10,)


def test_activations_reductions_and_norms(tmp_path):
    acts = ["Erf", "Gelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Clip"]
    nodes, t = [], "x"
    for i, a in enumerate(acts):
        nodes.append(helper.make_node(a, [t], [f"a{i}"], name=a.lower(), **({"domain": ""} if a != "Gelu" else {})))
        t = f"a{i}"
    nodes += [helper.make_node("InstanceNormalization", [t, "s8", "b8"], ["in"], name="inorm"),
              helper.make_node("GroupNormalization", ["in", "s8", "b8"], ["gn"], name="gnorm", num_groups=2),
              helper.make_node("ReduceMean", ["gn", "axes"], ["y"], name="rmean", keepdims=1)]
    path = _save(tmp_path, nodes, [("x", F, [1, 8, 5, 5])], [_w("s8", (8,)), _w("b8", (8,)), _i64("axes", [2, 3])],
                 opset=21)
    g = workloads.load(path)
    assert [getattr(op, "fn", "") for op in g.ops()] == [a.lower() for a in acts] + [
        "instancenorm", "groupnorm", "reduce_mean"]
    assert g.op("inorm").params() == 16 and g.op("rmean").output_shape() == (1, 8, 1, 1)
    assert g.total_macs() == 0


# ----------------------------------------------------------------------------- recurrent layers
@pytest.mark.parametrize("op,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
def test_recurrent_layers_are_per_step_gate_gemms(tmp_path, op, gates):
    seq, batch, isz, hid, dirs = 5, 2, 3, 4, 2
    nodes = [helper.make_node(op, ["x", "W", "R", "B"], ["y", "yh"], name="rnn", hidden_size=hid,
                              direction="bidirectional")]
    inits = [_w("W", (dirs, gates * hid, isz)), _w("R", (dirs, gates * hid, hid), seed=1),
             _w("B", (dirs, 2 * gates * hid), seed=2)]
    path = _save(tmp_path, nodes, [("x", F, [seq, batch, isz])], inits, outputs=("y", "yh"))
    g = workloads.load(path)
    # per step and direction: x_t W^T (batch x I x gates*H) and h_{t-1} R^T (batch x H x gates*H)
    expected = dirs * seq * batch * gates * hid * (isz + hid)
    assert g.total_macs() == expected == _reference(path)
    # the recurrence: step t's recurrent GEMM waits for step t-1's cell (forward direction)
    for t in range(1, seq):
        assert g.inputs_of(f"rnn.d0.h_proj{t}") == [f"rnn.d0.cell{t - 1}"]
    assert g.inputs_of("rnn.d1.h_proj3") == ["rnn.d1.cell4"]  # backward runs from the last step
    assert g.op("rnn.y").output_shape() == (seq, dirs, batch, hid)
    # W and R, and the two biases Wb and Rb of B [dirs, 2*gates*H]; the steps share R
    assert g.total_params() == dirs * gates * hid * (isz + hid) + dirs * 2 * gates * hid


# ----------------------------------------------------------------------------- If / Loop
def _branch(name, op_w, out):
    node = helper.make_node("MatMul", ["x", op_w], [out], name=f"{name}_mm")
    return helper.make_graph([node], name, [], [helper.make_tensor_value_info(out, F, None)])


def test_if_on_a_constant_condition_folds_to_its_branch(tmp_path):
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero"], ["rows"], name="rows"),
        helper.make_node("Equal", ["rows", "four"], ["cond"], name="is_four"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=_branch("then", "wa", "ya"),
                         else_branch=_branch("else", "wb", "yb")),
    ]
    inits = [_i64("zero", 0), _i64("four", 4), _w("wa", (8, 16)), _w("wb", (8, 2))]
    path = _save(tmp_path, nodes, [("x", F, ["n", 8])], inits)
    assert workloads.load(path, dims={"n": 4}).total_macs() == 4 * 8 * 16 == _reference(path, input_shapes={"x": (4, 8)})
    assert workloads.load(path, dims={"n": 3}).total_macs() == 3 * 8 * 2 == _reference(path, input_shapes={"x": (3, 8)})


def test_if_on_data_is_one_error_naming_the_input_that_decides_it(tmp_path):
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=_branch("then", "wa", "ya"),
                         else_branch=_branch("else", "wb", "yb")),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.float32), "zero"), _w("wa", (8, 16)), _w("wb", (8, 16))]
    path = _save(tmp_path, nodes, [("x", F, [4, 8])], inits)
    with pytest.raises(WorkloadError) as err:
        workloads.load(path, unknown_ops="vector")
    text = str(err.value)
    assert "\n" not in text
    assert text.endswith("m.onnx: node branch (If): its condition depends on the input data; bind x with "
                         "--input-value NAME=V or --input-shape NAME=AxB so that it folds")


def test_input_value_picks_the_branch(tmp_path):
    """Silero VAD's pattern: a scalar control input (the sample rate) decides an If."""
    nodes = [helper.make_node("Equal", ["sr", "k16"], ["cond"], name="is_16k"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=_branch("then", "wa", "ya"),
                              else_branch=_branch("else", "wb", "yb"))]
    inits = [_i64("k16", 16000), _w("wa", (8, 16)), _w("wb", (8, 4))]
    path = _save(tmp_path, nodes, [("x", F, [2, 8]), ("sr", TensorProto.INT64, [])], inits)
    assert workloads.load(path, input_values={"sr": 16000}).total_macs() == 2 * 8 * 16
    assert workloads.load(path, input_values="sr=8000").total_macs() == 2 * 8 * 4  # a sweep spec's text form
    with pytest.raises(WorkloadError, match=r"node branch \(If\): its condition depends on the input data; bind sr "):
        workloads.load(path)


def test_planted_unsupported_node_after_a_shape_only_if_cannot_exit_0_unnoticed(tmp_path, capsys):
    """silero_vad_half's trap: an If whose condition comes only from Shape used to make the If and
    everything after it look static, so they were dropped and the run exited 0 with MACs missing."""
    from archsim.cli import main

    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero"], ["rows"], name="rows"),
        helper.make_node("Equal", ["rows", "four"], ["cond"], name="is_four"),
        helper.make_node("If", ["cond"], ["h"], name="branch", then_branch=_branch("then", "wa", "ha"),
                         else_branch=_branch("else", "wb", "hb")),
        helper.make_node("Planted", ["h"], ["p"], name="planted", domain="com.example"),
        helper.make_node("MatMul", ["p", "wc"], ["y"], name="after"),
    ]
    inits = [_i64("zero", 0), _i64("four", 4), _w("wa", (8, 16)), _w("wb", (8, 16)), _w("wc", (16, 32))]
    ins = [helper.make_tensor_value_info("x", F, [4, 8])]
    graph = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", F, [4, 32])], inits,
                              value_info=[helper.make_tensor_value_info("p", F, [4, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    path = str(tmp_path / "planted.onnx")
    onnx.save(model, path)

    with pytest.raises(WorkloadError, match=r"cannot lower ONNX op\(s\): Planted \(planted\)"):
        workloads.load(path)
    argv = ["run", "--arch", "systolic-32x32-ws", "--workload", path, "--no-plots", "--quiet"]
    assert main(argv + ["--out", str(tmp_path / "a")]) == 2
    assert "Planted (planted)" in capsys.readouterr().err
    assert main(argv + ["--out", str(tmp_path / "b"), "--unknown-ops", "vector"]) == 0
    out = capsys.readouterr().out
    assert "1 substituted on the vector unit (Planted x1; their MACs are not counted)" in out
    import json

    report = json.loads((tmp_path / "b" / "report.json").read_text())["import"]
    assert report["substituted"] == [{"op": "Planted", "count": 1, "macs": None, "nodes": ["planted"]}]
    assert report["macs_accounted_fraction"] is None
    # the If's branch and the MatMul after the planted node are counted, not dropped
    assert report["macs"] == 4 * 8 * 16 + 4 * 16 * 32


def test_static_loop_is_left_out_and_a_data_loop_is_one_error(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         helper.make_node("Add", ["acc_in", "one_f"], ["acc_out"], name="inc")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc_in", F, [1])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", F, [1])])
    inits = [_i64("trips", 3), numpy_helper.from_array(np.array(True), "true"),
             numpy_helper.from_array(np.zeros(1, np.float32), "acc0"),
             numpy_helper.from_array(np.ones(1, np.float32), "one_f"), _w("w", (8, 4))]
    static = [helper.make_node("Loop", ["trips", "true", "acc0"], ["acc"], name="loop", body=body),
              helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
              helper.make_node("Add", ["mm", "acc"], ["y"], name="add")]
    path = _save(tmp_path, static, [("x", F, [2, 8])], inits)
    g = workloads.load(path)
    assert g.total_macs() == 2 * 8 * 4
    assert {"op": "Loop", "count": 1} in g.import_report["dropped_static"]
    dynamic = [helper.make_node("ReduceMax", ["xi"], ["n"], name="count", keepdims=0),
               helper.make_node("Loop", ["n", "true", "acc0"], ["y"], name="loop", body=body)]
    path = _save(tmp_path, dynamic, [("xi", TensorProto.INT64, [3])], inits, name="dyn.onnx")
    with pytest.raises(WorkloadError, match=r"dyn\.onnx: node loop \(Loop\): its trip count or condition depends "
                                            r"on the input data; bind xi with"):
        workloads.load(path)


# ----------------------------------------------------------------------------- Einsum, attention
def test_einsum_is_a_batched_gemm(tmp_path):
    nodes = [helper.make_node("Einsum", ["a", "b"], ["y"], name="bmm", equation="bij,bjk->bik")]
    path = _save(tmp_path, nodes, [("a", F, [3, 4, 5]), ("b", F, [3, 5, 6])], opset=17)
    g = workloads.load(path)
    assert g.total_macs() == 3 * 4 * 5 * 6 == _reference(path)
    op = g.op("bmm")
    assert (op.batch, op.m, op.k, op.n, op.weight_is_param) == (3, 4, 5, 6, False)
    nodes = [helper.make_node("Einsum", ["a", "w"], ["y"], name="proj", equation="bsd,dh->bsh")]
    path = _save(tmp_path, nodes, [("a", F, [2, 7, 5])], [_w("w", (5, 9))], name="w.onnx")
    g = workloads.load(path)
    assert g.total_macs() == 2 * 7 * 5 * 9 and g.total_params() == 45


def test_einsum_of_three_operands_is_a_gemm_chain(tmp_path):
    i, j, k, l_ = 3, 4, 5, 6
    nodes = [helper.make_node("Einsum", ["a", "b", "c"], ["y"], name="chain", equation="ij,jk,kl->il")]
    path = _save(tmp_path, nodes, [("a", F, [i, j]), ("b", F, [j, k]), ("c", F, [k, l_])], opset=17)
    g = workloads.load(path)
    assert g.total_macs() == i * j * k + i * k * l_ == _reference(path)  # (ab) then (ab)c
    first, last = g.op("chain.step1"), g.op("chain")
    assert (first.m, first.k, first.n) == (i, j, k) and (last.m, last.k, last.n) == (i, k, l_)


def test_einsum_with_an_ellipsis_broadcasts_its_batch(tmp_path):
    nodes = [helper.make_node("Einsum", ["a", "b"], ["y"], name="bmm", equation="...ij,...jk->...ik")]
    path = _save(tmp_path, nodes, [("a", F, [2, 3, 4, 5]), ("b", F, [1, 3, 5, 6])], opset=17)
    g = workloads.load(path)
    assert g.total_macs() == 2 * 3 * 4 * 5 * 6 == _reference(path)
    nodes = [helper.make_node("Einsum", ["a", "w"], ["y"], name="proj", equation="...d,dh")]  # implicit output
    path = _save(tmp_path, nodes, [("a", F, [2, 7, 5])], [_w("w", (5, 9))], name="w.onnx")
    g = workloads.load(path)
    assert g.total_macs() == 2 * 7 * 5 * 9 == _reference(path)


def test_einsum_that_is_not_a_gemm_chain_is_one_clear_error(tmp_path):
    nodes = [helper.make_node("Einsum", ["a", "b"], ["y"], name="diag", equation="ii,ij->j")]
    path = _save(tmp_path, nodes, [("a", F, [3, 3]), ("b", F, [3, 4])], opset=17)
    with pytest.raises(WorkloadError, match=r"node diag \(Einsum\): equation 'ii,ij->j': index i repeats in one "
                                            r"operand \(a diagonal\), not a GEMM"):
        workloads.load(path)


def test_matmul_softmax_matmul_is_the_zoos_attention_op(tmp_path):
    b, h, s, d = 2, 3, 6, 4
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["sc"], name="qk"),
             helper.make_node("Div", ["sc", "scale"], ["sc2"], name="scale"),
             helper.make_node("Add", ["sc2", "mask"], ["sc3"], name="mask"),
             helper.make_node("Softmax", ["sc3"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["ctx"], name="av"),
             helper.make_node("Transpose", ["ctx"], ["y"], name="merge", perm=[0, 2, 1, 3])]
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "scale"), _w("mask", (1, 1, s, s))]
    path = _save(tmp_path, nodes, [(n, F, [b, h, s, d]) for n in "qkv"], inits)
    g = workloads.load(path)
    attn = g.op("qk.attention")
    assert (attn.kind, attn.batch, attn.heads, attn.kv_heads, attn.seq_q, attn.seq_kv, attn.head_dim) == (
        "attention", b, h, h, s, s, d)
    assert g.total_macs() == 2 * b * h * s * s * d == _reference(path)
    assert not any(op.kind in ("softmax", "matmul") for op in g.ops())
    assert g.op("merge").output_shape() == (b, s, h, d)


# ----------------------------------------------------------------------------- quantized forms
def test_qdq_pairs_run_at_the_int8_they_declare(tmp_path):
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dqx"),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], name="dqw"),
        helper.make_node("MatMul", ["xd", "wd"], ["y"], name="fc"),
    ]
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "sx"),
             numpy_helper.from_array(np.array(0, np.int8), "zx"),
             numpy_helper.from_array(np.ones((16, 8), np.int8), "wq"),
             numpy_helper.from_array(np.array(0.05, np.float32), "sw"),
             numpy_helper.from_array(np.array(0, np.int8), "zw")]
    path = _save(tmp_path, nodes, [("x", F, [4, 16])], inits)
    g = workloads.load(path, weight_precision="bf16", act_precision="bf16")
    fc = g.op("fc")
    assert (fc.weight_precision, fc.act_precision, fc.weight_is_param) == ("int8", "int8", True)
    assert fc.macs() == 4 * 16 * 8 and fc.weight_name == "wq"


def test_integer_gemms_and_qlinear_ops(tmp_path):
    u8 = TensorProto.UINT8
    s = lambda n: numpy_helper.from_array(np.array(0.1, np.float32), n)  # noqa: E731
    z = lambda n, t=np.uint8: numpy_helper.from_array(np.array(0, t), n)  # noqa: E731
    nodes = [
        helper.make_node("MatMulInteger", ["a", "w1", "za", "zw"], ["m1"], name="mmi"),
        helper.make_node("QLinearMatMul", ["a", "sa", "za", "w1", "sw", "zw", "sy", "zy"], ["m2"], name="qlmm"),
        helper.make_node("QLinearConv", ["img", "sa", "za", "wc", "sw", "zw", "sy", "zy"], ["c"], name="qlconv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    inits = [numpy_helper.from_array(np.ones((16, 8), np.int8), "w1"),
             numpy_helper.from_array(np.ones((6, 3, 3, 3), np.int8), "wc"),
             s("sa"), s("sw"), s("sy"), z("za"), z("zw", np.int8), z("zy")]
    path = _save(tmp_path, nodes, [("a", u8, [4, 16]), ("img", u8, [1, 3, 8, 8])], inits,
                 outputs=("m1", "m2", "c"))
    g = workloads.load(path)
    assert g.op("mmi").macs() == g.op("qlmm").macs() == 4 * 16 * 8
    assert g.op("qlconv").macs() == 8 * 8 * 6 * 27
    assert g.op("qlconv").act_precision == "uint8" and g.op("qlconv").weight_precision == "int8"
    assert g.total_macs() == _reference(path)


def test_matmulnbits_sets_the_weight_format_and_group_size(tmp_path):
    k, n, block = 64, 24, 32
    blob = block * 4 // 8
    nodes = [helper.make_node("MatMulNBits", ["x", "wq", "scales"], ["y"], name="q4", domain="com.microsoft",
                              K=k, N=n, bits=4, block_size=block)]
    inits = [numpy_helper.from_array(np.zeros((n, k // block, blob), np.uint8), "wq"),
             numpy_helper.from_array(np.ones((n * k // block,), np.float32), "scales")]
    path = _save(tmp_path, nodes, [("x", F, [3, k])], inits, domains=("com.microsoft",))
    g = workloads.load(path, weight_precision="bf16", act_precision="bf16")
    op = g.op("q4")
    assert (op.m, op.k, op.n, op.weight_precision, op.act_precision) == (3, k, n, "int4", "bf16")
    assert g.import_report["weight_formats"] == [{"layer": "q4", "weights": "int4", "group_size": block}]
    assert g.total_macs() == 3 * k * n == _reference(path)


def test_loop_with_a_bound_trip_count_is_unrolled(tmp_path):
    """torch.jit.script's ``for _ in range(n): h = relu(h @ W)`` with a scan output per step."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         helper.make_node("MatMul", ["h_in", "w"], ["mm"], name="mm"),
         helper.make_node("Relu", ["mm"], ["h_out"], name="relu"),
         helper.make_node("Identity", ["h_out"], ["scan"], name="scan")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", F, [2, 16])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", F, [2, 16]), helper.make_tensor_value_info("scan", F, [2, 16])])
    nodes = [helper.make_node("Loop", ["n", "true", "x"], ["y", "steps"], name="loop", body=body)]
    inits = [numpy_helper.from_array(np.array(True), "true"), _w("w", (16, 16))]
    path = _save(tmp_path, nodes, [("x", F, [2, 16]), ("n", TensorProto.INT64, [])], inits, outputs=("y", "steps"))
    g = workloads.load(path, input_values={"n": 3})
    assert g.total_macs() == 3 * 2 * 16 * 16 == _reference(path, input_values={"n": 3})
    assert g.op("loop/steps").output_shape() == (3, 2, 16)
    assert "Loop x1 unrolled (3 iterations)" in g.import_report["shape_resolution"]
    assert g.total_params() == 256  # one W, shared by the iterations
    with pytest.raises(WorkloadError, match=r"node loop \(Loop\): its trip count or condition depends on the input "
                                            r"data; bind n with --input-value"):
        workloads.load(path)


def test_a_shape_seen_only_on_zero_inputs_folds_nothing(tmp_path):
    """Range(0, max(x) + 3) has 3 elements on the zero inputs onnxruntime runs, but its length is data:
    an If on that length is not provably constant, so it is an error, not a silent pick of a branch."""
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["mx"], name="max", keepdims=0),
        helper.make_node("Cast", ["mx"], ["mxi"], name="to_int", to=TensorProto.INT64),
        helper.make_node("Add", ["mxi", "three"], ["lim"], name="plus3"),
        helper.make_node("Range", ["zero", "lim", "one"], ["r"], name="range"),
        helper.make_node("Shape", ["r"], ["rs"], name="len"),
        helper.make_node("Equal", ["rs", "three_1d"], ["eq"], name="is3"),
        helper.make_node("Squeeze", ["eq"], ["cond"], name="cond"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=_branch("then", "wa", "ya"),
                         else_branch=_branch("else", "wb", "yb")),
    ]
    inits = [_i64("zero", 0), _i64("one", 1), _i64("three", 3), _i64("three_1d", [3]), _w("wa", (8, 16)),
             _w("wb", (8, 16))]
    path = _save(tmp_path, nodes, [("x", F, [4, 8])], inits)
    with pytest.raises(WorkloadError, match=r"node branch \(If\): its condition depends on the input data; bind x "):
        workloads.load(path)
