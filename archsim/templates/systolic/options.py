"""Mapper options of the systolic template (the arch spec's ``options:``)."""
from __future__ import annotations

from dataclasses import dataclass
from archsim.templates.base import TemplateOptions

DATAFLOW_CHOICES = ("ws", "os", "is", "auto")


@dataclass(frozen=True)
class SystolicOptions(TemplateOptions):
    """Attributes
    ----------
    dataflow : "ws" | "os" | "is" | "auto" | None
        Overrides ``params.dataflow``; "auto" searches all three per layer.
    scalesim_compat : bool
        SCALE-Sim v3's view (set by the ``scalesim-*`` presets): convolutions
        lowered to its operand matrices (no padding) and every fold streams the
        whole free dimension, as its stall-free mode does.
    """

    dataflow: str | None = None
    scalesim_compat: bool = False

    def validate(self) -> None:
        if self.dataflow is not None and str(self.dataflow).lower() not in DATAFLOW_CHOICES:
            raise ValueError(f"dataflow: expected one of {', '.join(DATAFLOW_CHOICES)}, got {self.dataflow!r}")
        if not isinstance(self.scalesim_compat, bool):
            raise ValueError(f"scalesim_compat: expected true or false, got {self.scalesim_compat!r}")
