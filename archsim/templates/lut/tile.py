"""The LUT tensor core's tile and its timing and value contract (shared with rtl/lut/).

A :class:`LutTile` is the ``tile`` of a :class:`archsim.program.Compute` on unit
``"array"`` (the LUT array). It computes ``out[M, N] (+)= A[M, K] @ W[K, N]`` with low-bit integer
weights W and int8 / fp16 / bf16 activations A, K a multiple of ``group_k``.

Operands (numpy arrays)
-----------------------
- ``"input"``: A, shape ``(M, K)``: int8 -> integers (any int dtype); fp16 / bf16
  -> their values as float32 (each exactly representable in its format);
- ``"weight"``: W, shape ``(K, N)``, integer values: int1 in {-1, +1}; ternary
  in {-1, 0, +1}; intb in ``[-2**(b-1), 2**(b-1) - 1]``;
- ``"scale"`` (scale != none): float32, shape ``(N,)`` for ``per_channel``,
  ``(K // scale_group, N)`` for ``per_group`` (then K is a multiple of
  ``scale_group``);
- ``"psum"`` (``accumulate``): the existing output, shape ``(M, N)``.

Weights (integer codes): int1 = one bit b -> value +1 if b else -1 (b=1 plane);
ternary = {-1,0,+1} stored as int2 two's complement (b=2 planes); intb = b-bit
two's complement (b planes).

Bit planes (offline layout): for b >= 2, offset binary ``u = w + 2**(b-1)``,
plane i holds bit i of u; with symmetric tables each plane bit selects +a
(bit 1) or -a (bit 0). Identity: ``2w + 1 = sum_i 2**i s_i`` with
``s_i = 2 u_i - 1``, so ``sum_j a_j w_j = (sum_i 2**i T[idx_i] - S) / 2`` with
``S = sum_j a_j``. For int1: ``sum_j a_j w_j = T[idx_0]`` (plane bit = b).

Table of a group of K activations a_0..a_{K-1} (one M row, one K-group)::

    T[idx] = sum_{j=0..K-1} (bit_j(idx) ? +a_j : -a_j)

summed in j order (fp: first term exact, then each add rounded RNE in the
arithmetic type). ``T[~idx] == -T[idx]`` exactly (also in fp: same order, all
signs flipped), so with ``symmetric`` only idx with bit K-1 == 1 are stored
(``2**(K-1)`` entries), and a lookup with bit K-1 == 0 returns
``-T[idx ^ (2**K - 1)]``. ``S = T[2**K - 1]``.

Arithmetic type: int8 activations -> exact integers (int64 in numpy); fp16/bf16
activations -> decoded exactly, then fp32 with RNE on every add (np.float32
arithmetic is the reference).

Group result, bit-serial MSB first (b planes, idx_i formed from the K weights'
plane-i bits, bit j = weight j)::

    p = T[idx_{b-1}]; for i = b-2 .. 0: p = rne(2*p + T[idx_i])     (int: exact)
    int1: r = p.   b >= 2: r = rne(p - S) * 0.5

(fp: the ``* 0.5`` is exact barring subnormals, computed as an fp32 multiply
RNE; int: ``(p - S) >> 1``, exact since p - S is even).

Output accumulator per (m, n): ``acc = rne(acc + r_g)`` over the K-groups in K
order, from 0 (or from ``psum`` when ``accumulate``). Scales:

- ``per_group``: r_g is multiplied by its fp32 scale (RNE; an int r_g is first
  converted to fp32, exact while ``|r_g| < 2**24``) before it is added; the
  accumulator and output are fp32 even for int activations;
- ``per_channel``: ``out = rne(acc * scale[n])`` once at the end (an int acc is
  converted to fp32 RNE first), acc from 0; with ``accumulate`` the output
  buffer then adds the existing output: ``out = rne(psum + rne(acc * scale[n]))``
  (the scale applies to this tile's sum only);
- ``none``: int activations give an exact integer output (int64), fp
  activations fp32.

Cycles (exact; fast == detailed == RTL)
---------------------------------------
Steps: for mb in ``ceil(M / tile_m)`` row blocks, for g in ``K / group_k``
groups (row-block-major, then K):

- precompute of the tables of (mb, g): ``pre = ceil(tile_m * E /
  precompute_entries_per_cycle)`` cycles, ``E = 2**(K-1)`` if symmetric else
  ``2**K`` (a partial row block takes a full block's time), plus the
  precompute unit's latency ``precompute_pipeline_cycles`` (its last entry
  lands that many cycles after it was read);
- lookup of (mb, g): ``look = ceil(N / tile_n) * b`` cycles (one bit plane of
  ``tile_n`` columns per cycle); with ``lookup_interleave`` D > 1 the column
  blocks go in batches of D, plane by plane (MSB first) and block by block within a plane, and a
  batch of fewer than D blocks idles the rest: ``look = ceil(ceil(N / tile_n) / D) * D * b``
  (the same sums in the same order: values do not change);
- tables are double-buffered: the precompute of step s+1 overlaps the lookup
  of step s::

    tile_cycles = pre + (steps - 1) * max(pre, look) + look + pipeline_cycles
    steps = ceil(M / tile_m) * K / group_k

When the mapper fuses the precompute into the activations' producer, the tile
has ``precomputed=True`` and ``pre = 0`` for all steps (the tables arrive with
the activations; their bytes are counted as activation traffic).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

import numpy as np

#: bit planes (passes) per weight format
PLANES = {"int1": 1, "ternary": 2, "int2": 2, "int3": 3, "int4": 4}
#: value range [lo, hi] per weight format
WEIGHT_RANGE = {"int1": (-1, 1), "ternary": (-1, 1), "int2": (-2, 1), "int3": (-4, 3), "int4": (-8, 7)}
#: bits of one stored table entry per activation format's arithmetic (fp: fp32)
FP_ENTRY_BITS = 32


@dataclass(frozen=True, slots=True)
class LutTile:
    """``out[m, n] (+)= A[m, k] @ W[k, n]`` on the LUT array (``k`` a multiple of ``group_k``).

    ``weight_format`` / ``activation_format``: the pair this tile runs (among
    the params' built formats). ``accumulate``: add into ``psum``.
    ``precomputed``: the tables arrive with the activations (fused
    precompute): no table-build cycles.
    """

    m: int
    k: int
    n: int
    weight_format: str = "ternary"
    activation_format: str = "int8"
    accumulate: bool = False
    precomputed: bool = False

    @property
    def unit(self) -> str:
        return "array"

    @property
    def planes(self) -> int:
        return PLANES[self.weight_format]

    def check(self, params) -> None:
        """Raise ``ValueError`` if this tile cannot run on ``params``."""
        for key in ("m", "k", "n"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.k % params.group_k:
            raise ValueError(f"k: expected a multiple of group_k ({params.group_k}), got {self.k}")
        if self.weight_format not in params.weight_formats:
            raise ValueError(f"weight_format: expected one of {', '.join(params.weight_formats)}, "
                             f"got {self.weight_format!r}")
        if self.activation_format not in params.activation_formats:
            raise ValueError(f"activation_format: expected one of {', '.join(params.activation_formats)}, "
                             f"got {self.activation_format!r}")
        if params.scale == "per_group" and self.k % params.scale_group:
            raise ValueError(f"k: expected a multiple of scale_group ({params.scale_group}) with per_group scales, "
                             f"got {self.k}")


def steps(tile: LutTile, params) -> int:
    """Table steps of a tile: row blocks x K-groups."""
    return ceil(tile.m / params.tile_m) * (tile.k // params.group_k)


def precompute_cycles(tile: LutTile, params) -> int:
    """Cycles to build the tables of one step, the precompute unit's latency included (0 when
    ``precomputed``)."""
    if tile.precomputed:
        return 0
    return (ceil(params.tile_m * params.table_entries / params.precompute_entries_per_cycle)
            + params.precompute_pipeline_cycles)


def lookup_cycles(tile: LutTile, params) -> int:
    """Cycles of the lookups of one step: every column block, one bit plane per cycle, in batches of
    ``lookup_interleave`` blocks (a batch of fewer idles the rest)."""
    d = params.lookup_interleave
    return ceil(ceil(tile.n / params.tile_n) / d) * d * tile.planes


def tile_cycles(tile: LutTile, params) -> int:
    """Closed-form cycles of one tile (module docstring)."""
    tile.check(params)
    s = steps(tile, params)
    pre, look = precompute_cycles(tile, params), lookup_cycles(tile, params)
    return pre + (s - 1) * max(pre, look) + look + params.pipeline_cycles


def table_entry_bits(params, activation_format: str) -> int:
    """Bits of one stored table entry: fp32 for fp activations; for int8 the
    narrowest two's complement holding ``+-K * 128``."""
    if activation_format == "int8":
        return (params.group_k * 128).bit_length() + 1
    return FP_ENTRY_BITS


def weight_planes(weight: np.ndarray, weight_format: str) -> np.ndarray:
    """The offline bit-plane layout: ``(b, K, N)`` uint8 bits, plane i = bit i of
    the code (int1: ``w == +1``; b >= 2: offset binary ``w + 2**(b-1)``)."""
    w = np.asarray(weight, dtype=np.int64)
    lo, hi = WEIGHT_RANGE[weight_format]
    if w.size and (w.min() < lo or w.max() > hi or (weight_format == "int1" and np.any(w == 0))):
        raise ValueError(f"weight: values outside {weight_format}")
    if weight_format == "int1":
        return (w > 0).astype(np.uint8)[None]
    b = PLANES[weight_format]
    u = w + (1 << (b - 1))
    return np.stack([((u >> i) & 1).astype(np.uint8) for i in range(b)])


def weight_bytes(k: int, n: int, weight_format: str) -> int:
    """Bytes of a ``k x n`` weight block in the bit-plane layout (b planes of k*n bits)."""
    return ceil(PLANES[weight_format] * k * n / 8)
