"""Amaranth RTL of the templates, Verilog/FuseSoC output, cocotb co-simulation and synthesis."""
