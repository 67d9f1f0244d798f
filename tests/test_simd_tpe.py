"""The SIMD template's ``pe_style: tpe``: the integer lanes' dot product as one carry-save tree of every
lane's Booth rows and one carry-propagate add (Wu et al., HPCA 2025, the multiplier-adder tree).

Expected values: numpy integer dot products (int64) and the template's independent reference;
expected cycles: the contract's closed form ``ceil(M*N/P) * steps + pipeline_cycles`` written here by
hand (pe_style changes no register stage). The RTL runs through ``rtl.run_cosim`` as the level harness
does (its ``simd-tpe`` case covers the integer-only build; these add the builds whose lanes also hold
float modes, and the pipelined PE).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from archsim.spec.load import load_arch
from archsim.templates import get_template
from archsim.templates.simd import SimdParams
from archsim.templates.simd.tile import SimdTile
from rtl.cosim import simulator_missing_reason

MISSING = simulator_missing_reason("icarus")
needs_icarus = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def test_pe_style_is_checked_with_one_line_errors():
    with pytest.raises(ValueError, match=r"^pe_style: expected one of standard, tpe, got 'booth'$"):
        SimdParams(pe_style="booth").validate()
    for bad in ({"multiplier": "shift_add"}, {"multiplier": "bit_serial"}, {"dequant": True}):
        with pytest.raises(ValueError, match=r"^pe_style: tpe recodes the integer lanes' weights"):
            SimdParams(pe_style="tpe", **bad).validate()
    with pytest.raises(ValueError, match=r"^pe_style: tpe transforms the integer x integer dot product"):
        SimdParams(pe_style="tpe", formats=["fp8_e4m3", "int16"], weight_format="fp8_e4m3",
                   activation_format="fp8_e4m3", lane_bits=8).validate()  # int16 x int16 needs 16 bits
    SimdParams(pe_style="tpe").validate()


def test_the_tree_is_as_wide_as_the_widest_integer_sum():
    """ab + wb bits per signed product, + ceil(log2 L) for L lanes: by hand for 16-bit lanes."""
    from rtl.simd.config import SimdConfig
    from rtl.simd.int_dot import dot_width

    for formats, want in ((["int2"], 2 + 2 + 3), (["int8"], 8 + 8 + 1), (["int4", "int16"], 16 + 16),
                          (["int4", "fp16"], 4 + 4 + 2)):
        params = SimdParams(pes=1, lane_bits=16, formats=formats, weight_format=formats[0],
                            activation_format=formats[0], pe_style="tpe")
        assert dot_width(SimdConfig.from_params(params).modes) == want, formats


def _int_tile(m, k, n, fmt, rng):
    bits = int(fmt[3:])
    a = rng.integers(-(1 << bits - 1), 1 << bits - 1, size=(m, k))
    w = rng.integers(-(1 << bits - 1), 1 << bits - 1, size=(k, n))
    a[0, 0] = w[0, 0] = -(1 << bits - 1)  # the most negative code: the Booth recoding's edge case
    mask = (1 << bits) - 1
    ops = {"input": (a & mask).astype(np.uint32), "weight": (w & mask).astype(np.uint32)}
    return SimdTile(m, k, n, fmt, fmt), ops, a.astype(np.int64) @ w.astype(np.int64)


#: builds whose lanes hold integer and float modes (the float products stay), and the pipelined PE
BUILDS = [
    {"pes": 2, "lane_bits": 16, "pipeline_cycles": 4, "formats": ["int4", "int8", "fp8_e4m3"]},
    {"pes": 2, "lane_bits": 16, "accumulators": 2, "pipeline_cycles": 22, "formats": ["int4", "int8", "fp16"]},
]


@needs_icarus
@pytest.mark.rtl
@pytest.mark.parametrize("build", BUILDS, ids=["mixed-lanes", "pipelined"])
def test_tpe_rtl_equals_numpy_and_the_contract(build):
    from rtl import run_cosim

    arch = load_arch("simd-edge", dict(build, pe_style="tpe", weight_format="int8", activation_format="int8"))
    params, model = arch.params, arch.model()
    rng = np.random.default_rng(25)
    items, wants = [], []
    for m, k, n, fmt in ((1, 1, 1, "int8"), (2, 9, 3, "int4"), (3, 13, 2, "int8"), (1, 4, 2, "int4")):
        tile, ops, want = _int_tile(m, k, n, fmt, rng)
        items.append((tile, ops))
        wants.append(want)
    hook = get_template("simd").conformance_module
    items += [it for it in hook.sample_tiles(rng, params, 8)[2:] if it[0].weight_format.startswith("fp")][:2]
    for (tile, ops), want in zip(items, wants):
        np.testing.assert_array_equal(model.tile_values(tile, ops), want)
        lanes = 16 // int(tile.weight_format[3:])
        assert model.tile_cycles(tile) == math.ceil(tile.m * tile.n / 2) * math.ceil(tile.k / lanes) \
            + build["pipeline_cycles"]
    report = run_cosim(arch, items)
    assert report.ok, "\n" + report.summary()
    for check, (tile, _ops) in zip(report.tiles, items):
        assert check.values_ok and check.rtl_cycles == model.tile_cycles(tile) == check.detailed_cycles, check.label


@pytest.mark.parametrize("style", ["standard", "tpe"])
def test_the_dot_unit_slice_sums_the_lanes_products(style):
    """The bench's dot unit (the PE's own lanes alone) against numpy, 8 int8 lanes, some lanes masked."""
    from amaranth.sim import Simulator

    from rtl.simd.config import SimdConfig
    from rtl.simd.int_dot_slice import int_dot_slice

    cfg = SimdConfig.from_params(SimdParams(pes=1, lane_bits=64, formats=["int8"], pe_style=style))
    dut = int_dot_slice(cfg)
    rng = np.random.default_rng(3)
    vectors = [(rng.integers(-128, 128, 8), rng.integers(-128, 128, 8), int(rng.integers(0, 256)))
               for _ in range(12)]
    vectors[0] = (np.full(8, -128), np.full(8, -128), 255)  # the largest sum: 8 * 2**14

    def word(v):
        return sum((int(x) & 0xFF) << (8 * i) for i, x in enumerate(v))

    async def bench(ctx):
        ctx.set(dut.take, 1)
        await ctx.tick()
        ctx.set(dut.take, 0)
        got = []
        for a, w, mask in vectors + [vectors[-1]] * 2:
            ctx.set(dut.a, word(a))
            ctx.set(dut.w, word(w))
            ctx.set(dut.mask, mask)
            await ctx.tick()
            got.append(ctx.get(dut.out))
        want = [int(sum(int(x) * int(y) for i, (x, y) in enumerate(zip(a, w)) if mask >> i & 1))
                for a, w, mask in vectors]
        assert got[1:len(want) + 1] == want  # the operand register, then the cycle-sum register

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
