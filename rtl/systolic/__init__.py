"""RTL of the systolic template: the Amaranth design (top component, controller, buffers, PE
array), its co-simulation driver and its entry in the design registry (:mod:`rtl.generate`)."""
from rtl.systolic.array import SystolicArray
from rtl.systolic.buffers import LaneBuffer, OutputBuffer
from rtl.systolic.controller import TileController
from rtl.systolic.design import (
    DATAFLOW_CODES,
    SystolicAccelerator,
    SystolicConfig,
    SystolicRtlOptions,
    command_layout,
    systolic_signature,
)
from rtl.systolic.pe import ProcessingElement

__all__ = [
    "DATAFLOW_CODES",
    "LaneBuffer",
    "OutputBuffer",
    "ProcessingElement",
    "SystolicAccelerator",
    "SystolicArray",
    "SystolicConfig",
    "SystolicRtlOptions",
    "TileController",
    "command_layout",
    "systolic_signature",
]
