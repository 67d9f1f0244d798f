"""Issue 23 item 8: the LUT core overlaps host loads and stores with compute, as the models assume.

The mapper gives every operand of a LUT GEMM two buffer slots (input, weight, output), and the engine
runs a tile's loads (and the previous tile's store) while the array computes. The RTL matches that
only if, while a tile runs, the host can write the next tile's operands and partial sums and read the
previous tile's results. These tests drive the host signature (:class:`rtl.lut.host.LutEngine`) in the
Amaranth simulator (no Verilog simulator needed): every transfer to or from the banks the running
tile does not use is taken while ``busy`` is high, and a transfer into the running tile's banks waits.
"""
from __future__ import annotations

import numpy as np

from archsim.spec.load import load_arch
from archsim.templates.lut import conformance
from archsim.templates.lut.tile import LutTile
from tests.sim_trace import offer_beat


def _design():
    from rtl.generate import design_for

    return design_for(load_arch(conformance.base_arch, {**conformance.rtl_arch, "tile_n": 2}))


def _items(rng):
    """Tile 0 plain, tile 1 accumulating onto a psum, tile 2 plain: int2 x int8 (values checked below
    against numpy's integer matmul, independent of the models)."""
    items = []
    for acc in (False, True, False):
        ops = {"input": rng.integers(-128, 128, (3, 8)), "weight": rng.integers(-2, 2, (8, 3))}
        if acc:
            ops["psum"] = rng.integers(-1000, 1000, (3, 3))
        items.append((LutTile(3, 8, 3, "int2", "int8", accumulate=acc), ops))
    return items


def _run_overlapped(design, items):
    """Replay ``items`` on the engine: tile i+1's operands and psums go in, and tile i-1's results come
    out, while tile i runs. Returns each tile's output words and, per tile, how many host beats were
    taken while ``busy`` was high and how many waited."""
    from amaranth.sim import Simulator

    from rtl.lut.design import BUFS
    from rtl.lut.host import LutEngine

    c = design.cfg
    dut = LutEngine(c)
    job = design.make_job(items)
    ab, ob = job["addr_bits"], job["out_addr_bits"]
    tiles = job["tiles"]
    words: list[list[int]] = [[] for _ in tiles]
    taken_busy = {"wr": 0, "rd": 0}
    waited = {"wr": 0, "rd": 0}

    def entries(tile):
        return ([w for w in tile["writes"] if w[0] != BUFS["out"]] + [w for w in tile["writes"] if w[0] == BUFS["out"]])

    async def beat(ctx, stream, fields):
        kind = "wr" if stream == "wr" else "rd"
        cycles_waited, busy = await offer_beat(ctx, dut, stream, fields)
        taken_busy[kind] += busy
        waited[kind] += cycles_waited

    async def write(ctx, tile):
        for buf, addr, word in entries(tile):
            await beat(ctx, "wr", {"buf": buf, "addr": addr | (tile["cmd"]["bank"] << ab), "data": word})

    async def read_entries(ctx, k):
        ctx.set(dut.rd_data.ready, 1)
        for a in range(tiles[k]["out_entries"]):
            ctx.set(dut.rd_addr.payload, a | (tiles[k]["cmd"]["bank"] << ob))
            ctx.set(dut.rd_addr.valid, 1)
            while True:
                ready, busy = ctx.get(dut.rd_addr.ready), ctx.get(dut.busy)
                await ctx.tick()
                if ready:
                    taken_busy["rd"] += busy
                    break
                waited["rd"] += 1
            ctx.set(dut.rd_addr.valid, 0)
            while not ctx.get(dut.rd_data.valid):
                await ctx.tick()
            words[k].append(ctx.get(dut.rd_data.payload))
            await ctx.tick()

    async def issue(ctx, tile):
        for name, v in tile["cmd"].items():
            ctx.set(getattr(dut.cmd.payload, name), v)
        ctx.set(dut.cmd.valid, 1)
        while not ctx.get(dut.cmd.ready):
            await ctx.tick()
        await ctx.tick()
        ctx.set(dut.cmd.valid, 0)

    async def tb(ctx):
        await write(ctx, tiles[0])
        for i, tile in enumerate(tiles):
            await issue(ctx, tile)
            if i:
                await read_entries(ctx, i - 1)
            if i + 1 < len(tiles):
                await write(ctx, tiles[i + 1])
            while ctx.get(dut.busy):
                await ctx.tick()
        await read_entries(ctx, len(tiles) - 1)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return words, taken_busy, waited


def test_host_loads_and_stores_overlap_compute():
    design = _design()
    items = _items(np.random.default_rng(8))
    words, taken_busy, _waited = _run_overlapped(design, items)
    for (tile, ops), w in zip(items, words):
        expected = np.asarray(ops["input"], np.int64) @ np.asarray(ops["weight"], np.int64)
        if tile.accumulate:
            expected = expected + ops["psum"]
        np.testing.assert_array_equal(design.rtl_values(tile, w), expected)
    # every write of tiles 1 and 2 (operands and psums) and every read of tiles 0 and 1 ran during compute
    job = design.make_job(items)
    writes = sum(len(t["writes"]) for t in job["tiles"][1:])
    reads = sum(t["out_entries"] for t in job["tiles"][:-1])
    assert taken_busy == {"wr": writes, "rd": reads}


def test_the_model_overlaps_loads_and_stores_with_compute():
    """The other side of the agreement: on the FPGA preset the engine runs loads of the next tiles and
    stores of finished ones while the LUT array computes (what the RTL test above shows the RTL takes)."""
    from archsim.simulation import simulate
    from workloads.zoo._net import Net

    net = Net("one_linear", weight_precision="int2", act_precision="int8", acc_precision="int32")
    net.linear("fc", net.input("x", (64, 64)), 256, bias=False)
    res = simulate(net.graph, load_arch("lut-m2n8k4-ecp5"), trace_layers=1)
    (_idx, _name, _offset, _cycles, _repeat, intervals) = res.trace[0]
    computes = [(s, e) for unit, s, e, _label, _i in intervals if unit == "array"]
    assert len(computes) > 2

    def overlapping(kind):
        return [(s, e) for unit, s, e, label, _i in intervals if unit == "dma" and label.startswith(kind)
                and any(s < ce and cs < e for cs, ce in computes)]

    assert overlapping("load") and overlapping("store")
