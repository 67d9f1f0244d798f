"""Issue 23 item 8: the SIMD array overlaps host loads and stores with compute, as the models assume.

The mapper gives every operand of a GEMM two buffer slots (mappers/tiling.py), and the engine runs the
next tile's loads (and the previous tile's store) while the array computes. The RTL matches that only
if, while a tile runs, the host can write the next tile's operands, scales and partial sums and read
the previous tile's results: the buffers have two banks (rtl/simd/buffers.py), the command names the
one its tile uses. These tests drive the host signature (:class:`rtl.simd.host.SimdEngine`) in the
Amaranth simulator (no Verilog simulator needed): every transfer to or from the bank the running tile
does not use is taken while ``busy`` is high, a write into the running tile's bank and a read of it
wait until the tile is done, and values and the hardware cycle counter are those of a tile run alone.
"""
from __future__ import annotations

import numpy as np
import pytest

from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import SimdTile
from tests.sim_trace import offer_beat

PES, LANE_BITS, PIPELINE_CYCLES = 2, 16, 4


def _design():
    from rtl.simd.rtl_design import SimdDesign

    params = SimdParams(pes=PES, lane_bits=LANE_BITS, formats=["int8"], weight_format="int8",
                        activation_format="int8", pipeline_cycles=PIPELINE_CYCLES)
    return SimdDesign(params, {"op_depth": 64, "scale_depth": 4, "out_depth": 8})


#: (K, accumulate) of the three tiles (M = N = 3): each shorter than the one before, so the host
#: port (one entry a cycle, as the array reads them) moves a tile's entries while the one before runs
TILES = ((24, False), (16, True), (4, False))


def _items(rng):
    """Tile 0 plain, tile 1 accumulating onto a psum, tile 2 plain: int8 x int8, M = N = 3."""
    items = []
    for k, acc in TILES:
        ops = {"input": rng.integers(-128, 128, (3, k)), "weight": rng.integers(-128, 128, (k, 3))}
        if acc:
            ops["psum"] = rng.integers(-1000, 1000, (3, 3))
        items.append((SimdTile(3, k, 3, "int8", "int8", accumulate=acc), ops))
    return items


def _contract_cycles(tile) -> int:
    """By hand from the contract (archsim/templates/simd/tile.py): ``ceil(M*N / P)`` rounds of
    ``ceil(K / L)`` lane steps (L = 16-bit lanes / 8-bit operands = 2), then ``pipeline_cycles``."""
    lanes = LANE_BITS // 8
    return -(-(tile.m * tile.n) // PES) * -(-tile.k // lanes) + PIPELINE_CYCLES


def _run(design, items, probe_running_bank=False):
    """Replay ``items`` on the engine with tile i on bank i % 2: tile i+1's entries go in, and tile
    i-1's results come out, while tile i runs. Returns each tile's output words and hardware cycles,
    how many host beats were taken while ``busy`` was high, and (``probe_running_bank``) how many
    cycles a write into / a read of the running tile's bank, offered during tile 1, waited and
    whether it was taken while busy (offered right after the command: a write into bank 0 during
    tile 0, a read of bank 1 during tile 1)."""
    from amaranth.sim import Simulator

    from rtl.simd.buffers import host_addr_bits, read_addr_bits
    from rtl.simd.config import BUF_CODES
    from rtl.simd.host import SimdEngine

    dut = SimdEngine(design.cfg, pe_instances=False)
    job = design.make_job(items)
    tiles = job["tiles"]
    wr_bank, rd_bank = host_addr_bits(design.cfg) - 1, read_addr_bits(design.cfg) - 1
    words: list[list[int]] = [[] for _ in tiles]
    cycles: list[int] = []
    taken_busy = {"wr": 0, "rd": 0}
    probe = {}

    async def beat(ctx, stream, payload: dict, kind: str):
        """One beat; returns (cycles waited, taken while busy)."""
        waited, busy = await offer_beat(ctx, dut, stream, payload)
        taken_busy[kind] += busy
        return waited, busy

    async def write(ctx, i):
        for key, buf in (("ops", "operands"), ("scales", "scales"), ("psum", "outputs")):
            for addr, word in tiles[i][key]:
                await beat(ctx, "wr", {"buf": BUF_CODES[buf], "addr": addr | (i % 2) << wr_bank, "data": word}, "wr")

    async def read(ctx, addr, kind="rd"):
        ctx.set(dut.rd_data.ready, 1)
        got = await beat(ctx, "rd_addr", {"": addr}, kind)
        while not ctx.get(dut.rd_data.valid):
            await ctx.tick()
        word = ctx.get(dut.rd_data.payload)
        await ctx.tick()
        return word, got

    async def read_back(ctx, i):
        for a in range(tiles[i]["rounds"]):
            words[i].append((await read(ctx, a | (i % 2) << rd_bank))[0])

    async def issue(ctx, i):
        t = tiles[i]
        fields = {k: int(t[k]) for k in ("mode", "m", "n", "k", "g", "accumulate")} | {"bank": i % 2}
        await beat(ctx, "cmd", fields, "cmd")

    async def tb(ctx):
        await write(ctx, 0)
        for i in range(len(tiles)):
            await issue(ctx, i)
            if probe_running_bank and i == 0:  # tile 0 runs on bank 0, entries 0..59: 63 is free
                probe["wr"] = await beat(ctx, "wr", {"buf": BUF_CODES["operands"], "addr": 63, "data": 0}, "probe")
            if probe_running_bank and i == 1:
                probe["rd"] = (await read(ctx, 7 | 1 << rd_bank, "probe"))[1]
            if i:
                await read_back(ctx, i - 1)
            if i + 1 < len(tiles):
                await write(ctx, i + 1)
            while ctx.get(dut.busy):
                await ctx.tick()
            await ctx.tick()  # tile_cycles takes the count the cycle after done
            cycles.append(ctx.get(dut.tile_cycles))
        await read_back(ctx, len(tiles) - 1)

    taken_busy["cmd"] = taken_busy["probe"] = 0
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return words, cycles, taken_busy, probe


def test_host_loads_and_stores_overlap_compute():
    design = _design()
    items = _items(np.random.default_rng(23))
    words, cycles, taken_busy, _probe = _run(design, items)
    for (tile, ops), w, c in zip(items, words, cycles):
        expected = np.asarray(ops["input"], np.int64) @ np.asarray(ops["weight"], np.int64)
        if tile.accumulate:
            expected = expected + ops["psum"]
        np.testing.assert_array_equal(design.rtl_values(tile, w), expected)
        assert c == _contract_cycles(tile)
    assert cycles == [5 * 12 + 4, 5 * 8 + 4, 5 * 2 + 4]
    # every write of tiles 1 and 2 (operands and the psums) and every read of tiles 0 and 1 ran during compute
    job = design.make_job(items)
    writes = sum(len(t["ops"]) + len(t["scales"]) + len(t["psum"]) for t in job["tiles"][1:])
    reads = sum(t["rounds"] for t in job["tiles"][:-1])
    assert writes == 5 * 8 + 5 + 5 * 2 and reads == 2 * 5
    assert (taken_busy["wr"], taken_busy["rd"]) == (writes, reads)


def test_a_write_into_or_a_read_of_the_running_bank_waits_for_the_tile():
    design = _design()
    items = _items(np.random.default_rng(24))
    words, _cycles, _taken, probe = _run(design, items, probe_running_bank=True)
    (wr_waited, wr_taken_busy), (rd_waited, rd_taken_busy) = probe["wr"], probe["rd"]
    assert wr_waited > 0 and not wr_taken_busy
    assert rd_waited > 0 and not rd_taken_busy
    # the probes waited their tiles out, and the tiles' results are still right
    for (tile, ops), w in zip(items, words):
        expected = np.asarray(ops["input"], np.int64) @ np.asarray(ops["weight"], np.int64)
        np.testing.assert_array_equal(design.rtl_values(tile, w), expected + ops["psum"] if tile.accumulate
                                      else expected)


@pytest.mark.rtl
def test_cosim_overlaps_the_next_tiles_loads_and_stays_exact():
    """The co-simulation driver (rtl/simd/driver.py) writes tile i+1's entries while tile i runs: on
    Icarus, the three tiles above are exact against the models (values and the hardware counter) and
    each of the first two was still running when the next tile's entries had all gone in."""
    from rtl.cosim import run_job
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)
    design = _design()
    items = _items(np.random.default_rng(25))
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim="icarus")
    report = design.check(items, run.result, sim="icarus")
    assert report.ok, "\n" + report.summary()
    got = run.result["tiles"]
    assert [t["cycles"] for t in got] == [_contract_cycles(tile) for tile, _ops in items]
    assert [t["next_loaded_while_busy"] for t in got] == [True, True, None]
