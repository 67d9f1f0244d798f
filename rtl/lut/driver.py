"""cocotb driver of the LUT core (runs inside the simulator, via rtl.cosim.tb).

``run_job(dut, job)`` replays ``job["tiles"]``: tile i reads operand bank
``cmd_bank = i % 2``; its operand entries (activations, weight planes,
precomputed tables, scales; :meth:`rtl.lut.rtl_design.LutDesign.encode`) are
written into that bank while tile i - 1 runs (tile 0's before it), its initial
partial sums into the output buffer once tile i - 1's results are read; then
the command is issued, ``busy`` falls and the output entries are read back. A monitor samples ``tile_start`` / ``tile_done`` every cycle, so a
tile's cycles are measured from the ports and compared with the design's own
``tile_cycles`` counter.
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge, RisingEdge
from rtl.cosim.progress import tile_done


def _u(sig) -> int:
    v = sig.value
    return v.to_unsigned() if hasattr(v, "to_unsigned") else int(v)


class _Monitor:
    def __init__(self, dut):
        self.dut = dut
        self.cycle = 0
        self.starts: list[int] = []
        self.dones: list[int] = []

    async def run(self):
        while True:
            await FallingEdge(self.dut.clk)
            if _u(self.dut.tile_start):
                self.starts.append(self.cycle)
            if _u(self.dut.tile_done):
                self.dones.append(self.cycle)
            self.cycle += 1


async def run_job(dut, job: dict) -> dict:
    import cocotb

    for name in ("cmd_valid", "wr_en", "rd_en"):
        getattr(dut, name).value = 0
    await RisingEdge(dut.clk)
    mon = _Monitor(dut)
    cocotb.start_soon(mon.run())
    results = []
    tiles = job["tiles"]
    out_buf = job.get("out_buf")

    async def write(entries, bank):
        for buf, addr, word in entries:
            dut.wr_en.value, dut.wr_buf.value, dut.wr_addr.value, dut.wr_data.value = 1, buf, addr, word
            dut.wr_bank.value = bank
            await FallingEdge(dut.clk)
        dut.wr_en.value = 0

    def operands(tile):
        return [w for w in tile["writes"] if w[0] != out_buf]

    await FallingEdge(dut.clk)
    if tiles:
        await write(operands(tiles[0]), tiles[0]["cmd"].get("cmd_bank", 0))
    for i, tile in enumerate(tiles):
        await write([w for w in tile["writes"] if w[0] == out_buf], 0)
        for name, value in tile["cmd"].items():
            getattr(dut, name).value = value
        dut.cmd_valid.value = 1
        await FallingEdge(dut.clk)
        dut.cmd_valid.value = 0
        if i + 1 < len(tiles):  # the next tile's operands, into the other bank while this one runs
            await write(operands(tiles[i + 1]), tiles[i + 1]["cmd"].get("cmd_bank", 0))
        budget = 100000
        while _u(dut.busy) and budget:
            await FallingEdge(dut.clk)
            budget -= 1
        if not budget:
            return {"error": f"design still busy after tile {i}'s command", "tiles": results}
        hw_cycles = _u(dut.tile_cycles)
        words = []
        for a in range(tile["out_entries"]):
            dut.rd_en.value, dut.rd_addr.value = 1, a
            await FallingEdge(dut.clk)
            words.append(_u(dut.rd_data))
        dut.rd_en.value = 0
        start = mon.starts[i] if i < len(mon.starts) else None
        done = mon.dones[i] if i < len(mon.dones) else None
        results.append({"out": words, "hw_cycles": hw_cycles,
                        "cycles": (done - start + 1) if start is not None and done is not None else None})
        tile_done(len(results), len(job["tiles"]))
    return {"tiles": results, "error_flag": _u(dut.error)}
