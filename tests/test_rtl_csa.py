"""rtl.lib.csa (radix-4 Booth rows, 3:2 compressor tree) against Python integer products, and the
``gates`` synthesis target's NAND2-equivalent weighting against a count by hand."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from rtl.synth import gate_equivalents


def _wrap(v: int, bits: int) -> int:
    return v % (1 << bits)


@pytest.mark.parametrize("lane,acc", [(8, 32), (8, 16), (16, 64)])
def test_booth_rows_and_compress_give_the_product_plus_addends(lane, acc):
    from amaranth import Module, Signal, signed
    from amaranth.sim import Simulator

    from rtl.lib.csa import booth_rows, compress

    m = Module()
    a, b = Signal(signed(lane)), Signal(signed(lane))
    s_in, c_in = Signal(acc), Signal(acc)
    rows = booth_rows(m, a, b, acc, "pp")
    assert len(rows) == lane // 2 + 1
    s, c = compress(m, rows + [s_in, c_in], acc, "t")
    rng = np.random.default_rng(lane + acc)
    lo, hi = -(1 << (lane - 1)), 1 << (lane - 1)
    corners = [lo, lo + 1, -1, 0, 1, hi - 1]
    cases = [(x, y, int(rng.integers(0, 1 << 62)) % (1 << acc), int(rng.integers(0, 1 << 62)) % (1 << acc))
             for x, y in itertools.chain(itertools.product(corners, corners),
                                         zip(rng.integers(lo, hi, 300).tolist(), rng.integers(lo, hi, 300).tolist()))]
    got = []

    async def tb(ctx):
        for x, y, u, v in cases:
            ctx.set(a, x)
            ctx.set(b, y)
            ctx.set(s_in, u)
            ctx.set(c_in, v)
            got.append((ctx.get(s) + ctx.get(c)) % (1 << acc))

    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    want = [_wrap(x * y + u + v, acc) for x, y, u, v in cases]
    assert got == want


def test_gate_equivalents_weigh_cells_like_the_nangate_table():
    # 10 NAND2 (1.0), 4 XOR2 (1.596 / 0.798 = 2.0), 3 INV (0.532 / 0.798), 2 plain DFF (4.522 / 0.798),
    # 1 DFF with sync reset and enable (5.32 / 0.798 + MUX2 1.862 / 0.798)
    by_type = {"_NAND_": 10, "_XOR_": 4, "_NOT_": 3, "_DFF_P_": 2, "_SDFFE_PP0P_": 1, "scopeinfo": 5}
    want = 10 + 4 * 2.0 + 3 * 0.667 + 2 * 5.667 + (6.667 + 2.333)
    assert gate_equivalents(by_type) == pytest.approx(want)
    from archsim.errors import ToolError

    with pytest.raises(ToolError, match=r"^gates: no NAND2 equivalent for cell type '_AOI3_'$"):
        gate_equivalents({"_AOI3_": 1})
