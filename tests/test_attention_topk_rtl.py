"""The top-k engine RTL (rtl/attention/topk.py) against its model: kept indices and cycles of every
tile equal (Amaranth's simulator for a quick check, Icarus through cocotb for >= 1000 tiles), and
the comparison catches a planted wrong value and a planted wrong cycle count."""
import numpy as np
import pytest
from amaranth.sim import Simulator

from archsim.templates.attention import topk as topk_model
from archsim.templates.attention.topk import select
from rtl.attention.topk import TopkEngine
from rtl.attention.topk_cosim import cosim, random_tiles


def _amaranth_run(lanes, capacity, width, tiles):
    dut = TopkEngine(lanes, capacity, width)
    out = []

    async def tb(ctx):
        for scores, k, seed in tiles:
            n = len(scores)
            ctx.set(dut.n, n)
            ctx.set(dut.k, k)
            ctx.set(dut.seed, seed)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for r in range(-(-n // lanes)):
                word = sum(int(v) << (j * width) for j, v in enumerate(scores[r * lanes:(r + 1) * lanes]))
                ctx.set(dut.in_data, word)
                ctx.set(dut.in_valid, 1)
                await ctx.tick()
            ctx.set(dut.in_valid, 0)
            kept = []
            for _ in range(64 * n + 100):
                if ctx.get(dut.out_valid):
                    row, mask = ctx.get(dut.out_row), ctx.get(dut.out_mask)
                    kept += [row * lanes + j for j in range(lanes) if mask >> j & 1]
                if ctx.get(dut.done):
                    out.append((kept, ctx.get(dut.cycles)))
                    await ctx.tick()
                    break
                await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    return out


@pytest.mark.parametrize("lanes", [1, 4])
def test_amaranth_sim_matches_model(lanes):
    tiles = random_tiles(12, 32, 8, seed=lanes)
    got = _amaranth_run(lanes, 32, 8, tiles)
    assert len(got) == len(tiles)
    for (scores, k, seed), (kept, cycles) in zip(tiles, got):
        want = select(np.array(scores), k, lanes, seed)
        assert kept == list(want.indices)
        assert cycles == want.cycles


def test_bad_configs_refused():
    with pytest.raises(ValueError, match="power of two"):
        TopkEngine(3, 12, 8)
    with pytest.raises(ValueError, match="multiple of lanes"):
        TopkEngine(4, 10, 8)


@pytest.mark.rtl
def test_icarus_cosim_50_tiles():
    report = cosim(random_tiles(50, 64, 16, seed=11), 4, 64, 16)
    assert report.tiles == 50 and report.ok, report.mismatches[:3]


@pytest.mark.rtl
def test_cosim_catches_planted_model_deviations(monkeypatch):
    tiles = random_tiles(6, 32, 8, seed=5)
    monkeypatch.setattr(topk_model, "ROUND_OVERHEAD_CYCLES", topk_model.ROUND_OVERHEAD_CYCLES + 1)
    report = cosim(tiles, 4, 32, 8)
    assert len(report.mismatches) == 6 and all("cycles" in m for m in report.mismatches)
    monkeypatch.undo()

    real = topk_model.select

    def off_by_one(scores, k, parallelism, seed=1):  # keeps one index too many
        r = real(scores, k, parallelism, seed)
        extra = np.setdiff1d(np.arange(len(scores)), r.indices)[:1]
        return topk_model.TopkResult(np.sort(np.concatenate([r.indices, extra])), r.threshold, r.cycles,
                                     r.rounds, r.compares)

    monkeypatch.setattr("rtl.attention.topk_cosim.select", off_by_one)
    report = cosim(tiles, 4, 32, 8)
    assert len(report.mismatches) == 6 and all("indices differ" in m for m in report.mismatches)


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("count", [100, pytest.param(1000, marks=pytest.mark.long)])
def test_icarus_cosim_16_lanes(count):
    """16 lanes, 256 scores: 100 random tiles in the default suite, 1000 with ``-m long``."""
    report = cosim(random_tiles(count, 256, 16, seed=7), 16, 256, 16)
    assert report.tiles == count and report.ok, report.mismatches[:3]


@pytest.mark.rtl
def test_unit_design_through_run_design_cosim_catches_a_planted_cycle(monkeypatch):
    """The harness's path (TopkDesign + rtl.api.run_design_cosim): exact on its random tiles, and a
    model one cycle off per round fails every tile on cycles."""
    from archsim.spec.load import load_arch
    from rtl.api import run_design_cosim
    from rtl.attention.topk_design import TopkDesign

    arch = load_arch("fusemax-edge", {"topk_parallelism": 2})
    design = TopkDesign(arch.params, {"capacity": 16, "width": 8})
    items = design.cosim_items("random", tiles=6, seed=3)
    report = run_design_cosim(design, items)
    assert report.ok and len(report.tiles) == 6, report.summary()
    monkeypatch.setattr(topk_model, "ROUND_OVERHEAD_CYCLES", topk_model.ROUND_OVERHEAD_CYCLES + 1)
    report = run_design_cosim(TopkDesign(arch.params, {"capacity": 16, "width": 8}), items)
    assert not report.ok and all(not t.cycles_ok and t.values_ok for t in report.tiles)
