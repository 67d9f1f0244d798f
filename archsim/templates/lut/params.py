"""Parameters of the LUT tensor core template (the same dataclass the RTL generator takes).

A ``tile_m x tile_n x tile_k`` array of lookup-table units (LUT Tensor Core,
ISCA 2025; T-MAC): a precompute unit builds, for every group of ``group_k``
activations of a row, the table of all ``+-`` sums; the table is broadcast to
``tile_n`` columns and each column indexes it with ``group_k`` bits of one
weight bit-plane per cycle, shift-adding the planes (bit-serial, W bits = W
passes). The timing and value contract is in :mod:`archsim.templates.lut.tile`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from archsim.templates.base import TemplateParams

#: weight formats the datapath runs (codes and bit planes in :mod:`.tile`)
WEIGHT_FORMATS = ("int1", "ternary", "int2", "int3", "int4")
#: activation formats (int8: exact integer tables; fp16/bf16: fp32 tables and accumulation)
ACTIVATION_FORMATS = ("int8", "fp16", "bf16")
SCALE_MODES = ("none", "per_channel", "per_group")


def _all_weights() -> list[str]:
    return list(WEIGHT_FORMATS)


def _all_activations() -> list[str]:
    return list(ACTIVATION_FORMATS)


def _pos_int(obj, key: str) -> None:
    v = getattr(obj, key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{key}: expected a positive integer, got {v!r}")


@dataclass
class LutParams(TemplateParams):
    """Attributes
    ----------
    group_k : int
        Activations per table (K; the paper's default 4). 1..8.
    symmetric : bool
        True: store ``2**(K-1)`` entries and negate by the top index bit.
    tile_m, tile_n, tile_k : int
        Shape of the LUT array: ``tile_m`` activation rows share the
        precompute; ``tile_n`` weight columns look up per cycle; ``tile_k``
        must equal ``group_k``.
    precompute_entries_per_cycle : int
        Table entries the precompute unit produces per cycle.
    weight_formats, activation_formats : list[str]
        Formats the datapath is built for (subsets of WEIGHT_FORMATS /
        ACTIVATION_FORMATS).
    weight_format, activation_format : str
        The pair this instance runs by default (tiles may name another
        pair the datapath is built for).
    scale : str
        ``none``, ``per_channel`` (one fp32 scale per output column) or
        ``per_group`` (one fp32 scale per ``scale_group`` weights of a column).
    scale_group : int
        Weights per scale group along K (a multiple of ``group_k``).
    pipeline_cycles : int
        Fixed latency of the lookup / shift-add pipeline added to every tile. The RTL (rtl/lut) has
        3 stages (+ 1 per_group, + 2 per_channel); a cycle more builds its registered lookup, two
        more also its table register (for Fmax: docs/lut_rtl.md).
    precompute_pipeline_cycles : int
        Latency of the precompute unit (its pipeline depth): a step's tables
        are complete ``pre + precompute_pipeline_cycles`` cycles after its
        build starts (0: one combinational adder chain, as before).
    lookup_interleave : int
        Column blocks whose bit planes the lookup interleaves (``D``): plane q of blocks
        ``nb .. nb + D - 1`` one a cycle, then plane q - 1 of the same blocks, so that one column
        block's shift-add ``p = 2p + T`` has ``D`` cycles (room for a pipelined adder) and the sums
        keep their order (same values). A step's lookups take ``ceil(NB / D) * D * b`` cycles (a
        batch of fewer than ``D`` blocks idles the rest). 1: one block at a time, as before.
    """

    group_k: int = 4
    symmetric: bool = True
    tile_m: int = 2
    tile_n: int = 64
    tile_k: int = 4
    precompute_entries_per_cycle: int = 16
    weight_formats: list[str] = field(default_factory=_all_weights)
    activation_formats: list[str] = field(default_factory=_all_activations)
    weight_format: str = "ternary"
    activation_format: str = "int8"
    scale: str = "none"
    scale_group: int = 128
    pipeline_cycles: int = 3
    precompute_pipeline_cycles: int = 0
    lookup_interleave: int = 1

    def validate(self) -> None:
        for key in ("group_k", "tile_m", "tile_n", "tile_k", "precompute_entries_per_cycle", "scale_group",
                    "lookup_interleave"):
            _pos_int(self, key)
        if self.group_k > 8:
            raise ValueError(f"group_k: expected 1..8, got {self.group_k}")
        if self.tile_k != self.group_k:
            raise ValueError(f"tile_k: expected tile_k == group_k ({self.group_k}), got {self.tile_k}")
        if not isinstance(self.symmetric, bool):
            raise ValueError(f"symmetric: expected true or false, got {self.symmetric!r}")
        if self.symmetric and self.group_k < 2:
            raise ValueError("symmetric: expected false when group_k is 1")
        for key, allowed in (("weight_formats", WEIGHT_FORMATS), ("activation_formats", ACTIVATION_FORMATS)):
            v = getattr(self, key)
            if not isinstance(v, (list, tuple)) or not v or any(f not in allowed for f in v):
                raise ValueError(f"{key}: expected a non-empty list among {', '.join(allowed)}, got {v!r}")
        if self.weight_format not in self.weight_formats:
            raise ValueError(f"weight_format: expected one of {', '.join(self.weight_formats)}, "
                             f"got {self.weight_format!r}")
        if self.activation_format not in self.activation_formats:
            raise ValueError(f"activation_format: expected one of {', '.join(self.activation_formats)}, "
                             f"got {self.activation_format!r}")
        if self.scale not in SCALE_MODES:
            raise ValueError(f"scale: expected one of {', '.join(SCALE_MODES)}, got {self.scale!r}")
        if self.scale_group % self.group_k:
            raise ValueError(f"scale_group: expected a multiple of group_k ({self.group_k}), got {self.scale_group}")
        for key in ("pipeline_cycles", "precompute_pipeline_cycles"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{key}: expected a non-negative integer, got {v!r}")

    @property
    def table_entries(self) -> int:
        """Entries stored per table: ``2**(K-1)`` symmetric, else ``2**K``."""
        return 2 ** (self.group_k - 1) if self.symmetric else 2 ** self.group_k

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        """One row block of activations over one group, and one group of ``tile_n`` int4 weight columns."""
        need_in = self.tile_m * self.group_k * 2
        need_w = -(-self.tile_n * self.group_k * 4 // 8)
        return ({"input": need_in, "weight": need_w, "output": self.tile_m * self.tile_n * 8},
                f"one {self.tile_m}x{self.group_k} activation group and {self.tile_n} weight columns")

    def with_precision(self, weights: str, activations: str) -> "LutParams":
        """This core running ``weights`` x ``activations`` (must be among the built formats)."""
        if weights not in self.weight_formats or activations not in self.activation_formats:
            raise ValueError(f"precision: the lut core runs weights {'/'.join(self.weight_formats)} x activations "
                             f"{'/'.join(self.activation_formats)}, got {weights}/{activations}")
        return replace(self, weight_format=weights, activation_format=activations)

    def reshapes(self, macs_per_cycle: float) -> list[dict]:
        """``tile_m x tile_n`` (``tile_m`` <= 16) with ``tile_m * tile_n * group_k / b == macs_per_cycle``
        at this core's weight format (``b`` bit planes), each with the spec's own ``precompute_fusion``
        and with it off and on, as overrides; the precompute unit keeps its entries per cycle per
        activation row (the table build stays as hidden as in this core). The shape closest to this
        one's aspect ratio first (:func:`archsim.templates.base.reshapes`); [] if none has that peak."""
        from archsim.templates.lut.tile import PLANES

        cells = macs_per_cycle * PLANES[self.weight_format] / self.group_k  # tile_m * tile_n
        n_cells = int(round(cells))
        if n_cells < 1 or abs(n_cells - cells) > 1e-9:
            return []
        shapes = [(m, n_cells // m) for m in range(1, min(16, n_cells) + 1) if n_cells % m == 0]
        aspect = self.tile_m / self.tile_n
        shapes.sort(key=lambda mn: abs(math.log(mn[0] / mn[1] / aspect)))
        out = []
        for m, n in shapes:
            shape = {"tile_m": m, "tile_n": n,
                     "precompute_entries_per_cycle": max(1, round(self.precompute_entries_per_cycle * m / self.tile_m))}
            out += [shape, {**shape, "precompute_fusion": False}, {**shape, "precompute_fusion": True}]
        return out
