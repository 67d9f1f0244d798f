"""RTL of the PIM template: the near-bank unit (bank memory, MAC lanes,
accumulators, and a command decoder consuming the RD-MAC command stream).

Public names: :class:`PimBankUnit`, :func:`bank_verilog`, :func:`cosim_tile`.
"""
from __future__ import annotations

from rtl.pim.design import PimBankUnit, bank_verilog
from rtl.pim.cosim import cosim_tile

__all__ = ["PimBankUnit", "bank_verilog", "cosim_tile"]
