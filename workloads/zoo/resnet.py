"""ResNet-18 and ResNet-50 (He et al. 2016), laid out as torchvision's v1.5.

Batch norm is folded into the preceding convolution for inference, so every
conv carries a bias of ``out_channels`` (torchvision's parameter count has two
BN parameters, gamma and beta, per channel instead: 25,557,032 for ResNet-50
against 25,530,472 here, 0.1 % apart). The bottleneck's stride is on its 3x3
conv (v1.5).
"""
from __future__ import annotations

from workloads.graph import Graph
from workloads.zoo._net import Net, check_positive

_STAGES = [(64, 1), (128, 2), (256, 2), (512, 2)]  # (width, first stride)


def _basic(net: Net, p: str, x: str, width: int, stride: int) -> str:
    h = net.conv(f"{p}.conv1", x, width, 3, stride, 1)
    h = net.eltwise(f"{p}.relu1", "relu", h)
    h = net.conv(f"{p}.conv2", h, width, 3, 1, 1)
    short = x
    if stride != 1 or net.shapes[x][1] != width:
        short = net.conv(f"{p}.downsample", x, width, 1, stride, 0)
    return net.eltwise(f"{p}.relu2", "relu", net.eltwise(f"{p}.add", "add", h, short))


def _bottleneck(net: Net, p: str, x: str, width: int, stride: int) -> str:
    h = net.eltwise(f"{p}.relu1", "relu", net.conv(f"{p}.conv1", x, width, 1, 1, 0))
    h = net.eltwise(f"{p}.relu2", "relu", net.conv(f"{p}.conv2", h, width, 3, stride, 1))
    h = net.conv(f"{p}.conv3", h, 4 * width, 1, 1, 0)
    short = x
    if stride != 1 or net.shapes[x][1] != 4 * width:
        short = net.conv(f"{p}.downsample", x, 4 * width, 1, stride, 0)
    return net.eltwise(f"{p}.relu3", "relu", net.eltwise(f"{p}.add", "add", h, short))


def _resnet(name, blocks, block, *, batch, image_size, num_classes, weight_precision, act_precision,
            acc_precision) -> Graph:
    check_positive(name, batch=batch, image_size=image_size, num_classes=num_classes)
    net = Net(name, weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    x = net.input("image", (batch, 3, image_size, image_size))
    x = net.eltwise("relu", "relu", net.conv("conv1", x, 64, 7, 2, 3))
    x = net.pool("maxpool", x, "max", 3, 2, 1)
    for stage, ((width, stride), count) in enumerate(zip(_STAGES, blocks), start=1):
        for i in range(count):
            x = block(net, f"layer{stage}.{i}", x, width, stride if i == 0 else 1)
    x = net.pool("avgpool", x, "avg", global_pool=True)
    b, c, _, _ = net.shapes[x]
    x = net.shape_op("flatten", "flatten", [x], [(b, c)])
    net.linear("fc", x, num_classes)
    return net.graph


def resnet18(*, batch: int = 1, image_size: int = 224, num_classes: int = 1000, weight_precision: str = "int8",
             act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """ResNet-18: basic blocks [2, 2, 2, 2]."""
    return _resnet("resnet18", [2, 2, 2, 2], _basic, batch=batch, image_size=image_size, num_classes=num_classes,
                   weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)


def resnet50(*, batch: int = 1, image_size: int = 224, num_classes: int = 1000, weight_precision: str = "int8",
             act_precision: str = "int8", acc_precision: str = "int32") -> Graph:
    """ResNet-50: bottleneck blocks [3, 4, 6, 3]."""
    return _resnet("resnet50", [3, 4, 6, 3], _bottleneck, batch=batch, image_size=image_size,
                   num_classes=num_classes, weight_precision=weight_precision, act_precision=act_precision,
                   acc_precision=acc_precision)
