"""ConvTranspose, Einsum and LSTM / GRU / RNN in the value executor (--sqnr) run their GEMMs at the layer's formats.

Each op is checked twice against references written here, independently of
archsim/accuracy/executor.py:
- fp32: the executor's values equal onnxruntime's (SQNR > 90 dB), so the
  numpy formulations are the ONNX ops;
- int8 x int8: the executor's values equal a float64 numpy computation of the
  op *by its definition* (direct scatter for ConvTranspose, np.einsum per
  pairwise step, the ONNX LSTM equations) on operands quantized here by hand
  (symmetric int8: scale = amax / 127, round half to even): weights per GEMM
  column, activations one scale per GEMM call, as MatMul / Conv are.
And the quantized run differs from the fp32 one (the GEMMs were quantized).
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from archsim.accuracy.executor import Precision, execute, onnxruntime_outputs, sqnr_db

pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT
INT8 = Precision("int8", "int8")


def q_act(x):
    s = np.max(np.abs(x)) / 127.0
    s = s if s > 0 else 1.0
    return np.clip(np.rint(x / s), -127, 127) * s


def q_cols(w):
    """``w`` (K, N): one scale per column."""
    s = np.max(np.abs(w), axis=0, keepdims=True) / 127.0
    s = np.where(s > 0, s, 1.0)
    return np.clip(np.rint(w / s), -127, 127) * s


def _model(nodes, inputs, inits, outputs=("y",)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                              [helper.make_tensor_value_info(o, F, None) for o in outputs],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _f32(x):
    return np.asarray(x, np.float32).astype(np.float64)


def _check_fp32(model, feeds):
    ours, _ = execute(model, feeds)
    ref = onnxruntime_outputs(model, feeds)
    for key, value in ours.items():
        assert value.shape == ref[key].shape, key
        assert sqnr_db(ref[key], value) > 90, key
    return ours


# ----------------------------------------------------------------------------- ConvTranspose
def _conv_transpose_ref(x, w, b, stride, dil, pads, opad, group):
    """Direct definition: every input pixel scatters its kernel into the output."""
    n, cin, h, wd = x.shape
    og, kh, kw = w.shape[1:]
    full = [(h - 1) * stride[0] + (kh - 1) * dil[0] + 1 + opad[0],
            (wd - 1) * stride[1] + (kw - 1) * dil[1] + 1 + opad[1]]
    y = np.zeros((n, og * group, full[0], full[1]))
    cg = cin // group
    for c in range(cin):
        g = c // cg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for bb in range(kw):
                        y[:, g * og:(g + 1) * og, i * stride[0] + a * dil[0], j * stride[1] + bb * dil[1]] += \
                            x[:, c, i, j, None] * w[c, :, a, bb]
    return y[:, :, pads[0]:full[0] - pads[2], pads[1]:full[1] - pads[3]] + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("group", [1, 2])
def test_conv_transpose_gemm_is_quantized(group):
    rng = np.random.default_rng(1)
    cin, og = 4, 3
    x = rng.standard_normal((2, cin, 4, 5)).astype(np.float32)
    w = rng.standard_normal((cin, og, 3, 2)).astype(np.float32)
    b = rng.standard_normal(og * group).astype(np.float32)
    attrs = dict(strides=[2, 1], dilations=[1, 2], pads=[1, 0, 0, 1], output_padding=[1, 0], group=group)
    model = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", **attrs)],
                   [("x", list(x.shape))], {"w": w, "b": b})
    feeds = {"x": x}
    fp32 = _check_fp32(model, feeds)["y"]
    args = ((2, 1), (1, 2), (1, 0, 0, 1), (1, 0), group)
    assert np.allclose(_conv_transpose_ref(_f32(x), _f32(w), _f32(b), *args), fp32, rtol=1e-5, atol=1e-5)
    # int8: activations one scale per group (one GEMM per group, as Conv), weights per GEMM column
    # = per (output channel, tap) of the group's [Cin/g, Cout/g*kH*kW] matrix
    cg = cin // group
    xq = np.concatenate([q_act(_f32(x)[:, g * cg:(g + 1) * cg]) for g in range(group)], axis=1)
    wq = np.concatenate([q_cols(_f32(w)[g * cg:(g + 1) * cg].reshape(cg, -1)).reshape(cg, og, 3, 2)
                         for g in range(group)])
    want = _conv_transpose_ref(xq, wq, _f32(b), *args)
    out, layers = execute(model, feeds, INT8)
    assert np.allclose(out["y"], _f32(want), rtol=1e-6, atol=1e-6)
    assert np.allclose(layers["up.gemm"], want, rtol=1e-9, atol=1e-9)
    assert 20 < sqnr_db(fp32, out["y"]) < 60  # quantized: not the fp32 values


# ----------------------------------------------------------------------------- Einsum
def test_einsum_chain_with_weights_is_quantized():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    w1 = rng.standard_normal((5, 4)).astype(np.float32)
    w2 = rng.standard_normal((4, 6)).astype(np.float32)
    model = _model([helper.make_node("Einsum", ["x", "w1", "w2"], ["y"], name="proj", equation="bsj,jk,kl->bsl")],
                   [("x", list(x.shape))], {"w1": w1, "w2": w2})
    feeds = {"x": x}
    fp32 = _check_fp32(model, feeds)["y"]
    t = np.einsum("bsj,jk->bsk", q_act(_f32(x)), q_cols(_f32(w1)))  # step 1: [b*s, j] x [j, k]
    want = np.einsum("bsk,kl->bsl", q_act(t), q_cols(_f32(w2)))
    out, layers = execute(model, feeds, INT8)
    assert np.allclose(layers["proj.step1"], t, rtol=1e-9, atol=1e-9)
    assert np.allclose(layers["proj"], want, rtol=1e-9, atol=1e-9)
    assert np.allclose(out["y"], _f32(want), rtol=1e-6, atol=1e-6)
    assert 20 < sqnr_db(fp32, out["y"]) < 60


def test_einsum_of_activations_with_an_ellipsis_is_quantized_per_batch():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 7, 8)).astype(np.float32)
    model = _model([helper.make_node("Einsum", ["q", "k"], ["y"], name="qk", equation="...id,...jd->...ij")],
                   [("q", list(q.shape)), ("k", list(k.shape))], {})
    feeds = {"q": q, "k": k}
    fp32 = _check_fp32(model, feeds)["y"]
    want = np.zeros((2, 3, 5, 7))
    for b in range(2):
        for h in range(3):  # one GEMM per batch index, both operands activations (as a batched MatMul)
            want[b, h] = q_act(_f32(q[b, h])) @ q_act(_f32(k[b, h]).T)
    out, layers = execute(model, feeds, INT8)
    assert np.allclose(layers["qk"], want, rtol=1e-9, atol=1e-9)
    assert 20 < sqnr_db(fp32, out["y"]) < 60


# ----------------------------------------------------------------------------- LSTM
def _lstm_ref(x, w, r, b, h0, c0, p, quant: bool):
    """ONNX LSTM (gates i, o, f, c; peepholes i, o, f), forward then reverse; with ``quant`` each GEMM's
    operands are quantized as the importer's layers are: x of all steps at once, h per step."""
    seq, batch, _ = x.shape
    dirs, hidden = w.shape[0], w.shape[1] // 4
    qa, qw = (q_act, q_cols) if quant else ((lambda v: v), (lambda v: v))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    y = np.zeros((seq, dirs, batch, hidden))
    yh, yc = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        xw = (qa(x.reshape(seq * batch, -1)) @ qw(w[d].T)).reshape(seq, batch, -1)
        h, c = h0[d], c0[d]
        for t in (range(seq) if d == 0 else reversed(range(seq))):
            g = xw[t] + b[d, :4 * hidden] + qa(h) @ qw(r[d].T) + b[d, 4 * hidden:]
            i = sig(g[:, :hidden] + p[d, :hidden] * c)
            f = sig(g[:, 2 * hidden:3 * hidden] + p[d, 2 * hidden:] * c)
            c = f * c + i * np.tanh(g[:, 3 * hidden:])
            h = sig(g[:, hidden:2 * hidden] + p[d, hidden:2 * hidden] * c) * np.tanh(c)
            y[t, d] = h
        yh[d], yc[d] = h, c
    return y, yh, yc


def test_lstm_gemms_are_quantized():
    rng = np.random.default_rng(4)
    seq, batch, isz, hidden, dirs = 5, 2, 6, 4, 2
    x = rng.standard_normal((seq, batch, isz)).astype(np.float32)
    inits = {"w": rng.standard_normal((dirs, 4 * hidden, isz)) * 0.5,
             "r": rng.standard_normal((dirs, 4 * hidden, hidden)) * 0.5,
             "b": rng.standard_normal((dirs, 8 * hidden)) * 0.1, "p": rng.standard_normal((dirs, 3 * hidden)) * 0.1}
    h0 = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    c0 = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0", "p"], ["y", "yh", "yc"], name="rnn",
                            hidden_size=hidden, direction="bidirectional")
    model = _model([node], [("x", list(x.shape)), ("h0", list(h0.shape)), ("c0", list(c0.shape))], inits,
                   outputs=("y", "yh", "yc"))
    feeds = {"x": x, "h0": h0, "c0": c0}
    fp32 = _check_fp32(model, feeds)
    args = [_f32(v) for v in (x, inits["w"], inits["r"], inits["b"], h0, c0, inits["p"])]
    assert np.allclose(_lstm_ref(*args, quant=False)[0], fp32["y"], rtol=1e-5, atol=1e-5)
    want = _lstm_ref(*args, quant=True)
    out, layers = execute(model, feeds, INT8)
    for key, value in zip(("y", "yh", "yc"), want):
        assert np.allclose(out[key], _f32(value), rtol=1e-5, atol=1e-6), key
    assert {"rnn.d0.x_proj", "rnn.d1.x_proj", "rnn.d0.h_proj0", "rnn.d1.h_proj4"} <= set(layers)
    assert 15 < sqnr_db(fp32["y"], out["y"]) < 60


def test_lstm_options_the_executor_does_not_run_are_refused():
    node = helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="clipped", hidden_size=2, clip=1.0)
    model = _model([node], [("x", [3, 1, 2])], {"w": np.ones((1, 8, 2)), "r": np.ones((1, 8, 2))})
    with pytest.raises(ValueError, match="clipped: LSTM clip / input_forget: not run by the executor"):
        execute(model, {"x": np.ones((3, 1, 2), np.float32)}, INT8)


def _gru_rnn_ref(op, x, w, r, b, h0, before_reset: bool, quant: bool):
    """ONNX GRU (gates z, r, h) / RNN (Tanh), forward then reverse, quantized like the LSTM above; a GRU
    without ``linear_before_reset`` runs its h-gate GEMM on ``r * h`` (its own activation scale)."""
    seq, batch, _ = x.shape
    gates = 3 if op == "GRU" else 1
    dirs, hid = w.shape[0], w.shape[1] // gates
    qa, qw = (q_act, q_cols) if quant else ((lambda v: v), (lambda v: v))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    y = np.zeros((seq, dirs, batch, hid))
    for d in range(dirs):
        wb, rb = b[d, :gates * hid], b[d, gates * hid:]
        xw = (qa(x.reshape(seq * batch, -1)) @ qw(w[d].T)).reshape(seq, batch, -1) + wb
        h = h0[d]
        for t in (range(seq) if d == 0 else reversed(range(seq))):
            if op == "RNN":
                h = np.tanh(xw[t] + qa(h) @ qw(r[d].T) + rb)
            elif before_reset:
                hr = qa(h) @ qw(r[d].T) + rb
                z, rr = sig(xw[t][:, :hid] + hr[:, :hid]), sig(xw[t][:, hid:2 * hid] + hr[:, hid:2 * hid])
                h = (1 - z) * np.tanh(xw[t][:, 2 * hid:] + rr * hr[:, 2 * hid:]) + z * h
            else:
                zr = qa(h) @ qw(r[d, :2 * hid].T) + rb[:2 * hid]
                z, rr = sig(xw[t][:, :hid] + zr[:, :hid]), sig(xw[t][:, hid:2 * hid] + zr[:, hid:])
                hh = qa(rr * h) @ qw(r[d, 2 * hid:].T) + rb[2 * hid:]
                h = (1 - z) * np.tanh(xw[t][:, 2 * hid:] + hh) + z * h
            y[t, d] = h
    return y


@pytest.mark.parametrize("op,before_reset", [("GRU", 0), ("GRU", 1), ("RNN", 0)])
def test_gru_and_rnn_gemms_are_quantized(op, before_reset):
    rng = np.random.default_rng(5)
    seq, batch, isz, hidden, dirs = 4, 3, 5, 4, 2
    gates = 3 if op == "GRU" else 1
    x = rng.standard_normal((seq, batch, isz)).astype(np.float32)
    inits = {"w": rng.standard_normal((dirs, gates * hidden, isz)) * 0.5,
             "r": rng.standard_normal((dirs, gates * hidden, hidden)) * 0.5,
             "b": rng.standard_normal((dirs, 2 * gates * hidden)) * 0.1}
    h0 = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    extra = {"linear_before_reset": before_reset} if op == "GRU" else {}
    node = helper.make_node(op, ["x", "w", "r", "b", "", "h0"], ["y", "yh"], name="rec", hidden_size=hidden,
                            direction="bidirectional", **extra)
    model = _model([node], [("x", list(x.shape)), ("h0", list(h0.shape))], inits, outputs=("y", "yh"))
    feeds = {"x": x, "h0": h0}
    fp32 = _check_fp32(model, feeds)
    args = [_f32(v) for v in (x, inits["w"], inits["r"], inits["b"], h0)]
    assert np.allclose(_gru_rnn_ref(op, *args, bool(before_reset), quant=False), fp32["y"], rtol=1e-5, atol=1e-5)
    want = _gru_rnn_ref(op, *args, bool(before_reset), quant=True)
    out, layers = execute(model, feeds, INT8)
    assert np.allclose(out["y"], _f32(want), rtol=1e-5, atol=1e-6)
    assert np.allclose(out["yh"][1], _f32(want[0, 1]), rtol=1e-5, atol=1e-6)  # reverse ends at step 0
    assert {"rec.d0.x_proj", "rec.d1.h_proj0"} <= set(layers)
    assert 15 < sqnr_db(fp32["y"], out["y"]) < 60
