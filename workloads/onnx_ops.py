"""ONNX nodes -> workload ops: one handler per operator family.

Each handler adds the graph ops of one node (its MACs, parameters and bytes
come from the op) and says how it was lowered; :class:`Lowerer` keeps which op
produces each tensor and inserts a free ``reshape`` ShapeOp wherever an op reads
a tensor in another layout of the same elements (a head split, an im2col view).

MAC conventions (the ones an independent count from onnxruntime shapes uses):
Conv ``N*Ho*Wo*Cout*(Cin/g)*kH*kW``; ConvTranspose ``N*Cin*Hin*Win*(Cout/g)*kH*kW``;
Gemm / MatMul ``batch*M*K*N``; Einsum the product of every index's size;
LSTM / GRU / RNN ``dirs*seq*batch*gates*H*(I+H)`` (gates 4 / 3 / 1); attention
``2*B*H*Sq*Skv*D``. Everything else runs on the vector unit with 0 MACs.
"""
from __future__ import annotations

from math import prod

import numpy as np

from archsim.errors import WorkloadError
from workloads.graph import Graph, shapes_fit
from workloads.onnx_einsum import EinsumError, einsum_plan
from workloads.onnx_model import OnnxModel, attrs
from workloads.ops import (Attention, Conv2d, Elementwise, Embedding, LayerNorm, MatMul, Pool, RMSNorm, ShapeOp,
                           Softmax)
from workloads.precision import PRECISIONS

ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp",
               "Log", "Neg", "Abs", "Reciprocal", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Where",
               "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or",
               "Xor", "Softplus", "Elu", "Selu", "Celu", "PRelu", "Mish", "Sin", "Cos", "Floor",
               "Ceil", "Round", "Sign", "Mod", "IsNaN", "IsInf", "ThresholdedRelu", "BitShift", "Mean", "Sum",
               "FastGelu", "QuickGelu", "BiasGelu", "Swish", "Silu", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
               "Atanh", "Asinh", "Acosh", "BitwiseAnd", "BitwiseOr", "BitwiseNot", "BitwiseXor", "Shrink"}
REDUCTIONS = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1",
              "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum", "ArgMax", "ArgMin", "CumSum", "TopK", "Hardmax",
              "LpNormalization", "GlobalLpPool", "RotaryEmbedding", "GridSample", "RoiAlign", "MaxRoiPool",
              "NonMaxSuppression", "Unique", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
              "BiasAdd", "BiasSplitGelu"}
SHAPE_OPS = {"Flatten", "Reshape", "Transpose", "Concat", "Split", "Gather", "GatherElements", "GatherND",
             "Squeeze", "Unsqueeze", "Slice", "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth",
             "ScatterND", "ScatterElements", "Scatter", "Compress", "ReverseSequence"}
#: index and shape-building ops that compute on the vector unit when their inputs are activations
INDEX_OPS = {"Range", "Trilu", "ConstantOfShape", "NonZero", "OneHot", "EyeLike", "Shape", "Size"}
PASS_THROUGH = {"Identity", "Dropout", "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear",
                "DynamicQuantizeLinear", "Optional", "OptionalGetElement"}
POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"}
NORMS = {"BatchNormalization", "InstanceNormalization", "GroupNormalization", "LayerNormalization",
         "SimplifiedLayerNormalization", "RMSNormalization",
         "LRN", "MeanVarianceNormalization"}
GEMMS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "MatMulInteger", "QLinearConv", "QLinearMatMul",
         "MatMulNBits", "Einsum", "ConvInteger", "QGemm", "FusedConv", "FusedMatMul", "MatMulIntegerToFloat",
         "DynamicQuantizeMatMul", "MatMulBnb4"}
RECURRENT = {"LSTM": 4, "GRU": 3, "RNN": 1}
RESIZES = {"Resize", "Upsample"}
SOFTMAXES = {"Softmax", "LogSoftmax"}
QLINEAR_VECTOR = {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat",
                  "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearSoftmax", "QLinearReduceMean",
                  "QLinearWhere"}
LOWERED = (QLINEAR_VECTOR | ELEMENTWISE | REDUCTIONS | SHAPE_OPS | INDEX_OPS | PASS_THROUGH | POOLS | NORMS | GEMMS
           | set(RECURRENT) | RESIZES | SOFTMAXES)
#: ONNX element types of quantized tensors -> archsim precision
QUANT_TYPES = {2: "uint8", 3: "int8", 21: "uint4", 22: "int4"}


class Lowerer:
    """Adds the graph ops of one ONNX node at a time, keeping which op produces each tensor."""

    def __init__(self, m: OnnxModel, graph: Graph, precision: dict):
        self.m, self.graph, self.precision = m, graph, precision
        self.produced: dict[str, str] = {}  # tensor -> "op" or "op:k"
        self.quantized: dict[str, str] = {}  # tensor -> precision a Q/DQ pair declares
        self.weight_formats: list[dict] = []  # layers whose weight format the model declares
        self.attention_masks: list[dict] = []  # each attention's score mask: causal / none / other / unknown
        self.absorbed: set[int] = set()  # ids of nodes folded into another node's op
        self.folded_into: dict[int, str] = {}  # id(node) -> name of the op it was folded into
        self.node_macs = 0  # MACs of the node being lowered (all its ops)

    # -- plumbing ---------------------------------------------------------------
    def _ref(self, tensor: str) -> str | None:
        return self.produced.get(tensor)

    def _add(self, cls, node, inputs: list[str | None], outputs: list[str], *, name: str = "",
             precision: dict | None = None, **fields) -> str:
        """Add one op fed by ``inputs`` (tensor names, or op refs prefixed with ``@``)."""
        name = name or self.m.names[id(node)]
        op = cls(name=name, source=f"onnx:{self.m.names[id(node)]}", **{**self.precision, **(precision or {})},
                 **fields)
        op.check()
        expected = op.input_shapes()
        refs = []
        for port, x in enumerate(inputs):
            ref = x[1:] if x and x.startswith("@") else (self._ref(x) if x else None)
            if ref is not None and port < len(expected):
                ref = self._fit(ref, tuple(expected[port]), f"{name}.in{port}", node)
            refs.append(ref)
        self.graph.add(op, refs)
        self.node_macs += op.macs()
        for k, out in enumerate(outputs):
            if out:
                self.produced[out] = name if k == 0 else f"{name}:{k}"
        return name

    def _fit(self, ref: str, want: tuple, name: str, node) -> str:
        """``ref``, or a free reshape of it to ``want`` when it holds the same elements in another layout."""
        producer, index = (ref, "0") if ref in self.graph else ref.rsplit(":", 1)  # "op" or "op:k"
        have = tuple(self.graph.op(producer).output_shapes()[int(index)])
        if shapes_fit(have, want):
            return ref
        if prod(have) != prod(want):
            raise WorkloadError(f"reads a tensor of shape {list(have)} where {list(want)} was expected")
        op = ShapeOp(name=self._unique(name), source=f"onnx:{self.m.names[id(node)]}", fn="reshape",
                     in_shapes=(have,), out_shapes=(want,), **self.precision)
        return self.graph.add(op, [ref])

    def _unique(self, name: str) -> str:
        base, k = name, 1
        while name in self.graph:
            name, k = f"{base}_{k}", k + 1
        return name

    def _dynamic(self, node, inputs=None) -> list[str]:
        return [x for x in (node.input if inputs is None else inputs) if x and x not in self.m.static]

    def _shape(self, tensor: str, node) -> tuple[int, ...]:
        return self.m.shape(tensor, node)

    def _act_precision(self, tensor: str) -> dict:
        fmt = self.quantized.get(tensor)
        return {"act_precision": fmt} if fmt else {}

    def _weight_precision(self, tensor: str) -> dict:
        """The precision a DequantizeLinear on the weight declares, else {}."""
        node = self.m.producer.get(tensor)
        if node is not None and node.op_type == "DequantizeLinear":
            fmt = QUANT_TYPES.get(self.m.types.get(node.input[0], 0))
            if fmt in PRECISIONS:
                return {"weight_precision": fmt}
        fmt = QUANT_TYPES.get(self.m.types.get(tensor, 0))
        return {"weight_precision": fmt} if fmt in PRECISIONS else {}

    def _weight_name(self, tensor: str) -> str:
        return self.m.param_source(tensor) or self.m.alias.get(tensor, tensor)

    # -- dispatch ---------------------------------------------------------------
    def node(self, node) -> None:
        t = node.op_type
        if t in PASS_THROUGH:
            return self._pass_through(node)
        handler = getattr(self, f"_{t}", None)
        if handler is not None:
            return handler(node)
        if t in ELEMENTWISE:
            return self._elementwise(node)
        if t in REDUCTIONS:
            return self._vector(node, fn=t.lower().replace("reduce", "reduce_"))
        if t in SHAPE_OPS:
            return self._shape_op(node)
        if t in INDEX_OPS:
            return self._vector(node, fn=t.lower())
        if t in POOLS:
            return self._pool(node)
        if t in RECURRENT:
            return self._recurrent(node)
        if t.startswith("QLinear"):  # onnxruntime's quantized vector ops: the same op on int8 tensors
            return self._qlinear_vector(node)
        if t in RESIZES:
            return self._vector(node, fn="resize", inputs=[node.input[0]])
        return self._vector(node, fn=f"vector:{t}")  # unknown_ops="vector"

    def _pass_through(self, node) -> None:
        src = self._dynamic(node, node.input[:1])
        if not src:
            return
        if src[0] in self.produced:
            for out in node.output[:1]:
                self.produced[out] = self.produced[src[0]]
        if node.op_type == "QuantizeLinear":
            zp = node.input[2] if len(node.input) > 2 else ""
            fmt = QUANT_TYPES.get(self.m.types.get(zp, 0), "uint8" if not zp else "")
            out_type = self.m.types.get(node.output[0])
            fmt = QUANT_TYPES.get(out_type, fmt)
            if fmt in PRECISIONS:
                self.quantized[node.output[0]] = fmt
        elif node.op_type == "DequantizeLinear":
            fmt = self.quantized.get(src[0]) or QUANT_TYPES.get(self.m.types.get(src[0], 0))
            if fmt in PRECISIONS:
                self.quantized[node.output[0]] = fmt
        elif src[0] in self.quantized and node.op_type in ("Identity", "Dropout"):
            self.quantized[node.output[0]] = self.quantized[src[0]]

    # -- GEMMs ------------------------------------------------------------------
    def _Conv(self, node, x_name=None, w_name=None, b_name=None, precision=None) -> None:
        a = attrs(node)
        x_name = x_name or node.input[0]
        w_name = w_name or node.input[1]
        if b_name is None:
            b_name = node.input[2] if len(node.input) > 2 else ""
        x, w = self._shape(x_name, node), self._shape(w_name, node)
        spatial = len(x) - 2
        if spatial == 1:  # 1-D conv: H = 1
            x, w = (x[0], x[1], 1, x[2]), (w[0], w[1], 1, w[2])
        if len(x) != 4:
            raise WorkloadError(f"input {x_name!r} {list(x)}: expected a 1-D or 2-D conv (3 or 4 dims)")
        strides = _hw(a.get("strides"), spatial, 1)
        dilations = _hw(a.get("dilations"), spatial, 1)
        kernel = (w[2], w[3])
        pads = _pads(a, spatial, (x[2], x[3]), kernel, strides, dilations)
        group = int(a.get("group", 1))
        if w[1] * group != x[1]:
            raise WorkloadError(f"weight {w_name!r} {list(w)}: expected {x[1]} input channels in all over "
                                f"group={group}")
        prec = precision if precision is not None else {**self._act_precision(x_name), **self._weight_precision(w_name)}
        dyn_w = w_name not in self.m.static
        if dyn_w:
            raise WorkloadError(f"weight {w_name!r} is computed at run time; archsim lowers a Conv whose "
                                f"weights are constants (an initializer or a folded constant)")
        bias = bool(b_name) or self._folds_batchnorm(node)
        self._add(Conv2d, node, [x_name], [self._out_after_bn(node)], precision=prec, batch=x[0],
                  in_channels=x[1], out_channels=w[0], in_h=x[2], in_w=x[3], kernel_h=kernel[0],
                  kernel_w=kernel[1], stride_h=strides[0], stride_w=strides[1], pad_top=pads[0], pad_left=pads[1],
                  pad_bottom=pads[2], pad_right=pads[3], dilation_h=dilations[0], dilation_w=dilations[1],
                  groups=group, bias=bias, weight_name=self._weight_name(w_name))

    def _QLinearConv(self, node) -> None:
        prec = {"act_precision": QUANT_TYPES.get(self.m.types.get(node.input[0], 3), "int8"),
                "weight_precision": QUANT_TYPES.get(self.m.types.get(node.input[3], 3), "int8")}
        self._Conv(node, node.input[0], node.input[3], node.input[8] if len(node.input) > 8 else "", prec)

    def _ConvInteger(self, node) -> None:
        prec = {"act_precision": QUANT_TYPES.get(self.m.types.get(node.input[0], 3), "int8"),
                "weight_precision": QUANT_TYPES.get(self.m.types.get(node.input[1], 3), "int8")}
        self._Conv(node, node.input[0], node.input[1], "", prec)

    def _ConvTranspose(self, node) -> None:
        """A GEMM ``[N*Hin*Win, Cin/g] x [Cin/g, (Cout/g)*kH*kW]`` per group, then a col2im scatter-add
        on the vector unit (MACs ``N*Cin*Hin*Win*(Cout/g)*kH*kW``)."""
        a = attrs(node)
        x_name, w_name = node.input[0], node.input[1]
        x, w = self._shape(x_name, node), self._shape(w_name, node)
        group = int(a.get("group", 1))
        if len(x) not in (3, 4) or len(w) != len(x) or w[0] != x[1]:
            raise WorkloadError(f"input {list(x)} and weight {list(w)}: expected NC[H]W and [Cin, Cout/group, "
                                f"kH, kW] with the same Cin")
        if w_name not in self.m.static:
            raise WorkloadError(f"weight {w_name!r} is computed at run time; archsim lowers a ConvTranspose "
                                f"whose weights are constants")
        spatial = prod(x[2:])
        cin_g, cout_g, taps = x[1] // group, w[1], prod(w[2:])
        out = self._shape(node.output[0], node)
        name = self.m.names[id(node)]
        prec = {**self._act_precision(x_name), **self._weight_precision(w_name)}
        gemm = self._add(MatMul, node, [x_name], [], name=f"{name}.gemm", precision=prec, batch=group,
                         m=x[0] * spatial, k=cin_g, n=cout_g * taps, weight_is_param=True,
                         weight_name=self._weight_name(w_name))
        bias = len(node.input) > 2 and bool(node.input[2])
        extra = (group - 1) * cin_g * cout_g * taps  # a batched MatMul counts one group's weights
        channels = out[1]
        self._add(Elementwise, node, ["@" + gemm], [self._out_after_bn(node)], name=name, fn="col2im",
                  shape=out, num_inputs=1, in_shapes=((group, x[0] * spatial, cout_g * taps),),
                  const_params=extra + (channels if bias or self._folds_batchnorm(node) else 0))

    def _Gemm(self, node) -> None:
        a = attrs(node)
        ta, tb = bool(a.get("transA", 0)), bool(a.get("transB", 0))
        sa, sb = self._shape(node.input[0], node), self._shape(node.input[1], node)
        if len(sa) != 2 or len(sb) != 2:
            raise WorkloadError(f"expected 2-D Gemm operands, got {list(sa)} and {list(sb)}")
        mm, k = (sa[1], sa[0]) if ta else sa
        kb, n = (sb[1], sb[0]) if tb else sb
        if k != kb:
            raise WorkloadError(f"expected A's K ({k}) to equal B's K ({kb}) after transA={int(ta)}, "
                                f"transB={int(tb)}")
        b_param = node.input[1] in self.m.static
        has_c = len(node.input) > 2 and bool(node.input[2])
        inputs = [node.input[0]] + ([] if b_param else [node.input[1]])
        prec = {**self._act_precision(node.input[0]), **(self._weight_precision(node.input[1]) if b_param else {})}
        self._add(MatMul, node, inputs, [self._out_after_bn(node)], precision=prec, batch=1, m=mm, k=k, n=n,
                  transpose_a=ta, transpose_b=tb, weight_is_param=b_param,
                  bias=(has_c or self._folds_batchnorm(node)) and b_param,
                  weight_name=self._weight_name(node.input[1]) if b_param else "")

    def _MatMul(self, node, a_name=None, b_name=None, precision=None, out=None) -> None:
        a_name, b_name = a_name or node.input[0], b_name or node.input[1]
        out = out or node.output[0]
        sa, sb = self._shape(a_name, node), self._shape(b_name, node)
        a2 = (1,) + sa if len(sa) == 1 else sa
        b2 = sb + (1,) if len(sb) == 1 else sb
        if a2[-1] != b2[-2]:
            raise WorkloadError(f"expected A's last dim to equal B's K, got {list(sa)} x {list(sb)}")
        if precision is None:
            precision = {**self._act_precision(a_name),
                         **(self._weight_precision(b_name) if b_name in self.m.static
                            else self._act_precision(b_name))}
        if b_name in self.m.static and len(sb) <= 2:
            self._add(MatMul, node, [a_name], [out], precision=precision, batch=1, m=prod(a2[:-1]), k=a2[-1],
                      n=b2[-1], weight_is_param=True, weight_name=self._weight_name(b_name))
            return
        if self._attention(node, a_name, b_name):
            return
        lead = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
        self._add(MatMul, node, [a_name, b_name], [out], precision=precision, batch=prod(lead), m=a2[-2],
                  k=a2[-1], n=b2[-1], weight_is_param=False)

    def _MatMulInteger(self, node) -> None:
        prec = {"act_precision": QUANT_TYPES.get(self.m.types.get(node.input[0], 3), "int8")}
        if node.input[1] in self.m.static:
            prec["weight_precision"] = QUANT_TYPES.get(self.m.types.get(node.input[1], 3), "int8")
        self._MatMul(node, node.input[0], node.input[1], prec)

    def _QLinearMatMul(self, node) -> None:
        prec = {"act_precision": QUANT_TYPES.get(self.m.types.get(node.input[0], 3), "int8")}
        if node.input[3] in self.m.static:
            prec["weight_precision"] = QUANT_TYPES.get(self.m.types.get(node.input[3], 3), "int8")
        self._MatMul(node, node.input[0], node.input[3], prec)

    _FusedConv = _Conv  # onnxruntime's Conv + activation

    def _FusedMatMul(self, node) -> None:
        """onnxruntime's MatMul with ``transA`` / ``transB`` on the last two dims and a scale ``alpha``."""
        a = attrs(node)
        if a.get("transA", 0) or a.get("transBatchA", 0) or a.get("transBatchB", 0):
            raise WorkloadError("transA / transBatchA / transBatchB: archsim lowers FusedMatMul with transB only; "
                                "export without onnxruntime's graph optimizations")
        if not a.get("transB", 0):
            return self._MatMul(node)
        sa, sb = self._shape(node.input[0], node), self._shape(node.input[1], node)
        b_param = node.input[1] in self.m.static
        if b_param and len(sb) == 2:
            self._add(MatMul, node, [node.input[0]], [node.output[0]], batch=1, m=prod(sa[:-1]), k=sa[-1], n=sb[0],
                      transpose_b=True, weight_is_param=True, weight_name=self._weight_name(node.input[1]))
            return
        lead = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        self._add(MatMul, node, [node.input[0], node.input[1]], [node.output[0]], batch=prod(lead), m=sa[-2],
                  k=sa[-1], n=sb[-2], transpose_b=True, weight_is_param=False)

    def _MatMulIntegerToFloat(self, node) -> None:
        self._MatMulInteger(node)

    def _DynamicQuantizeMatMul(self, node) -> None:
        prec = {"act_precision": "int8"}
        if node.input[1] in self.m.static:
            prec["weight_precision"] = QUANT_TYPES.get(self.m.types.get(node.input[1], 3), "int8")
        self._MatMul(node, node.input[0], node.input[1], prec)

    def _MatMulBnb4(self, node) -> None:
        a = attrs(node)
        k, n, block = int(a["K"]), int(a["N"]), int(a.get("block_size", 64))
        sa = self._shape(node.input[0], node)
        fmt = "fp4_e2m1" if int(a.get("quant_type", 1)) == 0 else "int4"  # 0: FP4, 1: NF4 (4-bit codes)
        name = self._add(MatMul, node, [node.input[0]], [node.output[0]], precision={"weight_precision": fmt},
                         batch=1, m=prod(sa[:-1]), k=k, n=n, weight_is_param=True, weight_name=node.input[1])
        self.weight_formats.append({"layer": name, "weights": fmt, "group_size": block})

    def _QGemm(self, node) -> None:
        """onnxruntime's quantized Gemm: inputs A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp."""
        a = attrs(node)
        ta, tb = bool(a.get("transA", 0)), bool(a.get("transB", 0))
        sa, sb = self._shape(node.input[0], node), self._shape(node.input[3], node)
        mm, k = (sa[1], sa[0]) if ta else sa
        n = sb[0] if tb else sb[1]
        b_param = node.input[3] in self.m.static
        prec = {"act_precision": QUANT_TYPES.get(self.m.types.get(node.input[0], 3), "int8")}
        if b_param:
            prec["weight_precision"] = QUANT_TYPES.get(self.m.types.get(node.input[3], 3), "int8")
        inputs = [node.input[0]] + ([] if b_param else [node.input[3]])
        self._add(MatMul, node, inputs, [node.output[0]], precision=prec, batch=1, m=mm, k=k, n=n, transpose_a=ta,
                  transpose_b=tb, weight_is_param=b_param, bias=b_param and len(node.input) > 6 and
                  bool(node.input[6]), weight_name=self._weight_name(node.input[3]) if b_param else "")

    def _MatMulNBits(self, node) -> None:
        """onnxruntime's block-quantized weight GEMM: ``bits``-bit weights with one scale per
        ``block_size`` of K (the layer's weight format and group size)."""
        a = attrs(node)
        k, n, bits, block = int(a["K"]), int(a["N"]), int(a.get("bits", 4)), int(a.get("block_size", 32))
        sa = self._shape(node.input[0], node)
        if sa[-1] != k:
            raise WorkloadError(f"input {list(sa)}: expected a last dim of K={k}")
        fmt = f"int{bits}"
        if fmt not in PRECISIONS:
            raise WorkloadError(f"bits={bits}: archsim has no int{bits} weight format; expected one of 2, 3, 4, 8")
        name = self._add(MatMul, node, [node.input[0]], [node.output[0]], precision={"weight_precision": fmt},
                         batch=1, m=prod(sa[:-1]), k=k, n=n, weight_is_param=True, bias=len(node.input) > 5 and
                         bool(node.input[5]), weight_name=node.input[1])
        self.weight_formats.append({"layer": name, "weights": fmt, "group_size": block})

    def _Einsum(self, node) -> None:
        """Two or more operands as a chain of batched GEMMs (:mod:`workloads.onnx_einsum`; MACs: per step
        the product of its index sizes); one operand (a transpose, a trace, a sum) on the vector unit."""
        eq = attrs(node)["equation"]
        eq = eq.decode() if isinstance(eq, bytes) else eq
        if len(node.input) == 1:
            return self._vector(node, fn="einsum")
        try:
            plan = einsum_plan(eq, [self._shape(x, node) for x in node.input])
        except EinsumError as err:
            raise WorkloadError(f"{err}; rewrite it as MatMul/Transpose/ReduceSum") from None
        name = self.m.names[id(node)]
        prev = node.input[0]
        for i, step in enumerate(plan.steps, start=1):
            size = plan.sizes
            batch, m, k, n = (prod(size[c] for c in part) for part in (step.batch, step.m, step.k, step.n))
            b_name = node.input[i]
            b_param = b_name in self.m.static
            last = i == len(plan.steps)
            inputs = [prev] + ([] if b_param else [b_name])
            prev = "@" + self._add(MatMul, node, inputs, [node.output[0]] if last else [],
                                   name=name if last else f"{name}.step{i}", batch=1 if b_param else batch,
                                   m=m * (batch if b_param else 1), k=k, n=n, weight_is_param=b_param,
                                   weight_name=self._weight_name(b_name) if b_param else "")

    # -- attention --------------------------------------------------------------
    def _attention(self, node, a_name: str, b_name: str) -> bool:
        """``MatMul(Q, K^T) [-> Mul/Div scale] [-> Add mask] -> Softmax -> MatMul(., V)`` as one
        Attention op (the zoo's layer), Q/K/V ``[B, H, S, D]`` (or ``[B*H, S, D]``)."""
        sa, sb = self._shape(a_name, node), self._shape(b_name, node)
        if len(sa) not in (3, 4) or len(sb) != len(sa):
            return False
        chain, t, masks = [], node.output[0], []
        while True:
            nxt = self.m.only_consumer(t)
            if nxt is None:
                return False
            if nxt.op_type in ("Mul", "Div", "Add", "Sub", "Where", "Cast", "Identity", "Dropout", "Clip"):
                masks += self._mask_inputs(nxt, t)
                chain.append(nxt)
                t = nxt.output[0]
                continue
            if nxt.op_type != "Softmax" or attrs(nxt).get("axis", -1) not in (-1, len(sa) - 1):
                return False
            chain.append(nxt)
            t = nxt.output[0]
            break
        while True:
            guard = self._nan_guard(t)
            if guard:  # torch's SDPA export: Where(IsNaN(p), 0, p) after the softmax
                chain += guard
                t = guard[1].output[0]
                continue
            nxt = self.m.only_consumer(t)
            if nxt is None:
                return False
            if nxt.op_type in ("Cast", "Identity", "Dropout"):
                chain.append(nxt)
                t = nxt.output[0]
                continue
            break
        if nxt.op_type != "MatMul" or nxt.input[0] != t or nxt.input[1] in self.m.static:
            return False
        v_name = nxt.input[1]
        sv, so = self._shape(v_name, nxt), self._shape(nxt.output[0], nxt)
        if len(sv) != len(sa):
            return False
        lead, sq, d = sa[:-2], sa[-2], sa[-1]
        skv = sb[-1]
        if sb[-2] != d or sv[-2] != skv or tuple(sb[:-2]) != tuple(lead) or tuple(sv[:-2]) != tuple(lead):
            return False
        dv = sv[-1]
        if dv != d:
            return False
        batch, heads = (lead[0], lead[1]) if len(lead) == 2 else (1, lead[0])
        name = self.m.names[id(nxt)]
        base = self.m.names[id(node)]
        k_src, kv_heads = self._kv_source(b_name, batch, heads, skv, d)
        v_src, v_heads = self._kv_source(v_name, batch, heads, skv, d)
        if v_heads != kv_heads:
            k_src, v_src, kv_heads = b_name, v_name, heads
        q = self._add(ShapeOp, node, [a_name], [], name=f"{base}.q", fn="reshape", in_shapes=(tuple(sa),),
                      out_shapes=((batch, sq, heads * d),))
        k = self._add(ShapeOp, node, [k_src], [], name=f"{base}.k", fn="transpose",
                      in_shapes=(self._shape(k_src, node),), out_shapes=((batch, skv, kv_heads * d),))
        v = self._add(ShapeOp, node, [v_src], [], name=f"{base}.v", fn="reshape",
                      in_shapes=(self._shape(v_src, nxt),), out_shapes=((batch, skv, kv_heads * d),))
        mask = self._mask_kind(masks, sq, skv)
        self.attention_masks.append({"attention": f"{base}.attention", "mask": mask})
        attn = self._add(Attention, node, ["@" + q, "@" + k, "@" + v], [], name=f"{base}.attention",
                         batch=batch, heads=heads, kv_heads=kv_heads, seq_q=sq, seq_kv=skv, head_dim=d,
                         causal=mask == "causal")
        self._add(ShapeOp, nxt, ["@" + attn], [nxt.output[0]], name=name, fn="reshape",
                  in_shapes=((batch, sq, heads * d),), out_shapes=(tuple(so),))
        for n in chain + [nxt]:
            self.absorbed.add(id(n))
            self.folded_into[id(n)] = f"{base}.attention"
        return True

    def _mask_inputs(self, node, scores: str) -> list[tuple[str, str, bool]]:
        """(tensor, kind, scores_first) of what ``node`` applies to the scores ``scores`` as a mask: an
        Add's other (non-scalar) input, a Where's condition."""
        if node.op_type == "Add":
            return [(x, "add", True) for x in node.input if x and x != scores and (self.m.elements(x) or 2) > 1]
        if node.op_type == "Where" and scores in node.input[1:]:
            return [(node.input[0], "where", node.input[1] == scores)]
        return []

    def _mask_kind(self, masks: list[tuple[str, str, bool]], sq: int, skv: int) -> str:
        """"causal", "none", "other" or "unknown" (a mask that could not be evaluated) for the masks
        applied to one attention's scores (:mod:`workloads.onnx_masks`)."""
        from workloads.onnx_masks import classify, hidden_keys, run_tensors

        if not masks:
            return "none"
        values = run_tensors(self.m, [t for t, _k, _f in masks])
        if any(t not in values for t, _k, _f in masks):
            return "unknown"
        return classify([hidden_keys(kind, values[t], first) for t, kind, first in masks], sq, skv)

    def _kv_source(self, tensor: str, batch: int, heads: int, seq: int, d: int) -> tuple[str, int]:
        """Grouped-query attention: the K or V tensor before ``repeat_kv`` (``Unsqueeze -> Expand ->
        Reshape`` of ``[B, kv_heads, S, D]``) and kv_heads; else (``tensor``, heads)."""
        t = tensor
        for _ in range(8):
            node = self.m.producer.get(t)
            if node is None or node.op_type not in ("Reshape", "Transpose", "Expand", "Unsqueeze", "Mul", "Div",
                                                    "Identity", "Cast"):
                break
            if node.op_type in ("Mul", "Div") and not all(x in self.m.static for x in node.input[1:]):
                break
            if node.op_type == "Unsqueeze":
                src = node.input[0]
                shape = self.m.shapes.get(src)
                if shape is not None and len(shape) == 4 and self.m.concrete(src):
                    b, kvh, s, dd = shape
                    if (b, s, dd) == (batch, seq, d) and 0 < kvh < heads and heads % kvh == 0:
                        return src, kvh
                break
            t = node.input[0]
        return tensor, heads

    def _nan_guard(self, t: str) -> list:
        """[IsNaN, Where] when ``t`` feeds only ``Where(IsNaN(t), c, t)``, else []."""
        users = self.m.consumers.get(t, [])
        if len(users) != 2 or t in self.m.graph_outputs:
            return []
        isnan = next((u for u in users if u.op_type == "IsNaN"), None)
        where = next((u for u in users if u.op_type == "Where"), None)
        if isnan is None or where is None or self.m.only_consumer(isnan.output[0], "Where") is not where:
            return []
        if where.input[0] != isnan.output[0] or where.input[2] != t:
            return []
        return [isnan, where]

    # -- batch norm -------------------------------------------------------------
    def _bn_after(self, node):
        """The BatchNormalization that alone consumes this GEMM's output, else None."""
        if node.op_type not in ("Conv", "ConvTranspose", "Gemm"):
            return None
        bn = self.m.only_consumer(node.output[0], "BatchNormalization")
        if bn is None or bn.input[0] != node.output[0] or not all(x in self.m.static for x in bn.input[1:5]):
            return None
        return bn

    def _folds_batchnorm(self, node) -> bool:
        return self._bn_after(node) is not None

    def _out_after_bn(self, node) -> str:
        bn = self._bn_after(node)
        if bn is None:
            return node.output[0]
        self.absorbed.add(id(bn))
        self.folded_into[id(bn)] = self.m.names[id(node)]
        return bn.output[0]

    def _BatchNormalization(self, node) -> None:
        x = self._shape(node.input[0], node)
        channels = x[1] if len(x) > 1 else x[0]
        self._add(Elementwise, node, [node.input[0]], [node.output[0]], fn="batchnorm", shape=x, num_inputs=1,
                  const_params=4 * channels, weight_name=node.input[1])

    # -- vector ops -------------------------------------------------------------
    def _elementwise(self, node) -> None:
        dyn = self._dynamic(node)
        static = [x for x in node.input if x and x in self.m.static]
        const = sum(self.m.param_size(x) for x in static)
        names = [self._weight_name(x) for x in static if self.m.param_size(x)]
        out = self._shape(node.output[0], node)
        shapes = [self._shape(x, node) for x in dyn]
        if all(shapes_fit(s, out) for s in shapes):
            self._add(Elementwise, node, dyn, list(node.output), fn=node.op_type.lower(), shape=out,
                      num_inputs=len(dyn), const_params=const, weight_name=names[0] if len(names) == 1 else "")
        else:  # an input wider than the output (a broadcast the other way)
            self._add(Elementwise, node, dyn, list(node.output), fn=node.op_type.lower(), shape=out,
                      num_inputs=len(dyn), const_params=const, in_shapes=tuple(shapes))

    def _vector(self, node, fn: str, inputs=None) -> None:
        dyn = self._dynamic(node, inputs)
        out = self._shape(node.output[0], node)
        self._add(Elementwise, node, dyn, [o for o in node.output[:1]], fn=fn, shape=out, num_inputs=len(dyn),
                  in_shapes=tuple(self._shape(x, node) for x in dyn))
        for k, o in enumerate(node.output[1:], 1):  # TopK's indices and the like: same op
            if o:
                self.produced[o] = self.m.names[id(node)]

    def _qlinear_vector(self, node) -> None:
        """QLinearAdd / QLinearMul / QLinearSigmoid / QLinearConcat / QLinearGlobalAveragePool ...: the
        float op on int8 codes; the scales and zero points are constants."""
        base = node.op_type[len("QLinear"):]
        prec = {"act_precision": QUANT_TYPES.get(self.m.types.get(node.input[0], 3), "int8")}
        dyn = self._dynamic(node)
        out = self._shape(node.output[0], node)
        if base == "Concat":
            self._add(ShapeOp, node, dyn, [node.output[0]], precision=prec, fn="concat",
                      in_shapes=tuple(self._shape(x, node) for x in dyn), out_shapes=(out,))
            return
        self._add(Elementwise, node, dyn, [node.output[0]], precision=prec, fn=base.lower(), shape=out,
                  num_inputs=len(dyn), in_shapes=tuple(self._shape(x, node) for x in dyn))

    def _Softmax(self, node) -> None:
        shape = self._shape(node.input[0], node)
        self._add(Softmax, node, [node.input[0]], list(node.output), shape=shape,
                  axis=int(attrs(node).get("axis", -1)))

    _LogSoftmax = _Softmax

    def _LayerNormalization(self, node) -> None:
        shape = self._shape(node.input[0], node)
        axis = int(attrs(node).get("axis", -1)) % len(shape)
        scale = node.input[1] if len(node.input) > 1 else ""
        self._add(LayerNorm, node, [node.input[0]], [node.output[0]], shape=shape,
                  normalized_size=prod(shape[axis:]), affine=bool(scale and self.m.param_size(scale)),
                  weight_name=scale)

    def _SimplifiedLayerNormalization(self, node) -> None:
        shape = self._shape(node.input[0], node)
        axis = int(attrs(node).get("axis", -1)) % len(shape)
        scale = node.input[1] if len(node.input) > 1 else ""
        self._add(RMSNorm, node, [node.input[0]], [node.output[0]], shape=shape,
                  normalized_size=prod(shape[axis:]), affine=bool(scale and self.m.param_size(scale)),
                  weight_name=scale)

    _RMSNormalization = _SimplifiedLayerNormalization

    def _channel_norm(self, node, fn: str) -> None:
        x = self._shape(node.input[0], node)
        params = sum(self.m.param_size(t) for t in node.input[1:3] if t)
        self._add(Elementwise, node, [node.input[0]], [node.output[0]], fn=fn, shape=x, num_inputs=1,
                  const_params=params)

    def _LRN(self, node) -> None:
        self._channel_norm(node, "lrn")

    def _MeanVarianceNormalization(self, node) -> None:
        self._channel_norm(node, "mvn")

    def _InstanceNormalization(self, node) -> None:
        self._channel_norm(node, "instancenorm")

    def _GroupNormalization(self, node) -> None:
        self._channel_norm(node, "groupnorm")

    def layernorm_pattern(self, node, group) -> None:
        shape = self._shape(group["input"], node)
        axes = attrs(node).get("axes")
        if axes is None and len(node.input) > 1:
            value = self.m.value(node.input[1])
            axes = value.tolist() if value is not None else None
        axes = sorted(int(a) % len(shape) for a in (axes or [len(shape) - 1]))
        self._add(LayerNorm, node, [group["input"]], [group["output"]], shape=shape,
                  normalized_size=prod(shape[axes[0]:]), affine=group["affine"])

    def _pool(self, node) -> None:
        x = self._shape(node.input[0], node)
        if len(x) == 3:
            x = (x[0], x[1], 1, x[2])
        if len(x) != 4 or node.op_type == "LpPool":
            return self._vector(node, fn=node.op_type.lower())
        mode = "max" if "Max" in node.op_type else "avg"
        if node.op_type.startswith("Global"):
            self._add(Pool, node, [node.input[0]], [node.output[0]], mode=mode, global_pool=True, batch=x[0],
                      channels=x[1], in_h=x[2], in_w=x[3])
            return
        a = attrs(node)
        spatial = len(self._shape(node.input[0], node)) - 2
        kernel = _hw(a.get("kernel_shape"), spatial, 1)
        strides = _hw(a.get("strides"), spatial, 1)
        dilations = _hw(a.get("dilations"), spatial, 1)
        if dilations != (1, 1):
            return self._vector(node, fn=node.op_type.lower())
        pads = list(_pads(a, spatial, (x[2], x[3]), kernel, strides, (1, 1)))
        want = self._shape(node.output[0], node)
        want = (want[0], want[1], 1, want[2]) if len(want) == 3 else want
        if a.get("ceil_mode"):  # pad the far side so floor division gives ONNX's ceil
            for axis, (size, k, s) in enumerate(zip((x[2], x[3]), kernel, strides)):
                while (size + pads[axis] + pads[axis + 2] - k) // s + 1 < want[2 + axis]:
                    pads[axis + 2] += 1
        self._add(Pool, node, [node.input[0]], [node.output[0]], mode=mode, batch=x[0], channels=x[1], in_h=x[2],
                  in_w=x[3], kernel_h=kernel[0], kernel_w=kernel[1], stride_h=strides[0], stride_w=strides[1],
                  pad_top=pads[0], pad_left=pads[1], pad_bottom=pads[2], pad_right=pads[3])

    def _shape_op(self, node) -> None:
        if node.op_type == "Gather" and node.input[0] in self.m.static and node.input[1] not in self.m.static:
            table = self._shape(node.input[0], node)
            if len(table) == 2 and int(attrs(node).get("axis", 0)) == 0 and self.m.param_size(node.input[0]):
                ids = self._shape(node.input[1], node)
                self._add(Embedding, node, [node.input[1]], [node.output[0]], vocab=table[0], dim=table[1],
                          tokens=prod(ids), weight_name=self._weight_name(node.input[0]))
                return
        dyn = self._dynamic(node)
        outs = [o for o in node.output if o]
        if not dyn:  # only static inputs but not provably static (cannot happen): a vector op
            return self._vector(node, fn=node.op_type.lower())
        self._add(ShapeOp, node, dyn, outs, fn=node.op_type.lower(),
                  in_shapes=tuple(self._shape(x, node) for x in dyn),
                  out_shapes=tuple(self._shape(o, node) for o in outs))

    # -- recurrent --------------------------------------------------------------
    def _recurrent(self, node) -> None:
        """LSTM / GRU / RNN: per direction, the input projection of all steps as one GEMM, then per
        step a recurrent GEMM ``h[t-1] x R^T`` and the gate math, each step waiting for the last."""
        a = attrs(node)
        gates = RECURRENT[node.op_type]
        x = self._shape(node.input[0], node)
        w = self._shape(node.input[1], node)
        if len(x) != 3 or len(w) != 3:
            raise WorkloadError(f"input {list(x)} and W {list(w)}: expected [seq, batch, input] and "
                                f"[dirs, gates*hidden, input]")
        layout = int(a.get("layout", 0))
        seq, batch = (x[1], x[0]) if layout else (x[0], x[1])
        dirs, hidden, isz = w[0], w[1] // gates, w[2]
        name = self.m.names[id(node)]
        has_bias = len(node.input) > 3 and bool(node.input[3])
        h0 = node.input[5] if len(node.input) > 5 and node.input[5] and node.input[5] not in self.m.static else ""
        c0 = node.input[6] if len(node.input) > 6 and node.input[6] and node.input[6] not in self.m.static else ""
        states = [s for s in (h0, c0) if s]
        step_outputs, last = [], []
        for d in range(dirs):
            p = f"{name}.d{d}" if dirs > 1 else name
            xproj = self._add(MatMul, node, [node.input[0]], [], name=f"{p}.x_proj", batch=1, m=seq * batch,
                              k=isz, n=gates * hidden, weight_is_param=True, bias=has_bias,
                              weight_name=f"{node.input[1]}[{d}]")
            prev = None
            if states:
                prev = self._add(ShapeOp, node, [states[0]], [], name=f"{p}.h0", fn="slice",
                                 in_shapes=(self._shape(states[0], node),), out_shapes=((1, batch, hidden),))
            order = range(seq) if d == 0 else range(seq - 1, -1, -1)
            for t in order:
                xt = self._add(ShapeOp, node, ["@" + xproj], [], name=f"{p}.x{t}", fn="slice",
                               in_shapes=((1, seq * batch, gates * hidden),), out_shapes=((batch, gates * hidden),))
                rec = self._add(MatMul, node, ["@" + prev] if prev else [], [], name=f"{p}.h_proj{t}", batch=1,
                                m=batch, k=hidden, n=gates * hidden, weight_is_param=True, bias=has_bias,
                                weight_name=f"{node.input[2]}[{d}]")  # R and its bias Rb, shared by the steps
                cell = self._add(Elementwise, node, ["@" + xt, "@" + rec], [], name=f"{p}.cell{t}",
                                 fn=f"{node.op_type.lower()}_cell", shape=(batch, hidden), num_inputs=2,
                                 in_shapes=((batch, gates * hidden), (1, batch, gates * hidden)))
                prev = cell
                step_outputs.append(cell)
            last.append(prev)
        outs = list(node.output) + [""] * 3
        if outs[0]:
            y = self._shape(outs[0], node)
            self._add(ShapeOp, node, ["@" + s for s in step_outputs], [outs[0]], name=f"{name}.y", fn="concat",
                      in_shapes=tuple((batch, hidden) for _ in step_outputs), out_shapes=(y,))
        for k, tag in ((1, "y_h"), (2, "y_c")):
            if outs[k]:
                self._add(ShapeOp, node, ["@" + s for s in last], [outs[k]], name=f"{name}.{tag}", fn="concat",
                          in_shapes=tuple((batch, hidden) for _ in last), out_shapes=(self._shape(outs[k], node),))


def recurrent_macs(op_type: str, seq: int, batch: int, dirs: int, hidden: int, input_size: int) -> int:
    """``dirs*seq*batch*gates*H*(I+H)``: the input and recurrent GEMMs of every step."""
    return dirs * seq * batch * RECURRENT[op_type] * hidden * (input_size + hidden)


def _hw(values, spatial: int, default: int) -> tuple[int, int]:
    if not values:
        return (default, default)
    values = [int(v) for v in values]
    if len(values) != spatial:
        raise WorkloadError(f"expected {spatial} value(s) per spatial axis, got {values}")
    return (1, values[0]) if spatial == 1 else (values[0], values[1])


def same_pads(auto: str, size, kernel, strides, dilations) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of ONNX ``auto_pad`` SAME_UPPER / SAME_LOWER: output = ceil(in / stride),
    the odd pixel at the end (UPPER) or the start (LOWER)."""
    pads = []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
    return (pads[0][0], pads[1][0], pads[0][1], pads[1][1])


def _pads(a: dict, spatial: int, size, kernel, strides, dilations) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from ``pads`` or ``auto_pad``."""
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return same_pads(auto, size, kernel, strides, dilations)
    p = [int(v) for v in a.get("pads", [])]
    if not p or auto == "VALID":
        return (0, 0, 0, 0)
    if len(p) != 2 * spatial or min(p) < 0:
        raise WorkloadError(f"pads: expected {2 * spatial} non-negative values, got {p}")
    if spatial == 1:
        return (0, p[0], 0, p[1])
    return (p[0], p[1], p[2], p[3])
