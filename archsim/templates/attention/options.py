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
    token_keep : float | list[float] | None
        SpAtten's cascade token pruning (:mod:`workloads.transforms.spatten`): the fraction
        of the sequence attention layer ``i`` reads, non-increasing over layers (a shorter list
        repeats its last value), e.g. ``[0.9, 0.7, 0.2]``. Needs a top-k engine
        (``params.topk_parallelism``). None: no pruning.
    head_keep : float | list[float] | None
        SpAtten's cascade head pruning: the fraction of its heads attention layer ``i``
        computes, non-increasing over layers. Needs a top-k engine. None: no pruning.
    value_keep : float
        Fraction of the kept keys whose V rows are fetched (SpAtten's local V pruning: the
        authors' GPT-2 traces fetch V for 0.2 of them). P.V still counts every kept key's
        MACs (an upper bound; the DRAM bytes are the V rows fetched).
    progressive_quant : dict | None
        SpAtten's progressive quantization of the K/V fetched from DRAM:
        ``{msb_bits: 6, lsb_bits: 4, requant_fraction: f}``: K and V arrive as ``msb_bits``
        per element; for a fraction ``f`` of the query rows (those whose max softmax probability
        is below the threshold: data-dependent, so an input here) the K rows' ``lsb_bits`` are
        fetched and the row's scores and softmax recomputed: an ``lsb_refetch`` layer after each
        attention layer (``ceil(f * batch * heads * seq_q)`` rows, bytes and cycles charged;
        :mod:`workloads.transforms.spatten`). None: K and V in 16 bits.
    """

    attention_mapping: str = "fusemax"
    buffer_bytes: Any = None
    token_keep: Any = None
    head_keep: Any = None
    value_keep: float = 1.0
    progressive_quant: Any = None

    def __post_init__(self):
        for key in ("token_keep", "head_keep"):  # hashed (the mapper's layer cache): tuples
            v = getattr(self, key)
            if isinstance(v, list):
                object.__setattr__(self, key, tuple(v))
        pq = self.progressive_quant
        if isinstance(pq, dict):
            unknown = set(pq) - {"msb_bits", "lsb_bits", "requant_fraction"}
            if unknown:
                raise ValueError(f"progressive_quant: unknown key(s) {', '.join(sorted(unknown))}; expected "
                                 "msb_bits, lsb_bits, requant_fraction")
            object.__setattr__(self, "progressive_quant", (pq.get("msb_bits", 6), pq.get("lsb_bits", 4),
                                                           pq.get("requant_fraction", 0.0)))
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
        v = self.value_keep
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ValueError(f"value_keep: expected a fraction in (0, 1], got {v!r}")
        pq = self.progressive_quant
        if pq is not None:
            if not isinstance(pq, tuple) or len(pq) != 3:
                raise ValueError(f"progressive_quant: expected {{msb_bits, lsb_bits, requant_fraction}}, got {pq!r}")
            msb, lsb, frac = pq
            for key, bits in (("msb_bits", msb), ("lsb_bits", lsb)):
                if isinstance(bits, bool) or not isinstance(bits, int) or bits < 1:
                    raise ValueError(f"progressive_quant.{key}: expected a positive integer, got {bits!r}")
            if msb + lsb > 16:
                raise ValueError(f"progressive_quant: msb_bits + lsb_bits: expected at most 16, got {msb + lsb}")
            if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 <= frac <= 1:
                raise ValueError(f"progressive_quant.requant_fraction: expected a fraction in [0, 1], got {frac!r}")

    @property
    def prunes(self) -> bool:
        """Whether cascade token or head pruning is on."""
        return self.token_keep is not None or self.head_keep is not None

    def kv_fetch_bits(self) -> tuple[float, float]:
        """(bits per K element, bits per V element) fetched from DRAM (``value_keep`` is applied
        to the V rows by the mapper)."""
        if self.progressive_quant is None:
            return 16.0, 16.0
        msb = self.progressive_quant[0]
        return float(msb), float(msb)

    def buffer_bytes_of(self, mapping: str) -> int | None:
        """Bytes of the buffer ``mapping`` runs with, or None for the spec's own."""
        return dict(self.buffer_bytes or ()).get(mapping)


def _size_bytes(value: Any, key: str) -> int:
    from archsim.spec.load import _Bad, _size

    try:
        return _size(value, key)
    except _Bad as bad:
        raise ValueError(f"{bad.key}: {bad.message}") from None
