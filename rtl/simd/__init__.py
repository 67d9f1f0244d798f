"""RTL of the simd template: the mixed-precision SIMD PE array (``SimdArray``: buffers, tile
controller, ``P`` instances of the PE module ``archsim_simd_pe``), its arithmetic
(:mod:`rtl.lib.fp`) and its entry in the design registry (``Template(rtl=...)`` ->
:class:`rtl.simd.entry.SimdDesignEntry`: :class:`rtl.simd.rtl_design.SimdDesign`, or for ``pe: bitmod``
BitMoD's bit-serial PE array :class:`rtl.simd.bitmod_design.BitmodDesign`). See ``docs/simd_rtl.md``, ``docs/bitmod.md``.
"""
from rtl.simd.design import SimdArray, SimdConfig, SimdPE, SimdRtlOptions, modes

__all__ = ["SimdArray", "SimdConfig", "SimdPE", "SimdRtlOptions", "modes"]
