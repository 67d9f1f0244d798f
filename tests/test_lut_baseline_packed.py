"""The dequantize-then-MAC baseline reads its packed sub-byte weights from the weight buffer at their
own bits (as they came from DRAM), and widens them at the array."""
from __future__ import annotations

import pytest

from archsim.simulation import simulate
from workloads.zoo._net import Net

BASE = "lut-baseline-mac-2x128-a8"


def _gemv(k: int, n: int, w: str):
    net = Net(f"gemv_{k}x{n}_{w}", weight_precision=w, act_precision="int8", acc_precision="int32")
    net.linear("gemv", net.input("x", (1, k)), n, bias=False)
    return net.graph


@pytest.mark.parametrize("w,bits", [("ternary", 2), ("int4", 4), ("int8", 8)])
def test_weight_buffer_bytes_are_packed(w, bits):
    """m = 1 on a 2-row OS array: one row fold, so every weight is written once (from DRAM) and read
    once (into the array): 2 x k x n x bits / 8 weight-buffer bytes, by hand."""
    k, n = 256, 256
    layer = simulate(_gemv(k, n, w), BASE).layers[0]
    assert layer.dram_bytes_by_operand["weight"] == k * n * bits // 8
    assert layer.sram_bytes_by_operand["weight"] == 2 * k * n * bits // 8


def test_packed_reads_change_energy_not_cycles():
    """The same ternary GEMV with the weights read at int8 (the array's width) would cost 4x the
    read bytes; the cycles do not depend on the stored width."""
    t, i8 = simulate(_gemv(256, 256, "ternary"), BASE), simulate(_gemv(256, 256, "int8"), BASE)
    assert t.total_cycles <= i8.total_cycles  # fewer DRAM bytes, same folds
    assert t.layers[0].sram_bytes_by_operand["weight"] * 4 == i8.layers[0].sram_bytes_by_operand["weight"]
