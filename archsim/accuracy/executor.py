"""Accuracy of a network run at chosen precisions: values carried end to end, SQNR vs fp32.

:func:`run_network` executes an ONNX graph with numpy (vectorized; the ops the
networks of :mod:`archsim.templates.simd.onnx_nets` and similar exports use) once in fp32 and once with
every GEMM (Conv, Gemm, MatMul, and the GEMMs the importer lowers ConvTranspose, Einsum and LSTM /
GRU / RNN to:
``[N*H*W, Cin/g] x [Cin/g, (Cout/g)*kH*kW]`` then col2im, the pairwise chain of
:mod:`workloads.onnx_einsum`, the input projection of all steps and each step's
``h[t-1] x R^T``) computed at ``weights`` x ``activations``:

- weights: per output column (``group_size = 0``) or per group of ``G`` along K
  and column, a scale ``s = amax / max_value`` of the format (posits: ``s = rms``,
  which puts the values where posits are most precise), then ``round_to(format)``;
- activations (both operands of an activation x activation MatMul): one dynamic
  per-tensor scale, the same rule;
- the GEMM itself: float64 on the rounded values (the fast path: the fp32
  accumulation error of a datapath is orders below the quantization error), or a
  template's bit-exact datapath on the codes (``Precision.exact_gemm``, e.g. the SIMD
  tile's :func:`archsim.templates.simd.accuracy.exact_gemm`; slower, for small
  networks); with ``dequant_format``
  the dequantize-then-MAC baseline's weights (value x scale rounded to fp16).

Everything else (ReLU, softmax, norms, residual adds) runs in fp32. Returns the
per-layer SQNR (each GEMM's output vs the same layer of the fp32 run), the output
SQNR against a reference (onnxruntime's output when given) and, for a classifier,
top-1 agreement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from archsim.numerics import get_format

GEMM_OPS = ("Conv", "Gemm", "MatMul")
#: ops whose GEMMs run at the layer's formats too (recorded under the importer's layer names)
LOWERED_GEMM_OPS = ("ConvTranspose", "Einsum", "LSTM", "GRU", "RNN")
QUANTIZED_OPS = GEMM_OPS + LOWERED_GEMM_OPS


def sqnr_db(ref: np.ndarray, test: np.ndarray) -> float:
    """``10 log10(sum ref^2 / sum (ref - test)^2)`` (inf when equal)."""
    ref = np.asarray(ref, np.float64)
    err = float(np.sum((ref - np.asarray(test, np.float64)) ** 2))
    sig = float(np.sum(ref ** 2))
    return float("inf") if err == 0 else float(10.0 * np.log10(sig / err)) if sig > 0 else float("-inf")


def _scale(x: np.ndarray, fmt, axis=None) -> np.ndarray:
    if fmt.kind == "posit":
        s = np.sqrt(np.mean(x * x, axis=axis, keepdims=axis is not None))
    else:
        s = np.max(np.abs(x), axis=axis, keepdims=axis is not None) / fmt.max_value
    return np.where(s > 0, s, 1.0)


def quantize_activation(x: np.ndarray, fmt_name: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(codes, rounded values, scale) of a tensor with one dynamic scale."""
    fmt = get_format(fmt_name)
    s = float(_scale(x, fmt))
    codes = fmt.encode(x / s)
    return codes, fmt.decode(codes) * s, s


def quantize_weight(w: np.ndarray, fmt_name: str, group_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``w`` (K, N): (codes, rounded values, scales (groups, N)) per column or per group of K."""
    fmt = get_format(fmt_name)
    K, N = w.shape
    G = group_size or K
    groups = -(-K // G)
    pad = groups * G - K
    wp = np.concatenate([w, np.zeros((pad, N))]) if pad else w
    blocks = wp.reshape(groups, G, N)
    s = _scale(blocks, fmt, axis=1)  # (groups, 1, N)
    codes = fmt.encode(blocks / s)
    values = (fmt.decode(codes) * s).reshape(groups * G, N)[:K]
    return codes.reshape(groups * G, N)[:K], values, s[:, 0, :]


@dataclass
class Precision:
    """What a GEMM runs at: ``weights`` x ``activations`` with group size ``group_size``."""

    weights: str = "fp32"
    activations: str = "fp32"
    group_size: int = 0
    #: a template's bit-exact GEMM on the codes, ``(ca, cw, sa, sw, act_fmt, weight_fmt, G) -> float64``
    #: (None: float64 on the rounded values)
    exact_gemm: Callable | None = None
    #: dequantize-then-MAC baseline: each weight's value x scale is rounded to this format ("" = MixPE order)
    dequant_format: str = ""

    @property
    def fp32(self) -> bool:
        return self.weights == "fp32" and self.activations == "fp32"


@dataclass
class AccuracyReport:
    """Per-layer SQNR (dB), output SQNR (dB), top-1 agreement (None if not a classifier)."""

    layer_sqnr_db: dict[str, float] = field(default_factory=dict)
    output_sqnr_db: float = 0.0
    top1_agreement: float | None = None
    outputs: np.ndarray | None = None


# ----------------------------------------------------------------------------- GEMM at a precision


def _gemm(a: np.ndarray, w: np.ndarray, prec: Precision, w_is_param: bool) -> np.ndarray:
    """``a`` (M, K) @ ``w`` (K, N) at ``prec`` (float64 result)."""
    if prec.fp32:
        return (a.astype(np.float32) @ w.astype(np.float32)).astype(np.float64)
    ca, va, sa = quantize_activation(a, prec.activations)
    if w_is_param:
        wf, G = prec.weights, prec.group_size
        cw, vw, sw = quantize_weight(w, wf, G)
    else:
        wf, G = prec.activations, 0
        cw, vw, s = quantize_activation(w, prec.activations)
        sw = np.full((1, w.shape[1]), s)
    if prec.dequant_format and w_is_param:
        vw = get_format(prec.dequant_format).round_to(vw.astype(np.float32))
        return va @ vw
    if prec.exact_gemm is None:
        return va @ vw
    return prec.exact_gemm(ca, cw, sa, sw, prec.activations, wf, G)


def _batched(a3: np.ndarray, w3: np.ndarray, is_param: bool, gemm) -> np.ndarray:
    """``a3`` (B, M, K) @ ``w3`` (B, K, N): one GEMM (own activation scale) per batch index."""
    return np.stack([gemm(a3[i], w3[i], is_param) for i in range(a3.shape[0])])


def _conv_transpose(x, w, bias, node, gemm):
    """ConvTranspose as the importer lowers it: per group the GEMM ``[N*H*W, Cin/g] x [Cin/g,
    (Cout/g)*kH*kW]``, then col2im (a scatter-add of each tap at ``stride``, ``dilation``), ``pads``
    cropped (from ``output_shape`` / ``auto_pad`` when given), ``output_padding`` appended."""
    if x.ndim == 3:  # 1-D: H = 1
        y = _conv_transpose(x[:, :, None, :], w[:, :, None, :], bias, _conv1d_as_2d(node, transpose=True), gemm)
        return y[:, :, 0, :]
    if x.ndim != 4:
        raise ValueError(f"{node.name or node.op_type}: ConvTranspose of rank {x.ndim}: expected 1-D or 2-D")
    n, cin, h, wd = x.shape
    kh, kw = w.shape[2:]
    group = _attr(node, "group", 1)
    cg, og = cin // group, w.shape[1]
    s = _attr(node, "strides", [1, 1])
    d = _attr(node, "dilations", [1, 1])
    opad = _attr(node, "output_padding", [0, 0])
    full = [(size - 1) * st + (k - 1) * dl + 1 + op for size, st, k, dl, op in zip((h, wd), s, (kh, kw), d, opad)]
    pads = _conv_transpose_pads(node, (h, wd), s, full)
    cols = []
    for g in range(group):
        a = x[:, g * cg:(g + 1) * cg].transpose(0, 2, 3, 1).reshape(n * h * wd, cg)
        cols.append(gemm(a, w[g * cg:(g + 1) * cg].reshape(cg, og * kh * kw), True).reshape(n, h, wd, og, kh, kw))
    col = np.concatenate(cols, axis=3)  # (n, h, w, cout, kh, kw)
    y = np.zeros((n, col.shape[3], full[0], full[1]))
    for i in range(kh):
        for j in range(kw):
            r, c = i * d[0], j * d[1]
            rows, cols_ = slice(r, r + (h - 1) * s[0] + 1, s[0]), slice(c, c + (wd - 1) * s[1] + 1, s[1])
            y[:, :, rows, cols_] += col[..., i, j].transpose(0, 3, 1, 2)
    y = y[:, :, pads[0]:full[0] - pads[2], pads[1]:full[1] - pads[3]]
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1)
    return y


def _conv_transpose_pads(node, size, strides, full):
    """(top, left, bottom, right) cropped from the full output, per the ONNX ConvTranspose spec."""
    auto = _attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    shape = _attr(node, "output_shape")
    if shape is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        shape = [n * st for n, st in zip(size, strides)]
    if shape is not None:
        total = [f - o for f, o in zip(full, list(shape)[-2:])]
        upper = auto == "SAME_UPPER"
        start = [t // 2 if upper else t - t // 2 for t in total]
        return (start[0], start[1], total[0] - start[0], total[1] - start[1])
    if auto == "VALID":
        return (0, 0, 0, 0)
    return tuple(_attr(node, "pads", [0, 0, 0, 0]))


def _einsum(node, operands, params_in, gemm_for):
    """Einsum as the importer lowers it (:func:`workloads.onnx_einsum.einsum_plan`): each pairwise step a
    batched GEMM ``(batch, M, K) x (batch, K, N)``, its second operand a weight when it is a parameter.
    ``gemm_for(step_index, last) -> gemm``; returns the output and each step's value."""
    from workloads.onnx_einsum import EinsumError, einsum_plan

    eq = _attr(node, "equation")
    eq = eq.decode() if isinstance(eq, bytes) else eq
    try:
        plan = einsum_plan(eq, [tuple(v.shape) for v in operands])
    except EinsumError as err:
        raise ValueError(f"{node.name or node.op_type}: {err}") from None
    size = plan.sizes
    cur, steps = operands[0], []
    for i, st in enumerate(plan.steps, start=1):
        a = np.broadcast_to(np.einsum(f"{st.a}->{st.batch}{st.m}{st.k}", cur),
                            tuple(size[c] for c in st.batch + st.m + st.k))
        b = np.broadcast_to(np.einsum(f"{st.b}->{st.batch}{st.k}{st.n}", operands[i]),
                            tuple(size[c] for c in st.batch + st.k + st.n))
        nb, nm, nk, nn = (int(np.prod([size[c] for c in part])) for part in (st.batch, st.m, st.k, st.n))
        gemm = gemm_for(i, i == len(plan.steps))
        y = _batched(a.reshape(nb, nm, nk), b.reshape(nb, nk, nn), params_in[i], gemm)
        y = y.reshape(tuple(size[c] for c in st.batch + st.m + st.n))
        cur = np.einsum(f"{st.batch}{st.m}{st.n}->{st.out}", y)
        steps.append(cur)
    return cur, steps


#: the activations each recurrent op runs by default (the only ones the executor runs), and its gate count
_RECURRENT = {"LSTM": (["Sigmoid", "Tanh", "Tanh"], 4), "GRU": (["Sigmoid", "Tanh"], 3), "RNN": (["Tanh"], 1)}


def _recurrent(node, ins, gemm_for):
    """LSTM (gates i, o, f, c; peepholes), GRU (z, r, h; either ``linear_before_reset``) or RNN as the
    importer lowers them: per direction the input projection of all steps ``[seq*batch, I] x W^T``
    (layer ``.x_proj``) and per step ``h[t-1] x R^T`` (``.h_proj{t}``; a GRU without
    ``linear_before_reset`` multiplies ``r * h[t-1]`` by its h-gate rows), each at the layer's formats.
    ``gemm_for(suffix) -> gemm``; returns (Y, Y_h, Y_c or None, {suffix: GEMM output}). Non-default
    activations, ``clip``, ``input_forget`` and short ``sequence_lens`` are refused."""
    label, op = node.name or node.op_type, node.op_type
    default, gates = _RECURRENT[op]
    acts = _attr(node, "activations")
    if acts is not None and [a.decode() if isinstance(a, bytes) else a for a in acts] not in (default, default * 2):
        raise ValueError(f"{label}: {op} activations {acts}: the executor runs the default {'/'.join(default)}")
    if _attr(node, "clip") is not None or _attr(node, "input_forget", 0):
        raise ValueError(f"{label}: {op} clip / input_forget: not run by the executor")
    x, w, r = ins[0], ins[1], ins[2]
    b, lens, h0, c0, p = (ins[i] if len(ins) > i else None for i in (3, 4, 5, 6, 7))
    layout = _attr(node, "layout", 0)
    if layout:
        x = x.transpose(1, 0, 2)
    seq, batch, isz = x.shape
    dirs, hidden = w.shape[0], w.shape[1] // gates
    if lens is not None and np.any(np.asarray(lens) != seq):
        raise ValueError(f"{label}: {op} sequence_lens {list(np.asarray(lens))} shorter than the {seq} steps: "
                         f"not run by the executor")
    before_reset = bool(_attr(node, "linear_before_reset", 0))
    y = np.zeros((seq, dirs, batch, hidden))
    yh, yc, layers = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden)), {}
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    gh = gates * hidden
    for d in range(dirs):
        pre = f".d{d}" if dirs > 1 else ""
        wb = b[d, :gh] if b is not None else np.zeros(gh)
        rb = b[d, gh:] if b is not None else np.zeros(gh)
        xproj = gemm_for(f"{pre}.x_proj")(x.reshape(seq * batch, isz), w[d].T, True) + wb
        layers[f"{pre}.x_proj"] = xproj
        xproj = xproj.reshape(seq, batch, gh)
        h = h0[d] if h0 is not None else np.zeros((batch, hidden))
        c = c0[d] if c0 is not None and op == "LSTM" else np.zeros((batch, hidden))
        pi, po, pf = (p[d, k * hidden:(k + 1) * hidden] for k in range(3)) if p is not None and op == "LSTM" \
            else (0.0, 0.0, 0.0)
        for t in (range(seq) if d == 0 else range(seq - 1, -1, -1)):
            gemm = gemm_for(f"{pre}.h_proj{t}")
            xt = xproj[t]
            if op == "GRU" and not before_reset:  # z, r from h; the h gate from r * h
                zr = gemm(h, r[d, :2 * hidden].T, True) + rb[:2 * hidden]
                z, rr = sig(xt[:, :hidden] + zr[:, :hidden]), sig(xt[:, hidden:2 * hidden] + zr[:, hidden:])
                hh = gemm(rr * h, r[d, 2 * hidden:].T, True) + rb[2 * hidden:]
                layers[f"{pre}.h_proj{t}"] = np.concatenate([zr, hh], axis=1)
                h = (1 - z) * np.tanh(xt[:, 2 * hidden:] + hh) + z * h
            else:
                rec = gemm(h, r[d].T, True) + rb
                layers[f"{pre}.h_proj{t}"] = rec
                if op == "RNN":
                    h = np.tanh(xt + rec)
                elif op == "GRU":
                    z = sig(xt[:, :hidden] + rec[:, :hidden])
                    rr = sig(xt[:, hidden:2 * hidden] + rec[:, hidden:2 * hidden])
                    h = (1 - z) * np.tanh(xt[:, 2 * hidden:] + rr * rec[:, 2 * hidden:]) + z * h
                else:
                    g = xt + rec
                    gi, go, gf, gc = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
                    i_t, f_t = sig(gi + pi * c), sig(gf + pf * c)
                    c = f_t * c + i_t * np.tanh(gc)
                    h = sig(go + po * c) * np.tanh(c)
            y[t, d] = h
        yh[d], yc[d] = h, c
    if layout:
        y, yh, yc = y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    return y, yh, (yc if op == "LSTM" else None), layers


# ----------------------------------------------------------------------------- the executor


def _attr(node, name, default=None):
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _conv(x, w, bias, node, gemm):
    """1-D or 2-D convolution (groups, dilations, explicit pads) as im2col GEMMs, one per group."""
    if x.ndim == 3:  # 1-D: H = 1
        node1 = _conv1d_as_2d(node)
        return _conv(x[:, :, None, :], w[:, :, None, :], bias, node1, gemm)[:, :, 0, :]
    kh, kw = w.shape[2:]
    sh, sw = _attr(node, "strides", [1, 1])
    dh, dw = _attr(node, "dilations", [1, 1])
    pads = _auto_pads(node, x.shape[2:], (kh, kw), (sh, sw), (dh, dw))
    group = _attr(node, "group", 1)
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    win = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    n, c, ho, wo = win.shape[:4]
    cg, og = c // group, w.shape[0] // group
    outs = []
    for g in range(group):
        cols = win[:, g * cg:(g + 1) * cg].transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, cg * kh * kw)
        outs.append(gemm(cols, w[g * og:(g + 1) * og].reshape(og, -1).T, True))
    y = np.concatenate(outs, axis=1)
    if bias is not None:
        y = y + bias
    return y.reshape(n, ho, wo, -1).transpose(0, 3, 1, 2)


def _conv1d_as_2d(node, transpose: bool = False):
    """A copy of a 1-D Conv (ConvTranspose) node with its attributes given for H = 1."""
    from onnx import helper

    copy = helper.make_node(node.op_type, list(node.input), list(node.output), name=node.name)
    for key, default in (("strides", [1]), ("dilations", [1]), ("kernel_shape", None)):
        v = _attr(node, key, default)
        if v is not None:
            copy.attribute.append(helper.make_attribute(key, [1] + list(v)))
    p = _attr(node, "pads")
    if p is not None:
        copy.attribute.append(helper.make_attribute("pads", [0, p[0], 0, p[1]]))
    for key, default in (("output_padding", [0]), ("output_shape", None)) if transpose else ():
        v = _attr(node, key, default)
        if v is not None:
            copy.attribute.append(helper.make_attribute(key, [0 if key == "output_padding" else 1] + list(v)))
    for key in ("group", "auto_pad"):
        v = _attr(node, key)
        if v is not None:
            copy.attribute.append(helper.make_attribute(key, v))
    return copy


def _auto_pads(node, size, kernel, strides, dilations):
    """(top, left, bottom, right) from ``pads`` or ``auto_pad``."""
    auto = _attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        from workloads.onnx_ops import same_pads

        return same_pads(auto, size, kernel, strides, dilations)
    if auto == "VALID":
        return (0, 0, 0, 0)
    return tuple(_attr(node, "pads", [0, 0, 0, 0]))


def _batchnorm(x, scale, bias, mean, var, node):
    eps = _attr(node, "epsilon", 1e-5)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)


def _reference_node(node, feeds: dict, model):
    """One node run in fp32 by onnx's reference evaluator, else by onnxruntime (its com.microsoft ops):
    the ops that are not GEMMs and that this executor does not write out in numpy (Resize, Pad, Gather,
    Where, LSTM, InstanceNorm, an If / Loop with the outer tensors its subgraphs read, ...)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
              for k, v in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    one = helper.make_model(helper.make_graph([node], "node", inputs, outputs),
                            opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        outs = ReferenceEvaluator(one).run(None, feeds)
    except Exception as first:  # the reference evaluator lacks the op (or one of its attributes)
        try:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            sess = ort.InferenceSession(one.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            outs = sess.run(None, feeds)
        except Exception:  # neither can: report the reference evaluator's reason
            text = str(first).splitlines()[0][:120] if str(first) else ""
            raise ValueError(f"{node.name or node.op_type}: op {node.op_type} cannot be evaluated "
                             f"({type(first).__name__}: {text})") from None
    names = [o for o in node.output if o]
    return dict(zip(names, outs))


def _maxpool(x, node):
    k = _attr(node, "kernel_shape")
    s = _attr(node, "strides", [1, 1])
    p = _attr(node, "pads", [0, 0, 0, 0])
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(xp, tuple(k), axis=(2, 3))[:, :, ::s[0], ::s[1]]
    return win.max(axis=(-2, -1))


def _layernorm(x, g, b, node):
    eps = _attr(node, "epsilon", 1e-5)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _softmax(x, node):
    axis = _attr(node, "axis", -1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _erf(x):
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x)


#: element-wise ops of fp32 tensors (inputs -> output), beside the ones with attributes in :func:`execute`
_ELEMENTWISE = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b, "Div": lambda a, b: a / b,
    "Pow": lambda a, b: np.power(a, b), "Max": lambda *xs: np.maximum.reduce(xs), "Min": lambda *xs: np.minimum.reduce(xs),
    "Relu": lambda x: np.maximum(x, 0.0), "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "Tanh": np.tanh,
    "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log, "Neg": np.negative, "Abs": np.abs,
    "Reciprocal": lambda x: 1.0 / x, "Erf": _erf, "Identity": lambda x: x, "Dropout": lambda x, *_: x,
}


def execute(model, feeds: dict, prec: Precision | None = None, policy=None,
            per_layer: dict[str, Precision] | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run ``model`` (ONNX ModelProto) on ``feeds``; returns (graph outputs, every GEMM node's output
    by its layer name, as ``archsim run`` names the node).

    ``policy`` (a :class:`mappers.precision_policy.Policy`) overrides ``prec`` per node name / op kind;
    ``per_layer`` (layer name -> Precision) sets the GEMMs it names outright."""
    from onnx import numpy_helper

    from workloads.onnx_import import _node_names

    prec = prec or Precision()
    env = {i.name: _as_value(numpy_helper.to_array(i)) for i in model.graph.initializer}
    params = set(env)
    env.update({k: _as_value(np.asarray(v)) for k, v in feeds.items()})
    gemm_outputs = {}
    nodes = list(model.graph.node)
    names = _node_names(nodes)
    for node in nodes:
        p = prec
        if per_layer is not None and names[id(node)] in per_layer:
            p = per_layer[names[id(node)]]
        elif policy is not None and node.op_type in QUANTIZED_OPS:
            kind = "conv2d" if node.op_type == "Conv" else "matmul"
            w, a, g = policy.resolve(node.name, kind, prec.weights, prec.activations, prec.group_size)
            p = Precision(w, a, g, prec.exact_gemm, prec.dequant_format)

        def gemm(a, w, is_param, p=p):
            return _gemm(a, w, p, is_param)

        def layer_gemm(layer: str, p=p):
            """The GEMM of one of the layers the importer lowers this node to (its own precision)."""
            q = per_layer[layer] if per_layer is not None and layer in per_layer else p
            return lambda a, w, is_param: _gemm(a, w, q, is_param)

        ins = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Conv":
            y = _conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, node, gemm)
        elif op == "Gemm":
            a, w = ins[0], ins[1]
            if _attr(node, "transA", 0):
                a = a.T
            if _attr(node, "transB", 0):
                w = w.T
            y = gemm(a, w, node.input[1] in params)
            if len(ins) > 2 and ins[2] is not None:
                y = y + ins[2]
        elif op == "MatMul":
            a, w = ins
            if w.ndim == 2 and a.ndim == 2:
                y = gemm(a, w, node.input[1] in params)
            else:  # batched (activation x activation): one GEMM per batch index
                if w.ndim == 2:
                    w = np.broadcast_to(w, a.shape[:-2] + w.shape)
                a3, w3 = a.reshape((-1,) + a.shape[-2:]), w.reshape((-1,) + w.shape[-2:])
                y = _batched(a3, w3, node.input[1] in params, gemm)
                y = y.reshape(a.shape[:-1] + (w.shape[-1],))
        elif op == "ConvTranspose":
            layer = f"{names[id(node)]}.gemm"
            y = _conv_transpose(ins[0], ins[1], ins[2] if len(ins) > 2 else None, node, layer_gemm(layer))
            gemm_outputs[layer] = y
        elif op == "Einsum" and len(ins) > 1:
            name = names[id(node)]
            last = len(ins) - 1
            y, steps = _einsum(node, ins, [x in params for x in node.input],
                               lambda i, is_last: layer_gemm(name if is_last else f"{name}.step{i}"))
            gemm_outputs.update({(name if i == last else f"{name}.step{i}"): v for i, v in enumerate(steps, 1)})
        elif op in _RECURRENT:
            name = names[id(node)]
            outs = _recurrent(node, ins, lambda suffix: layer_gemm(name + suffix))
            gemm_outputs.update({name + k: v for k, v in outs[3].items()})
            for out, value in zip(node.output, outs[:3]):
                if out:
                    env[out] = _as_value(value)
            y = outs[0]
        elif op in _ELEMENTWISE and all(v is None or np.issubdtype(v.dtype, np.floating) for v in ins):
            y = _ELEMENTWISE[op](*ins)
        elif op == "Gelu":
            x = ins[0]
            y = 0.5 * x * (1.0 + (np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))
                                  if _attr(node, "approximate", b"none") in (b"tanh", "tanh") else _erf(x / np.sqrt(2))))
        elif op == "Constant" and _attr(node, "value") is not None:
            y = numpy_helper.to_array(_attr(node, "value"))
        elif op == "Shape":
            start, end = _attr(node, "start", 0), _attr(node, "end", None)
            y = np.asarray(ins[0].shape[start:end], np.int64)
        elif op in ("Squeeze", "Unsqueeze"):
            axes = _attr(node, "axes") if len(ins) < 2 else [int(v) for v in ins[1]]
            y = np.squeeze(ins[0], tuple(axes)) if op == "Squeeze" and axes else (
                np.squeeze(ins[0]) if op == "Squeeze" else np.expand_dims(ins[0], tuple(axes)))
        elif op == "ReduceMean":
            axes = _attr(node, "axes") if len(ins) < 2 else [int(v) for v in ins[1]]
            y = ins[0].mean(axis=tuple(axes) if axes else None, keepdims=bool(_attr(node, "keepdims", 1)))
        elif op == "MaxPool":
            y = _maxpool(ins[0], node)
        elif op == "GlobalAveragePool":
            y = ins[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            axis = _attr(node, "axis", 1)
            y = ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
        elif op == "Transpose":
            y = ins[0].transpose(_attr(node, "perm"))
        elif op == "Concat":
            y = np.concatenate(ins, axis=_attr(node, "axis"))
        elif op == "Softmax":
            y = _softmax(ins[0], node)
        elif op == "LayerNormalization":
            y = _layernorm(ins[0], ins[1], ins[2] if len(ins) > 2 else 0.0, node)
        elif op == "BatchNormalization":
            y = _batchnorm(*ins[:5], node)
        else:
            from workloads.onnx_model import node_reads

            outs = _reference_node(node, {x: _for_reference(env[x]) for x in dict.fromkeys(node_reads(node))},
                                   model)
            for name, value in outs.items():
                env[name] = _as_value(np.asarray(value))
            y = outs[node.output[0]]
        y = _as_value(np.asarray(y))
        env[node.output[0]] = y
        if op not in QUANTIZED_OPS and op != "Constant" and all(x in params for x in node.input if x) and \
                any(x for x in node.input):  # a view of weights (DequantizeLinear(W), Transpose(W)): weights
            params.update(o for o in node.output if o)
        if op in GEMM_OPS:
            gemm_outputs[names[id(node)]] = y
    return {o.name: env[o.name] for o in model.graph.output}, gemm_outputs


def _as_value(x: np.ndarray) -> np.ndarray:
    """Float tensors as fp32 values held in float64 (tensors between ops are fp32); integer and bool
    tensors (ids, shapes, masks) unchanged."""
    if np.issubdtype(x.dtype, np.floating):
        return x.astype(np.float32).astype(np.float64)
    return x


def _for_reference(x):
    if x is None:
        return None
    return x.astype(np.float32) if np.issubdtype(x.dtype, np.floating) else x


def onnxruntime_outputs(model, feeds: dict) -> dict[str, np.ndarray]:
    """fp32 outputs of ``model`` from onnxruntime (the independent reference)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    kinds = {i.name: i.type for i in sess.get_inputs()}
    outs = sess.run(names, {k: np.asarray(v, _ORT_TYPES.get(kinds.get(k), np.float32)) for k, v in feeds.items()})
    return dict(zip(names, outs))


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
              "tensor(bool)": np.bool_, "tensor(float16)": np.float16, "tensor(double)": np.float64,
              "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


def imported_feeds(model, imported: dict, seed: int) -> dict[str, np.ndarray]:
    """Inputs at the shapes the run's import bound (``SimResult.imported``): standard-normal float
    tensors, zero integer tensors (ids, masks), and the ``--input-value`` control inputs as given."""
    from onnx import helper

    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    shapes, values = imported.get("input_shapes", {}), imported.get("input_values", {})
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits or vi.name not in shapes:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        shape = tuple(shapes[vi.name])
        if vi.name in values:
            feeds[vi.name] = np.full(shape, values[vi.name], dtype=dtype)
        elif np.issubdtype(dtype, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            feeds[vi.name] = np.zeros(shape, dtype=dtype)
    return feeds


def run_network(model, feeds: dict, prec: Precision, policy=None, reference: dict | None = None,
                classifier: bool = False) -> AccuracyReport:
    """SQNR per GEMM layer (vs this executor's fp32 run) and at the output (vs ``reference``,
    e.g. :func:`onnxruntime_outputs`, else the fp32 run); top-1 agreement for a classifier."""
    ref_out, ref_layers = execute(model, feeds)
    q_out, q_layers = execute(model, feeds, prec, policy)
    name = next(iter(q_out))
    ref = reference[name] if reference is not None else ref_out[name]
    rep = AccuracyReport({k: float(sqnr_db(ref_layers[k], v)) for k, v in q_layers.items()},
                         float(sqnr_db(ref, q_out[name])), outputs=q_out[name])
    if classifier:
        rep.top1_agreement = float(np.mean(np.argmax(ref, -1) == np.argmax(q_out[name], -1)))
    return rep


def attach_sqnr(result, layer_sqnr_db: dict[str, float]) -> int:
    """Set ``sqnr_db`` on the layers of a :class:`~archsim.report.SimResult` by name; returns how many.
    Layers without MACs are skipped: an attention pattern's AV MatMul is the attention op's free
    reshape of the same name (its values are the attention op's, which runs at the activations' format)."""
    hits = 0
    for layer in result.layers:
        if layer.name in layer_sqnr_db and layer.macs:
            layer.sqnr_db = float(layer_sqnr_db[layer.name])
            hits += 1
    return hits
