"""Level-harness hook of the simd template: small configurations and random tiles in every precision mode.

Edge cases come first (the smallest tile; a partial last round with a partial last
group and ``accumulate``), then one tile per precision mode the configuration
runs (:data:`MODE_PAIRS`), then random legal pairs. Operand codes are drawn
uniformly over each format's finite codes (bf16 limited to ``2**-30 .. 2**30``
so that fp32 sums stay finite: the harness compares with ``np.array_equal``;
NaN / inf propagation is tested in ``tests/test_simd_models.py`` on bit patterns).
"""
from __future__ import annotations

import numpy as np

from archsim.numerics import get_format
from archsim.templates.simd import bitserial
from archsim.templates.simd.tile import SimdTile, exact_integer_output

base_arch = "simd-edge"
#: small enough to co-simulate: 2 PEs of 16-bit lanes
rtl_arch: dict = {"pes": 2, "lane_bits": 16, "pipeline_cycles": 4}

#: one (weights, activations) pair per precision mode: each lane width of integers,
#: small floats, IEEE halves and posits, and MixPE's integer-weight x float-activation pairs
MODE_PAIRS = (
    ("int8", "int8"), ("int4", "int4"), ("int2", "int2"), ("int16", "int16"),
    ("fp4_e2m1", "fp4_e2m1"), ("fp8_e4m3", "fp8_e4m3"), ("fp8_e5m2", "fp8_e5m2"),
    ("fp16", "fp16"), ("bf16", "bf16"), ("posit8_0", "posit8_0"), ("posit16_1", "posit16_1"),
    ("int4", "fp8_e4m3"), ("int4", "fp16"), ("int8", "bf16"), ("int2", "fp8_e5m2"), ("fp4_e2m1", "int8"),
)


#: BitMoD's bit-serial PE (``pe: bitmod``), small enough to co-simulate its array RTL
#: (tests/test_template_levels.py, tests/test_simd_bitmod_array.py)
BITMOD_ARCH: dict = {"pes": 3, "lane_bits": 16, "pe": "bitmod", "group_size": 16, "pipeline_cycles": 2,
                     "formats": ["fp4_er_pos", "fp4_ea_neg", "fp3_ea_pos", "int8", "int4"],
                     "weight_format": "fp4_er_pos", "activation_format": "int8"}
#: the same array with BitMoD's FP16 activations beside int8 ones (rtl/simd/bitmod_fp16.py; 2 fp16 lanes)
BITMOD_FP16_ARCH: dict = {**BITMOD_ARCH, "lane_bits": 32, "formats": ["fp4_er_pos", "fp4_ea_neg", "fp3_ea_pos", "int8",
                                                                      "fp16"], "activation_format": "fp16"}

#: the integer lanes' dot product in carry-save form (``pe_style: tpe``, docs/tpe.md): every integer lane
#: width and one float format (lanes that hold both), small enough to co-simulate (tests/test_template_levels.py)
TPE_ARCH: dict = {"pes": 2, "lane_bits": 16, "pe_style": "tpe", "pipeline_cycles": 10,
                  "formats": ["int2", "int4", "int8", "int16", "fp8_e4m3"]}


def conformance_archs() -> list[dict]:
    return [
        {"pes": 4, "lane_bits": 16},
        {"pes": 3, "lane_bits": 16, "multiplier": "bit_serial", "pipeline_cycles": 2},
        {"pes": 2, "lane_bits": 16, "multiplier": "shift_add", "pipeline_cycles": 0},
        {"pes": 4, "lane_bits": 16, "dequant": True, "group_size": 8},
        {"pes": 5, "lane_bits": 32, "pipeline_cycles": 1},
        dict(BITMOD_ARCH),
        dict(TPE_ARCH),
        {"pes": 2, "lane_bits": 8, "formats": ["int2", "int4", "int8", "fp4_e2m1", "fp8_e4m3", "fp8_e5m2",
                                               "posit8_0"]},
    ]


def mode_pairs(params) -> list[tuple[str, str]]:
    """The :data:`MODE_PAIRS` this configuration runs."""
    return [pair for pair in MODE_PAIRS if not params.pair_problem(*pair)]


def _codes(fmt_name: str, rng: np.random.Generator, shape, max_mag: float = 2.0 ** 30) -> np.ndarray:
    """Uniform random finite codes of a format with magnitudes up to ``max_mag``
    (bf16 also at least 2**-30, or zero)."""
    fmt = get_format(fmt_name)
    codes = np.arange(1 << fmt.bits, dtype=np.int64)
    values = fmt.decode(codes)
    ok = np.isfinite(values) & (np.abs(values) <= max_mag)
    if fmt_name == "bf16":
        mag = np.abs(values)
        ok &= (mag == 0) | ((mag >= 2.0 ** -30) & (mag <= 2.0 ** 30))
    pool = codes[ok]
    return pool[rng.integers(0, len(pool), size=shape)].astype(np.uint32)


def make_operands(tile: SimdTile, params, rng: np.random.Generator) -> dict:
    """Random codes, scales and (with ``accumulate``) a psum of the output dtype."""
    ops = {"input": _codes(tile.activation_format, rng, (tile.m, tile.k)),
           # dequant: weights x scales (<= 8) stay within fp16's range
           "weight": _codes(tile.weight_format, rng, (tile.k, tile.n), 2.0 ** 12 if params.dequant else 2.0 ** 30)}
    if tile.group_size:
        mant = rng.uniform(1.0, 2.0, size=(tile.scale_groups(), tile.n))
        exp = rng.integers(-10, 3, size=mant.shape)
        sign = rng.choice([-1.0, 1.0], size=mant.shape)
        ops["scale"] = (sign * np.ldexp(mant, exp)).astype(np.float32)
    if tile.accumulate:
        if exact_integer_output(tile, params):
            ops["psum"] = rng.integers(-(1 << 40), 1 << 40, size=(tile.m, tile.n), dtype=np.int64)
        else:
            ops["psum"] = (rng.standard_normal((tile.m, tile.n)) * 100).astype(np.float32)
    return ops


def sample_tiles(rng: np.random.Generator, params, count: int) -> list:
    if bitserial.is_bitmod(params):
        return bitserial.sample_tiles(rng, params, count)
    pairs = params.pairs()
    modes = mode_pairs(params)
    P = params.pes
    first, second = modes[-1], modes[-2] if len(modes) > 1 else modes[-1]
    specs = [
        SimdTile(1, 1, 1, *first),  # the smallest tile
        # a partial last round, a partial last group, accumulate
        SimdTile(2, 13, P + 1 if P > 1 else 3, *second, group_size=5, accumulate=True),
    ]
    for w, a in modes[:-2]:
        specs.append(_random_tile(rng, w, a, P))
    while len(specs) < count:
        w, a = pairs[int(rng.integers(0, len(pairs)))]
        specs.append(_random_tile(rng, w, a, P))
    specs = specs[:count]
    return [(t, make_operands(t, params, rng)) for t in specs]


def _random_tile(rng: np.random.Generator, w: str, a: str, pes: int) -> SimdTile:
    m = int(rng.integers(1, 5))
    n = int(rng.integers(1, max(3, pes + 2)))
    k = int(rng.integers(1, 41))
    g = int(rng.choice([0, 0, int(rng.integers(1, k + 1)), 4, 16]))
    return SimdTile(m, k, n, w, a, group_size=g, accumulate=bool(rng.integers(0, 2)))
