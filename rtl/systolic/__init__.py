"""RTL of the systolic template: the Amaranth design, its co-simulation driver and
its entry in the design registry (:mod:`rtl.generate`)."""
from rtl.systolic.design import (
    DATAFLOW_CODES,
    SystolicAccelerator,
    SystolicConfig,
    SystolicRtlOptions,
    systolic_signature,
)

__all__ = [
    "DATAFLOW_CODES",
    "SystolicAccelerator",
    "SystolicConfig",
    "SystolicRtlOptions",
    "systolic_signature",
]
