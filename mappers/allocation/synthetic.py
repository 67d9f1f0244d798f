"""A deterministic NAS-style graph with many branches, to exercise the allocation pass.

Cells as in NASNet/DARTS-found networks: the cell input feeds ``branches`` parallel
conv chains (branch ``i`` has ``1 + i % 3`` 3x3 convolutions with ReLU), and
their sum is the cell's output. Many tensors are live at once, so which stay on chip
matters more than in a chain.
"""
from __future__ import annotations

from workloads.zoo._net import Net


def nas_cells(cells: int = 4, branches: int = 6, channels: int = 32, size: int = 28, batch: int = 1):
    """The graph (int8); ``cells`` cells of ``branches`` branches on ``channels``x``size``x``size`` maps."""
    net = Net(f"nas-{cells}x{branches}", weight_precision="int8", act_precision="int8", acc_precision="int32")
    x = net.conv("stem", net.input("image", (batch, 3, size, size)), channels, 3, padding=1)
    for c in range(cells):
        ends = []
        for b in range(branches):
            y = x
            for d in range(1 + b % 3):
                y = net.conv(f"c{c}b{b}conv{d}", y, channels, 3, padding=1)
                y = net.eltwise(f"c{c}b{b}relu{d}", "relu", y)
            ends.append(y)
        x = net.eltwise(f"c{c}sum", "add", *ends)
    return net.graph


# (expansion t, output channels c, repeats n, first stride s) of MobileNetV2's bottlenecks (Table 2)
_V2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
              (6, 320, 1, 1))


def mobilenet_v2(image_size: int = 224, batch: int = 1):
    """MobileNetV2 (Sandler et al. 2018, Table 2), int8, batch norm folded: inverted residual
    bottlenecks (1x1 expansion + ReLU6, 3x3 depthwise + ReLU6, linear 1x1 projection, a residual
    add where stride 1 keeps the channels), 1x1 conv to 1280, average pool, classifier."""
    net = Net("mobilenet-v2", weight_precision="int8", act_precision="int8", acc_precision="int32")
    x = net.input("image", (batch, 3, image_size, image_size))
    x = net.eltwise("conv1.relu6", "relu6", net.conv("conv1", x, 32, 3, 2, 1))
    for b, (t, c, n, s) in enumerate(_V2_BLOCKS, start=1):
        for i in range(n):
            name, c_in = f"b{b}.{i}", net.shapes[x][1]
            y = x
            if t != 1:
                y = net.eltwise(f"{name}.expand_relu6", "relu6", net.conv(f"{name}.expand", y, c_in * t, 1))
            mid = net.shapes[y][1]
            y = net.conv(f"{name}.dw", y, mid, 3, s if i == 0 else 1, 1, groups=mid)
            y = net.eltwise(f"{name}.dw_relu6", "relu6", y)
            y = net.conv(f"{name}.project", y, c, 1)
            x = net.eltwise(f"{name}.add", "add", x, y) if (i > 0 or s == 1) and c_in == c else y
    x = net.eltwise("conv_last.relu6", "relu6", net.conv("conv_last", x, 1280, 1))
    x = net.pool("avgpool", x, "avg", global_pool=True)
    bsz, ch, _, _ = net.shapes[x]
    net.linear("fc", net.shape_op("flatten", "flatten", [x], [(bsz, ch)]), 1000)
    return net.graph
