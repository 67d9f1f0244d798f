"""EfficientNet-B0 (Tan & Le, ICML 2019, Table 1), built like :mod:`workloads.zoo.mobilenet`.

A 3x3 stem conv, seven stages of MBConv blocks, a 1x1 head conv to 1280
channels, global average pooling and a 1000-way classifier. An MBConv block is
a 1x1 expansion conv (omitted at expansion 1), a k x k depthwise conv, a
squeeze-and-excitation gate (global average pool, FC to ``in/4`` channels,
swish, FC back, sigmoid, channel-wise multiply), a 1x1 projection conv and,
when the block keeps its shape, a residual add. Batch norm is folded into the
convs (a bias per output channel); activations are swish (``silu``).
"""
from __future__ import annotations

from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive

#: (expansion ratio, kernel, first stride, output channels, repeats) of the seven stages (paper Table 1)
B0_STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
             (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]
SE_RATIO = 0.25  # squeeze channels = block input channels * 0.25


def _mbconv(net: Net, name: str, x: str, expand: int, kernel: int, stride: int, out_channels: int) -> str:
    b, c_in, _, _ = net.shapes[x]
    y = x
    c_mid = c_in * expand
    if expand != 1:
        y = net.eltwise(f"{name}.expand_swish", "silu", net.conv(f"{name}.expand", y, c_mid, 1))
    y = net.conv(f"{name}.dw", y, c_mid, kernel, stride, kernel // 2, groups=c_mid)
    y = net.eltwise(f"{name}.dw_swish", "silu", y)
    # squeeze and excitation: a per-channel gate computed from the pooled features
    s = net.pool(f"{name}.se_pool", y, "avg", global_pool=True)
    s = net.shape_op(f"{name}.se_flatten", "flatten", [s], [(b, c_mid)])
    s = net.eltwise(f"{name}.se_swish", "silu", net.linear(f"{name}.se_reduce", s, max(1, int(c_in * SE_RATIO))))
    s = net.eltwise(f"{name}.se_sigmoid", "sigmoid", net.linear(f"{name}.se_expand", s, c_mid))
    s = net.shape_op(f"{name}.se_reshape", "reshape", [s], [(b, c_mid, 1, 1)])
    y = net.eltwise(f"{name}.se_scale", "mul", y, s)
    y = net.conv(f"{name}.project", y, out_channels, 1)
    if stride == 1 and c_in == out_channels:
        y = net.eltwise(f"{name}.add", "add", y, x)
    return y


def efficientnet_b0(*, batch: int = 1, image_size: int = 224, num_classes: int = 1000,
                    weight_precision: str = "int8", act_precision: str = "int8",
                    acc_precision: str = "int32") -> Graph:
    """EfficientNet-B0 (width and depth multipliers 1.0)."""
    check_positive("efficientnet_b0", batch=batch, image_size=image_size, num_classes=num_classes)
    net = Net("efficientnet_b0", weight_precision=weight_precision, act_precision=act_precision,
              acc_precision=acc_precision)
    x = net.input("image", (batch, 3, image_size, image_size))
    x = net.eltwise("stem.swish", "silu", net.conv("stem", x, 32, 3, 2, 1))
    for stage, (expand, kernel, stride, channels, repeats) in enumerate(B0_STAGES, start=1):
        for r in range(repeats):
            x = _mbconv(net, f"stage{stage}.block{r + 1}", x, expand, kernel, stride if r == 0 else 1, channels)
    x = net.eltwise("head.swish", "silu", net.conv("head", x, 1280, 1))
    x = net.pool("avgpool", x, "avg", global_pool=True)
    b, c, _, _ = net.shapes[x]
    x = net.shape_op("flatten", "flatten", [x], [(b, c)])
    net.linear("fc", x, num_classes)
    return net.graph
