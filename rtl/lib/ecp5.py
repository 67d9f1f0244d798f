"""Lattice ECP5 ``MULT18X18D`` with its own registers, and two models of it for simulation.

:func:`mult18x18d` instantiates the primitive (yosys ``techlibs/ecp5/cells_bb.v``): A and B input
registers (``REG_INPUTA_CLK`` / ``REG_INPUTB_CLK``) and the output register (``REG_OUTPUT_CLK``)
each on clock ``CLK0`` of the domain or off (``"NONE"``), no pipeline register, signed or unsigned
operands (``SIGNEDA`` / ``SIGNEDB``), clock enable ``CE0`` (the B register optionally on its own
enable, ``CE1``) and synchronous reset from the domain's reset. Unused ports (C, cascades) are left
unconnected. This is the only way to get the block's registers: yosys' ``synth_ecp5`` infers the
multiply but leaves registers around it in the fabric, and the block's 3.9 ns combinational delay
(nextpnr's model) then sits between two fabric routes.

Neither Icarus nor amaranth.sim simulate the primitive:

- :func:`mult18x18d_sim_model`: Verilog of the subset above, shipped beside generated Verilog;
- :func:`mult18x18d_behavioural`: the same registers and product in Amaranth (amaranth.sim), what
  ``rtl.lib``'s ``mul="dsp_reg_sim"`` elaborates instead of the instance (same latency, same bits).
"""
from __future__ import annotations

from amaranth.hdl import ClockSignal, Const, Instance, Module, ResetSignal, Signal, Value


def _operand(v: Value, signed: bool) -> Value:
    v = Value.cast(v)
    if len(v) > 18:
        raise ValueError(f"MULT18X18D: operands of at most 18 bits, got {len(v)}")
    return v.as_signed() if signed else v.as_unsigned()


def mult18x18d(a: Value, b: Value, p: Value, *, output_reg: bool, input_reg: bool = True, signed: bool = True,
               b_enable: Value | None = None, enable: Value | None = None, domain: str = "sync") -> Instance:
    """``p = a * b`` (signed or unsigned, at most 18 bits each) through one MULT18X18D: the
    operands registered inside the block if ``input_reg``, the product if ``output_reg``;
    ``enable`` (default: always) clocks every register (CE0), ``b_enable`` (default: ``enable``)
    the B input register alone (CE1), so that register can hold a stationary operand."""
    a18, b18 = _operand(a, signed), _operand(b, signed)
    ports = {}
    for i in range(18):  # extension to 18 bits: the top bit repeated (signed) or zeros (unsigned)
        ports[f"i_A{i}"] = a18[i] if i < len(a18) else (a18[-1] if signed else Const(0, 1))
        ports[f"i_B{i}"] = b18[i] if i < len(b18) else (b18[-1] if signed else Const(0, 1))
    for i in range(36):
        ports[f"o_P{i}"] = p[i] if i < len(p) else Signal(name=f"p_unused{i}")
    clk_in = "CLK0" if input_reg else "NONE"
    ce = Const(1) if enable is None else enable
    return Instance(
        "MULT18X18D",
        p_REG_INPUTA_CLK=clk_in, p_REG_INPUTA_CE="CE0", p_REG_INPUTA_RST="RST0",
        p_REG_INPUTB_CLK=clk_in, p_REG_INPUTB_CE="CE0" if b_enable is None else "CE1", p_REG_INPUTB_RST="RST0",
        p_REG_PIPELINE_CLK="NONE",
        p_REG_OUTPUT_CLK="CLK0" if output_reg else "NONE", p_REG_OUTPUT_CE="CE0", p_REG_OUTPUT_RST="RST0",
        p_GSR="DISABLED", p_RESETMODE="SYNC", p_CLK0_DIV="ENABLED",
        i_SIGNEDA=Const(int(signed)), i_SIGNEDB=Const(int(signed)), i_SOURCEA=Const(0), i_SOURCEB=Const(0),
        i_CLK0=ClockSignal(domain), i_CE0=ce, i_CE1=ce if b_enable is None else b_enable,
        i_RST0=ResetSignal(domain),
        **ports,
    )


def mult18x18d_behavioural(m: Module, a: Value, b: Value, p: Value, *, output_reg: bool, input_reg: bool = True,
                           signed: bool = True, enable: Value | None = None, domain: str = "sync",
                           name: str = "dsp") -> None:
    """What :func:`mult18x18d` computes, in Amaranth: the same registers (reset to 0, like the block's
    synchronous reset) and the product, so amaranth.sim runs it cycle for cycle."""
    a, b = _operand(a, signed), _operand(b, signed)

    def reg(v, nm):
        r = Signal(v.shape(), name=f"{name}_{nm}")
        if enable is None:
            m.d[domain] += r.eq(v)
        else:
            with m.If(enable):
                m.d[domain] += r.eq(v)
        return r

    if input_reg:
        a, b = reg(a, "a_q"), reg(b, "b_q")
    prod = Signal((a * b).shape(), name=f"{name}_prod")
    m.d.comb += prod.eq(a * b)
    m.d.comb += p.eq(reg(prod, "p_q") if output_reg else prod)


def mult18x18d_sim_model() -> str:
    """Verilog model of the subset of MULT18X18D that :func:`mult18x18d` uses."""
    a = ", ".join(f"A{i}" for i in range(17, -1, -1))
    b = ", ".join(f"B{i}" for i in range(17, -1, -1))
    pp = ", ".join(f"P{i}" for i in range(35, -1, -1))
    return f"""// Behavioural model of the Lattice ECP5 MULT18X18D subset used by archsim's RTL
// (A x B, signed or unsigned, with optional input registers and output register; CE0 enables the
// A and output registers, and the B register unless REG_INPUTB_CE = "CE1"; no cascade, no C input).
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


#: words of one DP16KD in its 18-bit mode (the address on AD13..AD4)
DP16KD_X18_DEPTH = 1024


def dp16kd_x18(m: Module, waddr: Value, wdata: Value, we: Value, raddr: Value, rdata: Value, *, output_reg: bool,
               domain: str = "sync", name: str = "bram") -> None:
    """A simple dual-port memory of ``len(rdata)`` bits x at most 1024 words from DP16KD blocks in their 18-bit
    mode, one block per 18-bit slice: port A writes ``wdata`` at ``waddr`` when ``we``, port B reads ``raddr``
    (registered in the block); ``output_reg``: the block's own output register (``REGMODE_B = "OUTREG"``), so
    ``rdata`` is two cycles after ``raddr`` with the register's short clock-to-out, else one cycle after it
    with the array's (5.8 ns on ECP5: yosys' inferred block RAM never uses the register). A read of the word
    written in the same cycle returns the old word. Simulate with :func:`dp16kd_sim_model`."""
    width = len(Value.cast(rdata))
    for lo in range(0, width, 18):
        n = min(18, width - lo)
        ports = {}
        for i in range(14):  # the word address on AD13..AD4; AD1..AD0 the byte enables (both bytes), AD3..AD2 unused
            word_bit = i - 4
            ports[f"i_ADA{i}"] = (waddr[word_bit] if 0 <= word_bit < len(waddr) else Const(0, 1)) if i >= 4 \
                else Const(int(i < 2), 1)
            ports[f"i_ADB{i}"] = (raddr[word_bit] if 0 <= word_bit < len(raddr) else Const(0, 1)) if i >= 4 \
                else Const(int(i < 2), 1)
        for i in range(18):
            ports[f"i_DIA{i}"] = wdata[lo + i] if i < n else Const(0, 1)
            ports[f"i_DIB{i}"] = Const(0, 1)
            ports[f"o_DOA{i}"] = Signal(name=f"{name}_doa_unused{lo}_{i}")
            ports[f"o_DOB{i}"] = rdata[lo + i] if i < n else Signal(name=f"{name}_dob_unused{lo}_{i}")
        m.submodules[f"{name}_{lo // 18}"] = Instance(
            "DP16KD",
            p_DATA_WIDTH_A=18, p_DATA_WIDTH_B=18, p_REGMODE_A="NOREG", p_REGMODE_B="OUTREG" if output_reg else "NOREG",
            p_RESETMODE="SYNC", p_ASYNC_RESET_RELEASE="SYNC", p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
            p_WRITEMODE_A="NORMAL", p_WRITEMODE_B="NORMAL", p_GSR="DISABLED",
            i_CLKA=ClockSignal(domain), i_WEA=we, i_CEA=Const(1), i_OCEA=Const(1), i_RSTA=Const(0),
            i_CSA0=Const(0), i_CSA1=Const(0), i_CSA2=Const(0),
            i_CLKB=ClockSignal(domain), i_WEB=Const(0), i_CEB=Const(1), i_OCEB=Const(1), i_RSTB=Const(0),
            i_CSB0=Const(0), i_CSB1=Const(0), i_CSB2=Const(0),
            **ports,
        )


def dp16kd_sim_model() -> str:
    """Verilog model of the subset of DP16KD that :func:`dp16kd_x18` uses (18-bit ports, A writes, B reads)."""
    def bus(p, n):
        return ", ".join(f"{p}{i}" for i in range(n - 1, -1, -1))

    return f"""// Behavioural model of the Lattice ECP5 DP16KD subset used by archsim's RTL: both ports 18 bits wide
// (1024 words, the word address on AD13..AD4, AD1..AD0 byte enables), port A writes (WEA, CEA), port B
// reads (CEB) into its output, through the output register when REGMODE_B = "OUTREG" (OCEB); a read of
// the word written in the same cycle returns the old word. No chip selects, resets, cascades or port-A reads.
module DP16KD({bus("DIA", 18)}, {bus("ADA", 14)}, CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0, {bus("DOA", 18)},
              {bus("DIB", 18)}, {bus("ADB", 14)}, CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0, {bus("DOB", 18)});
  input {bus("DIA", 18)};
  input {bus("ADA", 14)};
  input CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0;
  output {bus("DOA", 18)};
  input {bus("DIB", 18)};
  input {bus("ADB", 14)};
  input CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0;
  output {bus("DOB", 18)};
  parameter DATA_WIDTH_A = 18;
  parameter DATA_WIDTH_B = 18;
  parameter REGMODE_A = "NOREG";
  parameter REGMODE_B = "NOREG";
  parameter RESETMODE = "SYNC";
  parameter ASYNC_RESET_RELEASE = "SYNC";
  parameter CSDECODE_A = "0b000";
  parameter CSDECODE_B = "0b000";
  parameter WRITEMODE_A = "NORMAL";
  parameter WRITEMODE_B = "NORMAL";
  parameter GSR = "ENABLED";
  reg [17:0] mem [0:1023];
  wire [17:0] di_a = {{{bus("DIA", 18)}}};
  wire [9:0] ad_a = {{{bus("ADA", 14).split(", ADA3")[0]}}};
  wire [9:0] ad_b = {{{bus("ADB", 14).split(", ADB3")[0]}}};
  wire [1:0] be_a = {{ADA1, ADA0}};
  reg [17:0] q_b = 18'd0, o_b = 18'd0;
  always @(posedge CLKA) begin
    if (CEA && WEA) begin
      if (be_a[0]) mem[ad_a][8:0] <= di_a[8:0];
      if (be_a[1]) mem[ad_a][17:9] <= di_a[17:9];
    end
  end
  always @(posedge CLKB) begin
    if (CEB) q_b <= mem[ad_b];
    if (OCEB) o_b <= q_b;
  end
  assign {{{bus("DOB", 18)}}} = (REGMODE_B == "OUTREG") ? o_b : q_b;
  assign {{{bus("DOA", 18)}}} = 18'd0;
endmodule
"""
