"""Lattice ECP5 ``MULT18X18D`` for the PEs, and a behavioural model to simulate it.

:func:`mult18x18d` instantiates the primitive with its A and B input registers
(and, if asked, its output register), signed operands, clock ``sync``, clock
enable 1 (the B register optionally on its own enable, CE1) and synchronous reset from the
domain's reset. Only this subset is
modelled by :func:`mult18x18d_sim_model` (Verilog, for Icarus / Verilator):
``P`` is ``A_reg * B_reg`` (signed, 36 bits), registered once more when the
output register is on. Unused ports (C, cascades) are left unconnected.
"""
from __future__ import annotations

from amaranth.hdl import ClockSignal, Const, Instance, ResetSignal, Value


def mult18x18d(a: Value, b: Value, p: Value, *, output_reg: bool, b_enable: Value | None = None) -> Instance:
    """``p = a_reg * b_reg`` (signed); ``b_enable`` (default: always) is the B input register's
    clock enable (CE1), so that register can hold a stationary operand."""
    a18 = Value.cast(a).as_signed()
    b18 = Value.cast(b).as_signed()
    ports = {}
    for i in range(18):
        ports[f"i_A{i}"] = a18[min(i, len(a18) - 1)]  # sign extension by repeating the top bit
        ports[f"i_B{i}"] = b18[min(i, len(b18) - 1)]
    for i in range(36):
        ports[f"o_P{i}"] = p[i]
    return Instance(
        "MULT18X18D",
        p_REG_INPUTA_CLK="CLK0", p_REG_INPUTA_CE="CE0", p_REG_INPUTA_RST="RST0",
        p_REG_INPUTB_CLK="CLK0", p_REG_INPUTB_CE="CE0" if b_enable is None else "CE1", p_REG_INPUTB_RST="RST0",
        p_REG_PIPELINE_CLK="NONE",
        p_REG_OUTPUT_CLK="CLK0" if output_reg else "NONE", p_REG_OUTPUT_CE="CE0", p_REG_OUTPUT_RST="RST0",
        p_GSR="DISABLED", p_RESETMODE="SYNC", p_CLK0_DIV="ENABLED",
        i_SIGNEDA=Const(1), i_SIGNEDB=Const(1), i_SOURCEA=Const(0), i_SOURCEB=Const(0),
        i_CLK0=ClockSignal("sync"), i_CE0=Const(1), i_CE1=Const(1) if b_enable is None else b_enable,
        i_RST0=ResetSignal("sync"),
        **ports,
    )


def mult18x18d_sim_model() -> str:
    """Verilog model of the subset of MULT18X18D that :func:`mult18x18d` uses."""
    a = ", ".join(f"A{i}" for i in range(17, -1, -1))
    b = ", ".join(f"B{i}" for i in range(17, -1, -1))
    pp = ", ".join(f"P{i}" for i in range(35, -1, -1))
    return f"""// Behavioural model of the Lattice ECP5 MULT18X18D subset used by archsim's systolic PEs
// (signed A x B with input registers, optional output register; CE0 enables the A and output
// registers, and the B register unless REG_INPUTB_CE = "CE1"; no cascade, no C input).
module MULT18X18D({a}, {b}, SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, CE1, RST0, {pp});
  input {a};
  input {b};
  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, CE1, RST0;
  output {pp};
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTA_CE = "CE0";
  parameter REG_INPUTA_RST = "RST0";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_INPUTB_CE = "CE0";
  parameter REG_INPUTB_RST = "RST0";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_OUTPUT_CLK = "NONE";
  parameter REG_OUTPUT_CE = "CE0";
  parameter REG_OUTPUT_RST = "RST0";
  parameter GSR = "ENABLED";
  parameter RESETMODE = "SYNC";
  parameter CLK0_DIV = "ENABLED";
  wire [17:0] a_in = {{{a}}};
  wire [17:0] b_in = {{{b}}};
  reg [17:0] a_q = 18'd0, b_q = 18'd0;
  reg [35:0] p_q = 36'd0;
  wire [17:0] a_u = (REG_INPUTA_CLK == "NONE") ? a_in : a_q;
  wire [17:0] b_u = (REG_INPUTB_CLK == "NONE") ? b_in : b_q;
  wire signed [35:0] a_x = SIGNEDA ? {{{{18{{a_u[17]}}}}, a_u}} : {{18'd0, a_u}};
  wire signed [35:0] b_x = SIGNEDB ? {{{{18{{b_u[17]}}}}, b_u}} : {{18'd0, b_u}};
  wire [35:0] prod = a_x * b_x;
  always @(posedge CLK0) begin
    if (RST0) begin
      a_q <= 18'd0; b_q <= 18'd0; p_q <= 36'd0;
    end else if (CE0) begin
      a_q <= a_in; p_q <= prod;
      if (REG_INPUTB_CE == "CE0" || CE1) b_q <= b_in;
    end
  end
  assign {{{pp}}} = (REG_OUTPUT_CLK == "NONE") ? prod : p_q;
endmodule
"""
