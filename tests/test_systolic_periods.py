"""Systolic mapper periods (mappers/systolic.py, "Periods"; mappers/periods.py): a long GEMM run
as identical periods of its command stream gives the whole stream's bytes, energy, tiles and
commands exactly; its cycles lose the layer's fill and drain and, with a double-buffered preload,
the first fold's unhidden preload (R cycles): hand-derived below from the tile sizes."""
from __future__ import annotations

import pytest

import archsim
import mappers
import mappers.systolic as ms
from workloads.zoo._net import Net


def _linear(m: int, k: int, n: int, relu: bool = False, residual: bool = False):
    net = Net("one_linear", weight_precision="int8", act_precision="int8", acc_precision="int32")
    h = net.linear("fc", net.input("x", (m, k)), n, bias=False)
    if residual:
        h = net.eltwise("add", "add", h, net.input("r", (m, n)))
    if relu:
        net.eltwise("relu", "relu", h)
    return net.graph


def _figures(layer):
    """Everything a report gives of a layer but its cycles (energy rounded to 1e-6 pJ: the
    periods' sums are multiplied by their count where the whole stream's are summed)."""
    return (layer.dram_bytes_by_operand, layer.sram_bytes_by_operand,
            {k: round(v, 6) for k, v in layer.energy_pj_by_component.items()}, layer.tiles, layer.commands,
            layer.macs, layer.mapping_efficiency, layer.vector_cycles, layer.mapping.get("epilogue"))


# (arch, m, k, n, expected loop order, cycles lost by hand): compute-bound GEMMs, one per kind of
# unit the stream repeats; 32 B/cycle DRAM, 100 cycles latency, int8 A / B / output tiles:
# (A tile + B tile) / 32 + 100 (fill) + output tile / 32 + 100 (drain) + 32 (WS: first preload)
CASES = [
    # OS, psums resident: a column of output tiles; 64x2048 + 2048x64 B, 64x64 B out
    ("systolic-32x32-os", 128, 4096, 2048, "nkm", 4096 + 4096 + 100 + 128 + 100),
    # WS, K in 8 tiles: one output tile; 64x256 + 256x512 B, 64x512 B out
    ("systolic-32x32-ws", 64, 2048, 4096, "mnk", 512 + 4096 + 100 + 1024 + 100 + 32),
    # WS, K in one tile: a row of output tiles; 512x256 + 256x64 B, 512x64 B out
    ("systolic-32x32-ws", 2048, 256, 1024, "mnk", 4096 + 512 + 100 + 1024 + 100 + 32),
    # WS, K in 8 tiles, wider tiles; 128x512 + 512x256 B, 128x256 B out
    ("systolic-32x32-ws", 128, 4096, 2048, "mnk", 2048 + 4096 + 100 + 1024 + 100 + 32),
]


@pytest.mark.parametrize("arch,m,k,n,order,lost", CASES)
def test_periods_keep_every_figure_and_lose_only_fill_drain_and_first_preload(arch, m, k, n, order, lost, run_periods):
    graph = _linear(m, k, n)
    whole = run_periods(ms, graph, arch, False).layers[0]
    per = run_periods(ms, graph, arch, True).layers[0]
    assert whole.mapping["loop_order"] == order and "periods" not in whole.mapping and whole.repeat == 1
    count = per.mapping["periods"]["count"]
    assert count >= 3 and per.repeat == count
    assert _figures(per) == _figures(whole)
    emitted = mappers.compile(graph, archsim.load_arch(arch)).layers[0].commands
    assert len(emitted) * count == per.commands == whole.commands
    # cycles: the whole stream's fill (the first A and B tiles' loads + latency) and drain (the
    # last output tile's store in int8 + latency) are not in the periods, which start and end
    # mid-stream; on a double-buffered WS array the layer's first fold shifts its R weights in
    # (R cycles), every fold of a period has its preload hidden behind the previous fold
    spec = archsim.load_arch(arch)
    bw, lat, R = float(spec.dram.bytes_per_cycle), spec.dram.latency_cycles, int(spec.params.rows)
    tm, tk, tn = whole.mapping["tile_m"], whole.mapping["tile_k"], whole.mapping["tile_n"]
    fill = (tm * tk + tk * tn) / bw + lat
    drain = tm * tn / bw + lat
    preload = R if whole.mapping["dataflow"] == "ws" else 0
    assert whole.compute_cycles - per.compute_cycles == preload
    assert whole.cycles - per.cycles == pytest.approx(fill + drain + preload, abs=1)
    assert whole.cycles - per.cycles == lost


def test_fused_epilogue_runs_as_periods_with_the_same_figures(run_periods):
    """A residual add and a ReLU fused into the GEMM's output path (mappers.fusion): the periods
    carry the residual tiles' loads and keep every figure of the whole stream."""
    graph = _linear(2048, 256, 1024, relu=True, residual=True)
    whole = run_periods(ms, graph, "systolic-32x32-ws", False)
    per = run_periods(ms, graph, "systolic-32x32-ws", True)
    fc_w, fc_p = whole.layers[0], per.layers[0]
    assert fc_w.mapping["epilogue"] == ["residual", "relu"]
    assert fc_p.mapping["periods"]["count"] >= 3
    assert fc_p.dram_bytes_by_operand["residual"] == 2048 * 1024  # int8: one byte per element, once
    assert [_figures(x) for x in per.layers] == [_figures(x) for x in whole.layers]
    assert [x.mapping.get("fused_into") for x in per.layers] == [x.mapping.get("fused_into") for x in whole.layers]
    assert 0 < whole.total_cycles - per.total_cycles < 1e-2 * whole.total_cycles


def test_no_periods_on_scalesim_presets_over_the_bound_or_when_off(monkeypatch, run_periods):
    graph = _linear(128, 4096, 2048)
    # SCALE-Sim presets keep SCALE-Sim's cycles exactly: always the whole stream
    compat = run_periods(ms, graph, "scalesim-32x32-os", True).layers[0]
    assert "periods" not in compat.mapping and compat.repeat == 1
    # a bound over PERIOD_ERROR of the GEMM's cycles: the whole stream
    monkeypatch.setattr(ms, "PERIOD_STEPS", 16)
    monkeypatch.setattr(ms, "PERIOD_ERROR", 1e-9)
    tight = run_periods(ms, graph, "systolic-32x32-os", True, small=False).layers[0]
    assert "periods" not in tight.mapping and tight.repeat == 1
    # a stream shorter than 4 periods of PERIOD_STEPS (1 x 2 x 32 steps at the default 256)
    monkeypatch.undo()
    default = run_periods(ms, graph, "systolic-32x32-os", True, small=False).layers[0]
    assert "periods" not in default.mapping


@pytest.mark.slow
def test_lm_head_of_a_zoo_prefill_runs_as_periods_within_a_thousandth_of_a_percent(run_periods):
    """BitNet-2B prefill (64 tokens) on the dequantize-then-MAC baseline: the 64 x 2560 x 128256
    LM head runs as periods; every byte and pJ equal, the workload's cycles within 1e-5."""
    kw = {"phase": "prefill", "seq_len": 64}
    from archsim.spec import load_arch

    arch = load_arch("lut-baseline-mac-2x128-a8", {"rows": 16, "cols": 16})  # the preset's shape until 2026-11-27
    whole = run_periods(ms, "bitnet-b1.58-2b", arch, False, small=False, **kw)
    per = run_periods(ms, "bitnet-b1.58-2b", arch, True, small=False, **kw)
    assert [x.name for x in per.layers if "periods" in x.mapping] == ["lm_head"]
    assert [_figures(x) for x in per.layers] == [_figures(x) for x in whole.layers]
    assert per.dram_bytes == whole.dram_bytes and per.energy_pj == pytest.approx(whole.energy_pj, rel=1e-12)
    assert abs(whole.total_cycles - per.total_cycles) < 1e-5 * whole.total_cycles


@pytest.mark.parametrize("order,m,k,n", [("mnk", 64, 64, 2048), ("nmk", 2048, 64, 64), ("nkm", 64, 256, 2048),
                                         ("mnk", 64, 512, 1024)])
def test_periodic_slice_is_one_count_th_of_the_whole_stream(order, m, k, n):
    """mappers.periods on its own, two folds per buffer tile: a period's Loads / Stores by
    operand and Computes, times count, are the whole stream's; dependencies stay inside the
    period; a wrong count is refused by the closed-form check."""
    from archsim.program import Compute, Load
    from mappers.emit import BufferLayout, Emitter
    from mappers.lower import Gemm
    from mappers.periods import checked, periodic_slice
    from mappers.tiling import TilePlan, emit_gemm

    g = Gemm("g", m, k, n)
    plan = TilePlan("ws", 16, 64, 16, order)
    layout = BufferLayout(False, {"input": 1 << 20, "weight": 1 << 20, "output": 1 << 20})

    def split(sm, sk, sn, acc):
        return [("fold", sm, sk, sn, acc, half) for half in (0, 1)]

    def sums(cmds):
        out: dict = {}
        for c in cmds:
            key = ("compute",) if isinstance(c, Compute) else (type(c).__name__, c.operand)
            out[key] = out.get(key, 0) + (1 if isinstance(c, Compute) else c.nbytes)
        return out

    em = Emitter(layout)
    emit_gemm(em, g, plan, split)
    cut = periodic_slice(g, plan, split, layout, min_steps=16)
    assert cut is not None
    cmds, count, steps = cut
    assert count >= 3 and steps * count == -(-m // 16) * -(-k // 64) * -(-n // 16)
    assert {key: v * count for key, v in sums(cmds).items()} == sums(em.commands)
    assert all(c.id == i and all(0 <= d < i for d in c.deps) for i, c in enumerate(cmds))
    assert any(isinstance(c, Load) for c in cmds)
    assert checked(g, plan, cmds, count + 1, steps) is None
