"""BitMoD's bit-serial PE array (``pe: bitmod`` through the simd RTL generator, rtl/simd/bitmod_array.py):
co-simulated under cocotb through the simd host interface and driver, bit- and cycle-exact against the
fast and detailed models, whose values are first checked against the independent reference written from
the paper's value sets (:func:`archsim.templates.simd.bitserial.reference_values`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from archsim.errors import SpecError
from archsim.spec.load import load_arch
from archsim.templates.simd import bitserial, conformance
from archsim.templates.simd.tile import SimdTile
from sim_skip import require_icarus


def _arch(**over):
    """The simd level harness's bit-serial configuration (3 PEs, 16-bit lane words, FP3/FP4/int weights)."""
    return load_arch(conformance.base_arch, {**conformance.BITMOD_ARCH, **over})


def _design(arch, bug=None):
    from rtl.simd.bitmod_design import BitmodDesign
    from rtl.generate import design_for

    design = design_for(arch)
    assert isinstance(design, BitmodDesign)
    if bug:
        design.cfg = replace(design.cfg, bug=bug)
    return design


def _cosim(design, items):
    from rtl.cosim import simulator_missing_reason
    from rtl.cosim.harness import run_job

    missing = simulator_missing_reason("icarus")
    if missing:
        pytest.skip(missing)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim="icarus")
    return design.check(items, run.result, sim="icarus")


def _items(arch, count: int, seed: int):
    items = bitserial.sample_tiles(np.random.default_rng(seed), arch.params, count)
    model = arch.model()
    for tile, ops in items:  # the models the RTL is compared with are right on these tiles (fp32: bit for bit)
        want = bitserial.reference_values(tile, ops, arch.params)
        got = np.asarray(model.tile_values(tile, ops))
        bits = lambda v: v.view(np.int32) if v.dtype == np.float32 else v  # noqa: E731
        assert got.dtype == want.dtype and np.array_equal(bits(got), bits(want))
    return items


def _fp16_arch(**over):
    """The bit-serial array with FP16 activations beside int8 ones (2 fp16 lanes per 32-bit lane word)."""
    return load_arch(conformance.base_arch, {**conformance.BITMOD_FP16_ARCH, **over})


def _mismatches(report, items, arch) -> tuple[int, int]:
    """(tiles whose values differ, tiles whose RTL cycles differ from fast or detailed)."""
    model = arch.model()
    bad_cycles = sum(1 for check, (tile, _o) in zip(report.tiles, items)
                     if not check.rtl_cycles == model.tile_cycles(tile) == check.detailed_cycles)
    return sum(1 for check in report.tiles if not check.values_ok), bad_cycles


# ----------------------------------------------------------------------------- the design (no simulator)

def test_design_kinds_and_layout():
    design = _design(_arch())
    cfg = design.cfg
    # fp4 types share one PE kind per activation width (the selector picks the type), so do fp3 types
    assert len(cfg.modes) == 10 and len(cfg.kinds) == 8
    assert cfg.out_bits == 64 and cfg.act_word_bits == 16 and cfg.weight_word_bits == 4 * 8  # int4 acts: 4 int8 weights
    tile = SimdTile(1, 5, 2, "fp4_ea_neg", "int8", group_size=3)
    ops = {"input": np.array([[1, 2, 3, 4, 5]], np.uint32), "weight": np.arange(10).reshape(5, 2).astype(np.uint32),
           "scale": np.array([[7, 9], [11, 13]], np.uint8), "dtype": np.array([[0, 1], [2, 3]], np.uint8)}
    entry = design.layout(tile, ops)
    # one round (2 outputs on 3 PEs): group 0 = k 0..2 (2 steps of 2 lanes), group 1 = k 3..4 (1 step)
    assert [a for a, _w in entry["ops"]] == [0, 1, 2] and entry["rounds"] == 1
    EW = cfg.entry_bits
    word = entry["ops"][0][1]
    pe1 = (word >> EW) & ((1 << EW) - 1)  # output (0, 1): a = 1, 2; w = W[0, 1], W[1, 1] = 1, 3
    assert pe1 & 0xFFFF == 1 | 2 << 8 and pe1 >> 16 == 1 | 3 << 4
    # metadata: PE p's 8-bit scale code, then its 2-bit selector
    assert entry["scales"] == [[0, 7 | 0 << 8 | (9 | 1 << 8) << 32], [1, 11 | 2 << 8 | (13 | 3 << 8) << 32]]


def test_refusals_name_what_is_wrong():
    design = _design(_arch())
    rng = np.random.default_rng(0)
    tile = SimdTile(1, 4, 1, "fp4_er_neg", "int8", group_size=2)  # fp4_er_neg is not among the formats
    with pytest.raises(SpecError, match="fp4_er_neg x int8 is not a mode of this build"):
        design.make_job([(tile, bitserial.make_operands(tile, design.params, rng))])
    big = SimdTile(1, 600, 1, "fp4_er_pos", "int8", group_size=1)  # 600 one-step groups > 512 scale entries
    with pytest.raises(SpecError, match="does not fit the RTL buffers"):
        design.make_job([(big, bitserial.make_operands(big, design.params, rng))])


# ----------------------------------------------------------------------------- co-simulation

def _20_tiles(activations: str):
    """(arch, 20 sampled tiles): int8 activations on the bit-serial array, or the FP16-activation
    array's fp16 tiles."""
    if activations == "int8":
        arch = _arch()
        return arch, _items(arch, 20, seed=12)
    arch = _fp16_arch()
    return arch, [(t, o) for t, o in _items(arch, 50, seed=21) if t.activation_format == "fp16"][:20]


@pytest.mark.rtl
@pytest.mark.parametrize("activations", ["int8", "fp16"])
def test_array_matches_the_models_on_20_tiles(activations):
    """Values and cycles equal to both models on every weight kind (FP3, FP4, int), with and without
    groups and accumulation, and tiles of several rounds of outputs."""
    arch, items = _20_tiles(activations)
    report = _cosim(_design(arch), items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 20 and _mismatches(report, items, arch) == (0, 0)
    kinds = {(t.weight_format[:3], bool(t.group_size), t.accumulate, -(-t.outputs // 3) > 1) for t, _ in items}
    assert {k[0] for k in kinds} == {"fp3", "fp4", "int"} and any(k[3] for k in kinds)  # several rounds
    assert {(k[1], k[2]) for k in kinds} == {(True, True), (True, False), (False, True), (False, False)}


@pytest.mark.rtl
@pytest.mark.parametrize("bug", ["no_wait"])  # the PE-level bugs: tests/test_simd_bitserial.py
def test_a_planted_pe_bug_is_caught_through_the_array(bug):
    arch = _arch()
    items = _items(arch, 12, seed=14)
    report = _cosim(_design(arch, bug), items)
    assert not report.ok and sum(_mismatches(report, items, arch)) > 0


@pytest.mark.rtl
@pytest.mark.long
def test_array_matches_the_models_on_1000_tiles():
    arch = _arch()
    items = _items(arch, 1000, seed=13)
    report = _cosim(_design(arch), items)
    assert len(report.tiles) == 1000 and _mismatches(report, items, arch) == (0, 0)
    assert report.ok, "\n" + report.summary()


def _axi_case(activations: str):
    """(arch, 8 sampled tiles) behind the AXI wrapper: a small format set of each activation kind."""
    if activations == "int8":
        arch = _arch(formats=["fp4_er_pos", "fp3_ea_pos", "int8"])
        return arch, _items(arch, 8, seed=3)
    arch = _fp16_arch(formats=["fp4_ea_pos", "fp3_er_pos", "fp16"], weight_format="fp4_ea_pos")
    return arch, _items(arch, 8, seed=24)


@pytest.mark.rtl
@pytest.mark.parametrize("activations", ["int8", "fp16"])
def test_array_behind_the_axi_wrapper_matches_the_models(activations):
    """Driven only through the AXI wrapper (both streams stalling now and then): values and cycles
    equal to the models on every tile."""
    pytest.importorskip("cocotbext.axi")
    from rtl.cosim import run_job
    from rtl.lib.axi_design import axi_wrapped

    require_icarus()
    arch, items = _axi_case(activations)
    design = axi_wrapped(_design(arch))
    run = run_job(design.verilog(), design.toplevel, {**design.make_job(items), "axi_backpressure": True},
                  sim="icarus")
    report = design.check(items, run.result, sim="icarus")
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == 8 and _mismatches(report, items, arch) == (0, 0)


# ----------------------------------------------------------------------------- FP16 activations (rtl/simd/bitmod_fp16.py)

def test_fp16_design_kinds_and_layout():
    from rtl.simd.bitmod_fp16 import BitmodFp16PE

    design = _design(_fp16_arch())
    cfg = design.cfg
    # int8 and fp16 activations of one weight width are two kinds: 3 weight decoders x 2 activation datapaths
    assert len(cfg.modes) == 8 and len(cfg.kinds) == 6 and len(cfg.fp16_kinds) == 3
    assert cfg.act_word_bits == 32 and cfg.out_bits == 64
    assert all(k[:2] == (2, "fp16") for i, k in enumerate(cfg.kinds) if i in cfg.fp16_kinds)
    assert BitmodFp16PE(2, "fp4_er_pos").init.shape().width == 32
    # psum in, fp32 out: the fp32 bits sit in the low half of each PE's 64-bit output entry
    tile = SimdTile(1, 3, 2, "fp4_er_pos", "fp16", group_size=0, accumulate=True)
    ops = {"input": np.array([[0x3C00, 0xC000, 0x0001]], np.uint32), "weight": np.zeros((3, 2), np.uint32),
           "psum": np.array([[1.5, -2.0]], np.float32)}
    entry = design.layout(tile, ops)
    assert entry["psum"] == [[0, 0x3FC00000 | 0xC0000000 << 64]]
    word = entry["ops"][0][1]  # PE 0, step 0: lanes 0x3C00, 0xC000
    assert word & 0xFFFFFFFF == 0x3C00 | 0xC000 << 16
    back = design.rtl_values(tile, [0x3FC00000 | (0xFFFFFFFF_C0000000 << 64)])
    assert back.dtype == np.float32 and back.tolist() == [[1.5, -2.0]]


@pytest.mark.rtl
def test_fp16_and_int_tiles_share_one_array():
    arch = _fp16_arch()
    items = _items(arch, 10, seed=22)
    assert {t.activation_format for t, _ in items} == {"fp16", "int8"}
    report = _cosim(_design(arch), items)
    assert report.ok, "\n" + report.summary()
    assert _mismatches(report, items, arch) == (0, 0)


def test_fp16_pe_planted_bug_is_caught_by_amaranth_sim():
    """PE level, no Verilog simulator: the RTL PE equals the model on a tile with a lane 4..13 bits below the
    maximum (the guard bits matter), and a PE that drops the guard bits in the alignment does not."""
    from rtl.simd.bitmod_fp16 import run_outputs

    arch = _fp16_arch()
    tile = SimdTile(1, 4, 2, "fp4_er_pos", "fp16", group_size=0)
    ops = {"input": np.array([[0x3C00, 0x2BFF, 0x3555, 0xB001]], np.uint32),  # 1.0, ~2**-4.., ~0.33, -1.0..
           "weight": np.array([[2, 3], [3, 2], [5, 13], [2, 6]], np.uint32)}
    want = np.asarray(arch.model().tile_values(tile, ops))
    got, cycles = run_outputs(tile, ops, arch.params)
    assert np.array_equal(got.view(np.int32), want.view(np.int32)) and cycles == [4, 4]
    bad, _ = run_outputs(tile, ops, arch.params, bug="no_guard_bits")
    assert not np.array_equal(bad.view(np.int32), want.view(np.int32))


@pytest.mark.rtl
def test_a_planted_fp16_bug_is_caught_through_the_array():
    arch = _fp16_arch()
    items = [(t, o) for t, o in _items(arch, 24, seed=23) if t.activation_format == "fp16"]
    report = _cosim(_design(arch, "no_guard_bits"), items)
    assert not report.ok and _mismatches(report, items, arch)[0] > 0


@pytest.mark.rtl
@pytest.mark.long
def test_fp16_array_matches_the_models_on_1000_tiles():
    from rtl.cosim import simulator_missing_reason
    from rtl.cosim.harness import run_job

    arch = _fp16_arch()
    items = [(t, o) for t, o in _items(arch, 2000, seed=25) if t.activation_format == "fp16"][:1000]
    sim = "verilator" if not simulator_missing_reason("verilator") else "icarus"
    if simulator_missing_reason(sim):
        pytest.skip(simulator_missing_reason(sim))
    design = _design(arch)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim=sim)
    report = design.check(items, run.result, sim=sim)
    assert len(report.tiles) == 1000 and _mismatches(report, items, arch) == (0, 0)
    assert report.ok, "\n" + report.summary()
