"""Mapper options of the LUT template (the arch spec's ``options:``)."""
from __future__ import annotations

from dataclasses import dataclass
from archsim.templates.base import TemplateOptions


@dataclass(frozen=True)
class LutOptions(TemplateOptions):
    """Attributes
    ----------
    precompute_fusion : bool
        True: the activations' producer (the vector unit's op before each
        GEMM) also builds the tables, so LUT tiles run ``precomputed`` (no
        table-build cycles) and read the tables instead of the activations;
        False: the LUT core's precompute unit builds them inside every tile.
    """

    precompute_fusion: bool = False

    def validate(self) -> None:
        if not isinstance(self.precompute_fusion, bool):
            raise ValueError(f"precompute_fusion: expected true or false, got {self.precompute_fusion!r}")
