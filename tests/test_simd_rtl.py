"""SIMD PE array RTL (rtl/simd: Amaranth -> Verilog -> Icarus under cocotb) against archsim's simd
models and against an independent numpy reference of the contract written here from
``archsim/templates/simd/tile.py``'s docstring (never from the template's value code):
bit for bit (fp32 as bit patterns, every NaN the canonical 0x7fc00000) and cycle for cycle,
in every precision mode of a full-format build; the arithmetic units alone against numpy
float32 / ml-dtypes-tested codecs; one-line errors for what the RTL cannot build or run."""
from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest

from archsim.errors import SpecError
from archsim.numerics import get_format
from archsim.errors import ArchsimError
from archsim.spec import load_arch
from archsim.templates.simd.conformance import MODE_PAIRS
from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import SimdTile

QNAN = 0x7FC00000


# ----------------------------------------------------------------------------- the independent reference


def reference(tile, ops, params) -> np.ndarray:
    """The contract, in plain numpy: int64 dot products, or fp32 products rounded once, a pairwise
    tree per lane step (odd node passes through, +0.0 beyond the group), fp32 group and output sums."""
    wf, af, G = tile.weight_format, tile.activation_format, tile.group_size
    A = get_format(af).decode(np.asarray(ops["input"]))
    W = get_format(wf).decode(np.asarray(ops["weight"]))
    M, K, N = tile.m, tile.k, tile.n
    both_int = get_format(wf).kind == "int" and get_format(af).kind == "int"
    if params.dequant:
        scale = np.asarray(ops["scale"], np.float32)[np.arange(K) // G] if G else None
        prod = W.astype(np.float32) * scale if G else W.astype(np.float32)
        df = get_format(params.dequant_format)
        W = df.decode(df.encode(prod.astype(np.float64)))
        lanes = params.lane_bits // max(16, get_format(af).bits)
        groups, both_int = [(0, K)], False
    else:
        wb, ab = get_format(wf).bits, get_format(af).bits
        lanes = params.lane_bits // (ab if params.multiplier == "bit_serial" else max(wb, ab))
        groups = [(0, K)] if G == 0 else [(s, min(G, K - s)) for s in range(0, K, G)]
    if both_int and G == 0:
        out = np.asarray(ops["psum"], np.int64).copy() if tile.accumulate else np.zeros((M, N), np.int64)
        return out + A.astype(np.int64) @ W.astype(np.int64)
    out = np.asarray(ops["psum"], np.float32).copy() if tile.accumulate else np.zeros((M, N), np.float32)
    slots = params.accumulators  # > 1: partial sums by cycle modulo slots, tree over the last `slots` cycles
    step_cycles = get_format(wf).bits if params.multiplier == "bit_serial" else 1

    def interleaved(arrivals, n_cycles):
        part = [np.zeros((M, N), np.float32) for _ in range(slots)]
        for c, x in arrivals:
            part[c % slots] = part[c % slots] + x
        level = [part[c % slots] if c >= 0 else np.zeros((M, N), np.float32)
                 for c in range(n_cycles - slots, n_cycles)]
        while len(level) > 1:
            level = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)] + \
                    ([level[-1]] if len(level) % 2 else [])
        return level[0]

    ends, t = [], 0
    with np.errstate(all="ignore"):
        for gi, (g0, glen) in enumerate(groups):
            if both_int:
                gsum = A[:, g0:g0 + glen].astype(np.int64) @ W[g0:g0 + glen].astype(np.int64)
                res = gsum.astype(np.float32) * np.asarray(ops["scale"], np.float32)[gi][None, :]
            else:
                acc, sums = np.zeros((M, N), np.float32), []
                for s0 in range(0, glen, lanes):
                    level = [(A[:, g0 + s0 + j][:, None] * W[g0 + s0 + j][None, :]).astype(np.float32)
                             if s0 + j < glen else np.zeros((M, N), np.float32) for j in range(lanes)]
                    while len(level) > 1:
                        level = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)] + \
                                ([level[-1]] if len(level) % 2 else [])
                    acc = acc + level[0]
                    sums.append(level[0])
                if slots > 1:
                    acc = interleaved([((i + 1) * step_cycles - 1, x) for i, x in enumerate(sums)],
                                      len(sums) * step_cycles)
                res = acc * np.asarray(ops["scale"], np.float32)[gi][None, :] if (G and not params.dequant) else acc
            t += -(-glen // lanes) * step_cycles
            ends.append((t - 1, res))
            if slots == 1:
                out = out + res
        if slots > 1:
            out = out + interleaved(ends, t)
    return out


def bits(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values)
    if v.dtype == np.float32:
        return np.where(np.isnan(v), QNAN, v.view(np.uint32).astype(np.int64))
    return v.astype(np.int64)


def contract_cycles(tile, params) -> int:
    """ceil(M*N/P) * steps + pipeline_cycles, steps summed by hand over the K-groups."""
    wb, ab = get_format(tile.weight_format).bits, get_format(tile.activation_format).bits
    serial = params.multiplier == "bit_serial"
    lanes = params.lane_bits // (max(16, ab) if params.dequant else ab if serial else max(wb, ab))
    G = 0 if params.dequant else tile.group_size
    lens = [tile.k] if G == 0 else [min(G, tile.k - s) for s in range(0, tile.k, G)]
    steps = sum(-(-n // lanes) for n in lens) * (wb if serial else 1)
    return -(-(tile.m * tile.n) // params.pes) * steps + params.pipeline_cycles


def test_the_reference_is_not_the_models():
    """Hand-worked values: fp4 lanes (4 per step) 1.5*2 + 0.5*(-1) + 6*6 + 0 -> tree ((3 + -0.5) + (36 + 0))
    = 38.5; int8 x int8 with G = 2 and scales 0.5, -2: (1*2 + 3*4)*0.5 + (5*6)*(-2) = -53."""
    p = SimdParams(pes=1)
    fp4 = get_format("fp4_e2m1")
    t = SimdTile(1, 4, 1, "fp4_e2m1", "fp4_e2m1")
    ops = {"input": fp4.encode(np.array([[1.5, 0.5, 6.0, 0.0]])),
           "weight": fp4.encode(np.array([[2.0], [-1.0], [6.0], [3.0]]))}
    assert reference(t, ops, p)[0, 0] == np.float32(38.5)
    t = SimdTile(1, 3, 1, "int8", "int8", group_size=2)
    i8 = get_format("int8")
    ops = {"input": i8.encode(np.array([[1, 3, 5]])), "weight": i8.encode(np.array([[2], [4], [6]])),
           "scale": np.array([[0.5], [-2.0]], np.float32)}
    assert reference(t, ops, p)[0, 0] == np.float32(-53.0)
    assert contract_cycles(SimdTile(3, 10, 1, "int4", "int4", group_size=3), SimdParams(pes=2)) == 2 * 4 + 4


# ----------------------------------------------------------------------------- arithmetic units (Amaranth simulator)


def _comb_eval(build, vectors):
    """Evaluate a combinational circuit ``build(m) -> (inputs, output)`` on input tuples."""
    from amaranth import Module
    from amaranth.sim import Simulator

    m = Module()
    ins, out = build(m)
    got = []

    async def bench(ctx):
        for vec in vectors:
            for sig, v in zip(ins, vec):
                ctx.set(sig, int(v))
            got.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return np.array(got, np.uint64).astype(np.uint32)


@pytest.mark.parametrize("wf, af", [("posit16_1", "posit16_1"), ("bf16", "int8"), ("fp8_e5m2", "posit8_0"),
                                    ("fp4_e2m1", "fp8_e4m3"), ("int16", "fp16")])
def test_lane_product_is_the_exactly_rounded_fp32_product(wf, af):
    from amaranth import Signal

    from rtl.lib.formats import FormatHw, decode
    from rtl.lib.fp import product

    W, A = FormatHw.of(wf), FormatHw.of(af)

    def build(m):
        w, a = Signal(W.bits), Signal(A.bits)
        out = product(m, decode(m, W, w, "w"), decode(m, A, a, "a"), W.sig_bits, A.sig_bits, "p")[0]
        return (w, a), out

    rng = np.random.default_rng(7)
    cw, ca = rng.integers(0, 1 << W.bits, 150), rng.integers(0, 1 << A.bits, 150)
    with np.errstate(all="ignore"):
        want = bits((get_format(wf).decode(cw) * get_format(af).decode(ca)).astype(np.float32))
    assert np.array_equal(_comb_eval(build, zip(cw, ca)), want)


def test_fp32_add_mul_and_conversions_follow_numpy():
    from amaranth import Signal

    from rtl.lib.formats import FormatHw
    from rtl.lib.fp import fp32_add, fp32_mul, fp32_to_small, int_to_fp32

    rng = np.random.default_rng(3)
    x = rng.integers(0, 1 << 32, 120, dtype=np.uint64).astype(np.uint32)
    y = (x & 0xFF800000) ^ rng.integers(0, 1 << 23, 120).astype(np.uint32)  # close exponents: cancellation
    y[::2] ^= 0x80000000
    x[:8] = [0x7F800000, 0xFF800000, 0x7FC00001, 0, 0x80000000, 1, 0x7F7FFFFF, 0x00800000]
    y[:8] = [0xFF800000, 0, 3, 0x80000000, 0x80000000, 0x80000001, 0x7F7FFFFF, 0x80000001]
    fx, fy = x.view(np.float32), y.view(np.float32)
    for op, ref in ((fp32_add, np.add), (fp32_mul, np.multiply)):
        def build(m, op=op):
            a, b = Signal(32), Signal(32)
            return (a, b), op(m, a, b, "r")
        with np.errstate(all="ignore"):
            want = bits(ref(fx, fy))
        assert np.array_equal(_comb_eval(build, zip(x, y)), want), op.__name__

    ints = rng.integers(-(1 << 62), 1 << 62, 60) >> rng.integers(0, 62, 60)
    ints[:2] = [-(1 << 63), (1 << 63) - 1]

    def build_i2f(m):
        v = Signal(64)
        return (v,), int_to_fp32(m, v, 64, "c")
    assert np.array_equal(_comb_eval(build_i2f, [(int(v) & (2**64 - 1),) for v in ints]), bits(ints.astype(np.float32)))

    for name in ("fp16", "bf16"):
        f = FormatHw.of(name)

        def build_small(m, f=f):
            v = Signal(32)
            return (v,), fp32_to_small(m, v, f, "s")
        e = rng.integers(100, 160, 80).astype(np.uint32)
        v = (rng.integers(0, 1 << 32, 80, dtype=np.uint64).astype(np.uint32) & 0x807FFFFF) | (e << 23)
        got = get_format(name).decode(_comb_eval(build_small, [(c,) for c in v]))
        want = get_format(name).decode(get_format(name).encode(v.view(np.float32).astype(np.float64)))
        assert np.array_equal(got, want, equal_nan=True), name


# ----------------------------------------------------------------------------- co-simulation


@pytest.fixture(scope="module")
def icarus():
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)


def _check(report, items, params):
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items)


def _cosim_against_reference(arch, items, options=None, sim="icarus"):
    """run_cosim (RTL vs the fast and detailed models) and the RTL's values vs :func:`reference`."""
    from rtl import design_for
    from rtl.cosim import run_job

    design = design_for(arch, options)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), extra_sources=design.sim_sources(),
                  sim=sim)
    report = design.check(items, run.result, sim=sim)
    _check(report, items, arch.params)
    for (tile, ops), got, check in zip(items, run.result["tiles"], report.tiles):
        rtl = design.rtl_values(tile, got["words"])
        raw = rtl.view(np.uint32).astype(np.int64) if rtl.dtype == np.float32 else rtl
        assert np.array_equal(raw, bits(reference(tile, ops, arch.params))), design.label(tile)
        assert check.rtl_cycles == got["cycles"] == contract_cycles(tile, arch.params), design.label(tile)
    return report


@pytest.mark.rtl
@pytest.mark.parametrize("depth", [4, 10], ids=["pipe4", "pipe10-every-cut"])
def test_every_precision_mode_of_the_edge_preset(icarus, depth):
    """simd-edge's datapath (all 11 formats: 121 weight x activation modes) with 2 PEs: two tiles of
    each representative mode, one of every other pair, NaN / inf codes in one tile of eight; at the
    one-stage datapath (4) and with every extra register stage (10: decode | products | 2 tree cuts |
    int64 -> fp32 | scale multiply)."""
    from rtl.simd.design import SimdConfig
    from rtl.simd.sources import mode_order, random_items

    arch = load_arch("simd-edge", {"pes": 2, "pipeline_cycles": depth})
    assert len(SimdConfig.from_params(arch.params).cuts) == depth - 4
    p = arch.params
    reps = [pair for pair in MODE_PAIRS if not p.pair_problem(*pair)]
    rng = np.random.default_rng(11)
    items = random_items(p, 2 * len(reps), rng, modes=reps, max_k=20)
    items += random_items(p, len(p.pairs()) - len(reps), rng, modes=mode_order(p)[len(reps):], max_k=12)
    modes = {(t.weight_format, t.activation_format) for t, _ in items}
    assert modes == set(p.pairs()) and len(modes) == 121
    assert any(np.isnan(reference(t, o, p)).any() for t, o in items if reference(t, o, p).dtype == np.float32)
    _cosim_against_reference(arch, items)


@pytest.mark.rtl
@pytest.mark.parametrize("overrides", [
    {"pes": 3, "multiplier": "bit_serial", "formats": ["int2", "int4", "int8", "fp8_e4m3", "bf16"]},
    {"pes": 2, "multiplier": "shift_add", "formats": ["int4", "int8", "fp4_e2m1", "fp8_e5m2", "posit8_0"]},
    {"pes": 4, "dequant": True, "group_size": 8, "formats": ["int4", "int8", "fp8_e4m3", "fp16"]},
    {"pes": 3, "lane_bits": 32, "pipeline_cycles": 6, "formats": ["int2", "int4", "fp4_e2m1", "posit16_1"]},
    {"pes": 3, "multiplier": "bit_serial", "pipeline_cycles": 8, "group_size": 4,
     "formats": ["int2", "int4", "int8", "fp8_e4m3"]},
    {"pes": 2, "dequant": True, "pipeline_cycles": 12, "formats": ["int4", "fp8_e4m3", "fp16"]},
], ids=["bit_serial", "shift_add", "dequant", "lane32-pipe6", "bit_serial-pipe8", "dequant-pipe12"])
def test_multiplier_styles_dequant_and_wider_lanes(icarus, overrides):
    from rtl.simd.sources import random_items

    f = overrides["formats"]
    arch = load_arch("simd-edge", {**overrides, "weight_format": f[1], "activation_format": f[1]})
    items = random_items(arch.params, 10, np.random.default_rng(5), max_k=16)
    _cosim_against_reference(arch, items)


@pytest.mark.rtl
@pytest.mark.parametrize("overrides", [
    {"pes": 2, "accumulators": 2, "pipeline_cycles": 22, "formats": ["int2", "int4", "int8", "fp8_e4m3", "bf16",
                                                                      "posit8_0"]},
    {"pes": 3, "accumulators": 3, "pipeline_cycles": 40, "multiplier": "bit_serial", "group_size": 4,
     "formats": ["int2", "int4", "int8", "fp8_e4m3"]},
    {"pes": 2, "accumulators": 2, "pipeline_cycles": 19, "dequant": True, "formats": ["int4", "fp8_e4m3", "fp16"]},
    {"pes": 2, "accumulators": 2, "lane_stages": 9, "pipeline_cycles": 30,
     "formats": ["int4", "int8", "fp8_e4m3", "fp16", "posit16_1"]},
    {"pes": 2, "accumulators": 3, "lane_stages": 9, "pipeline_cycles": 46, "multiplier": "bit_serial",
     "group_size": 4, "formats": ["int2", "int4", "fp8_e4m3"]},
    {"pes": 2, "accumulators": 2, "lane_stages": 9, "pipeline_cycles": 25, "dequant": True,
     "formats": ["int4", "fp8_e4m3", "fp16"]},
    {"pes": 2, "accumulators": 2, "lane_stages": 5, "rtl_multiplier": "lut", "pipeline_cycles": 27,
     "formats": ["int4", "fp8_e4m3", "fp16", "bf16"]},
    {"pes": 2, "accumulators": 2, "lane_stages": 9, "scale_stages": 11, "pipeline_cycles": 40,
     "formats": ["int4", "fp8_e4m3", "fp16", "posit16_1"], "rtl_options": {"multiplier": "ecp5_dsp"}},
], ids=["acc2", "acc3-bit_serial-plus3", "acc2-dequant-plus3", "acc2-lane9-decode-cut",
        "acc3-bit_serial-lane9-decode-cut", "acc2-dequant-lane9-decode-cut", "acc2-lane5-lut",
        "acc2-lane9-scale11-ecp5_dsp"])
def test_pipelined_pe_with_interleaved_accumulators(icarus, overrides):
    """accumulators > 1 (rtl/simd/pipelined.py): values in the interleaved order of both references, the
    contract's cycles; short tiles first (one step, a group of one step, fewer cycles than the ring has
    slots, the m=1 k=10 n=4 g=2 tile that once left X on a pipelined scale multiply)."""
    from rtl.simd.design import SimdConfig
    from rtl.simd.pipelined import write_latency
    from rtl.simd.sources import operands_for, random_items

    overrides = dict(overrides)
    options = overrides.pop("rtl_options", None)  # ecp5_dsp: MULT18X18D instances, Icarus runs their model
    f = overrides["formats"]
    arch = load_arch("simd-edge", {**overrides, "weight_format": f[1], "activation_format": f[1]})
    p = arch.params
    assert write_latency(SimdConfig.from_params(p)) <= p.pipeline_cycles
    rng = np.random.default_rng(23)
    fl = [x for x in f if not x.startswith("int")][0]
    shorts = [SimdTile(1, 1, 1, fl, fl), SimdTile(1, 10, 4, fl, fl, group_size=2),
              SimdTile(1, 3, 1, "int4", fl, group_size=1, accumulate=True), SimdTile(2, 2, 3, f[1], f[1]),
              SimdTile(1, 5, 2, "int4", "int4", accumulate=True), SimdTile(3, 9, 1, "int4", "int4", group_size=2)]
    items = [(t, operands_for(t, p, rng)) for t in shorts if not p.pair_problem(t.weight_format, t.activation_format)]
    items += random_items(p, 12, rng, max_k=20)
    _cosim_against_reference(arch, items, options)


def test_a_pipelined_pe_needs_its_latency():
    from rtl.simd.design import SimdConfig

    arch = load_arch("simd-edge", {"pes": 1, "accumulators": 2, "pipeline_cycles": 40})
    with pytest.raises(ValueError, match="pipeline_cycles: the RTL's datapath with accumulators=2 takes 22"):
        SimdConfig.from_params(replace(arch.params, pipeline_cycles=21))


def test_lane_stages_lengthen_the_latency_and_are_bounded():
    """Each lane stage is one more cycle of write latency (the tree starts later); more stages than the
    lane's multiply-and-round has cut points, or lane stages without the pipelined PE, are one-line errors."""
    from rtl.simd.design import SimdConfig
    from rtl.simd.lane_cuts import lane_cut_points
    from rtl.simd.pipelined import write_latency

    fp16 = {"pes": 1, "accumulators": 2, "formats": ["fp16"], "weight_format": "fp16", "activation_format": "fp16"}
    base = SimdConfig.from_params(load_arch("simd-edge", {**fp16, "pipeline_cycles": 99}).params)
    most = lane_cut_points(base)
    assert most >= 9  # the decode, the operand register, the DSP product, round-and-pack's own cut points
    deep = SimdConfig.from_params(load_arch("simd-edge", {**fp16, "lane_stages": most, "pipeline_cycles": 99}).params)
    assert write_latency(deep) == write_latency(base) + most
    with pytest.raises(ValueError, match=f"lane_stages: expected 0..{most} "):
        SimdConfig.from_params(load_arch("simd-edge", {**fp16, "lane_stages": most + 1, "pipeline_cycles": 99}).params)
    with pytest.raises(ArchsimError, match="lane_stages: expected 0 with accumulators 1"):
        load_arch("simd-edge", {**fp16, "accumulators": 1, "lane_stages": 1})
    with pytest.raises(ArchsimError, match="rtl_multiplier: expected one of dsp, lut, got 'mac'"):
        load_arch("simd-edge", {**fp16, "rtl_multiplier": "mac"})
    with pytest.raises(ArchsimError, match="rtl_multiplier: expected dsp with accumulators 1"):
        load_arch("simd-edge", {**fp16, "accumulators": 1, "rtl_multiplier": "lut"})
    # fabric multipliers: more cut points (one per adder-tree level), so more lane stages
    lut = SimdConfig.from_params(load_arch("simd-edge", {**fp16, "rtl_multiplier": "lut", "pipeline_cycles": 99}).params)
    assert lane_cut_points(lut) > most


def test_scale_stages_lengthen_the_latency_and_are_bounded():
    """``scale_stages`` replaces the scale multiply's default ``min(A, its most)`` stages: each one more is
    one more cycle of write latency, up to the fp32 multiplier's cut points (DSP 11, fabric 13 --
    rtl/lib's FpMul, docs/rtl.md); more, or scale stages without the pipelined PE, are one-line errors."""
    from rtl.simd.design import SimdConfig
    from rtl.simd.pipelined import write_latency

    fp16 = {"pes": 1, "accumulators": 2, "formats": ["fp16"], "weight_format": "fp16", "activation_format": "fp16",
            "pipeline_cycles": 99}
    base = write_latency(SimdConfig.from_params(load_arch("simd-edge", fp16).params))  # Sm = A = 2
    for mul, most in (("dsp", 11), ("lut", 13)):
        arch = load_arch("simd-edge", {**fp16, "rtl_multiplier": mul, "scale_stages": most})
        assert write_latency(SimdConfig.from_params(arch.params)) == base + most - 2
        with pytest.raises(ValueError, match=f"scale_stages: expected 0..{most} "):
            SimdConfig.from_params(load_arch("simd-edge", {**fp16, "rtl_multiplier": mul,
                                                           "scale_stages": most + 1}).params)
    with pytest.raises(ArchsimError, match="scale_stages: expected 0 with accumulators 1"):
        load_arch("simd-edge", {**fp16, "accumulators": 1, "scale_stages": 3})
    # the FPGA configuration's latency by hand (A = 11, 8 lanes): the products at 1 + 9 lane stages, the lane
    # tree 3 levels x 11, each ring 11 + 4 tree levels x 11 = 55, the scale 11, the final add 11, +3 to the
    # write: 10 + 33 + 55 + 11 + 55 + 11 + 3 = 178
    cfg = SimdConfig.from_params(load_arch("simd-edge", {"pes": 1, **FPGA_ALL_MODES}).params)
    assert cfg.max_lanes == 8 and write_latency(cfg) == 178 == FPGA_ALL_MODES["pipeline_cycles"]


def test_ecp5_target_registers_the_dsp_blocks_of_a_pipelined_pe_only():
    """``archsim rtl synth --target ecp5`` builds the pipelined PE's DSP products as MULT18X18D instances
    with their registers (and co-simulation ships the block's model); the one-cycle PE (A = 1), fabric
    multipliers and BitMoD keep their own."""
    from rtl import design_for
    from rtl.generate import target_options

    fp16 = {"pes": 1, "formats": ["fp16"], "weight_format": "fp16", "activation_format": "fp16"}
    piped = load_arch("simd-edge", {**fp16, "accumulators": 2, "pipeline_cycles": 30})
    assert target_options(piped, "ecp5") == {"multiplier": "ecp5_dsp"}
    assert target_options(piped, "generic") == {}
    assert target_options(load_arch("simd-edge", fp16), "ecp5") == {}
    assert target_options(load_arch("simd-edge", {**fp16, "accumulators": 2, "pipeline_cycles": 30,
                                                  "rtl_multiplier": "lut"}), "ecp5") == {}
    design = design_for(piped, target_options(piped, "ecp5"))
    assert "MULT18X18D_model.v" in design.sim_sources()
    assert design.verilog().count("MULT18X18D ") >= 5  # the lane's 11 x 11 product, the scale's 24 x 24 in four
    assert design_for(piped).sim_sources() == {}


@pytest.mark.rtl
def test_a_wrong_value_is_reported(icarus):
    from rtl import design_for
    from rtl.cosim import run_job
    from rtl.simd.sources import operands_for

    arch = load_arch("simd-edge", {"pes": 2, "formats": ["int8", "fp8_e4m3"]})
    tile = SimdTile(2, 5, 3, "fp8_e4m3", "int8", group_size=2)
    ops = operands_for(tile, arch.params, np.random.default_rng(1))
    design = design_for(arch)
    result = run_job(design.verilog(), design.toplevel, design.make_job([(tile, ops)])).result
    assert design.check([(tile, ops)], result).ok
    bad = dict(ops, scale=ops["scale"].copy())
    bad["scale"][1, 2] *= 2  # the models now expect other out[:, 2]
    (msg,) = design.check([(tile, bad)], result).failures()
    assert msg.startswith("tile 0 (fp8_e4m3xint8 m=2 k=5 n=3 g=2): out[0,2] = ") and "PE 0 round 1" in msg


def test_extra_pipeline_stages_are_added_in_a_fixed_order():
    """pipeline_cycles beyond 4 buys cuts: products, int64 -> fp32, scale multiply, decode, then the
    tree levels nearest the middle first; cycles beyond the cuts the PE has are plain latency."""
    from rtl.simd.design import SimdConfig

    def cuts(depth, **kw):
        return SimdConfig.from_params(load_arch("simd-edge", {"pipeline_cycles": depth, **kw}).params).cuts

    assert cuts(4) == ()
    assert cuts(5) == ("prod",)
    assert cuts(8) == ("prod", "group_src", "group_res", "decode")
    assert cuts(10) == cuts(20) == ("prod", "group_src", "group_res", "decode", "tree0", "tree1")  # 8 lanes: 3 levels
    # 32-bit lanes: 16 int2 lanes, 4 levels -> 3 inner cuts, the middle one (after level 1) first
    assert cuts(20, lane_bits=32)[4:] == ("tree1", "tree0", "tree2")
    assert cuts(20, formats=["int16", "bf16"], weight_format="int16", activation_format="int16")[4:] == ()


def test_what_the_rtl_cannot_build_is_a_one_line_error():
    from rtl import design_for

    with pytest.raises(SpecError, match=r"^simd RTL: pipeline_cycles: the RTL's datapath takes 4 cycles, got 2$"):
        design_for(load_arch("simd-edge", {"pipeline_cycles": 2}))
    design = design_for(load_arch("simd-edge", {"pes": 2}), {"op_depth": 4})
    tile = SimdTile(1, 40, 1, "int16", "int16")
    with pytest.raises(SpecError, match=r"^simd RTL co-simulation: tile int16xint16 m=1 k=40 n=1 does not fit "
                                        r"the RTL buffers \(op_depth=4, "):
        design.make_job([(tile, {"input": np.zeros((1, 40)), "weight": np.zeros((40, 1))})])
    with pytest.raises(SpecError, match=r"^rtl options: op_depth: expected an integer >= 2, got 1$"):
        design_for(load_arch("simd-edge", {"pes": 2}), {"op_depth": 1})


@pytest.mark.verilog
def test_the_edge_preset_generates_with_one_pe_module(tmp_path):
    """All 64 PEs of simd-edge are instances of one converted PE module; the manifest lists the modes."""
    import json

    from archsim.cli import main

    assert main(["rtl", "generate", "--arch", "simd-edge", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "archsim_simd.v").read_text()
    assert text.count("module archsim_simd_pe(") == 1 and text.count("archsim_simd_pe ") >= 64
    man = json.loads((tmp_path / "archsim_simd.json").read_text())
    assert man["params"]["pes"] == 64 and len(man["params"]["modes"]) == 121
    assert man["params"]["modes"][0] == ["int2", "int2", 8]
    # the host interface (rtl/lib/host.py)
    assert {p["name"] for p in man["ports"]} >= {"cmd__payload", "cmd__valid", "wr__payload", "rd_addr__payload",
                                                 "rd_data__payload", "done", "tile_cycles", "error"}


# ----------------------------------------------------------------------------- >= 1000 tiles per mode


@pytest.mark.rtl
@pytest.mark.slow
def test_a_thousand_random_tiles_over_every_representative_mode(icarus):
    """The fixed configuration (simd-edge's datapath, all 11 formats, its pipeline, 2 PEs): 1000 random
    tiles in one simulator run, cycling over the representative modes (>= 45 tiles each), NaN / inf
    codes in one tile of eight: every tile bit- and cycle-exact against the models and the reference.
    (1000 tiles of each mode on its own build: the ``long`` test below.)"""
    from rtl.simd.sources import random_items

    arch = load_arch("simd-edge", {"pes": 2})
    reps = [pair for pair in MODE_PAIRS if not arch.params.pair_problem(*pair)]
    assert len(reps) >= 15
    items = random_items(arch.params, 1000, np.random.default_rng(1000), modes=reps, max_k=10)
    assert {(t.weight_format, t.activation_format) for t, _ in items} == set(reps)
    report = _cosim_against_reference(arch, items)
    assert sum(t.ok for t in report.tiles) == 1000


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.long  # suite time: 22 builds x 1000 tiles; the default suite runs the test above
@pytest.mark.parametrize("pair", MODE_PAIRS, ids=[f"{w}x{a}" for w, a in MODE_PAIRS])
def test_a_thousand_random_tiles_per_mode(icarus, pair):
    """1000 random tiles of one precision mode (all in one simulator run) on a 2-PE build of that mode's
    formats: every tile bit- and cycle-exact against the models and the reference."""
    from rtl.simd.sources import random_items

    w, a = pair
    formats = sorted({w, a})
    arch = load_arch("simd-edge", {"pes": 2, "formats": formats, "weight_format": w, "activation_format": a})
    rng = np.random.default_rng(zlib.crc32(f"{w}x{a}".encode()))
    items = random_items(arch.params, 1000, rng, modes=[pair], max_k=10)
    report = _cosim_against_reference(arch, items)
    assert sum(t.ok for t in report.tiles) == 1000


PIPELINED_PAIRS = [("posit8_0", "posit8_0"), ("int4", "fp8_e4m3"), ("int8", "int8")]


@pytest.mark.rtl
@pytest.mark.slow
def test_a_thousand_random_tiles_pipelined_over_three_modes(icarus):
    """The pipelined PE (accumulators 4, its latency 48 as pipeline_cycles) on one build of the three
    modes' formats: 1000 random short tiles (K <= 10, the runs shorter than the rings) cycling over
    them, including the two modes whose earlier pipelined scale multiply left X on some outputs.
    (1000 tiles of each mode on its own build: the ``long`` test below.)"""
    from rtl.simd.sources import random_items

    formats = sorted({f for pair in PIPELINED_PAIRS for f in pair})
    arch = load_arch("simd-edge", {"pes": 2, "formats": formats, "weight_format": "int8", "activation_format": "int8",
                                   "accumulators": 4, "pipeline_cycles": 48})
    items = random_items(arch.params, 1000, np.random.default_rng(48), modes=PIPELINED_PAIRS, max_k=10)
    report = _cosim_against_reference(arch, items)
    assert sum(t.ok for t in report.tiles) == 1000


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.long  # suite time: the default suite runs the three modes on one build (above)
@pytest.mark.parametrize("pair", PIPELINED_PAIRS, ids=["posit8_0", "int4xfp8_e4m3", "int8"])
def test_a_thousand_random_tiles_pipelined(icarus, pair):
    """The pipelined PE (accumulators 4, its latency 48 as pipeline_cycles): 1000 random short tiles
    (K <= 10, the runs shorter than the rings) per mode, including the two modes whose earlier
    pipelined scale multiply left X on some outputs."""
    from rtl.simd.sources import random_items

    w, a = pair
    arch = load_arch("simd-edge", {"pes": 2, "formats": sorted({w, a}), "weight_format": w, "activation_format": a,
                                   "accumulators": 4, "pipeline_cycles": 48})
    rng = np.random.default_rng(zlib.crc32(f"pipelined {w}x{a}".encode()))
    items = random_items(arch.params, 1000, rng, modes=[pair], max_k=10)
    report = _cosim_against_reference(arch, items)
    assert sum(t.ok for t in report.tiles) == 1000


#: the 150 MHz ECP5 configuration of one PE with all 121 modes (docs/simd_rtl.md, "Timing"): A = 11, the lanes'
#: and the scale's DSP products in registered MULT18X18D blocks (the ECP5 target's choice), every lane and
#: scale cut point, pipeline_cycles = its write latency
FPGA_ALL_MODES = {"accumulators": 11, "lane_stages": 9, "scale_stages": 11, "pipeline_cycles": 178}


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.long  # a ~10 min Verilator build and run
def test_a_thousand_random_tiles_on_the_fpga_configuration():
    """The ECP5 configuration (all 11 formats, A = 11, registered DSP blocks with their Verilog model), 2 PEs,
    on Verilator: 1000 random tiles (K <= 24: rings with fewer and with more cycles than slots) cycling over
    the representative modes, every tile bit- and cycle-exact against the models and the reference."""
    from rtl.cosim.harness import simulator_missing_reason
    from rtl.generate import target_options
    from rtl.simd.sources import random_items

    reason = simulator_missing_reason("verilator")
    if reason:
        pytest.skip(reason)
    arch = load_arch("simd-edge", {"pes": 2, **FPGA_ALL_MODES})
    options = target_options(arch, "ecp5")
    assert options == {"multiplier": "ecp5_dsp"}
    reps = [pair for pair in MODE_PAIRS if not arch.params.pair_problem(*pair)]
    items = random_items(arch.params, 1000, np.random.default_rng(150), modes=reps, max_k=24)
    report = _cosim_against_reference(arch, items, options, sim="verilator")
    assert sum(t.ok for t in report.tiles) == 1000


@pytest.mark.verilog
def test_the_pipelined_pe_is_lint_clean(capsys):
    """accumulators 2 (the pipelined PE and the host-interface top): verilator -Wall with the shipped
    waiver file reports nothing; without the waivers it does (the check can fail)."""
    from archsim.cli import main

    sets = ["--set", "pes=2", "--set", "accumulators=2", "--set", "pipeline_cycles=22"]
    main(["rtl", "lint", "--arch", "simd-edge", *sets])
    assert "with archsim_simd.vlt: 0 warnings" in capsys.readouterr().out
    main(["rtl", "lint", "--arch", "simd-edge", *sets, "--no-waivers"])
    assert "without waivers: 0 warnings" not in capsys.readouterr().out
