"""Co-simulation: one cocotb harness for every template's RTL.

A template's RTL design (see :class:`rtl.design.RtlDesign`) supplies its
Verilog, a *job* (JSON: commands and operand data) and a cocotb-side
*driver* coroutine that replays the job on the simulated top module. The
harness builds the Verilog with a simulator chosen by name (Icarus by
default, Verilator opt-in), runs :mod:`rtl.cosim.tb`, and hands the recorded
results back to the design, which compares them with archsim's models.
"""
from rtl.cosim.harness import SIMULATORS, CosimRun, available_simulators, run_job, simulator_missing_reason

__all__ = ["SIMULATORS", "CosimRun", "available_simulators", "run_job", "simulator_missing_reason"]
