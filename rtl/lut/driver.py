"""cocotb driver of the LUT engine (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` replays ``job["tiles"]`` through the host signature
(:mod:`rtl.lut.host`), directly on its streams or, with ``job["host"] ==
"axi"``, through the AXI wrapper's bus functional models. Tile i reads operand
bank ``i % 2``: its operand entries (activations, weight planes, precomputed
tables, scales; :meth:`rtl.lut.rtl_design.LutDesign.encode`) and its initial
partial sums (output bank ``i % 2``) are written while tile i - 1 runs (tile 0's
before it), after tile i - 2's results were read from that output bank; a tile's
results are read back while the next tile runs (the last one's at the end).

A tile's cycles are the engine's hardware counter ``tile_cycles``; on the
direct host a monitor also measures them on the ports (``tile_start`` ..
``done``), and the check requires both to agree. The host is
:func:`rtl.cosim.direct_host.host_for`'s.
"""
from __future__ import annotations

from cocotb.triggers import RisingEdge

from rtl.cosim.direct_host import host_for
from rtl.lut.design import BUFS

#: ``buf`` code -> its name in BUFS (the job's entries carry the codes)
BUF_NAMES = {code: name for name, code in BUFS.items()}


async def _write(host, entries: list, bank: int, addr_bits: int):
    """``[buf, addr, word]`` entries into operand bank ``bank`` (the address's bit ``addr_bits``), in
    order; consecutive addresses of one buffer go in one :meth:`write_rows` (one AXI frame)."""
    runs: list[list] = []
    for buf, addr, word in entries:
        if runs and runs[-1][0] == buf and runs[-1][1] + len(runs[-1][2]) == addr:
            runs[-1][2].append(word)
        else:
            runs.append([buf, addr, [word]])
    for buf, base, words in runs:
        await host.write_rows(BUF_NAMES[buf], base | (bank << addr_bits), words)


async def run_job(dut, job: dict) -> dict:
    host = host_for(dut, job, BUFS)
    problem = await host.start(job["rd_bits"])
    if problem:
        return {"error": problem, "tiles": []}
    tiles, out_buf, ab, ob = job["tiles"], job["out_buf"], job["addr_bits"], job["out_addr_bits"]
    timings: list = []
    results = []

    def entries(tile):  # operands first, then the psums (into the same bank of the output buffer)
        return ([w for w in tile["writes"] if w[0] != out_buf] + [w for w in tile["writes"] if w[0] == out_buf])

    async def read_back(k):
        bank = tiles[k]["cmd"]["bank"]
        words = await host.read_rows(bank << ob, tiles[k]["out_entries"])
        results.append({"out": words, "cycles": timings[k]["cycles"], "port_cycles": timings[k].get("port_cycles"),
                        "done_ns": timings[k].get("done_ns")})  # where a mismatch is in the waveform

    if tiles:
        await _write(host, entries(tiles[0]), tiles[0]["cmd"]["bank"], ab)
    for i, tile in enumerate(tiles):
        host.begin_batch()
        await host.issue(tile["cmd"])
        # while tile i runs: tile i - 1's results out of, then tile i + 1's operands and psums into, the
        # other banks (the overlap of stores and loads with compute that the models assume)
        if i:
            await read_back(i - 1)
        if i + 1 < len(tiles):
            await _write(host, entries(tiles[i + 1]), tiles[i + 1]["cmd"]["bank"], ab)
        if not await host.wait_idle(100000):
            return {"error": f"design still busy after tile {i}'s command", "tiles": results}
        (timing,) = await host.batch_timing(1)  # port_cycles: on the direct host only
        timings.append(timing)
        await RisingEdge(dut.clk)  # a beat starts after a rising edge (waiting for idle ends at a falling one)
    if tiles:
        await read_back(len(tiles) - 1)
    return {"tiles": results, **(await host.finish())}
