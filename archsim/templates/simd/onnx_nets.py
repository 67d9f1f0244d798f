"""Small ONNX networks with random weights, built with the onnx helper API (no downloads).

- :func:`resnet_onnx`: a zoo-like ResNet (bottleneck blocks; ``blocks=(3, 4, 6, 3)``
  and ``width=64`` is ResNet-50's shape) with batch-norm folded away, He-initialised
  weights and each residual branch's last conv scaled by 0.2 so that the activations
  stay in range through the depth (no trained BN to do it);
- :func:`decoder_block_onnx`: one Llama-style decoder block for decode: one new token
  attends to a KV cache (inputs ``k_cache`` / ``v_cache``) plus itself, multi-head
  attention, LayerNorm (ONNX has no RMSNorm before opset 23), SwiGLU MLP, residuals.

Node names are the layer names ``archsim run --workload model.onnx`` reports, so
per-layer SQNR can be attached to a run's report (:mod:`.accuracy`).
"""
from __future__ import annotations

import numpy as np

OPSET = 17


def _init(name: str, array: np.ndarray):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array, np.float32), name)


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def weight(self, name: str, shape, fan_in: int, gain: float = 1.0) -> str:
        self.inits.append(_init(name, self.rng.standard_normal(shape) * gain * np.sqrt(2.0 / fan_in)))
        return name

    def const(self, name: str, array) -> str:
        self.inits.append(_init(name, array))
        return name

    def shape(self, name: str, dims) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(dims, np.int64), name))
        return name

    def node(self, op: str, inputs, name: str, **attrs) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, list(inputs), [name], name=name, **attrs))
        return name

    def model(self, inputs, outputs, name: str):
        from onnx import helper

        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        return model


def resnet_onnx(image_size: int = 64, batch: int = 1, blocks=(3, 4, 6, 3), width: int = 64, classes: int = 1000,
                seed: int = 0):
    """A bottleneck ResNet (ResNet-50 with the defaults) as an ONNX ModelProto."""
    from onnx import TensorProto, helper

    b = _Builder(seed)

    def conv(x, name, cin, cout, k, stride=1, gain=1.0, relu=True):
        w = b.weight(f"{name}.w", (cout, cin, k, k), cin * k * k, gain)
        bias = b.const(f"{name}.b", np.zeros(cout))
        y = b.node("Conv", [x, w, bias], name, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        return b.node("Relu", [y], f"{name}.relu") if relu else y

    x = conv("image", "conv1", 3, width, 7, 2)
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, count in enumerate(blocks):
        mid = width * 2 ** stage
        cout = mid * 4
        for i in range(count):
            stride = 2 if i == 0 and stage > 0 else 1
            p = f"layer{stage + 1}.{i}"
            y = conv(x, f"{p}.conv1", cin, mid, 1)
            y = conv(y, f"{p}.conv2", mid, mid, 3, stride)
            y = conv(y, f"{p}.conv3", mid, cout, 1, gain=0.2, relu=False)
            short = conv(x, f"{p}.downsample", cin, cout, 1, stride, relu=False) if (stride != 1 or cin != cout) else x
            x = b.node("Relu", [b.node("Add", [y, short], f"{p}.add")], f"{p}.relu")
            cin = cout
    x = b.node("GlobalAveragePool", [x], "avgpool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    w = b.weight("fc.w", (cin, classes), cin)
    x = b.node("Gemm", [x, w, b.const("fc.b", np.zeros(classes))], "fc")
    inp = helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, 3, image_size, image_size])
    out = helper.make_tensor_value_info("fc", TensorProto.FLOAT, [batch, classes])
    return b.model([inp], [out], "resnet")


def decoder_block_onnx(d_model: int = 512, heads: int = 8, ffn: int = 1408, kv_len: int = 127, seed: int = 0):
    """One Llama-style decoder block for one decode step (token ``x`` [1, d], caches [heads, kv_len, d/heads])."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    hd = d_model // heads

    def ln(x, name):
        return b.node("LayerNormalization", [x, b.const(f"{name}.g", np.ones(d_model)),
                                             b.const(f"{name}.b", np.zeros(d_model))], name, axis=-1)

    def proj(x, name, din, dout, gain=1.0):
        return b.node("MatMul", [x, b.weight(f"{name}.w", (din, dout), din, gain)], name)

    def heads_of(x, name):  # [1, d] -> [heads, 1, hd]
        r = b.node("Reshape", [x, b.shape(f"{name}.shape", [1, heads, hd])], f"{name}.reshape")
        return b.node("Transpose", [r], f"{name}.heads", perm=[1, 0, 2])

    h = ln("x", "attn_norm")
    q = heads_of(proj(h, "attn.q", d_model, d_model, 0.7), "q")
    k = heads_of(proj(h, "attn.k", d_model, d_model, 0.7), "k")
    v = heads_of(proj(h, "attn.v", d_model, d_model, 0.7), "v")
    k_all = b.node("Concat", ["k_cache", k], "k_all", axis=1)
    v_all = b.node("Concat", ["v_cache", v], "v_all", axis=1)
    kt = b.node("Transpose", [k_all], "k_t", perm=[0, 2, 1])
    s = b.node("MatMul", [q, kt], "attn.scores")
    s = b.node("Mul", [s, b.const("attn.scale", np.array(1.0 / np.sqrt(hd)))], "attn.scaled")
    p = b.node("Softmax", [s], "attn.softmax", axis=-1)
    o = b.node("MatMul", [p, v_all], "attn.av")
    o = b.node("Transpose", [o], "attn.merge", perm=[1, 0, 2])
    o = b.node("Reshape", [o, b.shape("merge.shape", [1, d_model])], "attn.flat")
    x = b.node("Add", ["x", proj(o, "attn.o", d_model, d_model, 0.5)], "attn.residual")
    h = ln(x, "mlp_norm")
    gate = proj(h, "mlp.gate", d_model, ffn)
    up = proj(h, "mlp.up", d_model, ffn)
    act = b.node("Mul", [gate, b.node("Sigmoid", [gate], "mlp.sigmoid")], "mlp.silu")
    y = proj(b.node("Mul", [act, up], "mlp.gated"), "mlp.down", ffn, d_model, 0.5)
    out = b.node("Add", [x, y], "out")
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, [1, d_model]),
              helper.make_tensor_value_info("k_cache", f, [heads, kv_len, hd]),
              helper.make_tensor_value_info("v_cache", f, [heads, kv_len, hd])]
    return b.model(inputs, [helper.make_tensor_value_info(out, f, [1, d_model])], "decoder_block")
