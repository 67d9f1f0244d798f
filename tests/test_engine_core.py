"""Event engine: hand-worked schedules of tiny Programs."""
from __future__ import annotations

import dataclasses
import math

import pytest

import archsim.engine.core as core
import archsim.templates as templates
from archsim.engine import clear_cache, run_program
from archsim.errors import SpecError
from archsim.program import Compute, LayerProgram, Load, Program, Store, VectorOp
from archsim.spec import load_arch
from archsim.templates.base import Template, TemplateModel, TemplateParams


@dataclasses.dataclass(frozen=True)
class ToyParams(TemplateParams):
    rows: int = 4
    cols: int = 4


@dataclasses.dataclass(frozen=True)
class ToyTile:
    cycles: int
    macs: int = 0


class ToyModel(TemplateModel):
    units = {"array": "compute", "vector": "vector", "dma": "dma"}
    calls = 0

    def peak_macs_per_cycle(self, precision=None, activations=None):
        return 16

    def tile_pe_fraction(self, tile):
        return 1.0

    def detailed_tile_cycles(self, tile):
        return tile.cycles

    def tile_cycles(self, tile):
        ToyModel.calls += 1
        return tile.cycles

    def tile_actions(self, tile):
        return {"mac.int8": tile.macs, "sram_read_bytes.input": 10}


# an engine-only toy: nothing here maps a graph, so its mapper module is never imported
TOY = Template("toy", "toy template", params="test_engine_core:ToyParams", model="test_engine_core:ToyModel",
               mapper="test_engine_core")


@pytest.fixture
def toy():
    templates.register(TOY)
    clear_cache()
    ToyModel.calls = 0

    def make(bpc=8, latency=10, lanes=4):
        return load_arch({
            "name": "toy", "template": "toy", "clock_mhz": 1000,
            "buffers": {"input": {"bytes": 8192}, "weight": {"bytes": 8192}, "output": {"bytes": 32768}},
            "dram": {"bytes_per_cycle": bpc, "latency_cycles": latency},
            "vector_unit": {"lanes": lanes, "cycles_per_op": {"exp": 3}},
        })

    yield make
    templates.unregister("toy")


def L(i, deps, nbytes, operand="input", slot=0):
    return Load(i, tuple(deps), operand, operand, slot, nbytes)


def double_buffered(tile_cycles=20, macs=500):
    return [
        L(0, (), 64),                          # dma 0..8, done 18
        L(1, (), 32, "weight"),                # dma 8..12, done 22
        Compute(2, (0, 1), ToyTile(tile_cycles, macs)),   # 22..42
        L(3, (), 64, slot=1),                  # dma 12..20, done 30
        Compute(4, (3,), ToyTile(tile_cycles, macs)),     # max(42, 30) = 42..62
        Store(5, (2, 4), "output", "output", 0, 16),      # dma max(20, 62) = 62..64, done 74
    ]


def test_loads_overlap_compute(toy):
    arch = toy(bpc=8, latency=10)
    prog = Program("toy", "w", [LayerProgram("l0", "matmul", 1000, double_buffered(), ("sig", 1))])
    res = run_program(prog, arch)
    layer = res.layers[0]
    assert layer.cycles == 74
    assert layer.compute_cycles == 40
    assert layer.stall_cycles == 34
    assert layer.utilization == pytest.approx(1000 / (16 * 74))
    assert layer.dram_bytes_by_operand == {"input": 128, "output": 16, "weight": 32}
    # SRAM: DMA fills/drains + 10 B read by each of the 2 tiles
    assert layer.sram_bytes_by_operand == {"input": 128 + 20, "output": 16, "weight": 32}
    assert res.total_cycles == 74 and res.latency_s == pytest.approx(74e-9)


def test_slow_dram_stalls_the_array(toy):
    # 3 loads + 2 computes, 1 B/cycle, no latency: load0 0..64, load1 64..96,
    # compute0 96..116, load2 96..160, compute1 160..180
    arch = toy(bpc=1, latency=0)
    cmds = [L(0, (), 64), L(1, (), 32, "weight"), Compute(2, (0, 1), ToyTile(20)), L(3, (), 64, slot=1),
            Compute(4, (3,), ToyTile(20))]
    res = run_program(Program("toy", "w", [LayerProgram("l", "matmul", 0, cmds, ("s",))]), arch)
    assert (res.total_cycles, res.compute_cycles, res.stall_cycles) == (180, 40, 140)


def test_fractional_bandwidth_rounds_once(toy):
    arch = toy(bpc=3, latency=0)
    cmds = [L(0, (), 10), L(1, (), 10)]  # 10/3 + 10/3 = 6.67 -> 7 cycles, not 4 + 4
    res = run_program(Program("toy", "w", [LayerProgram("l", "x", 0, cmds, ("s",))]), arch)
    assert res.total_cycles == 7


def test_units_are_in_order(toy):
    # command 1 does not depend on 0 but shares the array: it waits for it
    arch = toy()
    cmds = [Compute(0, (), ToyTile(5)), Compute(1, (), ToyTile(7)), VectorOp(2, (), "add", 8)]
    res = run_program(Program("toy", "w", [LayerProgram("l", "x", 0, cmds, ("s",))]), arch)
    # vector: ceil(8 * 1 * 1 / 4) = 2 cycles, parallel with the array
    assert res.total_cycles == 12 and res.compute_cycles == 12


def test_vector_op_cycles_and_vector_only_layer(toy):
    arch = toy(lanes=4)
    cmds = [VectorOp(0, (), "exp", 100, reads_per_element=2), VectorOp(1, (0,), "relu", 9)]
    res = run_program(Program("toy", "w", [LayerProgram("sm", "softmax", 0, cmds, ("v",))]), arch)
    # exp: ceil(100*2*3/4) = 150; relu: default 1 -> ceil(9/4) = 3
    assert res.total_cycles == 153
    assert res.layers[0].compute_cycles == 153 and res.layers[0].stall_cycles == 0
    # energy: lane-cycles (600 + 9) x vector.op
    assert res.layers[0].energy_pj_by_component["vector"] == pytest.approx(609 * arch.tech.energy("vector.op"))


def test_energy_from_tech_table(toy):
    arch = toy(bpc=8, latency=10)
    res = run_program(Program("toy", "w", [LayerProgram("l0", "matmul", 1000, double_buffered(), ("sig",))]), arch)
    e = res.layers[0].energy_pj_by_component
    tech = arch.tech
    # two tiles of 500 MACs, each priced at the table's mac.int8 (the engine only sums)
    assert e["compute"] == pytest.approx(2 * 500 * tech.energy_pj["mac.int8"])
    assert e["dram"] == pytest.approx((64 + 32 + 64 + 16) * 8 * tech.energy("dram_bit"))
    # SRAM bytes by buffer: input 64+64 loads + 2 x 10 tile reads = 148, weight 32 (8 KiB macros);
    # output 16 stored (32 KiB macro): each priced at the table's point for its macro size
    points = dict(tech.sram_points)
    assert e["sram"] == pytest.approx((148 + 32) * points[8192] + 16 * points[32768])
    assert res.energy_pj == pytest.approx(sum(e.values()))


def test_unknown_action_is_one_line_error(toy, monkeypatch):
    arch = toy()
    monkeypatch.setattr(ToyModel, "tile_actions", lambda self, t: {"warp_drive": 1})
    prog = Program("toy", "w", [LayerProgram("l", "x", 0, [Compute(0, (), ToyTile(3))], ("s",))])
    with pytest.raises(SpecError, match=r"^tech table generic-45nm: no energy for action 'warp_drive' of template toy; expected one of "):
        run_program(prog, arch)


def test_layers_are_sequential_and_memoized(toy, monkeypatch):
    arch = toy(bpc=8, latency=10)
    calls = []
    real = core.schedule_layer
    monkeypatch.setattr(core, "schedule_layer", lambda c, ctx, record=False: calls.append(1) or real(c, ctx, record))
    cmds = double_buffered()
    layers = [LayerProgram(f"block{i}", "matmul", 1000, cmds, ("same",)) for i in range(5)]
    layers.append(LayerProgram("rep", "matmul", 3000, cmds, ("same",), repeat=3))
    seen = []
    res = run_program(Program("toy", "w", layers), arch, progress=lambda d, n, name: seen.append((d, n, name)))
    assert len(calls) == 1
    assert [l.name for l in res.layers] == ["block0", "block1", "block2", "block3", "block4", "rep"]
    assert [l.start_cycle for l in res.layers] == [0, 74, 148, 222, 296, 370]
    assert res.layers[-1].cycles == 3 * 74 and res.layers[-1].dram_bytes == 3 * (64 + 32 + 64 + 16)
    assert res.total_cycles == 8 * 74
    assert seen[-1] == (6, 6, "rep")
    # a different arch is not served from the cache
    run_program(Program("toy", "w", layers[:1]), toy(bpc=4, latency=10))
    assert len(calls) == 2


def test_infinite_bandwidth_and_trace(toy):
    arch = toy(bpc=math.inf, latency=0)
    res = run_program(Program("toy", "w", [LayerProgram("l0", "matmul", 1000, double_buffered(), ("s",))]), arch,
                      trace_layers=1)
    assert res.total_cycles == 40
    (idx, name, offset, cycles, repeat, intervals) = res.trace[0]
    assert (idx, name, offset, cycles) == (0, "l0", 0, 40)
    assert [(u, s, e) for u, s, e, _label, _i in intervals if u == "array"] == [("array", 0, 20), ("array", 20, 40)]


def test_real_systolic_tile_cycles():
    from archsim.templates.systolic import SystolicTile

    clear_cache()
    arch = load_arch("scalesim-32x32-ws")  # serial preload, no mult stages, stall-free DRAM
    tile = SystolicTile("ws", 100, 32, 32)
    cmds = [L(0, (), 3200), L(1, (), 1024, "weight"), Compute(2, (0, 1), tile),
            Store(3, (2,), "output", "output", 0, 12800)]
    res = run_program(Program(arch.name, "w", [LayerProgram("g", "matmul", 100 * 32 * 32, cmds, ("t",))]), arch)
    # WS serial: 2R + C + m - 2 = 64 + 32 + 100 - 2 = 194 cycles
    assert res.total_cycles == 194 and res.stall_cycles == 0
    assert res.layers[0].mapping_efficiency == pytest.approx(1.0)
    assert res.utilization == pytest.approx(100 * 32 * 32 / (1024 * 194))


def test_report_extras_hook_is_merged(toy, monkeypatch):
    arch = toy(bpc=8, latency=10)
    monkeypatch.setattr(ToyModel, "report_extras", lambda self, result: {"tokens_per_s": 1e9 / result.total_cycles},
                        raising=False)
    res = run_program(Program("toy", "w", [LayerProgram("l0", "matmul", 1000, double_buffered(), ("s",))]), arch)
    assert res.extras == {"tokens_per_s": pytest.approx(1e9 / 74)}
    assert res.to_dict()["extras"]["tokens_per_s"] == pytest.approx(1e9 / 74)


def test_detailed_uses_the_detailed_model(toy, monkeypatch):
    arch = toy(bpc=math.inf, latency=0)
    monkeypatch.setattr(ToyModel, "detailed_tile_cycles", lambda self, tile: tile.cycles + 1)
    prog = Program("toy", "w", [LayerProgram("l0", "matmul", 1000, double_buffered(), ("s",))])
    assert run_program(prog, arch).total_cycles == 40
    assert run_program(prog, arch, detailed=True).total_cycles == 42  # memo keyed by detailed too


def test_detailed_systolic_agrees_with_fast():
    from archsim.templates.systolic import SystolicTile

    arch = load_arch("systolic-32x32-ws")  # double-buffered preload
    tiles = [SystolicTile("ws", 40, 32, 32), SystolicTile("ws", 40, 32, 32, accumulate=True, preload_hidden=True)]
    cmds = [Compute(0, (), tiles[0]), Compute(1, (0,), tiles[1])]
    prog = Program(arch.name, "w", [LayerProgram("g", "matmul", 2 * 40 * 32 * 32, cmds, ("d",))])
    fast, slow = run_program(prog, arch).total_cycles, run_program(prog, arch, detailed=True).total_cycles
    # 2R + C + m - 2 = 64 + 32 + 40 - 2 = 134, then R + C + m - 2 = 102 with the preload hidden
    assert fast == slow == 134 + 102
