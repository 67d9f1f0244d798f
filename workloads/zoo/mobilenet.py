"""MobileNetV1 (Howard et al. 2017, Table 1) with a width multiplier.

Each depthwise-separable block is a 3x3 depthwise conv then a 1x1 pointwise
conv, each followed by ReLU. Batch norm is folded into the convs (a bias per
output channel). Channels are ``int(c * width)`` as in the Keras reference.
"""
from __future__ import annotations

from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive

# (pointwise output channels, depthwise stride) of the 13 separable blocks
_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]


def mobilenet_v1(*, batch: int = 1, image_size: int = 224, width: float = 1.0, num_classes: int = 1000,
                 weight_precision: str = "int8", act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """MobileNetV1; ``width`` is the width multiplier alpha (1.0, 0.75, 0.5, 0.25)."""
    check_positive("mobilenet_v1", batch=batch, image_size=image_size, num_classes=num_classes)
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not 0 < width <= 4:
        from archsim.errors import WorkloadError
        raise WorkloadError(f"mobilenet_v1: width: expected a multiplier in (0, 4], got {width!r}")
    net = Net("mobilenet_v1", weight_precision=weight_precision, act_precision=act_precision,
              acc_precision=acc_precision)
    x = net.input("image", (batch, 3, image_size, image_size))
    x = net.eltwise("conv1.relu", "relu", net.conv("conv1", x, int(32 * width), 3, 2, 1))
    for i, (channels, stride) in enumerate(_BLOCKS, start=1):
        c_in = net.shapes[x][1]
        x = net.conv(f"block{i}.dw", x, c_in, 3, stride, 1, groups=c_in)
        x = net.eltwise(f"block{i}.dw_relu", "relu", x)
        x = net.conv(f"block{i}.pw", x, int(channels * width), 1, 1, 0)
        x = net.eltwise(f"block{i}.pw_relu", "relu", x)
    x = net.pool("avgpool", x, "avg", global_pool=True)
    b, c, _, _ = net.shapes[x]
    x = net.shape_op("flatten", "flatten", [x], [(b, c)])
    net.linear("fc", x, num_classes)
    return net.graph
