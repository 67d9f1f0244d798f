"""Amaranth RTL of the templates, Verilog/FuseSoC output, cocotb co-simulation and synthesis.

Public names::

    from rtl import design_for, write_outputs, run_cosim, synthesize

- :func:`design_for` (params or ArchSpec -> :class:`RtlDesign`), :func:`write_outputs`
  (Verilog + FuseSoC core + JSON manifest);
- :func:`run_cosim` (replay tile commands on the RTL under cocotb and compare with
  archsim's fast and detailed models);
- :func:`synthesize` (yosys / nextpnr resource and Fmax figures, cached).
"""
from rtl.api import cosim_items, run_cosim
from rtl.design import CosimReport, Port, RtlDesign, TileCheck
from rtl.generate import design_for, write_outputs
from rtl.synth import synthesize

__all__ = [
    "CosimReport", "Port", "RtlDesign", "TileCheck",
    "cosim_items", "design_for", "run_cosim", "synthesize", "write_outputs",
]
