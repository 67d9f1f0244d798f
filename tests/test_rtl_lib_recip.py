"""The pipelined fp32 reciprocal (rtl.lib.recip.Recip) against numpy float32 ``1 / x``, at every depth
(amaranth's simulator): correctly rounded over the normal range, subnormal results included, the
result exactly ``stages`` cycles after its operand."""
from __future__ import annotations

import numpy as np
import pytest

from rtl.lib.recip import ROWS, Recip
from tests.test_rtl_lib import simulate


def _operands(rng, n):
    edges = np.float32([1.0, 3.0, -3.0, 1.5, 2.0 ** 126, 1.5 * 2.0 ** 127, -(2.0 ** 127) * 1.999,
                        2.0 ** -126, 0.7 * 2.0 ** -125, np.nextafter(np.float32(2.0), np.float32(1.0))])
    rand = (rng.uniform(1, 2, n) * 2.0 ** rng.integers(-126, 128, n) * rng.choice([-1, 1], n)).astype(np.float32)
    return np.concatenate([edges, rand])


def _want(x):
    with np.errstate(over="ignore"):
        return (np.float32(1) / x).astype(np.float32).view(np.uint32)


def test_max_stages_are_the_rows_and_round_pack_cut_points():
    """27 rows: a cut after each but the last (26), round_pack_fp32's cut points, the output register."""
    from amaranth import Module, Signal

    from rtl.lib.pipe import Pipe
    from rtl.lib.round import round_pack_fp32

    m = Module()
    m._MustUse__silence = True
    pipe = Pipe(m, 0, 1 << 30, "count")
    round_pack_fp32(m, Signal(), Signal(11), Signal(28), "rp", pipe)
    assert ROWS == 27
    assert Recip(0).max_stages == 26 + pipe._next + 1


@pytest.mark.parametrize("stages", [0, 1, 4, 9, 14, "max"])
def test_recip_is_numpy_at_every_depth(stages):
    rng = np.random.default_rng(150 + (0 if stages == "max" else stages))
    x = _operands(rng, 300)
    unit = Recip(0)
    unit._MustUse__silence = True
    unit = Recip(unit.max_stages if stages == "max" else stages)
    got = simulate(unit, {"a": x.view(np.uint32)})["out"]
    want = _want(x)
    bad = [(float(a), hex(g), hex(w)) for a, g, w in zip(x, got, want) if g != w]
    assert not bad, bad[:5]
    # subnormal results were among the operands (|x| > 2**126)
    assert np.any(np.abs(x) > 2.0 ** 126)


def test_a_planted_wrong_row_is_caught():
    """The check above can fail: a divider whose row 23 selects wrongly (quotient bit 3 flipped, the last
    significand bit of a quotient with its leading one at bit 26) disagrees with numpy."""
    from amaranth import Module, Signal
    from amaranth.sim import Simulator

    from rtl.lib import recip as R
    from rtl.lib.round import round_pack_fp32

    m = Module()
    a = Signal(32)
    sign, exp, q, r = R.recip_rows(m, a, "rc")
    sig, out = Signal(28), Signal(32)
    m.d.comb += [sig.eq((q ^ 8) | (r != 0)), out.eq(round_pack_fp32(m, sign, exp, sig, "rp"))]
    x = _operands(np.random.default_rng(1), 200)
    got = []

    async def tb(ctx):
        for v in x.view(np.uint32):
            ctx.set(a, int(v))
            await ctx.delay(1e-9)
            got.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    assert np.any(np.array(got, np.uint32) != _want(x))
