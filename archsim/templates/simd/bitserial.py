"""BitMoD's bit-serial PE (``pe: bitmod`` on the simd template): timing, values and actions.

BitMoD (Chen et al., HPCA 2025, arXiv:2411.11745; RTL in yc2367/BitMoD ``hardware/pe``,
simulator in abdelfattah-lab/BitMoD-HPCA-25 ``bitmod_sim``) runs every weight datatype of its
per-group mixture on one bit-serial PE through a *unified representation*: a weight is
converted to a signed fixed-point value with one fraction bit (``w2 = 2 * value``, the
authors' ``fpcvt``), whose magnitude in every 3- and 4-bit BitMoD type has at most two set
bits (FP4: 1, 2, 3, 4, 6, 8, 12 and the specials 10 / 16; FP3 x2: 2, 4, 8 and 6 / 12). The
PE processes one such *term* (a sign and a power of two) per cycle, so every 3- and 4-bit
BitMoD weight takes **2 cycles** (the authors' reader: two stages for FP4; their simulator's
``pe_latency = ceil(floor(w_prec) / 2)`` = 2 at 3.0625 and 4.0625 bits). The group's 2-bit
datatype selector only changes what the ``-0`` code decodes to (the special value).

Per-group partial sums are *dequantized bit-serially* (the authors' ``dequant.v``): at the
end of a group the exact partial sum is handed to a dequantization unit that multiplies it
by the group's 8-bit unsigned scale code one scale bit per cycle, MSB first
(``acc = 2*acc + (bit ? psum : 0)``, ``SCALE_BITS`` = 8 cycles, the paper's 8 bits per
group of 128: ``w_prec = b + 8/128``) and adds the product into the output accumulator. It
runs beside the next group's terms, so it costs cycles only when a group is shorter than
8 cycles and at the end of each output (the drain).

Contract of a tile on ``pe: bitmod`` (fast closed form == detailed cycle walk == RTL
:mod:`rtl.simd.bitserial`)
------------------------------------------------------------------------------------
- weight format: one of the eight BitMoD types (:data:`archsim.numerics._bitmod.MIXTURES`);
  operand ``"dtype"`` (optional, shape ``(ceil(K/G), N)``, values 0..3) selects each group's
  type in ``MIXTURES[wb]``; without it every group is the tile's weight format. Or a
  two's-complement integer (int2/4/8/16: the KV cache, activations as weights), decoded into
  radix-4 Booth digits, LSB first, ``ceil(wb / 2)`` terms per weight (the authors' INT8 / INT6
  reader modes: 4 / 3 stages, ``pe_latency = ceil(prec / 2)``);
- activations: two's-complement integers (int2/4/8/16), or the paper's FP16 aligned to the lanes'
  maximum exponent into a block-float group accumulator (:mod:`archsim.templates.simd.bitmod_fp16`;
  RTL :mod:`rtl.simd.bitmod_fp16`);
- ``G > 0``: operand ``"scale"``, unsigned 8-bit integer scale codes (0..255), ``(ceil(K/G), N)``;
  ``G = 0`` (no group scale, e.g. attention): one group of K whose partial sum bypasses the
  dequantization unit straight into the output (no scale, no drain);
- lanes ``L = lane_bits // ab`` (one activation per lane; the paper's PE: 4 lanes);
- values, exact int64 in units of 1/2 (one fraction bit, the unified representation)::

      out[m, n] = psum[m, n] + sum_g scale[g, n] * sum_{k in g} a[m, k] * w2[k, n]   (scale = 1 if G = 0)

- cycles per output: ``tc_g = terms * ceil(len_g / L)`` term cycles per group (``terms`` = 2 for
  BitMoD types, ``ceil(wb / 2)`` for integers); ``T = tc_0 + sum_{g >= 1} max(tc_g, 8) + 8``
  (``T = tc_0`` when G = 0); ``tile_cycles = ceil(M*N / P) * T + pipeline_cycles``.
"""
from __future__ import annotations

import numpy as np

from archsim.numerics import bits_of, get_format
from archsim.numerics._bitmod import MIXTURES
from archsim.templates.simd import bitmod_fp16, bitmod_fp16_reference

#: cycles per BitMoD weight: every 3- and 4-bit BitMoD value x2 has at most two set bits
TERMS_PER_WEIGHT = 2
#: bits of the per-group scale code, one per dequantization cycle
SCALE_BITS = 8
#: weight formats the bit-serial PE decodes
BITMOD_FORMATS = tuple(name for bits in sorted(MIXTURES) for name in MIXTURES[bits])
INT_FORMATS = ("int2", "int4", "int8", "int16")
WEIGHT_FORMATS = BITMOD_FORMATS + INT_FORMATS
ACTIVATION_FORMATS = INT_FORMATS + ("fp16",)  # fp16: block-float alignment (archsim.templates.simd.bitmod_fp16)


def terms_per_weight(weight_format: str) -> int:
    """Cycles (terms) per weight: 2 for a BitMoD type, ``ceil(wb / 2)`` radix-4 Booth digits for an integer."""
    return TERMS_PER_WEIGHT if weight_format in BITMOD_FORMATS else -(-bits_of(weight_format) // 2)


def is_bitmod(params) -> bool:
    """True when the simd params select BitMoD's bit-serial PE."""
    return params.pe == "bitmod"


def pair_problem(params, weight_format: str, activation_format: str) -> str:
    """Why the bit-serial PE cannot run the pair ("" if it can)."""
    if weight_format not in WEIGHT_FORMATS:
        return f"pe bitmod needs a BitMoD or integer weight type ({', '.join(WEIGHT_FORMATS)}), got {weight_format}"
    if activation_format not in ACTIVATION_FORMATS:
        return f"pe bitmod needs integer or fp16 activations ({', '.join(ACTIVATION_FORMATS)}), got {activation_format}"
    if params.lane_bits // bits_of(activation_format) < 1:
        return f"{activation_format} needs more than lane_bits={params.lane_bits} bits"
    return ""


def lanes(params, activation_format: str) -> int:
    return params.lane_bits // bits_of(activation_format)


def check_tile(tile, params) -> None:
    """Nothing beyond the pair (:func:`pair_problem`): every group size runs."""


# ------------------------------------------------------------------ weights: the unified representation

def w2_table(bits: int) -> np.ndarray:
    """``(4, 2**bits)`` int64: ``2 * value`` of each code in each type of ``MIXTURES[bits]``."""
    rows = [get_format(name).decode(np.arange(1 << bits)) * 2 for name in MIXTURES[bits]]
    table = np.asarray(rows)
    assert np.array_equal(table, np.round(table)), "BitMoD values x2 must be integers"
    return table.astype(np.int64)


def term_split(w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first term, second term) of each ``w2``: signed powers of two (or 0) summing to ``w2``,
    the first the highest set bit of ``|w2|``. Raises if a magnitude has more than two set bits."""
    w2 = np.asarray(w2, np.int64)
    mag = np.abs(w2)
    hi = np.where(mag > 0, 1 << np.floor(np.log2(np.maximum(mag, 1))).astype(np.int64), 0)
    lo = mag - hi
    if np.any(lo & (lo - 1)):
        raise ValueError("a BitMoD weight with more than two set bits cannot run in two terms")
    sign = np.sign(w2)
    return sign * hi, sign * lo


def booth_digits(w: np.ndarray, bits: int) -> list[np.ndarray]:
    """Radix-4 Booth digits (each in -2..2), LSB first, of two's-complement ``w`` of ``bits`` bits:
    ``d_i = -2 b_{2i+1} + b_{2i} + b_{2i-1}`` with ``b_{-1} = 0``; ``sum d_i 4^i = w``."""
    u = np.asarray(w, np.int64) & ((1 << bits) - 1)
    bit = lambda i: (u >> i) & 1 if 0 <= i < bits else np.zeros_like(u)  # noqa: E731
    top = lambda i: (u >> (bits - 1)) & 1 if i >= bits else bit(i)  # sign extension  # noqa: E731
    return [-2 * top(2 * i + 1) + top(2 * i) + (bit(2 * i - 1) if i else 0) for i in range(-(-bits // 2))]


def weight_terms(tile, operands: dict) -> list[np.ndarray]:
    """The terms of each weight in the order the PE runs them, each ``(K, N)`` int64, a signed power
    of two or 0 in units of 1/2, summing to ``w2``: (highest bit, the other) for a BitMoD type,
    ``2 * d_i * 4^i`` per Booth digit for an integer."""
    if tile.weight_format in BITMOD_FORMATS:
        return list(term_split(weights_x2(tile, operands)))
    codes = np.asarray(operands["weight"]).astype(np.int64)
    bits = bits_of(tile.weight_format)
    return [2 * d * (4 ** i) for i, d in enumerate(booth_digits(codes, bits))]


def selectors(tile, operands: dict) -> np.ndarray:
    """The per-group datatype selector ``(groups, N)``: operand ``"dtype"``, else the tile's type
    (always 0 for an integer weight, which has one decoding)."""
    groups = max(1, tile.scale_groups())
    if tile.weight_format not in BITMOD_FORMATS:
        return np.zeros((groups, tile.n), np.int64)
    if "dtype" in operands and operands["dtype"] is not None:
        sel = np.asarray(operands["dtype"]).astype(np.int64)
        if sel.shape != (groups, tile.n) or sel.min(initial=0) < 0 or sel.max(initial=0) > 3:
            raise ValueError(f"dtype: expected selectors 0..3 of shape ({groups}, {tile.n}), got shape {sel.shape}")
        return sel
    index = MIXTURES[bits_of(tile.weight_format)].index(tile.weight_format)
    return np.full((groups, tile.n), index, np.int64)


def weights_x2(tile, operands: dict) -> np.ndarray:
    """``(K, N)`` int64 weights in the unified representation (``2 * value`` of each group's type)."""
    codes = np.asarray(operands["weight"]).astype(np.int64)
    if tile.weight_format not in BITMOD_FORMATS:
        return 2 * get_format(tile.weight_format).decode(codes).astype(np.int64)
    table = w2_table(bits_of(tile.weight_format))
    sel = selectors(tile, operands)[np.arange(tile.k) // (tile.group_size or tile.k), :]
    return table[sel, codes]


def scale_codes(tile, operands: dict) -> np.ndarray | None:
    """``(groups, N)`` int64 scale codes (None when G = 0); ``ValueError`` unless integers in 0..255."""
    if not tile.group_size:
        return None
    s = np.asarray(operands["scale"])
    si = s.astype(np.int64)
    if s.shape != (tile.scale_groups(), tile.n) or np.any(si != s) or si.min(initial=0) < 0 \
            or si.max(initial=0) >= 1 << SCALE_BITS:
        raise ValueError(f"scale: pe bitmod expects {SCALE_BITS}-bit unsigned integer codes of shape "
                         f"({tile.scale_groups()}, {tile.n}), got {s.dtype} shape {s.shape}")
    return si


def activations(tile, operands: dict) -> np.ndarray:
    return get_format(tile.activation_format).decode(np.asarray(operands["input"])).astype(np.int64)


# ------------------------------------------------------------------ timing

def group_term_cycles(tile, params) -> list[int]:
    L, terms = lanes(params, tile.activation_format), terms_per_weight(tile.weight_format)
    return [terms * -(-length // L) for _start, length in tile.groups()]


def output_cycles(tile, params) -> int:
    """Cycles of one output: ``tc_0 + sum_{g>=1} max(tc_g, SCALE_BITS) + SCALE_BITS`` (``tc_0`` if G = 0)."""
    tc = group_term_cycles(tile, params)
    if not tile.group_size:
        return tc[0]
    return tc[0] + sum(max(c, SCALE_BITS) for c in tc[1:]) + SCALE_BITS


def tile_cycles(tile, params) -> int:
    return -(-tile.outputs // params.pes) * output_cycles(tile, params) + params.pipeline_cycles


# ------------------------------------------------------------------ values (fast: whole tile at once)

def tile_values(tile, operands: dict, params) -> np.ndarray:
    if tile.activation_format == bitmod_fp16.FP16:  # block-float alignment, fp32 output
        return bitmod_fp16.tile_values(tile, operands, params, weight_terms(tile, operands),
                                       scale_codes(tile, operands), lanes(params, tile.activation_format))
    a, w2, scale = activations(tile, operands), weights_x2(tile, operands), scale_codes(tile, operands)
    out = (np.asarray(operands["psum"], np.int64).copy() if tile.accumulate
           else np.zeros((tile.m, tile.n), np.int64))
    for g, (start, length) in enumerate(tile.groups()):
        part = a[:, start:start + length] @ w2[start:start + length, :]
        out += part if scale is None else part * scale[g][None, :]
    return out


# ------------------------------------------------------------------ detailed: the PE's cycles, walked

def detailed_tile(tile, operands: dict, params) -> tuple[np.ndarray, int]:
    """Cycle by cycle, vectorized over a round's PEs: two term cycles per lane step, the group
    hand-off to the dequantization unit (waiting while it is busy), 8 dequantization cycles
    beside the next group, the drain after the last group."""
    fp16 = tile.activation_format == bitmod_fp16.FP16  # block-float group accumulator, fp32 output
    out_dtype = np.float32 if fp16 else np.int64
    if fp16:
        a_parts = bitmod_fp16.fp16_parts(operands["input"])
    else:
        a = activations(tile, operands)
    scale = scale_codes(tile, operands)
    terms_kn = weight_terms(tile, operands)
    L, N, P = lanes(params, tile.activation_format), tile.n, params.pes
    psum_in = np.asarray(operands["psum"], out_dtype) if tile.accumulate else None
    out = np.zeros((tile.m, tile.n), out_dtype)
    cycles = 0
    for r in range(-(-tile.outputs // P)):
        o = np.arange(r * P, min(tile.outputs, (r + 1) * P))
        mi, ni = o // N, o % N
        acc_out = psum_in[mi, ni].copy() if psum_in is not None else np.zeros(len(o), out_dtype)
        dq = {"busy": False, "cnt": 0, "acc": None, "in": None, "scale": None, "exp": None}

        def tick() -> bool:
            """One cycle of the dequantization unit; True if it can take a hand-off at this cycle's end."""
            nonlocal acc_out
            if not dq["busy"]:
                return True
            bit = (dq["scale"] >> (SCALE_BITS - 1 - dq["cnt"])) & 1
            dq["acc"] = 2 * dq["acc"] + bit * dq["in"]
            if dq["cnt"] == SCALE_BITS - 1:
                acc_out = (bitmod_fp16.add_group(acc_out, dq["acc"], dq["exp"], None) if fp16
                           else acc_out + dq["acc"])
                dq["busy"] = False
                return True
            dq["cnt"] += 1
            return False

        for g, (start, length) in enumerate(tile.groups()):
            psum = np.zeros(len(o), np.int64)
            psum_exp = np.zeros(len(o), np.int64)  # fp16: the block-float accumulator's exponent
            steps = -(-length // L)
            free = True
            for s in range(steps):
                k = start + s * L + np.arange(L)
                valid = k < start + length
                kk = np.where(valid, k, 0)
                if fp16:
                    a_l = [np.where(valid, part[mi[:, None], kk[None, :]], 0) for part in a_parts]
                else:
                    a_l = np.where(valid, a[mi[:, None], kk[None, :]], 0)
                for terms in terms_kn:  # one clock cycle each
                    t = np.where(valid, terms[kk[None, :], ni[:, None]], 0)
                    if fp16:
                        psum, psum_exp = bitmod_fp16.term_cycle(psum, psum_exp, *a_l, t)
                    else:
                        psum = psum + (a_l * t).sum(axis=1)
                    free = tick()
                    cycles += 1
            if scale is None:  # G = 0: the partial sum bypasses the dequantization unit
                acc_out = bitmod_fp16.add_group(acc_out, psum, psum_exp, None) if fp16 else acc_out + psum
                continue
            while not free:  # the group's hand-off waits for the dequantization unit
                free = tick()
                cycles += 1
            dq.update(busy=True, cnt=0, acc=np.zeros(len(o), np.int64), scale=scale[g, ni], exp=psum_exp,
                      **{"in": psum})
        while dq["busy"]:  # drain: the last group's dequantization
            tick()
            cycles += 1
        out[mi, ni] = acc_out
    return out, cycles + params.pipeline_cycles


def detailed_tile_cycles(tile, params) -> int:
    """Cycles without operands: walk the controller (term cycles, hand-off waits, drain)."""
    per_output = 0
    for g, tc in enumerate(group_term_cycles(tile, params)):
        busy_left = SCALE_BITS if g else 0  # dequantization cycles of the previous group still to run
        per_output += tc + max(0, busy_left - tc)
    per_output += SCALE_BITS if tile.group_size else 0
    return sum(per_output for _r in range(-(-tile.outputs // params.pes))) + params.pipeline_cycles


# ------------------------------------------------------------------ area

#: generic 4-LUT cells (LUTs + flip-flops, ``synth -flatten -lut 4``, native yosys 0.23) of the RTL PE
#: :class:`rtl.simd.bitserial.BitmodPE` per (lanes, activation bits or "fp16", weight bits), run 2026-11-27 with
#: ``python bench/bench_bitmod_synth.py 4 16 fp4_er_pos`` (rtl.synth.synthesize_verilog, target generic):
#: 2967 LUTs + 279 FFs (the PE built for the FP4 types; rerun after the array's changes: the ``result`` port
#: and back-to-back ``start``, the scale shift register; 2620 + 279 before them)
#: ... and of the FP16-activation PE :class:`rtl.simd.bitmod_fp16.BitmodFp16PE` (4 fp16 lanes, FP4 types), run
#: 2026-11-27 with ``python bench/bench_bitmod_synth.py 4 fp16 fp4_er_pos --premap``: 3586 LUTs + 125 FFs (the
#: int16 PE with ``--premap``: the same 2967 + 279)
SYNTH_CELLS = {(4, 16, 4): 3246, (4, bitmod_fp16.FP16, 4): 3711}


def pe_um2(params) -> tuple[float, str]:
    """(um2 of one bit-serial PE at 45 nm, its source): the synthesized cells of the 4 x int16-lane
    FP4 PE (the 4 x fp16-lane one when the params' activation format is fp16) times the simd template's
    um2 per cell; other lane words scale the whole PE by
    ``lane_bits / 64`` (an estimate: the control and the 64-bit accumulators do not scale)."""
    from archsim.templates.simd.area import UM2_PER_CELL

    fp16 = params.activation_format == bitmod_fp16.FP16
    (lanes_, act, wb), cells = next((k, v) for k, v in SYNTH_CELLS.items() if (k[1] == bitmod_fp16.FP16) == fp16)
    word_bits = lanes_ * (16 if fp16 else act)
    factor = params.lane_bits / word_bits
    lane = act if fp16 else f"int{act}"
    how = (f"{cells} generic cells of the RTL bit-serial PE ({lanes_} x {lane} lanes, fp{wb} weights, synthesized)"
           + (f" x lane_bits {params.lane_bits} / {word_bits} (estimate)" if factor != 1 else ""))
    return cells * factor * UM2_PER_CELL, f"{how}; x {UM2_PER_CELL:.3f} um2/cell (the simd template's)"


# ------------------------------------------------------------------ energy actions

def tile_actions(tile, params, rows: int, cols: int) -> dict[str, int]:
    """One activation-width shifted add per lane per term cycle (``simd.partial_add.<ab>b``),
    int32 adds for the lane tree and group accumulator per term cycle, ``SCALE_BITS`` int32
    shift-adds per group dequantization plus one output add, register bits and SRAM bytes
    (weights ``wb`` bits, an 8-bit scale and a 2-bit selector per group and column); ``rows`` / ``cols``:
    the distinct A rows / W columns the rounds read (:func:`.model.round_operand_counts`)."""
    M, K, N = tile.m, tile.k, tile.n
    L, ab, wb = lanes(params, tile.activation_format), bits_of(tile.activation_format), bits_of(tile.weight_format)
    groups = tile.groups()
    steps = sum(-(-length // L) for _s, length in groups)
    outputs, terms = tile.outputs, terms_per_weight(tile.weight_format)
    lane_slots = outputs * steps * L * terms
    dequant_adds = SCALE_BITS if tile.group_size else 0
    out = {f"simd.partial_add.{ab}b": M * K * N * terms,
           "simd.add.int32": lane_slots + outputs * len(groups) * (dequant_adds + 1)}
    out["simd.reg_bit"] = M * N * K * (wb + ab) + outputs * 64
    out["sram_read_bytes.input"] = -(-rows * K * ab // 8)
    meta_bits = (SCALE_BITS + 2 * (tile.weight_format in BITMOD_FORMATS)) if tile.group_size else 0
    out["sram_read_bytes.weight"] = -(-cols * (K * wb + len(groups) * meta_bits) // 8)
    out["sram_write_bytes.output"] = outputs * 8
    if tile.accumulate:
        out["sram_read_bytes.output"] = outputs * 8
    return out


def peak_macs_per_cycle(params, weight_format: str, activation_format: str) -> float:
    return params.pes * lanes(params, activation_format) / terms_per_weight(weight_format)


# ------------------------------------------------------------------ conformance: operands, samples, reference

def make_operands(tile, params, rng: np.random.Generator) -> dict:
    """Uniform codes (every integer and BitMoD code is finite; fp16: the finite codes), selectors, 8-bit
    scale codes, psum (int64; fp32 for fp16 activations)."""
    groups = tile.scale_groups()
    fp16 = tile.activation_format == bitmod_fp16.FP16
    if fp16:  # sign, biased exponent 0..30 (no inf / NaN), fraction
        acts = (rng.integers(0, 2, size=(tile.m, tile.k)) << 15 | rng.integers(0, 31, size=(tile.m, tile.k)) << 10
                | rng.integers(0, 1024, size=(tile.m, tile.k)))
    else:
        acts = rng.integers(0, 1 << bits_of(tile.activation_format), size=(tile.m, tile.k))
    ops = {"input": acts.astype(np.uint32),
           "weight": rng.integers(0, 1 << bits_of(tile.weight_format), size=(tile.k, tile.n)).astype(np.uint32)}
    if tile.weight_format in BITMOD_FORMATS and rng.integers(0, 4):  # else: every group the tile's type
        ops["dtype"] = rng.integers(0, 4, size=(max(1, groups), tile.n)).astype(np.uint8)
    if groups:
        ops["scale"] = rng.integers(0, 1 << SCALE_BITS, size=(groups, tile.n)).astype(np.uint8)
    if tile.accumulate:
        ops["psum"] = ((rng.standard_normal((tile.m, tile.n)) * 1000).astype(np.float32) if fp16
                       else rng.integers(-(1 << 40), 1 << 40, size=(tile.m, tile.n), dtype=np.int64))
    return ops


def sample_tiles(rng: np.random.Generator, params, count: int) -> list:
    """Edge cases first (the smallest tile; a partial last round and group with accumulate;
    groups shorter than the dequantization), then random tiles over the formats the params run."""
    from archsim.templates.simd.tile import SimdTile

    pairs = [(w, a) for w in params.formats for a in params.formats if not pair_problem(params, w, a)]
    P = params.pes
    specs = [SimdTile(1, 1, 1, *pairs[0], group_size=1),
             SimdTile(2, 13, P + 1, *pairs[-1], group_size=5, accumulate=True),
             SimdTile(1, 24, 2, *pairs[len(pairs) // 2], group_size=2),
             SimdTile(2, 9, P + 2, *pairs[1], group_size=0, accumulate=True)]
    specs += [SimdTile(int(rng.integers(1, 3)), int(rng.integers(1, 41)), int(rng.integers(1, P + 3)), w, a,
                       group_size=int(rng.choice([0, 1, 3, 8, 16, 32])), accumulate=bool(rng.integers(0, 2)))
              for w, a in pairs]
    while len(specs) < count:
        w, a = pairs[int(rng.integers(0, len(pairs)))]
        k = int(rng.integers(1, 65))
        specs.append(SimdTile(int(rng.integers(1, 4)), k, int(rng.integers(1, P + 3)), w, a,
                              group_size=int(rng.choice([0, int(rng.integers(1, k + 1)), 4, 16, 32])),
                              accumulate=bool(rng.integers(0, 2))))
    specs = specs[:count]
    return [(t, make_operands(t, params, rng)) for t in specs]


def reference_values(tile, operands: dict, params=None) -> np.ndarray:
    """Output by output with Python ints from the paper's value sets written out below (not
    the module's tables): ``psum + sum_g scale * sum_k a * 2 * value``; fp16 activations (``params``
    needed: the lanes) by :func:`archsim.templates.simd.bitmod_fp16_reference.reference`."""
    if tile.activation_format == bitmod_fp16.FP16:
        if params is None:
            raise ValueError("reference_values: fp16 activations need the params (their lanes)")
        return bitmod_fp16_reference.reference(tile, operands, lanes(params, tile.activation_format))
    fp3, fp4 = [0, 1, 2, 4], [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    special = {"fp3_er": 3, "fp3_ea": 6, "fp4_er": 5, "fp4_ea": 8}
    is_int = tile.weight_format.startswith("int")
    bits = int(tile.weight_format[3:]) if is_int else (3 if tile.weight_format.startswith("fp3") else 4)
    base = fp3 if bits == 3 else fp4
    names = [f"fp{bits}_{v}_{s}" for v in ("er", "ea") for s in ("pos", "neg")]
    assert is_int or tuple(names) == MIXTURES[bits]
    A = get_format(tile.activation_format).decode(np.asarray(operands["input"])).tolist()
    W = np.asarray(operands["weight"]).tolist()
    G = tile.group_size or tile.k
    S = np.asarray(operands["scale"]).tolist() if tile.group_size else [[1] * tile.n]
    sel = operands.get("dtype")
    sel = (np.asarray(sel).tolist() if sel is not None and not is_int
           else [[0 if is_int else names.index(tile.weight_format)] * tile.n for _ in range(len(S))])

    def value(code: int, name: str) -> float:
        if is_int:  # two's complement
            return code - (1 << bits) if code >> (bits - 1) else code
        half = 1 << (bits - 1)
        if code == half:  # the -0 code holds the special value
            return special[name[:6]] * (1 if name.endswith("pos") else -1)
        mag = base[code & (half - 1)]
        return -mag if code & half else mag

    out = np.zeros((tile.m, tile.n), np.int64)
    for m in range(tile.m):
        for n in range(tile.n):
            total = int(np.asarray(operands["psum"])[m, n]) if tile.accumulate else 0
            for g, start in enumerate(range(0, tile.k, G)):
                name = names[sel[g][n]]
                part = sum(int(A[m][k]) * int(2 * value(int(W[k][n]), name))
                           for k in range(start, min(start + G, tile.k)))
                total += int(S[g][n]) * part
            out[m, n] = total
    return out
