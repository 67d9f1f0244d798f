"""The LUT core's synthesized netlist, co-simulated against the models and measured for switching energy.

The density bench synthesizes the core with ``external_buffers`` (operand and
output buffers are SRAM macros outside the logic). :func:`wrapper_verilog`
puts the core's own buffers around that gate-level netlist: the very
:class:`rtl.lut.design.LutBuffers` that :class:`~rtl.lut.design.LutCore` builds
around its datapath (two-bank operand buffers, the output buffer, the host's
write / read ports and their refusal rule), wired to the netlist by
:func:`rtl.lut.design.attach_buffers` from the two builds' signatures -- so the
wrapper has the ports of the co-simulation build by construction and cannot
drift from the core. :func:`job_testbench` replays a co-simulation job on it
as the cocotb driver (:mod:`rtl.lut.driver`) does (tile i reads operand bank
i % 2; its operands are written while tile i - 1 runs), and the shared check
(:meth:`rtl.lut.rtl_design.LutDesign.check`) compares the netlist's outputs
and cycles with the fast and detailed models. The bench dumps the netlist's
nets to ``activity.vcd``, which :mod:`rtl.power` turns into switching energy
over the cycles ``busy`` is high.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from amaranth import ClockSignal, Instance, Module, ResetSignal, Shape, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from rtl.lut.design import attach_buffers, lut_signature
from rtl.power import count_activity, parse_netlist, rename_module, switching_units

TOP = "archsim_lut_gl"
CORE = "archsim_lut_gates"


class GateLevelLut(wiring.Component):
    """The core's own buffers around an instance of module ``archsim_lut_gates`` (the
    ``external_buffers`` build's netlist): the ports of the build with buffers (``cfg``)."""

    def __init__(self, cfg):
        self.cfg = cfg
        super().__init__(lut_signature(cfg))

    def elaborate(self, platform):
        m = Module()
        external = lut_signature(replace(self.cfg, external_buffers=True))
        core = SimpleNamespace(**{name: Signal(member.shape, name=f"core_{name}") for name, member in external.items()})
        ports = {("i_" if member.flow == In else "o_") + name: getattr(core, name) for name, member in external.items()}
        m.submodules.core = Instance(CORE, i_clk=ClockSignal(), i_rst=ResetSignal(), **ports)
        attach_buffers(m, self.cfg, self, core)
        return m


def wrapper_verilog(cfg) -> str:
    """Verilog of the wrapper (module ``archsim_lut_gl``, instance ``core``) around module
    ``archsim_lut_gates``, for the ``external_buffers`` build ``cfg``."""
    from amaranth.back import verilog

    if cfg.scale != "none" or not cfg.external_buffers:
        raise ValueError("gate-level wrapper: an external_buffers build without scales")
    return verilog.convert(GateLevelLut(replace(cfg, external_buffers=False)), name=TOP, emit_src=False)


def _write_steps(writes: list, bank: int, db: int) -> list[str]:
    """Host writes of one bank, one a cycle, each held until ``wr_ready`` takes it."""
    return [f"    wr_en <= 1; wr_buf <= {buf}; wr_bank <= {bank}; wr_addr <= {addr}; wr_data <= {db}'h{word:x}; #1; "
            "while (!wr_ready) begin @(negedge clk); #1; end @(negedge clk);" for buf, addr, word in writes]


def job_testbench(cfg, job: dict) -> str:
    """A plain Verilog testbench that replays a co-simulation job on the wrapper as
    :func:`rtl.lut.driver.run_job` does on the host streams, except that a tile's results are read
    back after it instead of during the next tile (the energy window is ``busy``, which host reads do
    not change): tile 0's operands into its bank, then per tile its psums into its output bank, the
    command, the next tile's operands into the other bank while it runs, the wait until it is done,
    and the read-back of its output entries.

    (cocotb's Icarus runner switches VCD dumping off, so the gate-level run uses its own bench.)
    Inputs change right after a falling edge (nonblocking, so the tile monitor samples the values
    before them, as cocotb's does); ``result.txt`` lists each tile's hardware counter, output words
    and the monitor's start / done cycles. ``cfg`` is the ``external_buffers`` build.
    """
    sig = lut_signature(replace(cfg, external_buffers=False))
    db = Shape.cast(sig["wr_data"].shape).width
    out_buf = job["out_buf"]
    steps = []
    tiles = job["tiles"]

    def operands(tile):
        return [w for w in tile["writes"] if w[0] != out_buf]

    if tiles:
        steps += _write_steps(operands(tiles[0]), tiles[0]["cmd"]["bank"], db)
    for i, tile in enumerate(tiles):
        steps += _write_steps([w for w in tile["writes"] if w[0] == out_buf], tile["cmd"]["bank"], db)
        steps.append("    wr_en <= 0; " + " ".join(f"cmd_{k} <= {v};" for k, v in tile["cmd"].items())
                     + " cmd_valid <= 1; @(negedge clk); cmd_valid <= 0;")
        if i + 1 < len(tiles):  # the next tile's operands, into the other bank while this one runs
            steps += _write_steps(operands(tiles[i + 1]), tiles[i + 1]["cmd"]["bank"], db)
        steps.append("    wr_en <= 0; #1;")
        steps.append("    budget = 100000; while (busy && budget > 0) begin @(negedge clk); budget = budget - 1; #1; end")
        steps.append('    if (budget == 0) begin $fdisplay(f, "stuck"); $finish; end')
        steps.append('    $fdisplay(f, "hw %0d", tile_cycles);')
        for a in range(tile["out_entries"]):
            steps.append(f'    rd_en <= 1; rd_bank <= {tile["cmd"]["bank"]}; rd_addr <= {a}; @(negedge clk); #1; '
                         '$fdisplay(f, "out %h", rd_data);')
        steps.append('    rd_en <= 0; $fdisplay(f, "tile");')
    decls, conns = [], []
    for name, member in sig.items():
        bits = Shape.cast(member.shape).width
        width = f"[{bits - 1}:0] " if bits > 1 else ""
        decls.append(f"  {'reg' if member.flow == In else 'wire'} {width}{name}{' = 0' if member.flow == In else ''};")
        conns.append(f".{name}({name})")
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1;
{chr(10).join(decls)}
  integer f, cycle = 0, budget;
  {TOP} dut(.clk(clk), .rst(rst), {", ".join(conns)});
  always #5 clk = ~clk;
  always @(negedge clk) begin
    if (tile_start === 1'b1) $fdisplay(f, "start %0d", cycle);
    if (tile_done === 1'b1) $fdisplay(f, "done %0d", cycle);
    cycle = cycle + 1;
  end
  initial begin
    $dumpfile("activity.vcd");
    $dumpvars(0, tb.dut.core);
    $dumpvars(1, tb.dut.clk, tb.dut.busy);
  end
  initial begin
    // read output entry 0 while in reset: the output buffer's read register powers up X, which the
    // netlist's forwarding LUTs (fw_data) would keep forever (a gate-level simulation's X pessimism)
    f = $fopen("result.txt");
    rd_en = 1;
    repeat (3) @(posedge clk);
    rst <= 0; rd_en <= 0;
    @(negedge clk);
{chr(10).join(steps)}
    $fdisplay(f, "error %0d", error);
    $fclose(f);
    $finish;
  end
endmodule
"""


def parse_result(text: str) -> dict:
    """The driver's result dict from the bench's ``result.txt`` (per tile: ``cycles``, the hardware
    counter; ``port_cycles``, measured on the ports; ``out``, the output words)."""
    tiles, cur, starts, dones, flag = [], {"out": []}, [], [], 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "stuck":
            return {"error": f"design still busy after tile {len(tiles)}'s command", "tiles": tiles}
        if key == "hw":
            cur["cycles"] = int(value)
        elif key == "out":
            cur["out"].append(int(value, 16) if set(value) <= set("0123456789abcdef") else -1)
        elif key == "start":
            starts.append(int(value))
        elif key == "done":
            dones.append(int(value))
        elif key == "tile":
            tiles.append(cur)
            cur = {"out": []}
        elif key == "error":
            flag = int(value) if value.isdigit() else 1
    for i, t in enumerate(tiles):
        t["port_cycles"] = dones[i] - starts[i] + 1 if i < len(starts) and i < len(dones) else None
    return {"tiles": tiles, "error_flag": flag}


def run_gate_level(design, items: list, netlist_text: str, workdir: Path | None = None) -> tuple[Any, dict[str, float]]:
    """Run ``items`` on the netlist of ``design`` (a :class:`~rtl.lut.rtl_design.LutDesign` built with
    ``external_buffers``) in Icarus: the check report against the models, and the switching units while busy."""
    import contextlib
    import tempfile

    from rtl.power import run_icarus

    netlist = parse_netlist(netlist_text)
    gates = rename_module(netlist_text, netlist.module, CORE)
    internal = type(design)(design.params, {**design.options, "external_buffers": False})
    job = internal.make_job(items)
    with (tempfile.TemporaryDirectory(prefix="archsim-gate-level-") if workdir is None
          else contextlib.nullcontext(str(workdir))) as tmp:
        work = Path(tmp)
        run_icarus({"netlist.v": gates, "wrapper.v": wrapper_verilog(design.cfg),
                    "tb.v": job_testbench(design.cfg, job)}, "tb", work)
        result = parse_result((work / "result.txt").read_text())
        activity = count_activity(work / "activity.vcd", "tb.dut.core", "tb.dut.busy", "tb.dut.clk")
    report = internal.check(items, result, sim="icarus (gate-level netlist)")
    return report, switching_units(netlist, activity)
