"""RTL of the PIM template: one bank's near-bank unit (:mod:`rtl.pim.design`, built from the command
decoder with the bank's timing checks :mod:`rtl.pim.controller`, the MAC datapath :mod:`rtl.pim.mac`
and the accumulators :mod:`rtl.pim.accumulators`), the same unit behind the shared host signature
(:mod:`rtl.pim.host_engine`), a channel of units (:mod:`rtl.pim.channel`) and its entry in the design
registry (:mod:`rtl.generate`: ``"pim"`` -> :class:`rtl.pim.rtl_design.PimDesign`).
"""
from rtl.pim.design import PimBankUnit, check_params

__all__ = ["PimBankUnit", "check_params"]
