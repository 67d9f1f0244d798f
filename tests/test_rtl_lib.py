"""rtl/lib arithmetic units (amaranth.sim) against numpy / ml-dtypes / softposit, at several pipeline
depths: results bit for bit (every NaN as NaN) and exactly ``latency`` cycles after the operands.

References: IEEE results of an operation on two format values are computed in float64 and rounded
to the format by numpy / ml-dtypes (float64 holds fp8 / fp16 / bf16 products exactly; a float64 sum
then rounding to a format of p <= 11 bits is correct by Figueroa's double-rounding theorem, 53 >= 2p + 2
and 24 >= 2p + 2 for ml-dtypes' float32 step); fp32 operations are numpy float32's own."""
from __future__ import annotations

from pathlib import Path

import ml_dtypes as md
import numpy as np
import pytest

from amaranth.sim import Simulator

DTYPES = {"fp8_e4m3": (md.float8_e4m3fn, np.uint8), "fp8_e5m2": (md.float8_e5m2, np.uint8),
          "fp16": (np.float16, np.uint16), "bf16": (md.bfloat16, np.uint16), "fp32": (np.float32, np.uint32)}


def simulate(unit, ops: dict[str, np.ndarray], outs=("out",)) -> dict[str, list[int]]:
    """Feed one operand set per cycle; collect each output when ``out_valid``; check the latency."""
    n = len(next(iter(ops.values())))
    got: dict[str, list[int]] = {k: [] for k in outs}
    issue_cycle, out_cycle = [], []

    async def tb(ctx):
        cycle = 0
        while len(out_cycle) < n:
            if len(issue_cycle) < n:
                i = len(issue_cycle)
                for k, v in ops.items():
                    ctx.set(getattr(unit, k), int(v[i]))
                ctx.set(unit.in_valid, 1)
                issue_cycle.append(cycle)
            else:
                ctx.set(unit.in_valid, 0)
            if unit.stages:
                await ctx.tick()
                cycle += 1
            if ctx.get(unit.out_valid):
                out_cycle.append(cycle)
                for k in outs:
                    got[k].append(ctx.get(getattr(unit, k)))
            if not unit.stages:
                cycle += 1
            assert cycle < n + unit.stages + 4, "no result"

    sim = Simulator(unit)
    if unit.stages:
        sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    assert [o - i for i, o in zip(issue_cycle, out_cycle)] == [unit.latency] * n
    return got


def as_signed(v: int, bits: int) -> int:
    """``v`` as a signed ``bits``-bit value (amaranth.sim already returns signed ports signed)."""
    return v - (1 << bits) if v >= 0 and v >> (bits - 1) else v


def assert_same_float(got_bits, want, fmt: str):
    dt, ut = DTYPES[fmt]
    got = np.asarray(got_bits, dtype=np.uint64).astype(ut).view(dt)
    want = np.asarray(want, dtype=dt)
    gn, wn = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    assert (gn == wn).all(), f"NaN mismatch at {np.flatnonzero(gn != wn)[:5]}"
    bad = np.flatnonzero(~wn & (got.view(ut) != want.view(ut)))
    assert bad.size == 0, f"{fmt}: {bad.size} mismatches, first at {bad[0]}: got {got[bad[0]]} want {want[bad[0]]}"


def random_codes(fmt: str, n: int, seed: int) -> np.ndarray:
    """Random codes, biased towards interesting ones: zeros, specials, subnormals, near-equal exponents."""
    _, ut = DTYPES[fmt]
    bits = np.dtype(ut).itemsize * 8
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1 << bits, n, dtype=np.uint64)
    mb = {"fp8_e4m3": 3, "fp8_e5m2": 2, "fp16": 10, "bf16": 7, "fp32": 23}[fmt]
    low = rng.random(n) < 0.15  # subnormals and zeros
    codes[low] &= (1 << mb) - 1 | (1 << (bits - 1))
    return codes


def reference(fmt: str, op: str, a_codes, b_codes):
    dt, ut = DTYPES[fmt]
    a = np.asarray(a_codes, dtype=np.uint64).astype(ut).view(dt)
    b = np.asarray(b_codes, dtype=np.uint64).astype(ut).view(dt)
    with np.errstate(all="ignore"):
        if fmt == "fp32":
            return a * b if op == "mul" else a + b
        x, y = a.astype(np.float64), b.astype(np.float64)
        return (x * y if op == "mul" else x + y).astype(dt)


def pairs(fmt, n, seed, exhaustive=False):
    if exhaustive:
        a, b = np.meshgrid(np.arange(256), np.arange(256))
        return a.ravel(), b.ravel()
    a = random_codes(fmt, n, seed)
    b = random_codes(fmt, n, seed + 1)
    near = np.random.default_rng(seed).random(n) < 0.3  # the other operand close in magnitude: cancellations
    b[near] = (a[near] ^ (1 << (np.dtype(DTYPES[fmt][1]).itemsize * 8 - 1))) + np.random.default_rng(seed).integers(
        -3, 4, int(near.sum())).astype(np.uint64)
    b &= (1 << (np.dtype(DTYPES[fmt][1]).itemsize * 8)) - 1
    return a, b


# ----------------------------------------------------------------------------- fp add / mul


@pytest.mark.parametrize("fmt", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "add"])
def test_fp_units_random(fmt, op):
    from rtl.lib.units import FpAdd, FpMul

    cls = FpMul if op == "mul" else FpAdd
    a, b = pairs(fmt, 200, 7)
    for stages in (1, cls(fmt, 0).max_stages):
        unit = cls(fmt, stages)
        got = simulate(unit, {"a": a, "b": b})
        assert_same_float(got["out"], reference(fmt, op, a, b), fmt)


def top_codes(fmt: str) -> np.ndarray:
    """The 12 largest finite magnitudes of ``fmt`` and 4 around 1.0, both signs: sums and products that
    round up into overflow, or to the largest finite value."""
    dt, ut = DTYPES[fmt]
    bits = np.dtype(ut).itemsize * 8
    top = int(np.array(md.finfo(dt).max, dtype=dt).view(ut))
    one = int(np.array(1.0, dtype=dt).view(ut))
    mags = [top - i for i in range(12)] + [one - 1, one, one + 1, one + 2]
    return np.array(mags + [c | (1 << (bits - 1)) for c in mags], dtype=np.uint64)


@pytest.mark.parametrize("fmt", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "add"])
def test_specials_as_data_same_bits(fmt, op):
    """Round-and-pack's forcing as data (``specials_as_data``): numpy's results, and the very bits of the
    default units (NaN codes and signs included), at every depth that moves its last two cut points."""
    from rtl.lib.units import FpAdd, FpMul

    cls = FpMul if op == "mul" else FpAdd
    a, b = pairs(fmt, 150, 29)
    t = top_codes(fmt)
    ta, tb = np.meshgrid(t, t)
    a, b = np.concatenate([a, ta.ravel()]), np.concatenate([b, tb.ravel()])
    deepest = cls(fmt, 0).max_stages
    for stages in sorted({0, 1, 2, deepest - 1, deepest}):
        default = simulate(cls(fmt, stages), {"a": a, "b": b})["out"]
        for packed in (False, True):  # the increment after an all-ones detect / on exponent || fraction
            got = simulate(cls(fmt, stages, specials_as_data=True, packed_round=packed), {"a": a, "b": b})
            assert_same_float(got["out"], reference(fmt, op, a, b), fmt)
            assert got["out"] == default, (stages, packed)


def test_packed_round_is_its_own_netlist():
    """``packed_round`` builds the packed add (so the tests above exercise it), only with the forcing as data."""
    from amaranth.back import rtlil

    from rtl.lib.units import FpAdd

    assert "add_rp_pk" in rtlil.convert(FpAdd("fp32", 11, specials_as_data=True, packed_round=True))
    assert "add_rp_pk" not in rtlil.convert(FpAdd("fp32", 11, specials_as_data=True))
    with pytest.raises(ValueError, match="packed_round needs specials_as_data"):
        rtlil.convert(FpAdd("fp32", 11, packed_round=True))


@pytest.mark.parametrize("fmt", ["fp32", "bf16", "fp8_e4m3"])
def test_fp_add_zero_a_input(fmt):
    """FpAdd's ``a_zero`` input: numpy's ``+0.0 + b`` where set, ``a + b`` elsewhere (both forcings)."""
    from rtl.lib.units import FpAdd

    a, b = pairs(fmt, 200, 31)
    z = np.random.default_rng(31).integers(0, 2, a.size)
    want = reference(fmt, "add", np.where(z == 1, 0, a), b)
    for stages, data in ((0, False), (3, True), (FpAdd(fmt, 0).max_stages, True), (FpAdd(fmt, 0).max_stages, False)):
        got = simulate(FpAdd(fmt, stages, specials_as_data=data, zero_a=True), {"a": a, "b": b, "a_zero": z})
        assert_same_float(got["out"], want, fmt)


@pytest.mark.parametrize("fmt", ["fp32", "bf16", "fp8_e4m3"])
def test_fp_add_neg_zero_b_input(fmt):
    """FpAdd's ``b_neg_zero`` input (with and without ``a_zero``): numpy's ``a + -0.0`` where set (``+0.0 +
    -0.0`` = +0.0 with both), ``a + b`` elsewhere; both forcings; signs of zero and NaN codes compared."""
    from rtl.lib.units import FpAdd

    a, b = pairs(fmt, 200, 37)
    a[:4] = 0  # +0.0 + -0.0 and -0.0 + -0.0 (their sign)
    a[4:8] = 1 << (np.dtype(DTYPES[fmt][1]).itemsize * 8 - 1)
    rng = np.random.default_rng(37)
    nz, z = rng.integers(0, 2, a.size), rng.integers(0, 2, a.size)
    nz[:8] = 1
    neg_zero = 1 << (np.dtype(DTYPES[fmt][1]).itemsize * 8 - 1)
    b_eff = np.where(nz == 1, neg_zero, b)
    deepest = FpAdd(fmt, 0).max_stages
    for stages, data in ((0, False), (3, True), (deepest, True), (deepest, False)):
        got = simulate(FpAdd(fmt, stages, specials_as_data=data, neg_zero_b=True), {"a": a, "b": b, "b_neg_zero": nz})
        assert_same_float(got["out"], reference(fmt, "add", a, b_eff), fmt)
        got = simulate(FpAdd(fmt, stages, specials_as_data=data, zero_a=True, neg_zero_b=True),
                       {"a": a, "b": b, "a_zero": z, "b_neg_zero": nz})
        assert_same_float(got["out"], reference(fmt, "add", np.where(z == 1, 0, a), b_eff), fmt)


@pytest.mark.parametrize("fmt", ["fp32", "bf16", "fp8_e4m3"])
def test_fp_add_zero_fill_as_data(fmt):
    """FpAdd with the shifts' zero fill as data (alone, with the forcing as data, with both zero selects):
    numpy's sums (cancellations, subnormals, overflow, NaN / inf operands) at every depth that moves the
    shifts' cut points, and the default unit's bits."""
    from rtl.lib.units import FpAdd

    a, b = pairs(fmt, 200, 41)
    rng = np.random.default_rng(41)
    z, nz = rng.integers(0, 2, a.size), rng.integers(0, 2, a.size)
    neg_zero = 1 << (np.dtype(DTYPES[fmt][1]).itemsize * 8 - 1)
    want = reference(fmt, "add", a, b)
    want_sel = reference(fmt, "add", np.where(z == 1, 0, a), np.where(nz == 1, neg_zero, b))
    deepest = FpAdd(fmt, 0).max_stages
    for stages in sorted({0, 1, 2, 3, 4, deepest - 3, deepest - 1, deepest}):
        got = simulate(FpAdd(fmt, stages, zero_fill_as_data=True), {"a": a, "b": b})["out"]
        assert_same_float(got, want, fmt)
        assert got == simulate(FpAdd(fmt, stages), {"a": a, "b": b})["out"], stages
        for packed, split in ((False, False), (True, False), (True, True)):  # the SIMD ring's adder: every option
            got = simulate(FpAdd(fmt, stages, specials_as_data=True, zero_a=True, neg_zero_b=True,
                                 zero_fill_as_data=True, packed_round=packed, split_compare=split),
                           {"a": a, "b": b, "a_zero": z, "b_neg_zero": nz})["out"]
            assert_same_float(got, want_sel, fmt)


def same_exponent_or_fraction_pairs(fmt: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose magnitudes tie in one field: ``b`` is ``a`` with only its fraction redrawn (equal exponents),
    or with only its exponent moved by -1 / +1 (equal fractions), either sign; the split compare's pick
    (``e_gt | e_eq`` or ``e_gt`` by ``f_gt``) decides every one of them (an opposite sign makes the swap show in the sum)."""
    bits = np.dtype(DTYPES[fmt][1]).itemsize * 8
    mb = {"fp32": 23, "fp16": 10, "bf16": 7, "fp8_e4m3": 3, "fp8_e5m2": 2}[fmt]
    rng = np.random.default_rng(seed)
    a = random_codes(fmt, n, seed)
    frac_mask, sign = (1 << mb) - 1, 1 << (bits - 1)
    exp_field = (a >> mb) & ((1 << (bits - 1 - mb)) - 1)
    new_frac = rng.integers(0, 1 << mb, n).astype(np.uint64)
    step = rng.choice([-1, 1], n)
    new_exp = np.clip(exp_field.astype(np.int64) + step, 0, (1 << (bits - 1 - mb)) - 1).astype(np.uint64)
    same_exp = (a & ~np.uint64(frac_mask)) | new_frac
    same_frac = (a & np.uint64(sign | frac_mask)) | (new_exp << np.uint64(mb))
    b = np.where(rng.random(n) < 0.5, same_exp, same_frac)
    b ^= np.where(rng.random(n) < 0.5, np.uint64(sign), np.uint64(0))
    return a, b & np.uint64((1 << bits) - 1)


@pytest.mark.parametrize("fmt", list(DTYPES))
def test_fp_add_split_compare(fmt):
    """FpAdd with its magnitude compare split in exponent and fraction (the SIMD ring's adder): numpy's sums
    on pairs that tie in one field and on the random / near-cancelling pairs, combinational, at one stage and
    at every stage, and the default unit's bits."""
    from rtl.lib.units import FpAdd

    a1, b1 = same_exponent_or_fraction_pairs(fmt, 150, 51)
    a2, b2 = pairs(fmt, 100, 52)
    a, b = np.concatenate([a1, a2]), np.concatenate([b1, b2])
    want = reference(fmt, "add", a, b)
    deepest = FpAdd(fmt, 0).max_stages
    for stages in (0, 1, deepest):
        got = simulate(FpAdd(fmt, stages, split_compare=True), {"a": a, "b": b})["out"]
        assert_same_float(got, want, fmt)
        assert got == simulate(FpAdd(fmt, stages), {"a": a, "b": b})["out"], stages


def test_split_compare_is_its_own_netlist():
    """``split_compare`` builds the exponent / fraction compares (so the tests above exercise them); the
    default adder has none."""
    from amaranth.back import rtlil

    from rtl.lib.units import FpAdd

    assert "add_cmp_f_gt" in rtlil.convert(FpAdd("fp32", 11, split_compare=True))
    assert "add_cmp_f_gt" not in rtlil.convert(FpAdd("fp32", 11))


@pytest.mark.parametrize("fmt", ["fp32", "bf16", "fp16", "fp8_e4m3"])
def test_fp_add_negate_early(fmt):
    """``negate_early`` (the subtrahend inverted before the add's cut point, the PIM reduction adders'):
    numpy's sums on pairs that tie in one field (exact cancellation, signs of zero) and on random /
    near-cancelling pairs, combinational, at one stage, at the cut point it moves and at every stage, alone
    and with the other forcing options; the default unit's bits; and the finite fp32 adder likewise."""
    from rtl.lib.units import Fp32AddFinite, FpAdd

    a1, b1 = same_exponent_or_fraction_pairs(fmt, 150, 53)
    a2, b2 = pairs(fmt, 100, 54)
    a, b = np.concatenate([a1, a2]), np.concatenate([b1, b2])
    want = reference(fmt, "add", a, b)
    deepest = FpAdd(fmt, 0).max_stages
    for stages in (0, 1, 4, deepest):
        got = simulate(FpAdd(fmt, stages, negate_early=True), {"a": a, "b": b})["out"]
        assert_same_float(got, want, fmt)
        assert got == simulate(FpAdd(fmt, stages), {"a": a, "b": b})["out"], stages
        both = FpAdd(fmt, stages, negate_early=True, split_compare=True, zero_fill_as_data=True)
        assert simulate(both, {"a": a, "b": b})["out"] == got, stages
    if fmt == "fp32":
        fin = np.isfinite(np.asarray(want, np.float64))
        fa, fb = np.asarray(a)[fin], np.asarray(b)[fin]
        for stages in (2, Fp32AddFinite(0).max_stages):
            plain = simulate(Fp32AddFinite(stages), {"a": fa, "b": fb})["out"]
            assert simulate(Fp32AddFinite(stages, negate_early=True, split_compare=True,
                                          zero_fill_as_data=True), {"a": fa, "b": fb})["out"] == plain


def test_negate_early_is_its_own_netlist():
    """``negate_early`` registers the inverted subtrahend (so the test above exercises it); the default adder
    does not."""
    from amaranth.back import rtlil

    from rtl.lib.units import Fp32AddFinite

    assert "add_yneg" in rtlil.convert(Fp32AddFinite(11, negate_early=True))
    assert "add_yneg" not in rtlil.convert(Fp32AddFinite(11))


@pytest.mark.parametrize("fmt", ["fp32", "bf16", "fp8_e4m3"])
def test_fp_add_split_add(fmt):
    """FpAdd with its significand add over two stages (the LUT core's D = 16 adders): one more cut point, and
    numpy's sums (random, near-cancelling, tied-field pairs: carries across the halves' boundary both ways)
    at every depth, alone and with the LUT core's forcing options."""
    from rtl.lib.units import FpAdd

    a1, b1 = pairs(fmt, 150, 61)
    a2, b2 = same_exponent_or_fraction_pairs(fmt, 100, 62)
    a, b = np.concatenate([a1, a2]), np.concatenate([b1, b2])
    want = reference(fmt, "add", a, b)
    deepest = FpAdd(fmt, 0).max_stages
    assert FpAdd(fmt, 0, split_add=True).max_stages == deepest + 1
    for stages in range(deepest + 2):
        got = simulate(FpAdd(fmt, stages, split_add=True), {"a": a, "b": b})["out"]
        assert_same_float(got, want, fmt)
    for stages in (1, deepest - 1, deepest + 1):
        got = simulate(FpAdd(fmt, stages, specials_as_data=True, zero_fill_as_data=True, packed_round=True,
                             split_add=True), {"a": a, "b": b})["out"]
        assert_same_float(got, want, fmt)


def test_split_add_is_its_own_netlist():
    """``split_add`` builds the two half adds (so the test above exercises them); the default adder has none,
    and its latency is the stages asked for."""
    from amaranth.back import rtlil

    from rtl.lib.units import FpAdd

    assert "add_sum_lo" in rtlil.convert(FpAdd("fp32", 12, split_add=True))
    assert "add_sum_lo" not in rtlil.convert(FpAdd("fp32", 11))
    assert FpAdd("fp32", 12, split_add=True).latency == 12


def test_negate_early_and_split_add_together_are_refused():
    """Both rebuild the adder's add stage: asking for both is refused in one line, not built as one of them."""
    from rtl.lib.units import FpAdd

    with pytest.raises(ValueError, match="negate_early and split_add"):
        FpAdd("fp32", 12, negate_early=True, split_add=True).elaborate(None)


@pytest.mark.parametrize("fmt", ["fp32", "fp16", "fp8_e4m3"])
def test_specials_as_data_round_pack_and_int_to_fp(fmt):
    """RoundPack (overflow, subnormals, zero) and IntToFp with the forcing as data: the default units' bits."""
    from rtl.lib.units import IntToFp, RoundPack

    rng = np.random.default_rng(6)
    n = 300
    sig = np.array([int(x) >> int(s) for x, s in zip(rng.integers(0, 1 << 48, n, dtype=np.uint64),
                                                     rng.integers(0, 48, n))] + [(1 << 48) - 1] * 8, dtype=object)
    exp = np.array([int(e) & 0xFFF for e in rng.integers(-200, 100, n)] + [80, 81, 82, 83, 120, 127, 128, 200])
    sign = rng.integers(0, 2, n + 8)
    ops = {"sign": sign, "exp": exp, "sig": sig}
    for stages in (1, RoundPack(48, fmt, 0).max_stages):
        want = simulate(RoundPack(48, fmt, stages), ops)["out"]
        for packed in (False, True):
            assert simulate(RoundPack(48, fmt, stages, specials_as_data=True, packed_round=packed), ops)["out"] == want
    v = rng.integers(-(1 << 31), 1 << 31, 200) & 0xFFFFFFFF
    for stages in (2, IntToFp(32, fmt, 0).max_stages):
        want = simulate(IntToFp(32, fmt, stages), {"a": v})["out"]
        for packed in (False, True):
            assert simulate(IntToFp(32, fmt, stages, specials_as_data=True, packed_round=packed), {"a": v})["out"] == want


@pytest.mark.parametrize("fmt", list(DTYPES))
def test_fp_mul_lut_multiplier(fmt):
    """The fabric multiplier (``mul="lut"``) at its full depth and halfway: same bits as numpy."""
    from rtl.lib.units import FpMul

    a, b = pairs(fmt, 150, 17)
    deepest = FpMul(fmt, 0, "lut").max_stages
    rows = {"fp8_e4m3": 4, "fp8_e5m2": 3, "fp16": 11, "bf16": 8, "fp32": 24}[fmt]  # significand bits
    split = 2 if rows > 18 else 0  # the DSP version's two cut points among its 18-bit partial products
    assert deepest == FpMul(fmt, 0).max_stages - split + (rows - 1).bit_length() - 1  # a cut between adder levels
    for stages in (deepest // 2, deepest):
        got = simulate(FpMul(fmt, stages, "lut"), {"a": a, "b": b})
        assert_same_float(got["out"], reference(fmt, "mul", a, b), fmt)


@pytest.mark.parametrize("op", ["mul", "add"])
def test_fp32_units_at_every_depth(op):
    """fp32 add / mul at every pipeline depth (the cut points each depth picks differ)."""
    from rtl.lib.units import FpAdd, FpMul

    cls = FpMul if op == "mul" else FpAdd
    a, b = pairs("fp32", 60, 23)
    for stages in range(cls("fp32", 0).max_stages + 1):
        got = simulate(cls("fp32", stages), {"a": a, "b": b})
        assert_same_float(got["out"], reference("fp32", op, a, b), "fp32")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
@pytest.mark.parametrize("op", ["mul", "add"])
def test_fp8_units_exhaustive(fmt, op):
    """Every pair of codes with round-and-pack's forcing as a constant mux; with the forcing as data
    (``specials_as_data``, whose every format and depth test_specials_as_data_same_bits checks on random
    and overflowing codes) a seeded sample of 4096 of the 65536 pairs."""
    from rtl.lib.units import FpAdd, FpMul

    a, b = pairs(fmt, 0, 0, exhaustive=True)
    full_a, full_b = a, b
    pick = np.random.default_rng(8).choice(a.size, 4096, replace=False)
    # round-and-pack's forcing as a constant mux (every pair), as data, and as data with the packed
    # increment (a 4096-pair sample each: test_specials_as_data_same_bits covers them at every depth)
    for data, packed in ((False, False), (True, False), (True, True)):
        if data:
            a, b = full_a[pick], full_b[pick]
        unit = (FpMul if op == "mul" else FpAdd)(fmt, 2, specials_as_data=data, packed_round=packed)
        got = simulate(unit, {"a": a, "b": b})
        assert_same_float(got["out"], reference(fmt, op, a, b), fmt)


def test_planted_rounding_error_is_caught():
    """The comparison fails on a result off by one ulp (the test can fail)."""
    a = np.array([0x3F800000], np.uint64)
    with pytest.raises(AssertionError):
        assert_same_float([0x3F800001], reference("fp32", "mul", a, a), "fp32")


@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
def test_narrow_mul_to_fp32(fmt):
    """Finite bf16 / fp16 x same -> fp32: the exact product rounded once (float64 holds it exactly)."""
    from rtl.lib.units import NarrowMulFp32

    dt, ut = DTYPES[fmt]
    a, b = pairs(fmt, 400, 3)
    finite = np.isfinite(a.astype(ut).view(dt).astype(np.float64)) & np.isfinite(b.astype(ut).view(dt).astype(np.float64))
    a, b = a[finite], b[finite]
    want = (a.astype(ut).view(dt).astype(np.float64) * b.astype(ut).view(dt).astype(np.float64)).astype(np.float32)
    deepest = NarrowMulFp32(fmt, 0).max_stages
    for stages, mul in ((0, "dsp"), (2, "dsp"), (4, "dsp"), (deepest, "dsp"), (3, "lut"),
                        (NarrowMulFp32(fmt, 0, "lut").max_stages, "lut")):
        got = simulate(NarrowMulFp32(fmt, stages, mul), {"a": a, "b": b})
        fin = np.isfinite(want)
        assert_same_float(np.asarray(got["out"])[fin], want[fin], "fp32")


@pytest.mark.parametrize("op", ["add", "mul"])
def test_fp32_finite_units(op):
    from rtl.lib.units import Fp32AddFinite, Fp32MulFinite

    rng = np.random.default_rng(11)
    x = (rng.standard_normal(400) * 10.0 ** rng.integers(-30, 30, 400)).astype(np.float32)
    y = (rng.standard_normal(400) * 10.0 ** rng.integers(-30, 30, 400)).astype(np.float32)
    y[:50] = -x[:50] * np.float32(1.0000001)
    x[50:60] = np.float32(1e-40)  # subnormal operands
    with np.errstate(all="ignore"):
        want = x + y if op == "add" else x * y
    keep = np.isfinite(want)
    a, b = x[keep].view(np.uint32), y[keep].view(np.uint32)
    cls = Fp32AddFinite if op == "add" else Fp32MulFinite
    for stages in (0, 2, cls(0).max_stages):
        got = simulate(cls(stages), {"a": a, "b": b})
        assert_same_float(got["out"], want[keep], "fp32")
    if op == "mul":
        got = simulate(Fp32MulFinite(Fp32MulFinite(0, "lut").max_stages, "lut"), {"a": a, "b": b})
        assert_same_float(got["out"], want[keep], "fp32")


def test_fp32_max_unit_at_every_depth():
    """``Fp32Max`` (the 1D lanes' compare, its key compare split in 16-bit halves) is numpy's ordering
    of finite fp32 values, ``-0 < +0``, ``a`` on a tie, at every ``stages``: random values of both signs
    over the range, neighbours one ulp apart (equal upper halves), equal values and signed zeros."""
    from rtl.lib.units import Fp32Max

    rng = np.random.default_rng(12)
    x = (rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)).astype(np.float32)
    y = (rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)).astype(np.float32)
    y[:60] = np.nextafter(x[:60], rng.choice([-np.inf, np.inf], 60).astype(np.float32))  # one ulp apart
    y[60:80] = x[60:80]
    y[80:90] = -x[80:90]
    x[90:94], y[90:94] = [0.0, -0.0, 0.0, -0.0], [-0.0, 0.0, 0.0, -0.0]
    x[94:100] = np.float32(1e-40) * rng.choice([-1, 1], 6)  # subnormals
    bigger = (y > x) | ((y == x) & np.signbit(x) & ~np.signbit(y))
    want = np.where(bigger, y, x).view(np.uint32)
    for stages in range(Fp32Max(0).max_stages + 1):
        got = simulate(Fp32Max(stages), {"a": x.view(np.uint32), "b": y.view(np.uint32)})
        assert np.array_equal(np.asarray(got["out"], np.uint32), want), stages


def test_fp32_keys_order_like_the_values_and_invert():
    """rtl.lib.fp.fp32_key (the 2D PEs' registered row max chain compares keys): keys of finite fp32
    values sort like numpy's float32 order with ``-0 < +0``, and fp32_from_key returns the same bits."""
    from amaranth import Module, Signal

    from rtl.lib.fp import fp32_from_key, fp32_key

    rng = np.random.default_rng(14)
    x = (rng.standard_normal(200) * 10.0 ** rng.integers(-38, 38, 200)).astype(np.float32)
    x[:8] = [0.0, -0.0, 1e-45, -1e-45, np.float32(3.4e38), -np.float32(3.4e38), 1.0, -1.0]
    x[8:20] = np.float32(1e-40) * rng.choice([-1, 1], 12)  # subnormals
    m = Module()
    a, key, back = Signal(32), Signal(32), Signal(32)
    m.d.comb += [key.eq(fp32_key(a)), back.eq(fp32_from_key(key))]
    sim = Simulator(m)
    keys, backs = [], []

    async def bench(ctx):
        for v in x.view(np.uint32):
            ctx.set(a, int(v))
            keys.append(ctx.get(key))
            backs.append(ctx.get(back))

    sim.add_testbench(bench)
    sim.run()
    assert backs == [int(v) for v in x.view(np.uint32)]
    order = sorted(range(len(x)), key=lambda i: (float(x[i]), not np.signbit(x[i])))  # -0 before +0
    assert [keys[i] for i in order] == sorted(keys)
    assert len(set(keys)) == len(set(x.view(np.uint32).tolist()))


# ----------------------------------------------------------------------------- lzc, round-and-pack, conversions


def test_lzc_exhaustive_8_and_random_47():
    from rtl.lib.units import Lzc

    v = np.arange(256)
    got = simulate(Lzc(8, 1), {"a": v})["out"]
    assert got == [8 - int(x).bit_length() for x in v]
    rng = np.random.default_rng(1)
    v = [int(x) >> int(s) for x, s in zip(rng.integers(0, 1 << 47, 200, dtype=np.uint64), rng.integers(0, 47, 200))]
    got = simulate(Lzc(47, 0), {"a": np.array(v, dtype=object)})["out"]
    assert got == [47 - x.bit_length() for x in v]
    for width in (3, 27, 64):  # padded widths, and more first-level groups than one merge level
        v = [int(x) >> int(s) for x, s in zip(rng.integers(0, 1 << 63, 200, dtype=np.uint64) * 2 + 1,
                                              rng.integers(0, 64, 200))]
        v = [x & ((1 << width) - 1) for x in v] + [0, 1, (1 << width) - 1]
        got = simulate(Lzc(width, 1), {"a": np.array(v, dtype=object)})["out"]
        assert got == [width - x.bit_length() for x in v], width


@pytest.mark.parametrize("fmt", ["fp32", "fp16"])
def test_round_pack_random(fmt):
    """Exact ``sig * 2**exp`` (48-bit sig: exact in float64) rounded by numpy's float64 -> fp32 / fp16."""
    from rtl.lib.units import RoundPack

    rng = np.random.default_rng(5)
    n = 400
    sig = [int(x) >> int(s) for x, s in zip(rng.integers(0, 1 << 48, n, dtype=np.uint64), rng.integers(0, 48, n))]
    lo, hi = (-200, 100) if fmt == "fp32" else (-40, 10)
    exp = rng.integers(lo, hi, n)
    sign = rng.integers(0, 2, n)
    with np.errstate(all="ignore"):
        want = np.array([(-1.0) ** s * float(g) * 2.0 ** int(e) for s, g, e in zip(sign, sig, exp)]).astype(DTYPES[fmt][0])
    for stages in (0, 3, RoundPack(48, fmt, 0).max_stages):
        got = simulate(RoundPack(48, fmt, stages),
                       {"sign": sign, "exp": np.array([int(e) & 0xFFF for e in exp]), "sig": np.array(sig, dtype=object)})
        assert_same_float(got["out"], want, fmt)


@pytest.mark.parametrize("fmt", ["fp32", "fp16"])
def test_round_pack_compares_as_data_at_their_thresholds(fmt):
    """``compare_as_data`` (the subnormal case's shift clamps as AND / OR trees): exponents on both sides of
    each of its three thresholds (``exp >= lsb_min``, ``> lsb_min + mbits``, ``< lsb_min - (width + 2)``,
    lsb_min = 1 - bias - mbits), against numpy's float64 -> format rounding; every other cut count too."""
    from rtl.lib.units import RoundPack

    ebits, mbits = (8, 23) if fmt == "fp32" else (5, 10)
    lsb_min = 1 - ((1 << (ebits - 1)) - 1) - mbits
    width = 48
    edges = [lsb_min, lsb_min + mbits + 1, lsb_min - width - 2]
    exps = [e + d for e in edges for d in (-2, -1, 0, 1)] + [-2048 + 1, -1000, 900]  # (2**900: float64 overflows beyond)
    rng = np.random.default_rng(11)
    sig = [int(x) >> int(s) for x, s in zip(rng.integers(0, 1 << 48, 3 * len(exps), dtype=np.uint64),
                                            rng.integers(0, 48, 3 * len(exps)))]
    sig[:4] = [(1 << 48) - 1, 1, 3 << 46, 0]
    exp = exps * 3
    sign = [i % 2 for i in range(len(exp))]
    with np.errstate(all="ignore"):
        want = np.array([(-1.0) ** s * float(g) * 2.0 ** int(e) for s, g, e in zip(sign, sig, exp)]).astype(DTYPES[fmt][0])
    ops = {"sign": np.array(sign), "exp": np.array([e & 0xFFF for e in exp]), "sig": np.array(sig, dtype=object)}
    for stages in (0, 1, RoundPack(width, fmt, 0).max_stages):
        got = simulate(RoundPack(width, fmt, stages, compare_as_data=True), ops)
        assert_same_float(got["out"], want, fmt)


@pytest.mark.parametrize("fmt", ["fp32", "fp16"])
def test_round_pack_normal_clamp_as_data_at_every_leading_zero_count(fmt):
    """``compare_as_data``'s normal case (``lz >= k`` and the left shift's clamp ``lz > k + mbits`` as AND /
    OR trees, the clamp's constant as data): a 48-bit significand with every leading-zero count 0..48 (k =
    24 for fp32, 37 for fp16), its leading one at exponents from below the normal range to overflow,
    against numpy's float64 -> format rounding (one rounding: float64 holds the value exactly)."""
    from rtl.lib.units import RoundPack

    ebits, mbits = (8, 23) if fmt == "fp32" else (5, 10)
    bias = (1 << (ebits - 1)) - 1
    emin, emax = 1 - bias, bias  # the normal range of the leading one's exponent
    width = 48
    rng = np.random.default_rng(5)
    sig, exp = [], []
    for lz in range(width + 1):
        for ue in (emin - mbits - 2, emin - 2, emin - 1, emin, emin + 1, 0, emax - 1, emax, emax + 1,
                   int(rng.integers(emin, emax))):
            top = width - 1 - lz
            low = int(rng.integers(0, 1 << top)) if top > 0 else 0
            sig.append((1 << top) | low if lz < width else 0)
            exp.append(ue - top)
    sign = [i % 2 for i in range(len(exp))]
    with np.errstate(all="ignore"):
        want = np.array([(-1.0) ** s * float(g) * 2.0 ** e for s, g, e in zip(sign, sig, exp)]).astype(DTYPES[fmt][0])
    ops = {"sign": np.array(sign), "exp": np.array([e & 0xFFF for e in exp]), "sig": np.array(sig, dtype=object)}
    for stages in (0, 3, RoundPack(width, fmt, 0).max_stages):
        got = simulate(RoundPack(width, fmt, stages, compare_as_data=True), ops)
        assert_same_float(got["out"], want, fmt)


def test_fp32_mul_finite_as_data_is_numpy():
    """``Fp32MulFinite`` with its round-and-pack's clamps, compares and shifts as data (the 1D lane's
    pipelined multiplier) is numpy's float32 product: random magnitudes, a subnormal operand of every
    significand width times a large one (leading-zero counts 1..24 reaching the normal range, the left
    shift's clamp), products that underflow; every depth, both multiplier kinds."""
    from rtl.lib.units import Fp32MulFinite

    rng = np.random.default_rng(13)
    x = (rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)).astype(np.float32)
    y = (rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)).astype(np.float32)
    sub = np.array([(1 << b) | int(rng.integers(0, 1 << b)) if b else 1 for b in range(23)], dtype=np.uint32)
    big = np.float32(2.0) ** rng.integers(20, 127, 23).astype(np.float32) * np.float32(1.5)
    x = np.concatenate([x, sub.view(np.float32), sub.view(np.float32)])
    y = np.concatenate([y, big, -np.float32(1.75) * np.float32(2.0) ** rng.integers(-10, 10, 23).astype(np.float32)])
    with np.errstate(all="ignore"):
        want = x * y
    keep = np.isfinite(want)
    a, b = x[keep].view(np.uint32), y[keep].view(np.uint32)
    for stages, mul in ((0, "dsp"), (2, "dsp"), (Fp32MulFinite(0).max_stages, "dsp"),
                        (Fp32MulFinite(0, "lut").max_stages, "lut")):
        got = simulate(Fp32MulFinite(stages, mul, zero_fill_as_data=True, compare_as_data=True), {"a": a, "b": b})
        assert_same_float(got["out"], want[keep], "fp32")


def test_lt_const_is_the_compare():
    """rtl.lib.round.lt_const against Python's ``<``: every 7-bit signed and unsigned value, every constant
    from below the range to above it."""
    from amaranth import Module, Signal, signed
    from rtl.lib.round import lt_const

    for shape, values in ((signed(7), range(-64, 64)), (7, range(128))):
        consts = range(min(values) - 2, max(values) + 3)
        m = Module()
        x = Signal(shape)
        outs = [Signal(name=f"lt{i}") for i in range(len(consts))]
        m.d.comb += [o.eq(lt_const(x, c)) for o, c in zip(outs, consts)]
        sim = Simulator(m)
        got = []

        async def bench(ctx):
            for v in values:
                ctx.set(x, v)
                got.append([ctx.get(o) for o in outs])

        sim.add_testbench(bench)
        sim.run()
        assert got == [[int(v < c) for c in consts] for v in values]


@pytest.mark.parametrize("fmt", ["fp32", "fp16", "bf16"])
def test_int_to_fp(fmt):
    from rtl.lib.units import IntToFp

    rng = np.random.default_rng(2)
    v = np.concatenate([np.arange(-128, 128), rng.integers(-(1 << 15), 1 << 15, 200)])
    dt = DTYPES[fmt][0]
    want = v.astype(np.float32).astype(dt)  # |v| < 2**16: exact in float32, one rounding to the format
    for stages in (0, 3, IntToFp(16, fmt, 0).max_stages):
        got = simulate(IntToFp(16, fmt, stages), {"a": v & 0xFFFF})
        assert_same_float(got["out"], want, fmt)


def test_int32_to_fp32():
    from rtl.lib.units import IntToFp

    v = np.random.default_rng(4).integers(-(1 << 31), 1 << 31, 300)
    for stages in (2, IntToFp(32, "fp32", 0).max_stages):
        got = simulate(IntToFp(32, "fp32", stages), {"a": v & 0xFFFFFFFF})
        assert_same_float(got["out"], v.astype(np.float64).astype(np.float32), "fp32")


@pytest.mark.parametrize("fmt,width", [("fp16", 16), ("fp32", 16), ("fp8_e4m3", 16), ("fp32", 32)])
def test_fp_to_int(fmt, width):
    """Nearest int, ties to even (numpy rint), saturated to int16 / int32 (fp32 -> int32: the unit the
    bench measures); NaN -> 0; the same bits at every depth."""
    from rtl.lib.units import FpToInt

    dt, ut = DTYPES[fmt]
    codes = np.arange(256) if fmt == "fp8_e4m3" else random_codes(fmt, 400, 9)
    vals = codes.astype(ut).view(dt).astype(np.float64)
    if fmt == "fp32":
        vals[:100] = np.random.default_rng(0).integers(-70000, 70000, 100) / 2.0  # ties and saturation
        if width == 32:  # around the int32 limits: 2**31 - 128 fits, 2**31 saturates, -2**31 is exact
            vals[100:108] = [2.0 ** 31 - 128, 2.0 ** 31, -(2.0 ** 31), -(2.0 ** 31) - 256, 2.0 ** 31 + 256,
                             2.0 ** 30 + 128.0, -(2.0 ** 24) - 2.0, 8388609.5]
        codes[:108] = vals[:108].astype(np.float32).view(np.uint32)
        vals[:108] = vals[:108].astype(np.float32)  # the values the codes hold
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    want = np.where(np.isnan(vals), 0, np.clip(np.rint(np.nan_to_num(vals, posinf=1e300, neginf=-1e300)),
                                               lo, hi)).astype(np.int64)
    probe = FpToInt(fmt, width, 0)
    probe._MustUse__silence = True  # only asked for its depth
    assert probe.max_stages == 6  # five cut points (rtl.lib.fp.fp_to_int) + the output
    for stages in range(probe.max_stages + 1):
        got = simulate(FpToInt(fmt, width, stages), {"a": codes})["out"]
        assert [as_signed(g, width) for g in got] == want.tolist(), stages


@pytest.mark.parametrize("bits,es", [(8, 0), (8, 2), (16, 1)])
def test_posit_decode(bits, es):
    """Every posit8 code / random posit16 codes decoded to sign * sig * 2**exp = softposit's value
    (posit8 es=2, which softposit lacks: archsim.numerics' numpy decoder, NaR as inf)."""
    softposit = pytest.importorskip("softposit")
    from rtl.lib.units import PositDecode

    codes = np.arange(256) if bits == 8 else np.random.default_rng(3).integers(0, 1 << 16, 500)
    if es == 2:
        from archsim.numerics import get_format

        ref = [np.inf if np.isnan(v) else float(v) for v in get_format("posit8_2").decode(codes)]
    else:
        ref = [float(softposit.posit8(bits=int(c))) if bits == 8 else float(softposit.posit16(bits=int(c)))
               for c in codes]
    deepest = PositDecode(bits, es, 0).max_stages
    assert deepest == 5  # four cut points (two's complement, the count's two levels, the shift) + output
    for stages in (0, 2, deepest):
        got = simulate(PositDecode(bits, es, stages), {"a": codes}, outs=("nar", "sign", "exp", "sig"))
        for i, r in enumerate(ref):
            if got["nar"][i]:
                assert np.isinf(r), codes[i]  # softposit decodes NaR to inf
                continue
            val = (-1) ** got["sign"][i] * got["sig"][i] * 2.0 ** as_signed(got["exp"][i], 12)
            assert val == r, (int(codes[i]), val, r)


def test_exp2_matches_the_attention_model():
    """The exp unit against the template's numpy exp2_poly (fp32 every step), and close to 2**x."""
    from archsim.templates.attention.values import exp2_poly
    from rtl.lib.units import Exp2

    x = -np.abs(np.random.default_rng(8).standard_normal(40).astype(np.float32) * 20)
    x[:5] = [0.0, -0.5, -1.5, -126.7, -2.5]
    want = exp2_poly(x, 4)
    assert np.allclose(want, np.exp2(x.astype(np.float64)), rtol=1e-3, atol=1e-38)
    for stages, mul in ((6, "dsp"), (Exp2(4, 0).max_stages, "dsp"), (Exp2(4, 0, "lut").max_stages, "lut")):
        got = simulate(Exp2(4, stages, mul), {"a": x.view(np.uint32)})
        assert_same_float(got["out"], want, "fp32")
    # its adders' clamps and shifts as data (the 1D lanes' pipelined exp2): the same bits
    for stages in (6, Exp2(4, 0).max_stages):
        got = simulate(Exp2(4, stages, zero_fill_as_data=True), {"a": x.view(np.uint32)})
        assert_same_float(got["out"], want, "fp32")
        # and its multipliers' round-and-pack compares as data (the lanes' exp2 since the 2026-11-27 evening)
        got = simulate(Exp2(4, stages, zero_fill_as_data=True, compare_as_data=True), {"a": x.view(np.uint32)})
        assert_same_float(got["out"], want, "fp32")


# ----------------------------------------------------------------------------- registered DSP blocks (mul="dsp_reg")


def _dsp_reg_units():
    """(name, constructor(stages, mul)) of every unit with a significand multiplier."""
    from rtl.lib.units import Exp2, Fp32MulFinite, FpMul, IntMac, NarrowMulFp32

    return [("bf16_mul", lambda s, k: FpMul("bf16", s, k)), ("fp16_mul", lambda s, k: FpMul("fp16", s, k)),
            ("fp32_mul", lambda s, k: FpMul("fp32", s, k)), ("e4m3_mul", lambda s, k: FpMul("fp8_e4m3", s, k)),
            ("bf16_mul_fp32", lambda s, k: NarrowMulFp32("bf16", s, k)),
            ("fp32_mul_finite", lambda s, k: Fp32MulFinite(s, k)), ("exp2_4", lambda s, k: Exp2(4, s, k)),
            ("int8_mac", lambda s, k: IntMac(8, 8, 32, s, k))]


def test_dsp_reg_declares_the_latency_of_its_model_and_of_dsp():
    """The primitive, its Amaranth model and the inferred multiplier: the same cut points, so the same
    ``max_stages`` and, at every depth, the same declared latency (what the templates' models read)."""
    def unit(make, stages, kind):
        u = make(stages, kind)
        u._MustUse__silence = True  # inspected, never elaborated
        return u

    for name, make in _dsp_reg_units():
        deepest = unit(make, 1, "dsp").max_stages
        for kind in ("dsp_reg", "dsp_reg_sim"):
            assert unit(make, 1, kind).max_stages == deepest, (name, kind)
            for stages in sorted({1, deepest // 2, deepest}):
                assert unit(make, stages, kind).latency == unit(make, stages, "dsp").latency == stages, (name, kind)


@pytest.mark.parametrize("fmt", list(DTYPES))
def test_fp_mul_dsp_reg_model(fmt):
    """``mul="dsp_reg_sim"`` (the registered DSP's Amaranth model) at full, half and one-stage depth:
    numpy's bits, ``latency`` cycles after the operands."""
    from rtl.lib.units import FpMul

    a, b = pairs(fmt, 150, 29)
    deepest = FpMul(fmt, 0, "dsp_reg_sim").max_stages
    for stages in (1, deepest // 2, deepest):
        got = simulate(FpMul(fmt, stages, "dsp_reg_sim"), {"a": a, "b": b})
        assert_same_float(got["out"], reference(fmt, "mul", a, b), fmt)


def test_fp32_mul_dsp_reg_model_at_every_depth():
    """Every depth picks other cut points: with 4 split blocks the operand and product registers move
    between the blocks and the fabric."""
    from rtl.lib.units import FpMul

    a, b = pairs("fp32", 40, 31)
    for stages in range(FpMul("fp32", 0, "dsp_reg_sim").max_stages + 1):
        got = simulate(FpMul("fp32", stages, "dsp_reg_sim"), {"a": a, "b": b})
        assert_same_float(got["out"], reference("fp32", "mul", a, b), "fp32")


def test_narrow_mul_and_exp2_dsp_reg_model():
    from archsim.templates.attention.values import exp2_poly
    from rtl.lib.units import Exp2, NarrowMulFp32

    for fmt in ("bf16", "fp16"):
        dt, ut = DTYPES[fmt]
        a, b = pairs(fmt, 200, 5)
        x, y = a.astype(ut).view(dt).astype(np.float64), b.astype(ut).view(dt).astype(np.float64)
        keep = np.isfinite(x) & np.isfinite(y) & np.isfinite((x * y).astype(np.float32))
        want = (x * y).astype(np.float32)[keep]
        for stages in (2, NarrowMulFp32(fmt, 0).max_stages):
            got = simulate(NarrowMulFp32(fmt, stages, "dsp_reg_sim"), {"a": a[keep], "b": b[keep]})
            assert_same_float(got["out"], want, "fp32")
    x = -np.abs(np.random.default_rng(9).standard_normal(30).astype(np.float32) * 20)
    got = simulate(Exp2(4, Exp2(4, 0).max_stages, "dsp_reg_sim"), {"a": x.view(np.uint32)})
    assert_same_float(got["out"], exp2_poly(x, 4), "fp32")


def test_dsp_reg_verilog_uses_the_block_registers_at_the_chosen_cuts():
    """``mul="dsp_reg"`` emits MULT18X18D instances (4 for a 24 x 24 significand product) whose input
    and output registers are on exactly when the cut points before and after them are chosen."""
    import re

    from amaranth.back import verilog

    from rtl.lib.units import FpMul

    def regs(unit):
        text = verilog.convert(unit, name="t", emit_src=False)
        cells = re.findall(r"MULT18X18D #\((.*?)\) ", text, re.S)
        return [(re.search(r"REG_INPUTA_CLK\(\"(\w+)", c)[1], re.search(r"REG_INPUTB_CLK\(\"(\w+)", c)[1],
                 re.search(r"REG_OUTPUT_CLK\(\"(\w+)", c)[1]) for c in cells], text

    deepest = FpMul("bf16", 0).max_stages
    cells, text = regs(FpMul("bf16", deepest, "dsp_reg"))
    assert cells == [("CLK0", "CLK0", "CLK0")]
    assert not re.search(r"=[^;]*\s\*\s", text)  # no inferred multiply (`assign p = a * b;`) left in the fabric
    assert regs(FpMul("bf16", 0, "dsp_reg"))[0] == [("NONE", "NONE", "NONE")]
    cells, _ = regs(FpMul("fp32", FpMul("fp32", 0).max_stages, "dsp_reg"))
    assert cells == [("CLK0", "CLK0", "CLK0")] * 4


def run_icarus(unit, ops: dict[str, np.ndarray], out: str, tmp_path) -> list[int]:
    """Simulate ``unit``'s Verilog with the MULT18X18D model in Icarus: one operand set per cycle, each
    ``out`` collected when ``out_valid``, and the cycles between them checked against ``latency``."""
    import shutil
    import subprocess

    from amaranth.back import verilog

    from rtl.lib.ecp5 import mult18x18d_sim_model

    if not shutil.which("iverilog"):
        pytest.skip("iverilog not installed")
    n = len(next(iter(ops.values())))
    (tmp_path / "unit.v").write_text(verilog.convert(unit, name="unit", emit_src=False))
    (tmp_path / "mult18x18d.v").write_text(mult18x18d_sim_model())
    widths = {k: len(getattr(unit, k)) for k in [*ops, out]}
    for k, v in ops.items():
        (tmp_path / f"{k}.hex").write_text("".join(f"{int(x) & ((1 << widths[k]) - 1):x}\n" for x in v))
    decl = "".join(f"  reg [{widths[k] - 1}:0] mem_{k} [0:{n - 1}]; reg [{widths[k] - 1}:0] {k} = 0;\n" for k in ops)
    load = "".join(f'    $readmemh("{tmp_path / k}.hex", mem_{k});\n' for k in ops)
    drive = "".join(f"      {k} <= mem_{k}[i];\n" for k in ops)
    conns = "".join(f".{k}({k}), " for k in ops)
    (tmp_path / "tb.v").write_text(f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1, in_valid = 0;
{decl}  wire [{widths[out] - 1}:0] res; wire out_valid;
  integer i = 0, cycle = 0, f;
  unit dut(.clk(clk), .rst(rst), .in_valid(in_valid), {conns}.{out}(res), .out_valid(out_valid));
  always #5 clk = ~clk;
  initial begin
{load}    f = $fopen("{tmp_path}/out.txt", "w");
    @(posedge clk); rst <= 0;
    repeat ({n} + {unit.latency} + 4) begin
      @(posedge clk);
      if (out_valid) $fwrite(f, "%0d %h\\n", cycle, res);
      if (i < {n}) begin
{drive}        in_valid <= 1; i = i + 1;
      end else in_valid <= 0;
      cycle = cycle + 1;
    end
    $fclose(f); $finish;
  end
endmodule
""")
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "sim"), str(tmp_path / "tb.v"), str(tmp_path / "unit.v"),
                    str(tmp_path / "mult18x18d.v")], check=True, capture_output=True)
    subprocess.run(["vvp", str(tmp_path / "sim")], check=True, capture_output=True, cwd=tmp_path)
    rows = [line.split() for line in (tmp_path / "out.txt").read_text().splitlines()]
    assert len(rows) == n
    # operand set j is driven at the edge that ends loop pass j; its result is seen in pass j + latency
    assert [int(c) for c, _ in rows] == [j + unit.latency + 1 for j in range(n)]
    return [int(v, 16) for _, v in rows]


@pytest.mark.rtl
@pytest.mark.verilog
@pytest.mark.parametrize("fmt, stages", [("bf16", None), ("fp32", None), ("fp32", 4), ("fp16", 1)])
def test_fp_mul_dsp_reg_primitive_in_icarus(fmt, stages, tmp_path):
    """The instantiated MULT18X18D's wiring (operand bits, unsigned mode, which registers are on) through
    the Verilog model of the block: numpy's bits at the declared latency."""
    from rtl.lib.units import FpMul

    a, b = pairs(fmt, 80, 41)
    unit = FpMul(fmt, FpMul(fmt, 0).max_stages if stages is None else stages, "dsp_reg")
    assert_same_float(run_icarus(unit, {"a": a, "b": b}, "out", tmp_path), reference(fmt, "mul", a, b), fmt)


@pytest.mark.rtl
@pytest.mark.verilog
@pytest.mark.parametrize("stages", [2, 3])
def test_int_mac_dsp_reg_primitive_in_icarus(stages, tmp_path):
    """The signed MULT18X18D (sign-extended 8-bit operands) of the int8 MAC, in Icarus."""
    from rtl.lib.units import IntMac

    rng = np.random.default_rng(12)
    n = 60
    a, b = rng.integers(-128, 128, n), rng.integers(-128, 128, n)
    a[:3], b[:3] = [-128, 127, -128], [-128, -128, 127]
    first = (np.arange(n) % 16 == 0).astype(int)
    want, acc = [], 0
    for x, y, f in zip(a, b, first):
        acc = (0 if f else acc) + int(x) * int(y)
        want.append(acc)
    got = run_icarus(IntMac(8, 8, 32, stages, "dsp_reg"), {"a": a, "b": b, "first": first}, "acc", tmp_path)
    assert [as_signed(g, 32) for g in got] == want


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("mul", ["dsp", "dsp_reg_sim"])
def test_int_mac_depths(stages, mul):
    """Every depth, with the inferred multiplier (the default) and the registered DSP block's model: the
    running sum against Python's, restarted by ``first``, extreme int8 products included."""
    from rtl.lib.units import IntMac

    rng = np.random.default_rng(16)
    n = 120
    a, b = rng.integers(-128, 128, n), rng.integers(-128, 128, n)
    a[:4], b[:4] = [-128, -128, 127, 0], [-128, 127, -128, 5]
    first = (rng.random(n) < 0.1).astype(int)
    first[0] = 1
    want, acc = [], 0
    for x, y, f in zip(a, b, first):
        acc = (0 if f else acc) + int(x) * int(y)
        want.append(acc)
    got = simulate(IntMac(8, 8, 32, stages, mul), {"a": a & 0xFF, "b": b & 0xFF, "first": first}, outs=("acc",))
    assert [as_signed(g, 32) for g in got["acc"]] == want


def test_stages_out_of_range_is_refused():
    from rtl.lib.units import FpMul

    with pytest.raises(ValueError, match="stages"):
        FpMul("fp16", 99)
    with pytest.raises(ValueError, match="format"):
        FpMul("fp12", 1)
    with pytest.raises(ValueError, match="mul"):
        FpMul("fp16", 1, "abacus")
    from rtl.lib.units import IntMac

    with pytest.raises(ValueError, match="at most 18 bits"):
        IntMac(24, 8, 48, 2, "dsp_reg")


# ----------------------------------------------------------------------------- package structure
# (no template's RTL imports another template's package: tests/test_layering.py, with relative imports)


@pytest.mark.parametrize("preset,over", [("systolic-32x32-ws", {}), ("simd-edge", {}), ("pim-hbm2", {}),
                                         ("lut-m2n8k4-ecp5", {}), ("fusemax-edge", {"rows": 2, "cols": 2, "pe1d": 2})])
def test_the_verilog_cache_key_covers_the_library(preset, over):
    """Every template's cached Verilog is keyed on the rtl/lib modules it is built from (and its own)."""
    from archsim.spec import load_arch
    from rtl import design_for

    design = design_for(load_arch(preset, over))
    files = {Path(f).relative_to(Path(__file__).resolve().parents[1]).as_posix() for f in design.source_files()}
    assert f"rtl/{design.template}/rtl_design.py" in files
    if design.template != "systolic":  # the systolic array is integer-only: no floating-point library
        assert {"rtl/lib/fp.py", "rtl/lib/round.py", "rtl/lib/lzc.py"} <= files


def test_rint_and_ldexp_units_match_numpy():
    """``Rint`` (n = rint(x) half to even, as fp32 and as a clamped integer) and ``Ldexp`` (p * 2**n,
    rounded, underflow to subnormals / overflow to inf's encoding) against numpy at 0, 3 and every
    stage: the attention PE's range reduction and 2**n."""
    from rtl.lib.units import Ldexp, Rint

    rng = np.random.default_rng(23)
    x = (rng.standard_normal(300) * 10.0 ** rng.integers(-3, 4, 300)).astype(np.float32)
    x[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 1e-30, -400.7, 8388609.0]  # ties to even, tiny, clamped, integral
    for stages in (0, 3, Rint(0).max_stages):
        got = simulate(Rint(stages), {"a": x.view(np.uint32)}, outs=("n", "n_int"))
        assert_same_float(got["n"], np.rint(x), "fp32")
        n_int = np.array([v - 2048 if v >= 1024 else v for v in got["n_int"]])
        assert np.array_equal(n_int, np.clip(np.rint(x), -300, 300).astype(np.int64))
    p = (1 + rng.random(300)).astype(np.float32) * rng.choice([-1, 1], 300).astype(np.float32)
    n = rng.integers(-160, 140, 300)
    n[:4] = [-149, -127, 127, 128]  # the smallest subnormal, a subnormal, the largest binade, overflow
    with np.errstate(all="ignore"):
        want = np.ldexp(p, n).astype(np.float32)
    for stages in (0, 3, Ldexp(0).max_stages):
        got = simulate(Ldexp(stages), {"p": p.view(np.uint32), "n": n & 0x7FF})
        assert_same_float(got["out"], want, "fp32")
