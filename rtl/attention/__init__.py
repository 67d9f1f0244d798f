"""RTL of the attention template: the Amaranth array (:mod:`.design`), its fp32 arithmetic
(:mod:`.fp`), the registry entry :class:`AttentionDesign` (:mod:`.rtl_design`) and the
cocotb driver (:mod:`.driver`)."""
from rtl.attention.rtl_design import AttentionDesign

__all__ = ["AttentionDesign"]
