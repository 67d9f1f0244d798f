"""Issue 23 item 8: the attention array takes the next tile's operands while a tile computes, as the
mapper assumes (mappers/attention.py: heads alternate two slot sets; the query runs of one head
alternate their Q slots over the resident K and V).

The operand buffers hold two sets (rtl/attention/buffers.py); a command names the set it reads Q
from (``q_set``) and the one it reads K and V from (``kv_set``). These tests drive the host signature
(:class:`rtl.attention.engine.AttentionEngine`) in the Amaranth simulator: tile 0 (a head), tile 1 (a
second query run of the same head: new Q in the other set, K and V resident in set 0) and tile 2 (the
next head: Q, K and V in the sets tile 1 does not read). Every write of tiles 1 and 2 is taken while
the tile before runs; a write into a set the running tile reads waits until it is done; values are
bit for bit the models' (and within the error bound of a float64 reference), and the hardware cycle
counter is the contract's.
"""
from __future__ import annotations

import numpy as np
import pytest

from archsim.templates.attention import AttentionTile
from archsim.templates.attention.reference import error_bound, reference_attention
from attention_ops import bf16_ops, small_arch
from tests.sim_trace import offer_beat

#: a 2 x 2 array with 2 lanes (attention_ops.SMALL has 3 rows: slower in the Amaranth simulator)
ARRAY = {"rows": 2, "cols": 2, "pe1d": 2, "exp_macs": 4}


def _design():
    from rtl import design_for

    return design_for(small_arch(**ARRAY))


def _items(rng):
    """(tile, operands, q_set, kv_set, the operands whose entries are written: Q only when K and V stay)."""
    head0, q1, head1 = bf16_ops(rng, 2, 5, 2), bf16_ops(rng, 2, 5, 2)["q"], bf16_ops(rng, 2, 3, 2)
    tile = AttentionTile("fusemax", 2, 5, 2)
    return [(tile, head0, 0, 0, "qkv"),
            (tile, {"q": q1, "k": head0["k"], "v": head0["v"]}, 1, 0, "q"),  # the head's second query run
            (AttentionTile("fusemax", 2, 3, 2), head1, 0, 1, "qkv")]  # the next head


def _run(design, items, probe=False):
    """Replay ``items``: tile i+1's entries go in while tile i runs; its results are read after it.
    Returns result rows and hardware cycles per tile, the writes taken while ``busy`` was high, and
    (``probe``) per probe (a K write into set 0 during tile 0, a Q write into set 1 during tile 1:
    sets those tiles read) the cycles it waited and whether it was taken while busy."""
    from amaranth.sim import Simulator

    from rtl.attention.engine import BUF_CODES, AttentionEngine

    c = design.cfg
    dut = AttentionEngine(c)
    job = design.make_job([(t, o) for t, o, *_ in items])
    shift = job["set_shift"]
    codes = [BUF_CODES[n] for n in "qkv"]
    rows: list[list[int]] = [[] for _ in items]
    cycles: list[int] = []
    stats = {"taken_busy": 0, "writes": 0}
    probes = {}

    async def beat(ctx, stream, fields):
        return await offer_beat(ctx, dut, stream, fields)

    async def load(ctx, i):
        _t, _o, q_set, kv_set, which = items[i]
        for buf, base, words in job["tiles"][i]["writes"]:
            if "qkv"[codes.index(buf)] not in which:
                continue
            s = q_set if buf == BUF_CODES["q"] else kv_set
            for a, word in enumerate(words):
                _w, busy = await beat(ctx, "wr", {"buf": buf, "addr": (base + a) | s << shift, "data": word})
                stats["taken_busy"] += busy
                stats["writes"] += i > 0

    async def tb(ctx):
        ctx.set(dut.rd_data.ready, 1)
        await load(ctx, 0)
        for i, (_t, _o, q_set, kv_set, _w) in enumerate(items):
            await beat(ctx, "cmd", {**job["tiles"][i]["cmd"], "q_set": q_set, "kv_set": kv_set})
            if probe and i == 0:
                probes["k"] = await beat(ctx, "wr", {"buf": BUF_CODES["k"], "addr": 15, "data": 0})
            if probe and i == 1:
                probes["q"] = await beat(ctx, "wr", {"buf": BUF_CODES["q"], "addr": 3 | 1 << shift, "data": 0})
            if i + 1 < len(items):
                await load(ctx, i + 1)
            while ctx.get(dut.busy):
                await ctx.tick()
            cycles.append(ctx.get(dut.tile_cycles))
            for base, count in job["tiles"][i]["reads"]:
                for a in range(count):
                    await beat(ctx, "rd_addr", {"": base + a})
                    while not ctx.get(dut.rd_data.valid):
                        await ctx.tick()
                    rows[i].append(ctx.get(dut.rd_data.payload))
                    await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return rows, cycles, stats, probes


def _values(words, d):
    return np.array([[(w >> (32 * e)) & 0xFFFFFFFF for e in range(d)] for w in words], np.uint32).view(np.float32)


def _check_tiles(design, items, rows, cycles):
    for (tile, ops, *_), words, cyc in zip(items, rows, cycles):
        models = design.tile_models(tile, ops)
        got = _values(words, tile.head_dim)
        assert np.array_equal(got.view(np.uint32), np.asarray(models.fast_values, np.float32).view(np.uint32))
        err = np.abs(got.astype(np.float64) - reference_attention(ops["q"], ops["k"], ops["v"]))
        assert (err <= error_bound(ops["q"], ops["k"], ops["v"], ARRAY["cols"], ARRAY["exp_macs"])).all()
        assert cyc == models.fast_cycles == models.detailed_cycles


@pytest.mark.slow
def test_next_tiles_operands_load_while_a_tile_computes():
    design = _design()
    items = _items(np.random.default_rng(31))
    rows, cycles, stats, _probes = _run(design, items)
    _check_tiles(design, items, rows, cycles)
    # tile 1 writes only its Q (2 rows x 1 pass); tile 2 Q (2) and K, V (3 keys: bank 0 keys 0, 2; bank 1 key 1)
    assert stats["writes"] == 2 + 2 + 2 * 3
    assert stats["taken_busy"] == stats["writes"]


@pytest.mark.slow
def test_a_write_into_a_set_the_running_tile_reads_waits():
    design = _design()
    items = _items(np.random.default_rng(32))
    rows, cycles, _stats, probes = _run(design, items, probe=True)
    for name in ("k", "q"):
        waited, taken_busy = probes[name]
        assert waited > 0 and not taken_busy, name
    _check_tiles(design, items, rows, cycles)  # the probes (unused entries) changed no tile


@pytest.mark.rtl
def test_cosim_writes_the_next_tile_during_the_running_one_and_stays_exact():
    """The co-simulation driver (rtl/attention/driver.py) writes tile i+1's Q, K and V into the other
    set while tile i runs: on Icarus (attention_ops.SMALL, the array test_attention_rtl.py runs) three
    tiles are exact against the models (values, and the hardware counter = the contract) and the
    first two were still running when the next tile's entries had all gone in."""
    from attention_ops import SMALL
    from rtl import design_for
    from rtl.cosim import run_job
    from sim_skip import require_icarus

    require_icarus()
    design = design_for(small_arch())
    rng = np.random.default_rng(33)
    items = [(AttentionTile("fusemax", 3, 3, 2), bf16_ops(rng, 3, 3, 2)),
             (AttentionTile("flat", 3, 3, 2), bf16_ops(rng, 3, 3, 2)),
             (AttentionTile("fusemax", 2, 5, 3, drain=False), bf16_ops(rng, 2, 5, 3))]
    run = run_job(design.verilog(), design.toplevel, design.make_job(items), sim="icarus")
    report = design.check(items, run.result, sim="icarus")
    assert report.ok, "\n" + report.summary()
    assert SMALL["rows"] == 3 and [t.rtl_cycles for t in report.tiles[:2]] == [39, 43]  # test_attention_rtl's hand count
    assert [t["next_loaded_while_busy"] for t in run.result["tiles"]] == [True, True, None]
