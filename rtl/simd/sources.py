"""Tiles + operands to replay on the SIMD RTL (``archsim rtl cosim --source``).

Items are ``(SimdTile, operands)`` with operands as the contract names them
(``input`` / ``weight`` codes, ``scale`` fp32, ``psum``):

- ``"random"``: random small tiles cycling through every (weights, activations)
  mode of the build (or the ones in ``modes=``), random group sizes (0, a
  multiple of the lanes, any size), random ``accumulate``; codes are uniform
  over the finite codes of each format, and one tile in eight draws from every
  code (inf / NaN / NaR included);
- ``"program"``: the first Compute commands of ``mappers.compile`` of one layer
  of a zoo workload (``workload=``, ``layer=``), with random operands; a tile
  keeps its K, formats, group size and ``accumulate`` and is cropped to the
  first outputs that fit the RTL's default buffers (:func:`crop`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.errors import WorkloadError


def _finite_codes(fmt: str) -> np.ndarray:
    from archsim.numerics import get_format

    f = get_format(fmt)
    codes = np.arange(1 << f.bits, dtype=np.int64)
    return codes[np.isfinite(f.decode(codes))]


def random_codes(rng, fmt: str, shape, specials: bool) -> np.ndarray:
    from archsim.numerics import get_format

    bits = get_format(fmt).bits
    if specials:
        return rng.integers(0, 1 << bits, size=shape, dtype=np.int64)
    pool = _finite_codes(fmt)
    return pool[rng.integers(0, len(pool), size=shape)]


def random_scales(rng, shape) -> np.ndarray:
    """fp32 scales over a wide range of magnitudes, both signs, now and then a zero or a power of two."""
    s = rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, size=shape).astype(np.float64))
    s = np.where(rng.random(shape) < 0.05, 0.0, s)
    s = np.where(rng.random(shape) < 0.1, np.exp2(rng.integers(-8, 8, size=shape).astype(np.float64)), s)
    return s.astype(np.float32)


def operands_for(tile, params, rng, specials: bool = False) -> dict[str, np.ndarray]:
    from archsim.templates.simd.tile import exact_integer_output

    ops = {
        "input": random_codes(rng, tile.activation_format, (tile.m, tile.k), specials),
        "weight": random_codes(rng, tile.weight_format, (tile.k, tile.n), specials),
    }
    if tile.group_size:
        ops["scale"] = random_scales(rng, (tile.scale_groups(), tile.n))
    if tile.accumulate:
        if exact_integer_output(tile, params):
            ops["psum"] = rng.integers(-(1 << 40), 1 << 40, size=(tile.m, tile.n), dtype=np.int64)
        else:
            ops["psum"] = (rng.standard_normal((tile.m, tile.n)) * 64).astype(np.float32)
    return ops


def random_tile(params, rng, weight_format: str, activation_format: str, max_k: int = 24,
                max_outputs: int | None = None):
    from archsim.templates.simd.tile import SimdTile

    lanes = params.lanes(weight_format, activation_format)
    k = int(rng.integers(1, max_k + 1))
    most = max_outputs or 2 * params.pes
    m = int(rng.integers(1, max(1, most // 2) + 1))
    n = int(rng.integers(1, max(1, most // m) + 1))
    kind = int(rng.integers(0, 4))
    g = {0: 0, 1: lanes * int(rng.integers(1, 4)), 2: int(rng.integers(1, k + 1)), 3: int(rng.integers(1, 40))}[kind]
    return SimdTile(m, k, n, weight_format, activation_format, g, accumulate=bool(rng.integers(0, 2)))


def mode_order(params) -> list[tuple[str, str]]:
    """Every pair of ``params``: the template's representative precision modes first
    (``archsim.templates.simd.conformance.MODE_PAIRS``), then the rest."""
    from archsim.templates.simd.conformance import mode_pairs

    first = mode_pairs(params)
    return first + [p for p in params.pairs() if p not in first]


def random_items(params, count: int, rng, modes: list[tuple[str, str]] | None = None, max_k: int = 24) -> list:
    pairs = modes or mode_order(params)
    items = []
    for i in range(count):
        wf, af = pairs[i % len(pairs)]
        tile = random_tile(params, rng, wf, af, max_k=max_k)
        items.append((tile, operands_for(tile, params, rng, specials=(i % 8 == 7))))
    return items


def cosim_items(params, source: str = "random", tiles: int = 8, seed: int = 0, max_stream: int = 16,
                arch: Any = None, workload: str | None = None, layer: str | None = None,
                modes: list[tuple[str, str]] | None = None) -> list:
    rng = np.random.default_rng(seed)
    if source == "random":
        return random_items(params, tiles, rng, modes=modes, max_k=max(1, max_stream) + 8)
    if source == "program":
        if arch is None:
            raise WorkloadError("source 'program' needs the arch spec")
        from rtl.api import compile_layer

        cmds = compile_layer(arch, workload or "resnet50", layer)[:tiles]
        items = []
        for cmd in cmds:
            tile = crop(cmd.tile, params)
            items.append((tile, operands_for(tile, params, rng)))
        if not items:
            raise WorkloadError(f"{workload}: no compute tiles")
        return items
    raise WorkloadError(f"unknown co-simulation source {source!r}; the simd RTL has: random, program")


def crop(tile, params, op_depth: int = 256, out_depth: int = 32):
    """``tile`` with M and N cut to its first outputs that fit the RTL buffers (K, formats, G kept)."""
    from dataclasses import replace

    from archsim.templates.simd.tile import lanes

    L = lanes(tile, params)
    steps = sum(-(-n // L) for _s, n in tile.groups(params.dequant))
    n = min(tile.n, params.pes)
    rounds = max(1, min(out_depth, op_depth // max(1, steps)))
    m = max(1, min(tile.m, rounds * params.pes // n))
    return replace(tile, m=m, n=n)
