"""Mapper options of the attention template (the arch spec's ``options:``, ``--set attention_mapping=``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from archsim.templates.base import TemplateOptions

MAPPINGS = ("fusemax", "flat", "unfused")


@dataclass(frozen=True)
class AttentionOptions(TemplateOptions):
    """Attributes
    ----------
    attention_mapping : "fusemax" | "flat" | "unfused"
        How attention ops run on the array (see :mod:`mappers.attention`):
        ``fusemax`` one-pass online softmax, pipelined; ``flat`` FLAT's fused
        row-granular two-pass dataflow; ``unfused`` Q.K^T to DRAM, softmax,
        then .V.
    buffer_bytes : dict[str, int | str] | None
        On-chip buffer each mapping's design point has, by mapping name
        (bytes, or a size like ``"32 MiB"``); a mapping not listed uses the
        spec's ``buffers.unified``. The FuseMax paper compares designs with
        different buffers (FuseMax 16 MiB, FLAT and unfused 32 MiB in its
        artifact): ``fusemax-cloud`` sets that. The mapper tiles for this size;
        SRAM energy per byte stays the spec buffer's (``docs/attention.md``).
    """

    attention_mapping: str = "fusemax"
    buffer_bytes: Any = None

    def __post_init__(self):
        table = self.buffer_bytes
        if table is None or isinstance(table, tuple):
            return
        if not isinstance(table, dict) or set(table) - set(MAPPINGS):
            raise ValueError(f"buffer_bytes: expected a mapping from among {', '.join(MAPPINGS)} to a size "
                             f"(e.g. {{flat: 32 MiB}}), got {table!r}")
        # kept as sorted (mapping, bytes) pairs: options are hashed (the mapper's layer cache)
        pairs = tuple(sorted((str(k), _size_bytes(v, f"buffer_bytes.{k}")) for k, v in table.items()))
        object.__setattr__(self, "buffer_bytes", pairs)

    def validate(self) -> None:
        if self.attention_mapping not in MAPPINGS:
            raise ValueError(f"attention_mapping: expected one of {', '.join(MAPPINGS)}, "
                             f"got {self.attention_mapping!r}")

    def buffer_bytes_of(self, mapping: str) -> int | None:
        """Bytes of the buffer ``mapping`` runs with, or None for the spec's own."""
        return dict(self.buffer_bytes or ()).get(mapping)


def _size_bytes(value: Any, key: str) -> int:
    from archsim.spec.load import _Bad, _size

    try:
        return _size(value, key)
    except _Bad as bad:
        raise ValueError(f"{bad.key}: {bad.message}") from None
