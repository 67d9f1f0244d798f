"""The simd template's RTL entry (``Template(rtl=...)``): the design that suits the params.

``pe: lanes`` params build the SIMD lane array (:class:`rtl.simd.rtl_design.SimdDesign`), ``pe: bitmod``
params BitMoD's bit-serial PE array (:class:`rtl.simd.bitmod_design.BitmodDesign`, a subclass).
"""
from __future__ import annotations

from typing import Any

from rtl.simd.bitmod_design import BitmodDesign
from rtl.simd.rtl_design import SimdDesign


class SimdDesignEntry(SimdDesign):
    """Constructing it returns a :class:`SimdDesign` or a :class:`BitmodDesign` (its class attributes, e.g.
    ``host_interface`` and ``depth_options``, are the shared ones of :class:`SimdDesign`)."""

    def __new__(cls, params: Any, options: Any = None) -> SimdDesign:
        return (BitmodDesign if params.pe == "bitmod" else SimdDesign)(params, options)
