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
