"""RTL of the PIM template: one bank's near-bank unit (command decoder with the
bank's timing checks, input buffer, int8 or bf16 MAC lanes + adder tree,
accumulators) and its entry in the design registry (:mod:`rtl.generate`:
``"pim"`` -> :class:`rtl.pim.rtl_design.PimDesign`).
"""
from rtl.pim.design import PimBankUnit, check_params

__all__ = ["PimBankUnit", "check_params"]
