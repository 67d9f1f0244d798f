"""LUT tensor core RTL (rtl/lut): co-simulation against the models on every W x A mode, cycles
by hand, buffer layouts by hand, the fp helpers against numpy, the MAC baseline against numpy,
one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.errors import SpecError
from archsim.spec.load import load_arch
from archsim.templates import get_template
from archsim.templates.lut import conformance
from archsim.templates.lut.tile import LutTile
from sim_skip import require_icarus

F32 = np.float32


def _arch(**over):
    return load_arch(conformance.base_arch, {**conformance.rtl_arch, **over})


def _run(arch, items):
    """Co-simulate ``items``; return the report and the RTL's output values per tile."""
    from rtl.cosim.harness import run_job
    from rtl.generate import design_for

    design = design_for(arch)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim="icarus")
    report = design.check(items, run.result)
    values = [design.rtl_values(t, g["out"]) for (t, _o), g in zip(items, run.result["tiles"])]
    return report, values


def _independent_check(arch, items, values):
    """RTL values vs references that share no code with the models: exact A @ W (+ psum) for int8,
    the template's independent reference (``Template.reference``) for fp."""
    ref = get_template("lut").reference_fn
    for (tile, ops), got in zip(items, values):
        if tile.activation_format == "int8" and arch.params.scale != "none":
            assert np.array_equal(np.asarray(got, F32).view(np.uint32),
                                  _scaled_int8(tile, ops, arch.params).view(np.uint32)), tile
        elif tile.activation_format == "int8":
            want = np.asarray(ops["input"], np.int64) @ np.asarray(ops["weight"], np.int64)
            if tile.accumulate:
                want = want + np.asarray(ops["psum"], np.int64)
            assert np.array_equal(got, want), tile
        else:
            ref(tile, ops, arch.params, np.asarray(got, F32))


def _scaled_int8(tile, ops, params):
    """The contract's scaled output for int8 activations, from its definition in numpy float32: per_group
    ``acc = f32(acc + f32(f32(A_g @ W_g) * s_g))`` over the K-groups from psum (or 0); per_channel
    ``f32(f32(A @ W) * s)``, then ``f32(psum + that)`` with accumulate. (Group sums are exact integers.)"""
    a, w = np.asarray(ops["input"], np.int64), np.asarray(ops["weight"], np.int64)
    sc = np.asarray(ops["scale"], F32)
    psum = np.asarray(ops["psum"], F32) if tile.accumulate else None
    if params.scale == "per_channel":
        out = ((a @ w).astype(F32) * sc[None, :]).astype(F32)
        return out if psum is None else (psum + out).astype(F32)
    K = params.group_k
    acc = np.zeros((tile.m, tile.n), F32) if psum is None else psum.copy()
    for g in range(tile.k // K):
        r = (a[:, g * K:(g + 1) * K] @ w[g * K:(g + 1) * K]).astype(F32)
        acc = (acc + (r * sc[g * K // params.scale_group][None, :]).astype(F32)).astype(F32)
    return acc


# ----------------------------------------------------------------------------- no simulator


def test_lut_preset_has_an_rtl_design_with_documented_ports():
    from rtl.generate import design_for

    design = design_for(load_arch("lut-m2n8k4-ecp5"))
    assert design.toplevel == "archsim_lut"
    names = [p.name for p in design.ports()]
    from rtl.lib.host import HOST_PORTS

    assert names[:2] == ["clk", "rst"] and set(HOST_PORTS) <= set(names)  # the shared host signature
    widths = {p.name: p.width for p in design.ports()}
    assert widths["rd_data__payload"] == 2 * 8 * 32  # tile_m x tile_n accumulators of 32 bits
    # row_blocks, groups, col_blocks 16 bits each, wfmt 3, afmt 2, accumulate, precomputed, bank
    assert widths["cmd__payload"] == 3 * 16 + 3 + 2 + 3
    external = design_for(load_arch("lut-m2n8k4-ecp5"), {"external_buffers": True})
    assert {"cmd_wfmt", "act_raddr", "out_we", "tile_done"} <= {p.name for p in external.ports()}
    assert design.config_dict()["pre_cycles"] == 2  # 2 rows x 8 entries at 8 per cycle


@pytest.mark.parametrize("over, message", [
    ({"scale": "per_channel", "pipeline_cycles": 4},
     r"^lut RTL: pipeline_cycles: the lut RTL's pipeline with per_channel scales has 5 stages, got 4$"),
    ({"scale": "per_group", "scale_group": 8, "pipeline_cycles": 3},
     r"^lut RTL: pipeline_cycles: the lut RTL's pipeline with per_group scales has 4 stages, got 3$"),
    ({"pipeline_cycles": 2}, r"^lut RTL: pipeline_cycles: the lut RTL's pipeline has 3 stages, got 2$"),
    ({"lookup_interleave": 3}, r"^lut RTL: lookup_interleave: the lut RTL interleaves a power of two of column "
                               r"blocks, got 3$"),
    ({"lookup_interleave": 4}, r"^lut RTL: pipeline_cycles: the lut RTL's pipeline with lookup_interleave 4 has 11 "
                               r"stages \(8 of them its pipelined fp32 adds'\), got 3$"),
])
def test_unsupported_params_are_one_line_errors(over, message):
    from rtl.generate import design_for

    with pytest.raises(SpecError, match=message):
        design_for(_arch(**over))


def test_bad_rtl_options_are_one_line_errors():
    from rtl.generate import design_for

    with pytest.raises(SpecError, match=r"^lut RTL: out_depth: expected an integer >= 2, got 1$"):
        design_for(_arch(), {"out_depth": 1})
    with pytest.raises(SpecError, match=r"^lut RTL: banks: not an option of the lut RTL"):
        design_for(_arch(), {"banks": 2})


def test_a_tile_too_big_for_the_buffers_is_a_one_line_error():
    from rtl.generate import design_for

    design = design_for(_arch(), {"out_depth": 2})
    tile = LutTile(5, 4, 9, "int2", "int8")  # 3 row blocks x 3 column blocks = 9 output entries
    ops = {"input": np.zeros((5, 4), np.int64), "weight": np.zeros((4, 9), np.int64)}
    with pytest.raises(SpecError, match=r"^lut RTL: tile m=5 k=4 n=9 does not fit the RTL buffers"):
        design.make_job([(tile, ops)])


def test_buffer_layouts_by_hand():
    """Weight planes MSB first, column c's K bits at [c*K, (c+1)*K), bit j = weight j; activations
    row-major 16-bit lanes; worked out by hand for int2 weights (u = w + 2)."""
    from rtl.generate import design_for
    from rtl.lut.design import BUFS

    design = design_for(_arch())  # tile_m 2, tile_n 4, K 4, int8 + fp16 + bf16 -> 16-bit lanes
    w = np.array([[-2, 1], [0, -1], [1, 0], [-1, -2]])  # u: col 0 = 0,2,3,1; col 1 = 3,1,2,0
    a = np.array([[1.0, -2.0, 0.5, 3.0]], F32)
    job = design.encode(LutTile(1, 4, 2, "int2", "fp16"), {"input": a, "weight": w})
    writes = {(b, addr): word for b, addr, word in job["writes"]}
    assert writes[(BUFS["weight"], 0)] == 0b0110 | 0b0101 << 4  # plane 1 (MSB): col 0 = 0110, col 1 = 0101
    assert writes[(BUFS["weight"], 1)] == 0b1100 | 0b0011 << 4  # plane 0
    assert writes[(BUFS["act"], 0)] == 0x3C00 | 0xC000 << 16 | 0x3800 << 32 | 0x4200 << 48  # fp16 1, -2, .5, 3
    assert job["cmd"] == {"cmd_row_blocks": 1, "cmd_groups": 1, "cmd_col_blocks": 1, "cmd_wfmt": 2,
                          "cmd_afmt": 1, "cmd_accumulate": 0, "cmd_precomputed": 0}
    assert job["out_entries"] == 1


def test_scale_layout_by_hand():
    """per_group scales: entry sg * col_blocks + nb, column c's fp32 bits at lane c (zero-padded);
    scale_group 8 = 2 K-groups, so K = 16 has 2 scale groups; tile_n 4, n = 5 -> 2 column blocks."""
    from rtl.generate import design_for
    from rtl.lut.design import BUFS

    design = design_for(_arch(scale="per_group", scale_group=8, pipeline_cycles=4))
    sc = np.array([[1.0, -2.0, 0.5, 3.0, 0.25], [4.0, 1.5, -1.0, 2.0, -0.5]], F32)
    ops = {"input": np.zeros((1, 16), np.int64), "weight": np.zeros((16, 5), np.int64), "scale": sc}
    job = design.encode(LutTile(1, 16, 5, "int2", "int8"), ops)
    writes = {addr: word for b, addr, word in job["writes"] if b == BUFS["scale"]}
    assert writes == {0: 0x3F800000 | 0xC0000000 << 32 | 0x3F000000 << 64 | 0x40400000 << 96,
                      1: 0x3E800000,
                      2: 0x40800000 | 0x3FC00000 << 32 | 0xBF800000 << 64 | 0x40000000 << 96,
                      3: 0xBF000000}


def test_fp_helpers_match_numpy():
    """fp32 x2, x0.5 (RNE, subnormals) and fp16 -> fp32 of rtl/lut/arith.py against numpy."""
    from amaranth import Module, Signal
    from amaranth.sim import Simulator

    from rtl.lut.arith import fp16_to_fp32, fp32_double, fp32_half

    m = Module()
    x, h = Signal(32), Signal(16)
    dbl, half = Signal(32), fp32_half(m, x, "half")
    m.d.comb += dbl.eq(fp32_double(x))
    wide = fp16_to_fp32(m, h, "wide")
    rng = np.random.default_rng(7)
    xs = np.concatenate([
        rng.standard_normal(60).astype(F32) * F32(2.0) ** rng.integers(-30, 30, 60).astype(F32),
        np.array([0.0, -0.0, 1.0, -3.5], F32),
        (rng.integers(1, 1 << 24, 40).astype(np.uint32) | (rng.integers(0, 2, 40).astype(np.uint32) << 31)).view(F32),
    ]).astype(F32)  # the last group: subnormals and the smallest normals (exponent field 0 or 1)
    hs = np.concatenate([rng.integers(0, 1 << 16, 60), [0x0001, 0x03FF, 0x8200, 0x0400, 0x7BFF]]).astype(np.uint16)
    hs = hs[(hs & 0x7C00) != 0x7C00]  # finite fp16 only
    got_d, got_h, got_w = [], [], []

    async def tb(ctx):
        for v in xs.view(np.uint32):
            ctx.set(x, int(v))
            got_d.append(ctx.get(dbl))
            got_h.append(ctx.get(half))
        for v in hs:
            ctx.set(h, int(v))
            got_w.append(ctx.get(wide))

    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    with np.errstate(over="ignore"):
        assert np.array_equal(np.array(got_d, np.uint32), (xs * F32(2)).view(np.uint32))
    assert np.array_equal(np.array(got_h, np.uint32), (xs * F32(0.5)).view(np.uint32))
    assert np.array_equal(np.array(got_w, np.uint32), hs.view(np.float16).astype(F32).view(np.uint32))


def _mac_sim(wf: str, af: str, seed: int, cycles: int = 3):
    """Run the MAC baseline on random operands; return (its accumulators, numpy's)."""
    from amaranth.sim import Simulator

    from rtl.lut.mac_baseline import MacBaseline

    tm, tn, K = 2, 2, 4
    dut = MacBaseline(tm, tn, K, wf, af)
    rng = np.random.default_rng(seed)
    if af == "int8":
        A = [rng.integers(-128, 128, (tm, K)) for _ in range(cycles)]
    else:
        A = [(rng.standard_normal((tm, K)) * 8).astype(np.float16) for _ in range(cycles)]
    if wf is None:  # dequantized weights on the ports: any int8 / fp16
        W = [rng.integers(-128, 128, (K, tn)) if af == "int8" else (rng.standard_normal((K, tn)) * 4).astype(np.float16)
             for _ in range(cycles)]
    else:
        lo, hi = {"int1": (-1, 1), "ternary": (-1, 1), "int2": (-2, 1), "int3": (-4, 3), "int4": (-8, 7)}[wf]
        W = [rng.choice([-1, 1], (K, tn)) if wf == "int1" else rng.integers(lo, hi + 1, (K, tn)) for _ in range(cycles)]
    got = []

    async def tb(ctx):
        for t in range(cycles + 3):
            if t < cycles:
                codes = (A[t].astype(np.int64) & 0xFF) if af == "int8" else A[t].view(np.uint16).astype(np.int64)
                if wf is None:
                    wc = (W[t].astype(np.int64) & 0xFF) if af == "int8" else W[t].view(np.uint16).astype(np.int64)
                else:
                    wc = (W[t] > 0).astype(np.int64) if wf == "int1" else W[t] & ((1 << dut.b) - 1)
                ctx.set(dut.act, sum(int(codes[r, j]) << ((r * K + j) * dut.ab) for r in range(tm) for j in range(K)))
                ctx.set(dut.weight, sum(int(wc[j, c]) << ((j * tn + c) * dut.b) for j in range(K) for c in range(tn)))
            ctx.set(dut.in_valid, int(t < cycles))
            ctx.set(dut.first, int(t == 0))
            await ctx.tick()
            if ctx.get(dut.out_valid):
                got.append(ctx.get(dut.out))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    lanes = np.array([(got[-1] >> (32 * i)) & 0xFFFFFFFF for i in range(tm * tn)], np.int64).reshape(tm, tn)
    if af == "int8":
        return np.where(lanes >> 31, lanes - (1 << 32), lanes), sum(a.astype(np.int64) @ w.astype(np.int64) for a, w in zip(A, W))
    acc = np.zeros((tm, tn), F32)
    for a, w in zip(A, W):  # exact fp32 products, pairwise tree (0+1)+(2+3), then the accumulator, all RNE
        pr = a.astype(F32)[:, :, None] * w.astype(F32)[None]
        acc = acc + ((pr[:, 0] + pr[:, 1]) + (pr[:, 2] + pr[:, 3]))
    return lanes.astype(np.uint32).view(F32), acc


@pytest.mark.parametrize("wf, af", [(None, "int8"), (None, "fp16"), ("int1", "int8"), ("int4", "int8"),
                                    ("ternary", "fp16"), ("int3", "fp16")])
def test_mac_baseline_matches_numpy(wf, af):
    got, want = _mac_sim(wf, af, seed=len(str(wf)) * 10 + len(af))
    if af == "int8":
        assert np.array_equal(got, want)
    else:
        assert np.array_equal(got.view(np.uint32), want.astype(F32).view(np.uint32))


# ----------------------------------------------------------------------------- co-simulation


@pytest.mark.rtl
def test_every_weight_x_activation_mode_matches_the_models():
    """3 random tiles of each of the 15 W x A modes on one build (int8 + fp16 + bf16), bit- and cycle-exact."""
    require_icarus()
    arch = _arch()
    items = conformance.sample_tiles(np.random.default_rng(12), arch.params, 45)
    modes = {(t.weight_format, t.activation_format) for t, _ in items}
    assert len(modes) == 15
    report, values = _run(arch, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 45
    _independent_check(arch, items, values)


@pytest.mark.rtl
def test_the_table_register_build_matches_the_models():
    """pipeline_cycles 5 builds the table register stage (bank select and int negation registered before
    the lookup, for Fmax): one cycle more of pipeline, values and cycles still exact on every mode."""
    from rtl.lut.design import LutConfig

    require_icarus()
    arch = _arch(pipeline_cycles=5)
    cfg = LutConfig.from_params(arch.params)
    assert cfg.table_register and cfg.lookup_register and cfg.rtl_pipeline == 5
    assert not LutConfig.from_params(_arch(pipeline_cycles=4).params).table_register
    items = conformance.sample_tiles(np.random.default_rng(15), arch.params, 20)
    report, values = _run(arch, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 20
    _independent_check(arch, items, values)


@pytest.mark.rtl
@pytest.mark.parametrize("interleave, pipeline, stages", [(2, 5, (1, 1, 0)), (4, 13, (3, 3, 2)),
                                                         (16, 44, (13, 13, 13))])
def test_interleaved_lookup_builds_match_the_models(interleave, pipeline, stages):
    """lookup_interleave D: the planes of D column blocks in turn, the fp32 shift-add pipelined to
    D - 1 stages (a block's next plane comes D cycles later), p - S as many, the accumulate to D - 2
    (one entry's updates are D apart: no forwarding); tiles of 1..3 column blocks, so batches with
    idle slots: values and cycles exact on every mode (the models charge the padded batches). D = 16:
    each add is the library adder's 11 stages, one more for its significand add split over two, plus its
    operands registered (13 = 11 + 1 + 1 by hand: 3 + 3 x 13 + lookup and table registers = 44)."""
    from rtl.lut.design import LutConfig

    require_icarus()
    arch = _arch(lookup_interleave=interleave, pipeline_cycles=pipeline)
    cfg = LutConfig.from_params(arch.params)
    assert (cfg.shift_add_stages, cfg.half_sub_stages, cfg.acc_stages) == stages
    assert cfg.rtl_pipeline == pipeline and cfg.lookup_register == (interleave != 2)
    items = conformance.sample_tiles(np.random.default_rng(20 + interleave), arch.params, 15)
    assert any(-(-t.n // arch.params.tile_n) % interleave for t, _ in items)  # an idle slot somewhere
    report, values = _run(arch, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 15
    _independent_check(arch, items, values)


@pytest.mark.rtl
def test_cycles_by_hand():
    """tile_m 2, tile_n 4, K 4, 4 entries/cycle: pre = ceil(2 * 8 / 4) = 4 cycles plus the preset's
    4-cycle precompute pipeline = 8, pipeline 3."""
    require_icarus()
    arch = _arch()
    assert arch.params.precompute_pipeline_cycles == 4
    rng = np.random.default_rng(3)
    cases = [  # (tile, closed form worked by hand)
        (LutTile(3, 8, 9, "int3", "int8"), 8 + 3 * 9 + 9 + 3),  # 4 steps, look 3 blocks x 3 planes = 9
        (LutTile(2, 16, 4, "int1", "bf16", precomputed=True), 0 + 3 * 1 + 1 + 3),  # fused: no table build
        (LutTile(4, 8, 3, "int1", "fp16"), 8 + 3 * 8 + 1 + 3),  # precompute-bound: slot = pre' = 8
        (LutTile(1, 4, 1, "ternary", "int8", accumulate=True), 8 + 2 + 3),
    ]
    items = []
    for tile, _ in cases:
        a = rng.integers(-128, 128, (tile.m, tile.k)) if tile.activation_format == "int8" else \
            rng.integers(-64, 64, (tile.m, tile.k)).astype(F32) / F32(8)
        w = rng.choice([-1, 1], (tile.k, tile.n)) if tile.weight_format == "int1" else \
            rng.integers(-1, 2, (tile.k, tile.n))
        ops = {"input": a, "weight": w}
        if tile.accumulate:
            ops["psum"] = rng.integers(-1000, 1000, (tile.m, tile.n))
        items.append((tile, ops))
    report, values = _run(arch, items)
    assert report.ok, "\n" + report.summary()
    assert [t.rtl_cycles for t in report.tiles] == [c for _, c in cases]
    _independent_check(arch, items, values)


SLOW_CONFIGS = [
    {},  # the rtl_arch build again, other seeds (long: the default suite runs that build's 45 tiles above)
    {"symmetric": False, "tile_m": 1, "tile_n": 3, "precompute_entries_per_cycle": 3},
    {"group_k": 2, "tile_k": 2, "tile_m": 3, "tile_n": 5, "precompute_entries_per_cycle": 1, "pipeline_cycles": 5},
    {"group_k": 1, "tile_k": 1, "symmetric": False, "tile_m": 2, "tile_n": 2},
    {"group_k": 3, "tile_k": 3, "scale_group": 3, "tile_m": 3, "tile_n": 2, "precompute_entries_per_cycle": 5},
    # builds specialized by their weight formats: int1 only (no shift-add, no S); no int1 (no r = p path)
    {"activation_formats": ["int8"], "weight_formats": ["int1"], "weight_format": "int1", "tile_n": 8,
     "precompute_entries_per_cycle": 16},
    {"activation_formats": ["bf16"], "activation_format": "bf16", "weight_formats": ["int2", "int4"],
     "weight_format": "int2", "precompute_entries_per_cycle": 2},
    # scales: per_group (a scale group of 1 and of 3 K-groups), per_channel with a deeper pipeline
    {"scale": "per_group", "scale_group": 4, "pipeline_cycles": 4, "symmetric": False, "tile_m": 3, "tile_n": 2},
    {"scale": "per_group", "scale_group": 12, "pipeline_cycles": 5, "precompute_entries_per_cycle": 2},
    {"scale": "per_channel", "pipeline_cycles": 6, "group_k": 2, "tile_k": 2, "tile_n": 3},
    # the table register stage with scales (pipeline 3 + 2 + the scale stages), and without symmetry
    {"scale": "per_group", "scale_group": 8, "pipeline_cycles": 6},
    {"scale": "per_channel", "pipeline_cycles": 7},
    {"symmetric": False, "pipeline_cycles": 5, "tile_n": 3},
]


SCALE_CONFIGS = [
    {"scale": "per_group", "scale_group": 8, "pipeline_cycles": 4},
    {"scale": "per_channel", "pipeline_cycles": 5},
]


@pytest.mark.rtl
@pytest.mark.parametrize("index", range(len(SCALE_CONFIGS)))
def test_scales_match_the_models(index):
    """per_group (fp32 r x scale before the fp32 accumulator) and per_channel (sum x scale, + psum):
    6 random tiles (smallest, multi-block accumulating, fused precompute, extreme operands, ...)."""
    require_icarus()
    arch = _arch(**SCALE_CONFIGS[index])
    items = conformance.sample_tiles(np.random.default_rng(40 + index), arch.params, 6)
    report, values = _run(arch, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 6
    _independent_check(arch, items, values)


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("index", [pytest.param(0, marks=pytest.mark.long)] + list(range(1, len(SLOW_CONFIGS))))
def test_many_tiles_on_several_builds(index):
    """30-60 tiles per build (table symmetry, K = 1..4, precompute- and lookup-bound, deeper pipeline,
    builds specialized by format)."""
    require_icarus()
    over = SLOW_CONFIGS[index]
    arch = _arch(**over)
    count = 60 if not over else 30
    items = conformance.sample_tiles(np.random.default_rng(100 + index), arch.params, count)
    report, values = _run(arch, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == count
    _independent_check(arch, items, values)


@pytest.mark.synth
def test_cli_synth_json(tmp_path):
    """``archsim rtl synth --arch lut-... --json F`` through the shared CLI (a small int8 build, generic cells)."""
    import json

    from archsim.cli import main

    out = tmp_path / "synth.json"
    code = main(["rtl", "synth", "--arch", "lut-m2n8k4-ecp5", "--set", "tile_n=2", "--set",
                 "activation_formats=[int8]", "--set", "weight_formats=[ternary]", "--depth", "2",
                 "--target", "generic", "--json", str(out)])
    assert code == 0
    fig = json.loads(out.read_text())
    assert fig["top"] == "archsim_lut" and fig["luts"] > 0 and fig["ffs"] > 0
    assert fig["params"]["tile_n"] == 2 and fig["params"]["out_depth"] == 2


@pytest.mark.synth
def test_premapped_shifters_synthesize_to_the_same_function(tmp_path):
    """rtl/synth.py ``premap_shifts`` (the density bench's flow): a barrel shifter still synthesizes
    (generic and ECP5), to a LUT netlist of the same size order as the default flow's, cached apart."""
    from rtl.synth import synthesize_verilog

    src = ("module sh(input clk, input [15:0] a, input [3:0] n, input l, output reg [15:0] y);\n"
           "always @(posedge clk) y <= l ? (a << n) : (a >> n);\nendmodule\n")
    kw = {"use_cache": False}
    plain = synthesize_verilog(src, "sh", target="generic", **kw)
    pre = synthesize_verilog(src, "sh", target="generic", premap_shifts=True, **kw)
    ecp5 = synthesize_verilog(src, "sh", target="ecp5", premap_shifts=True, **kw)
    assert plain["ffs"] == pre["ffs"] == 16 and ecp5["ffs"] == 16
    assert 16 <= pre["luts"] <= 2 * plain["luts"] and ecp5["luts"] >= 16


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("over", [{"pipeline_cycles": 5},
                                  {"lookup_interleave": 16, "pipeline_cycles": 44, "precompute_pipeline_cycles": 37}],
                         ids=["pipeline5", "interleave16"])
def test_a_thousand_random_tiles_match_the_models(over):
    """1000 random tiles (every W x A mode) on the co-simulation build with the table register, the
    registered lookup and a pipelined precompute (the preset's; with ``lookup_interleave`` 16 the A16
    timing build's depths: every fp32 add 12 stages (its significand add split) + registered operands in
    the lanes, 12 in the precompute), operand and psum writes and
    result reads overlapping compute: bit- and cycle-exact (the cycles from the hardware counter, checked
    against the ports). Verilator when installed (faster), else Icarus."""
    from rtl.cosim import simulator_missing_reason
    from rtl.cosim.harness import run_job
    from rtl.generate import design_for

    sim = "verilator" if simulator_missing_reason("verilator") is None else "icarus"
    if simulator_missing_reason(sim):
        pytest.skip(simulator_missing_reason(sim))
    arch = _arch(**over)
    assert arch.params.precompute_pipeline_cycles > 0
    design = design_for(arch)
    items = conformance.sample_tiles(np.random.default_rng(2026), arch.params, 1000)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim=sim)
    report = design.check(items, run.result, sim=sim)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 1000
    values = [design.rtl_values(t, g["out"]) for (t, _o), g in zip(items, run.result["tiles"])]
    _independent_check(arch, items, values)
