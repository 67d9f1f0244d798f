"""The LUT core's synthesized netlist, co-simulated against the models and measured for switching energy.

The density bench synthesizes the core with ``external_buffers`` (operand and
output buffers are SRAM macros outside the logic). :func:`wrapper_verilog`
puts behavioural buffers around that gate-level netlist with exactly the
semantics of :class:`rtl.lut.design.LutCore`'s own Amaranth memories (act:
asynchronous read; weight / table / out: data the next cycle, not
write-through; the out buffer shared by the accumulator, which wins, and the
host, who reads it while no tile runs), so the wrapper has the ports of the
co-simulation build. :func:`job_testbench` replays a co-simulation job on it
as the cocotb driver (:mod:`rtl.lut.driver`) does, and the shared check
(:meth:`rtl.lut.rtl_design.LutDesign.check`) compares the netlist's outputs
and cycles with the fast and detailed models. The wrapper also dumps the netlist's nets to ``activity.vcd``, which
:mod:`rtl.power` turns into switching energy over the cycles ``busy`` is high.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rtl.lut.design import BUFS, _bits
from rtl.power import count_activity, parse_netlist, rename_module, switching_units

TOP = "archsim_lut_gl"
CORE = "archsim_lut_gates"


def wrapper_verilog(cfg) -> str:
    """Verilog of the wrapper (module ``archsim_lut_gl``) around module ``archsim_lut_gates``."""
    if cfg.scale != "none" or not cfg.external_buffers:
        raise ValueError("gate-level wrapper: an external_buffers build without scales")
    aw, ab, db = cfg.addr_bits, 2, cfg.data_bits
    mems = {"act": (cfg.act_word, cfg.act_depth), "weight": (cfg.weight_word, cfg.weight_depth),
            "table": (cfg.table_word, cfg.table_depth), "out": (cfg.out_word, cfg.out_depth)}
    decl = []
    for name, (w, d) in mems.items():
        decl.append(f"  reg [{w - 1}:0] {name}_mem [0:{d - 1}];")
        decl.append(f"  wire [{_bits(d) - 1}:0] {name}_raddr;")
        decl.append(f"  wire [{w - 1}:0] {name}_rdata;")
    inits = "\n".join(f"    for (i = 0; i < {d}; i = i + 1) {name}_mem[i] = 0;" for name, (_w, d) in mems.items())
    ow = cfg.out_word
    return f"""`timescale 1ns/1ps
module {TOP}(
  input clk, input rst,
  input cmd_valid, output cmd_ready,
  input [15:0] cmd_row_blocks, input [15:0] cmd_groups, input [15:0] cmd_col_blocks,
  input [2:0] cmd_wfmt, input [1:0] cmd_afmt, input cmd_accumulate, input cmd_precomputed,
  input wr_en, input [{ab - 1}:0] wr_buf, input [{aw - 1}:0] wr_addr, input [{db - 1}:0] wr_data,
  input rd_en, input [{aw - 1}:0] rd_addr, output [{ow - 1}:0] rd_data,
  output busy, output tile_start, output tile_done, output [31:0] tile_cycles, output [31:0] tiles_done,
  output error
);
{chr(10).join(decl)}
  reg [{cfg.weight_word - 1}:0] weight_q = 0;
  reg [{cfg.table_word - 1}:0] table_q = 0;
  reg [{ow - 1}:0] out_q = 0;
  wire [{_bits(cfg.out_depth) - 1}:0] out_waddr;
  wire [{ow - 1}:0] out_wdata;
  wire out_we;
  wire host_wr = wr_en & ~busy;
  integer i;
  initial begin
{inits}
    $dumpfile("activity.vcd");
    $dumpvars(0, core);
    $dumpvars(1, clk, busy);
  end
  assign act_rdata = act_mem[act_raddr];
  assign weight_rdata = weight_q;
  assign table_rdata = table_q;
  assign out_rdata = out_q;
  assign rd_data = out_q;
  always @(posedge clk) begin
    weight_q <= weight_mem[weight_raddr];
    table_q <= table_mem[table_raddr];
    if (busy | rd_en) out_q <= out_mem[busy ? out_raddr : rd_addr[{_bits(cfg.out_depth) - 1}:0]];
    if (host_wr && wr_buf == {BUFS['act']}) act_mem[wr_addr[{_bits(cfg.act_depth) - 1}:0]] <= wr_data[{cfg.act_word - 1}:0];
    if (host_wr && wr_buf == {BUFS['weight']}) weight_mem[wr_addr[{_bits(cfg.weight_depth) - 1}:0]] <= wr_data[{cfg.weight_word - 1}:0];
    if (host_wr && wr_buf == {BUFS['table']}) table_mem[wr_addr[{_bits(cfg.table_depth) - 1}:0]] <= wr_data[{cfg.table_word - 1}:0];
    if (out_we) out_mem[out_waddr] <= out_wdata;
    else if (host_wr && wr_buf == {BUFS['out']}) out_mem[wr_addr[{_bits(cfg.out_depth) - 1}:0]] <= wr_data[{ow - 1}:0];
  end
  {CORE} core(
    .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_ready(cmd_ready),
    .cmd_row_blocks(cmd_row_blocks), .cmd_groups(cmd_groups), .cmd_col_blocks(cmd_col_blocks),
    .cmd_wfmt(cmd_wfmt), .cmd_afmt(cmd_afmt), .cmd_accumulate(cmd_accumulate), .cmd_precomputed(cmd_precomputed),
    .act_raddr(act_raddr), .act_rdata(act_rdata), .weight_raddr(weight_raddr), .weight_rdata(weight_rdata),
    .table_raddr(table_raddr), .table_rdata(table_rdata), .out_raddr(out_raddr), .out_rdata(out_rdata),
    .out_waddr(out_waddr), .out_wdata(out_wdata), .out_we(out_we),
    .busy(busy), .tile_start(tile_start), .tile_done(tile_done), .tile_cycles(tile_cycles),
    .tiles_done(tiles_done), .error(error)
  );
endmodule
"""


def job_testbench(cfg, job: dict) -> str:
    """A plain Verilog testbench that replays a co-simulation job exactly as :mod:`rtl.lut.driver` does.

    (cocotb's Icarus runner switches VCD dumping off, so the gate-level run
    uses its own bench.) Inputs change right after a falling edge (nonblocking,
    so the tile monitor samples the values before them, as cocotb's does);
    ``result.txt`` lists each tile's ``hw`` counter, output words and the
    monitor's start / done cycles.
    """
    aw, db, ow = cfg.addr_bits, cfg.data_bits, cfg.out_word
    cmd_widths = {"cmd_row_blocks": 16, "cmd_groups": 16, "cmd_col_blocks": 16, "cmd_wfmt": 3, "cmd_afmt": 2,
                  "cmd_accumulate": 1, "cmd_precomputed": 1}
    steps = []
    for tile in job["tiles"]:
        steps.append("    @(negedge clk);")
        for buf, addr, word in tile["writes"]:
            steps.append(f"    wr_en <= 1; wr_buf <= {buf}; wr_addr <= {addr}; wr_data <= {db}'h{word:x}; @(negedge clk);")
        steps.append("    wr_en <= 0; " + " ".join(f"{k} <= {v};" for k, v in tile["cmd"].items())
                     + " cmd_valid <= 1; @(negedge clk); cmd_valid <= 0; #1;")
        steps.append("    budget = 100000; while (busy && budget > 0) begin @(negedge clk); budget = budget - 1; #1; end")
        steps.append('    if (budget == 0) begin $fdisplay(f, "stuck"); $finish; end')
        steps.append('    $fdisplay(f, "hw %0d", tile_cycles);')
        for a in range(tile["out_entries"]):
            steps.append(f'    rd_en <= 1; rd_addr <= {a}; @(negedge clk); #1; $fdisplay(f, "out %h", rd_data);')
        steps.append('    rd_en <= 0; $fdisplay(f, "tile");')
    regs = "\n".join(f"  reg [{w - 1}:0] {k} = 0;" for k, w in cmd_widths.items())
    conns = ", ".join(f".{k}({k})" for k in cmd_widths)
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1, cmd_valid = 0, wr_en = 0, rd_en = 0;
  reg [1:0] wr_buf = 0;
  reg [{aw - 1}:0] wr_addr = 0, rd_addr = 0;
  reg [{db - 1}:0] wr_data = 0;
{regs}
  wire cmd_ready, busy, tile_start, tile_done, error;
  wire [31:0] tile_cycles, tiles_done;
  wire [{ow - 1}:0] rd_data;
  integer f, cycle = 0, budget;
  {TOP} dut(.clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), {conns},
    .wr_en(wr_en), .wr_buf(wr_buf), .wr_addr(wr_addr), .wr_data(wr_data), .rd_en(rd_en), .rd_addr(rd_addr),
    .rd_data(rd_data), .busy(busy), .tile_start(tile_start), .tile_done(tile_done), .tile_cycles(tile_cycles),
    .tiles_done(tiles_done), .error(error));
  always #5 clk = ~clk;
  always @(negedge clk) begin
    if (tile_start === 1'b1) $fdisplay(f, "start %0d", cycle);
    if (tile_done === 1'b1) $fdisplay(f, "done %0d", cycle);
    cycle = cycle + 1;
  end
  initial begin
    f = $fopen("result.txt");
    repeat (3) @(posedge clk);
    rst <= 0;
    @(posedge clk);
{chr(10).join(steps)}
    $fdisplay(f, "error %0d", error);
    $fclose(f);
    $finish;
  end
endmodule
"""


def parse_result(text: str) -> dict:
    """The driver's result dict from the bench's ``result.txt``."""
    tiles, cur, starts, dones, flag = [], {"out": []}, [], [], 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "stuck":
            return {"error": f"design still busy after tile {len(tiles)}'s command", "tiles": tiles}
        if key == "hw":
            cur["hw_cycles"] = int(value)
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
        t["cycles"] = dones[i] - starts[i] + 1 if i < len(starts) and i < len(dones) else None
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
