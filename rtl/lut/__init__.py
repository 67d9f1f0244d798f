"""RTL of the LUT tensor core template (``docs/lut_rtl.md``): the Amaranth core
:class:`LutCore`, its registry entry :class:`LutDesign`, and the
dequantize-then-MAC baseline :class:`MacBaseline` of the density comparison."""
from rtl.lut.design import LutConfig, LutCore
from rtl.lut.mac_baseline import MacBaseline
from rtl.lut.rtl_design import LutDesign

__all__ = ["LutConfig", "LutCore", "LutDesign", "MacBaseline"]
