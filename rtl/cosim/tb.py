"""cocotb test module of the shared harness (run inside the simulator).

It reads the job file named by ``ARCHSIM_COSIM_JOB``, starts a 10 ns clock
on ``clk``, holds ``rst`` for a few cycles, calls the template's driver
(``job["driver"]`` = ``"module:function"``, ``async def f(dut, job) -> dict``)
and writes the driver's result to ``ARCHSIM_COSIM_RESULT``. It reports
"0 tiles done" (:mod:`rtl.cosim.progress`) as it starts, so a progress bar
starts with the tiles, not with the simulator's start-up. Comparison with
the models happens outside the simulator, in :mod:`rtl.cosim.harness`'s
caller, so that a mismatch report can use archsim freely.
"""
from __future__ import annotations

import importlib
import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from rtl.cosim.direct_host import UnresolvedRead
from rtl.cosim.progress import tile_done

CLOCK_PERIOD_NS = 10


@cocotb.test()
async def run_job(dut):
    tile_done(0, 0)
    with open(os.environ["ARCHSIM_COSIM_JOB"]) as f:
        job = json.load(f)
    module_name, func_name = job["driver"].split(":")
    driver = getattr(importlib.import_module(module_name), func_name)
    cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start())
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    try:
        result = await driver(dut, job)
    except UnresolvedRead as err:  # X/Z in a result word: a failure the report names, never a value
        result = {"error": f"X/Z read back: {err}", "tiles": []}
    with open(os.environ["ARCHSIM_COSIM_RESULT"], "w") as f:
        json.dump(result, f)
