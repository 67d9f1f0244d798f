"""Mapper options of the attention template (the arch spec's ``options:``, ``--set attention_mapping=``)."""
from __future__ import annotations

from dataclasses import dataclass

MAPPINGS = ("fusemax", "flat", "unfused")


@dataclass(frozen=True)
class AttentionOptions:
    """Attributes
    ----------
    attention_mapping : "fusemax" | "flat" | "unfused"
        How attention ops run on the array (see :mod:`mappers.attention`):
        ``fusemax`` one-pass online softmax, pipelined; ``flat`` FLAT's fused
        row-granular two-pass dataflow; ``unfused`` Q.K^T to DRAM, softmax,
        then .V.
    """

    attention_mapping: str = "fusemax"

    def validate(self) -> None:
        if self.attention_mapping not in MAPPINGS:
            raise ValueError(f"attention_mapping: expected one of {', '.join(MAPPINGS)}, "
                             f"got {self.attention_mapping!r}")
