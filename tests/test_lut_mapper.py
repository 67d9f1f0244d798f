"""LUT mapper: bit-plane weight bytes, K padding, tiles timed as the contract says, fused precompute,
other formats on the vector unit, the CLI interface, presets and area."""
from __future__ import annotations

import json
import re

import pytest

import mappers
from archsim.area import area_breakdown
from archsim.cli import main
from archsim.program import Compute, Load, VectorOp
from archsim.simulation import simulate
from archsim.spec.load import load_arch, load_tech, preset_names
from workloads.zoo._net import Net


def _linear(m: int, k: int, n: int, w: str = "ternary", a: str = "int8"):
    net = Net("one_linear", weight_precision=w, act_precision=a, acc_precision="int32")
    net.linear("fc", net.input("x", (m, k)), n, bias=False)
    return net.graph


def _layer(graph, arch="lut-m2n64k4", **options):
    prog = mappers.compile(graph, load_arch(arch), **options)
    return prog.layers[0]


def test_gemv_weight_bytes_are_bit_planes_and_cycles_are_the_closed_form():
    layer = _layer(_linear(1, 256, 128))
    tiles = [c.tile for c in layer.commands if isinstance(c, Compute)]
    # column tiles as wide as the array (64): the sums stay in the array's accumulators
    assert [(t.m, t.k, t.n) for t in tiles] == [(1, 256, 64)] * 2
    loads = [c for c in layer.commands if isinstance(c, Load)]
    assert sum(c.nbytes for c in loads if c.operand == "weight") == 256 * 128 * 2 // 8  # 2 bit planes
    assert {c.nbytes for c in loads if c.operand == "input"} == {256}  # int8 activations
    # by hand: 64 steps, pre = ceil(2*8/16) = 1, look = ceil(64/64) * 2 = 2: 1 + 63*2 + 2 + 3
    model = load_arch("lut-m2n64k4").model()
    assert model.tile_cycles(tiles[0]) == 1 + 63 * 2 + 2 + 3
    assert layer.weight_format == "ternary" and layer.activation_format == "int8"
    assert layer.mapping["precompute_cycles"] == 2 * 64 and layer.mapping["precompute_exposed_cycles"] == 2
    # SRAM: weights read once per row block (1 here), outputs written once (int64 results)
    acts = model.tile_actions(tiles[0])
    assert acts["sram_read_bytes.weight"] == 256 * 64 * 2 // 8 and acts["sram_write_bytes.output"] == 64 * 8
    # a tile wider than the array moves its partial sums through the output buffer every group
    from archsim.templates.lut import LutTile

    wide = model.tile_actions(LutTile(3, 8, 65, "int2"))
    assert wide["sram_read_bytes.weight"] == 2 * (8 * 65 * 2 // 8)  # 2 row blocks, 130 bytes each
    assert (wide["sram_write_bytes.output"], wide["sram_read_bytes.output"]) == (2 * 3 * 65 * 8, 1 * 3 * 65 * 8)


def test_k_is_padded_to_the_group():
    layer = _layer(_linear(3, 10, 8, "int4", "fp16"))
    (tile,) = [c.tile for c in layer.commands if isinstance(c, Compute)]
    assert tile.k == 12 and layer.mapping["k_padded"] == 12 and layer.mapping["k"] == 10
    assert layer.macs == 3 * 10 * 8  # the workload's MACs, not the padded ones


def test_fused_precompute_loads_tables_and_saves_the_table_build():
    plain = _layer(_linear(1, 256, 128))
    fused = _layer(_linear(1, 256, 128), precompute_fusion=True)
    tiles = [c.tile for c in fused.commands if isinstance(c, Compute)]
    assert tiles and all(t.precomputed for t in tiles)
    # tables instead of activations: 64 groups x 8 entries x 11-bit entries (|sum| <= 4 * 128)
    assert {c.nbytes for c in fused.commands if isinstance(c, Load) and c.operand == "input"} == {64 * 8 * 11 // 8}
    (vec,) = [c for c in fused.commands if isinstance(c, VectorOp)]
    # built once by the producer: 64 tables of 8 entries, 3 adds each; nothing waits for it
    assert (vec.op, vec.elements, vec.reads_per_element, vec.deps) == ("lut_table", 64 * 8, 3, ())
    assert fused.mapping["precompute_saved_cycles"] == 2 == plain.mapping["precompute_exposed_cycles"]
    # precompute bound: 1 entry per cycle -> pre = 16 > look = 2 per 64-column tile
    slow = _layer(_linear(1, 256, 128), precompute_fusion=True, arch=load_arch("lut-m2n64k4", {
        "precompute_entries_per_cycle": 1}))
    tiles = [c.tile for c in slow.commands if isinstance(c, Compute)]
    per_tile = [(16 + 63 * 16 + 2 * -(-t.n // 64) + 3) - (64 * 2 * -(-t.n // 64) + 3) for t in tiles]
    assert slow.mapping["precompute_saved_cycles"] == sum(per_tile) > 800


def test_formats_the_core_lacks_run_on_the_vector_unit():
    layer = _layer(_linear(1, 64, 32, "bf16", "bf16"))
    assert not any(isinstance(c, Compute) for c in layer.commands)
    assert {c.op for c in layer.commands if isinstance(c, VectorOp)} == {"mac"}
    assert layer.mapping["unit"] == "vector" and "bf16 x bf16 not built" in layer.mapping["reason"]
    # the weights stream once: 64 x 32 bf16
    assert sum(c.nbytes for c in layer.commands if isinstance(c, Load) and c.operand == "weight") == 64 * 32 * 2


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("weights, acts", [("ternary", "int8"), ("int4", "bf16"), ("int2", "fp16")])
def test_cli_runs_bitnet_decode(capsys, tmp_path, weights, acts):
    code, out, err = _run(capsys, "run", "--arch", "lut-m2n64k4", "--workload", "bitnet-b1.58-2b", "--phase",
                          "decode", "--weights", weights, "--activations", acts, "--out", str(tmp_path), "--no-plots")
    assert code == 0, err
    assert re.search(rf"^precision \(weights/activations\) +{weights}/{acts}, ", out, re.M)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["macs"] > 2e9


def test_cli_rejects_a_pair_the_core_lacks(capsys):
    code, _, err = _run(capsys, "run", "--arch", "lut-m2n64k4", "--workload", "bitnet-b1.58-2b", "--phase", "decode",
                        "--weights", "int8", "--activations", "int8")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "lut-m2n64k4: precision: the lut core runs weights int1/ternary/int2/int3/int4" in err


def test_the_ecp5_preset_builds_int8_activations_only(capsys):
    """lut-m2n8k4-ecp5 builds int8 activations only (its fp32 lookup datapath does not fit the ECP5):
    asking for fp16 activations refuses in one line, and a W2 x fp16 GEMM in a workload runs on the
    vector unit (as every format a LUT core does not build), on the LUT array once fp16 is built."""
    code, _, err = _run(capsys, "run", "--arch", "lut-m2n8k4-ecp5", "--workload", "bitnet-b1.58-2b", "--phase",
                        "decode", "--weights", "int2", "--activations", "fp16")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "precision: the lut core runs weights int1/ternary/int2/int3/int4 x activations int8, got int2/fp16" in err
    net = Net("one_linear", weight_precision="int2", act_precision="fp16", acc_precision="fp32")
    net.linear("fc", net.input("x", (4, 64)), 32, bias=False)
    shipped = mappers.compile(net.graph, load_arch("lut-m2n8k4-ecp5")).layers[0].commands
    assert not any(isinstance(c, Compute) for c in shipped) and any(isinstance(c, VectorOp) for c in shipped)
    built = mappers.compile(net.graph, load_arch("lut-m2n8k4-ecp5", {"activation_formats": ["int8", "fp16"]}))
    assert any(isinstance(c, Compute) for c in built.layers[0].commands)


def test_the_summary_names_the_gemms_that_left_the_lut_array():
    """A GEMM in a format the core does not build runs on the vector unit; the run's summary says so
    with its count and MAC share (here the only GEMM: 1, 100 %), and says nothing once it is built."""
    from archsim.report.writers import summary_rows

    net = Net("two_linears", weight_precision="int2", act_precision="fp16", acc_precision="fp32")
    net.linear("fc2", net.linear("fc1", net.input("x", (4, 64)), 32, bias=False), 16, bias=False)
    rows = dict(summary_rows(simulate(net.graph, "lut-m2n8k4-ecp5")))
    assert rows["GEMMs off the array"] == ("2 GEMMs (100.0 % of MACs) on the vector unit: "
                                           "int2 x fp16 not built into the LUT core")
    built = simulate(net.graph, "lut-m2n8k4-ecp5", overrides={"activation_formats": ["int8", "fp16"]})
    assert "GEMMs off the array" not in dict(summary_rows(built))


def test_presets_and_area():
    names = [n for n in preset_names() if n.startswith("lut-")]
    assert {"lut-m2n8k4-ecp5", "lut-m2n64k4", "lut-baseline-mac-2x128-a8", "lut-baseline-mac-2x128-a16"} <= set(names)
    lut, base = load_arch("lut-m2n64k4"), load_arch("lut-baseline-mac-2x128-a8")
    # equal peak MACs/cycle at 2-bit weights (the baselines' definition)
    assert lut.model().peak_macs_per_cycle("ternary") == base.model().peak_macs_per_cycle() == 256
    items = {i.component: i for i in area_breakdown(lut)}
    # 128 LUT units, int datapath: 7 x 11-bit MUX2 (1.862 um2) + 11-bit negate + 2 32-bit adders (137 um2)
    assert items["lut_units.int"].um2 == pytest.approx(128 * (7 * 11 * 1.862 + 11 * 137 / 32 + 2 * 137))
    assert "lut_units.fp32" in items and "pe_registers" in items
    a16 = {i.component: i for i in area_breakdown(load_arch("lut-baseline-mac-2x128-a16"))}
    # priced as an fp16 MAC: Horowitz ISSCC 2014 (45 nm) 16b FP mult + 32b FP add, read from the
    # generic-45nm table's multiplier and adder entries (not its MAC entries)
    generic = load_tech("generic-45nm").area_um2
    assert a16["mac"].unit_um2 == generic["mult.fp16"] + generic["add.fp32"] == 1640 + 4184


def test_energy_uses_the_lut_actions():
    r = simulate(_linear(2, 64, 64), "lut-m2n64k4")
    assert r.layers[0].energy_pj_by_component["compute"] > 0
    r16 = simulate(_linear(2, 64, 64, "int4", "fp16"), "lut-m2n64k4")
    # fp32 adds (0.9 pJ) instead of int adds (0.1 pJ) and 4 planes instead of 2
    assert r16.layers[0].energy_pj_by_component["compute"] > 5 * r.layers[0].energy_pj_by_component["compute"]


def test_the_mappers_closed_form_charges_the_precompute_pipeline():
    """A precompute-bound tile on a precompute pipeline of 4 cycles: M2 N64 K4, 1 entry/cycle
    (pre = 2 * 8 / 1 = 16, + 4 = 20 a step), 1 row block x 3 K-groups, int1 over 64 columns
    (look = 1 x 1 = 1): 20 + 2 * max(20, 1) + 1 + 3 = 64 cycles by hand (without the pipeline's
    4 cycles a step: 52). The detailed model's schedule gives the same."""
    from mappers.lut import make_mapper
    from archsim.spec.options import make_options

    arch = load_arch("lut-m2n64k4", {"precompute_entries_per_cycle": 1, "precompute_pipeline_cycles": 4})
    mapper = make_mapper(arch, make_options(arch, {}))
    from archsim.templates.lut import LutTile

    tile = LutTile(2, 12, 64, "int1")
    assert int(mapper.tile_cycles_closed(2, 12, 64, "int1")) == 64
    assert arch.model().detailed_tile_cycles(tile) == 64
