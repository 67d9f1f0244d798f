"""LUT mapper periods (mappers/lut.py, "Periods"): a long LUT GEMM run as identical periods of
its command stream gives the whole stream's bytes, energy, tiles and compute cycles exactly, and
its cycles less the layer's fill and drain only (hand-derived below)."""
from __future__ import annotations

import pytest

import archsim
import mappers
import mappers.lut as ml
from archsim.engine import core as engine_core
from workloads.zoo._net import Net


def _linear(m: int, k: int, n: int, w: str = "ternary", a: str = "int8", bias: bool = False):
    net = Net("one_linear", weight_precision=w, act_precision=a, acc_precision="int32")
    net.linear("fc", net.input("x", (m, k)), n, bias=bias)
    return net.graph


def _figures(layer):
    """Everything a report gives of a layer but its cycles (energy: pJ rounded to 1e-6, as the
    periods' sums are multiplied by their count where the whole stream's are summed)."""
    return (layer.dram_bytes_by_operand, layer.sram_bytes_by_operand,
            {k: round(v, 6) for k, v in layer.energy_pj_by_component.items()}, layer.tiles, layer.commands,
            layer.compute_cycles, layer.macs, layer.mapping_efficiency, layer.unit_busy_cycles.get("array"),
            layer.vector_cycles)


def _arch(name: str, a: str):
    """The preset, with fp activations built where the case runs them (lut-m2n8k4-ecp5 builds int8
    only, to fit its ECP5: a 16-bit fp GEMM on it runs on the vector unit, not as LUT periods)."""
    return archsim.load_arch(name, {"activation_formats": ["int8", "fp16", "bf16"]} if a != "int8" else None)


# (arch, m, k, n, weights, activations, loss exactly fill + drain): compute-bound GEMMs, one per kind of unit the stream repeats
CASES = [
    ("lut-m2n8k4-ecp5", 128, 512, 256, "ternary", "int8", True),  # mnk, K in one tile: a row of output tiles
    ("lut-m2n8k4-ecp5", 96, 640, 384, "int1", "int8", True),  # mnk, K in 40 tiles: one output tile
    ("lut-m2n8k4-ecp5", 128, 2048, 256, "int2", "bf16", False),  # mnk, K in 256 tiles, fp
    ("lut-m2n8k4-ecp5", 64, 1024, 512, "int4", "fp16", False),  # nkm: a column of output tiles
    ("lut-m2n64k4", 256, 4096, 512, "int4", "fp16", True),  # nmk, K in one tile: a column
    # rows of output tiles ending in a narrower one (row_period): 2, 3 and 11 tiles a row
    ("lut-m2n8k4-ecp5", 128, 1024, 200, "int1", "int8", True),
    ("lut-m2n8k4-ecp5", 128, 1024, 330, "int4", "fp16", False),
    ("lut-m2n8k4-ecp5", 128, 1024, 700, "int4", "fp16", False),
]


@pytest.mark.parametrize("arch,m,k,n,w,a,exact", CASES)
def test_periods_keep_every_figure_and_lose_only_fill_and_drain(arch, m, k, n, w, a, exact, run_periods):
    graph, arch = _linear(m, k, n, w, a), _arch(arch, a)
    whole = run_periods(ml, graph, arch, False).layers[0]
    per = run_periods(ml, graph, arch, True).layers[0]
    assert "periods" not in whole.mapping and whole.repeat == 1
    count = per.mapping["periods"]["count"]
    assert count >= 3 and per.repeat == count
    assert _figures(per) == _figures(whole)
    emitted = mappers.compile(graph, arch).layers[0].commands
    assert len(emitted) * count == per.commands == whole.commands and len(emitted) <= whole.commands // 3
    # cycles: the whole stream's fill (the first A and B tiles' loads + latency) and drain (the
    # last output tile's store + latency) are not in the periods, which start and end mid-stream
    spec = arch
    bw, lat = float(spec.dram.bytes_per_cycle), spec.dram.latency_cycles
    tm, tk, tn = whole.mapping["tile_m"], whole.mapping["tile_k"], whole.mapping["tile_n"]
    a_bits = 8 if a == "int8" else 16
    w_bits = {"int1": 1, "ternary": 2, "int2": 2, "int4": 4}[w]
    fill = (tm * tk * a_bits // 8 + tk * tn * w_bits // 8) / bw + lat
    last_m, last_n = m - (m - 1) // tm * tm, n - (n - 1) // tn * tn  # the last output tile (maybe narrower)
    drain = last_m * last_n * a_bits // 8 / bw + lat  # the output is stored in the activation format
    # exact where a unit's store does not delay the next unit's first loads; where it does (a
    # 4 KiB fp16 tile's store takes 1024 cycles at 4 B/cycle), every period repeats that stall,
    # which the whole stream's first unit (no store before it) does not have
    if exact:
        assert whole.cycles - per.cycles == pytest.approx(fill + drain, abs=1)
    else:
        assert 0 < whole.cycles - per.cycles <= fill + drain + 1
    assert (whole.cycles - per.cycles) / whole.cycles < 1e-2  # small GEMMs; a 7B model's: < 1e-4


def test_periods_off_below_the_error_bound_and_for_short_streams(monkeypatch, run_periods):
    """A GEMM whose fill and drain could exceed PERIOD_ERROR of its cycles runs whole."""
    graph = _linear(64, 256, 512)
    monkeypatch.setattr(ml, "PERIOD_STEPS", 16)
    monkeypatch.setattr(ml, "PERIOD_ERROR", 1e-9)
    layer = run_periods(ml, graph, "lut-m2n8k4-ecp5", True, small=False).layers[0]
    assert "periods" not in layer.mapping and layer.repeat == 1
    monkeypatch.undo()
    monkeypatch.setattr(ml, "PERIODS", True)
    mappers.clear_cache()
    engine_core.clear_cache()
    small = archsim.simulate(_linear(16, 64, 64), "lut-m2n8k4-ecp5").layers[0]  # 4 x 16 steps < 4 x 1024
    assert "periods" not in small.mapping


@pytest.mark.slow
def test_a_zoo_workload_with_periods_matches_the_whole_streams(run_periods):
    """BitNet-2B prefill (32 tokens) on the ECP5 core: every byte and pJ equal, cycles within
    1e-4 (the fill and drain of the GEMMs that ran as periods)."""
    kw = {"phase": "prefill", "seq_len": 32}
    whole = run_periods(ml, "bitnet-b1.58-2b", "lut-m2n8k4-ecp5", False, small=False, **kw)
    per = run_periods(ml, "bitnet-b1.58-2b", "lut-m2n8k4-ecp5", True, small=False, **kw)
    assert any("periods" in l.mapping for l in per.layers)
    assert [_figures(l)[:4] + _figures(l)[5:] for l in per.layers] == \
        [_figures(l)[:4] + _figures(l)[5:] for l in whole.layers]
    for p, w in zip(per.layers, whole.layers):  # commands: exact but for the linear kind of vector period
        assert abs(p.commands - w.commands) <= 4 * p.mapping.get("periods", {}).get("count", 0)
    assert per.dram_bytes == whole.dram_bytes and per.energy_pj == pytest.approx(whole.energy_pj, rel=1e-12)
    assert per.compute_cycles == whole.compute_cycles
    # LUT GEMMs lose their fill and drain; the vector-unit LM head gains about one chunk's op
    assert abs(whole.total_cycles - per.total_cycles) < 1e-4 * whole.total_cycles


# the chunks of one column group are the whole's (1 x 256 x 4096, 4 x 512 x 2048), or every chunk's
# weight share and op cycles are linear in its elements (8 x 640 x 1000: 157 chunks, no such group)
@pytest.mark.parametrize("m,k,n", [(1, 256, 4096), (4, 512, 2048), (8, 640, 1000)])
def test_a_vector_unit_gemm_runs_as_periods_of_its_chunks(monkeypatch, m, k, n, run_periods):
    """bf16 weights are not built into the LUT core: the GEMM streams its weights through the
    vector unit in chunks; periods of those chunks move the same bytes and lane-cycles, and
    their cycles differ from the whole stream's by at most one chunk's op and a DRAM latency."""
    monkeypatch.setattr(ml, "VECTOR_PERIOD_CHUNKS", 16)
    graph = _linear(m, k, n, "bf16", "bf16")
    whole = run_periods(ml, graph, "lut-m2n8k4-ecp5", False, small=False).layers[0]
    per = run_periods(ml, graph, "lut-m2n8k4-ecp5", True, small=False).layers[0]
    assert whole.mapping["unit"] == "vector" and "periods" not in whole.mapping
    count, chunks = per.mapping["periods"]["count"], per.mapping["periods"]["chunks"]
    assert count >= 3 and per.repeat == count
    # commands: a period of the linear kind has the nearest whole number of chunks (4 commands each)
    assert abs(per.commands - whole.commands) <= 4 * count
    assert _figures(per)[:4] + _figures(per)[5:] == _figures(whole)[:4] + _figures(whole)[5:]
    spec = archsim.load_arch("lut-m2n8k4-ecp5")
    one_op = whole.vector_cycles / (count * chunks)  # every chunk's op: whole's vector cycles / chunks
    assert abs(whole.cycles - per.cycles) <= one_op + spec.dram.latency_cycles + 1
