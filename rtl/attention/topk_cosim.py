"""Co-simulation of the top-k engine RTL (:mod:`rtl.attention.topk`) against its model
(:func:`archsim.templates.attention.topk.select`): the kept indices (sorted) and the cycles of
every tile must be equal. ``cosim(tiles, ...)`` builds the Verilog, replays the tiles through
cocotb (:mod:`rtl.cosim.harness`, driver :func:`drive`) and returns a :class:`TopkCosimReport`
naming the first mismatching tile."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from archsim.templates.attention.topk import select

TOPLEVEL = "archsim_topk"


@dataclass(frozen=True)
class TopkCosimReport:
    tiles: int
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def random_tiles(count: int, capacity: int, width: int, seed: int = 0) -> list[tuple[list[int], int, int]]:
    """``count`` tiles ``(scores, k, lfsr seed)`` with ``2 <= n <= capacity``, ``1 <= k < n``; every
    other tile draws its scores from 8 values (many ties)."""
    rng = np.random.default_rng(seed)
    tiles = []
    for t in range(count):
        n = int(rng.integers(2, capacity + 1))
        top = 8 if t % 2 else 1 << width
        tiles.append(([int(v) for v in rng.integers(0, top, n)], int(rng.integers(1, n)),
                      int(rng.integers(1, 1 << 16))))
    return tiles


def verilog(lanes: int, capacity: int, width: int, engine_cls=None) -> str:
    from amaranth.back import verilog as amaranth_verilog

    from rtl.attention.topk import TopkEngine

    cls = engine_cls or TopkEngine
    return amaranth_verilog.convert(cls(lanes, capacity, width), name=TOPLEVEL, emit_src=False)


def cosim(tiles, lanes: int = 4, capacity: int = 64, width: int = 16, sim: str = "icarus",
          engine_cls=None) -> TopkCosimReport:
    """Run ``tiles`` on the RTL and compare each with the model."""
    from rtl.cosim.harness import run_job

    job = {"driver": "rtl.attention.topk_cosim:drive", "lanes": lanes, "width": width,
           "tiles": [{"scores": s, "k": k, "seed": seed} for s, k, seed in tiles]}
    run = run_job(verilog(lanes, capacity, width, engine_cls), TOPLEVEL, job, sim=sim)
    got = run.result["tiles"]
    bad = []
    for i, ((scores, k, seed), g) in enumerate(zip(tiles, got)):
        want = select(np.array(scores), k, lanes, seed)
        if list(want.indices) != g["indices"] or want.cycles != g["cycles"]:
            bad.append(f"tile {i} (n={len(scores)}, k={k}, seed={seed}): model {want.cycles} cycles, "
                       f"RTL {g['cycles']}; indices {'equal' if list(want.indices) == g['indices'] else 'differ'}")
    if len(got) != len(tiles):
        bad.append(f"RTL finished {len(got)} of {len(tiles)} tiles")
    return TopkCosimReport(len(tiles), bad)


async def drive(dut, job):  # pragma: no cover - runs inside the simulator
    """cocotb driver: start each tile, stream its scores a row per cycle, collect the select pass."""
    from cocotb.triggers import ReadOnly, RisingEdge

    from rtl.cosim.direct_host import resolved
    from rtl.cosim.progress import tile_done

    lanes, width = job["lanes"], job["width"]
    out = []
    for t, tile in enumerate(job["tiles"]):
        scores, k = tile["scores"], tile["k"]
        n = len(scores)
        dut.n.value, dut.k.value, dut.seed.value, dut.start.value = n, k, tile["seed"], 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        for r in range(-(-n // lanes)):
            word = 0
            for j, v in enumerate(scores[r * lanes:(r + 1) * lanes]):
                word |= int(v) << (j * width)
            dut.in_data.value, dut.in_valid.value = word, 1
            await RisingEdge(dut.clk)
        dut.in_valid.value = 0
        kept = []
        for _ in range(64 * n + 1000):
            await ReadOnly()
            if dut.out_valid.value:
                row, mask = resolved(dut.out_row, "out_row"), resolved(dut.out_mask, "out_mask")  # 1 lane: 1 bit
                kept += [row * lanes + j for j in range(lanes) if mask >> j & 1]
            if dut.done.value:
                out.append({"indices": kept, "cycles": resolved(dut.cycles, "cycles")})
                await RisingEdge(dut.clk)
                break
            await RisingEdge(dut.clk)
        else:
            raise RuntimeError(f"tile {t}: no done after {64 * n + 1000} cycles")
        tile_done(t + 1, len(job["tiles"]))
    return {"tiles": out}
