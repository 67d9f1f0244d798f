"""BitMoD datatypes (archsim.numerics) against the paper's value sets, written here by hand,
and the per-group mixture quantizer against a brute-force numpy reference."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.numerics import exact_frac_bits, get_format, quantize_groups, quantize_mixture, sqnr_db

# BitMoD (HPCA 2025, arXiv:2411.11745) Sec. III / the authors' quant_weight.py (FP4 there is x2):
# base FP3 = {0, +-1, +-2, +-4}, FP4 (E2M1) = {0, +-0.5, +-1, +-1.5, +-2, +-3, +-4, +-6};
# the redundant -0 becomes ER +-3 / +-5 or EA +-6 / +-8.
FP3 = [0, 1, 2, 4, -1, -2, -4]
FP4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6]
PAPER_VALUES = {
    "fp3_e2m0": sorted(FP3),
    "fp3_er_pos": sorted(FP3 + [3]), "fp3_er_neg": sorted(FP3 + [-3]),
    "fp3_ea_pos": sorted(FP3 + [6]), "fp3_ea_neg": sorted(FP3 + [-6]),
    "fp4_er_pos": sorted(FP4 + [5]), "fp4_er_neg": sorted(FP4 + [-5]),
    "fp4_ea_pos": sorted(FP4 + [8]), "fp4_ea_neg": sorted(FP4 + [-8]),
}


@pytest.mark.parametrize("name", sorted(PAPER_VALUES))
def test_every_code_decodes_to_the_papers_value_set(name):
    fmt = get_format(name)
    bits = 3 if name.startswith("fp3") else 4
    assert fmt.bits == bits
    decoded = fmt.decode(np.arange(1 << bits))
    assert sorted(set(decoded.tolist())) == PAPER_VALUES[name]
    # every extended type uses all 2^bits codes (the -0 code is the special value)
    assert len(set(decoded.tolist())) == (1 << bits) - (name == "fp3_e2m0")


@pytest.mark.parametrize("name", sorted(PAPER_VALUES))
def test_encode_is_nearest_value_and_round_trips(name):
    fmt = get_format(name)
    values = np.array(PAPER_VALUES[name], float)
    assert np.array_equal(fmt.round_to(values), values)
    rng = np.random.default_rng(1)
    x = rng.uniform(values[0] - 2, values[-1] + 2, 2000)
    got = fmt.round_to(x)
    dist = np.abs(x[:, None] - values[None, :]).min(axis=1)
    assert np.allclose(np.abs(got - x), dist)  # nearest (saturating past both ends)
    assert fmt.round_to([np.nan]) == 0.0


def test_fp4_values_are_exact_with_one_fraction_bit():
    assert exact_frac_bits(get_format("fp4_er_pos")) == 1
    assert exact_frac_bits(get_format("fp3_ea_neg")) == 0


def test_group_scale_is_absmax_over_largest_magnitude():
    w = np.zeros((1, 128))
    w[0, 0], w[0, 1] = -0.8, 0.3
    deq, scale = quantize_groups(w, get_format("fp4_ea_pos"), 128)
    assert scale[0, 0] == pytest.approx(0.8 / 8)  # max |value| of fp4_ea_pos is 8
    assert deq[0, 0] == pytest.approx(-0.6)  # -0.8 / 0.1 = -8 saturates to -6 on the negative side
    _, s_int = quantize_groups(w, get_format("int4"), 128)
    assert s_int[0, 0] == pytest.approx(0.8 / 7)  # symmetric INT: qmax 7, not 8


def _group(values):
    g = np.zeros((1, 128))
    g[0, :len(values)] = values
    return g


def test_mixture_picks_the_type_whose_special_value_fits():
    mix = [get_format(n) for n in ("fp4_er_pos", "fp4_er_neg", "fp4_ea_pos", "fp4_ea_neg")]
    # each group is exactly representable on one type only (at that type's absmax scale 1),
    # so the MSE minimum is 0 there and > 0 on the three others:
    cases = {
        0: [6.0, 5.0, 5.0, 5.0],     # +5 exactly on fp4_er_pos with scale 1
        1: [-6.0, -5.0, -5.0, -5.0],  # mirror: fp4_er_neg
        2: [8.0, 6.0, 4.0, -6.0],     # +8 and -6 exactly on fp4_ea_pos with scale 1
        3: [-8.0, -6.0, -4.0, 6.0],   # mirror: fp4_ea_neg
    }
    for want, vals in cases.items():
        _, idx, scale = quantize_mixture(_group(vals), mix)
        assert idx[0, 0] == want, (vals, idx)
        deq, _, _ = quantize_mixture(_group(vals), mix)
        assert np.allclose(deq, _group(vals))  # the winner represents the group exactly


def test_mixture_matches_a_numpy_brute_force_and_beats_every_single_type():
    rng = np.random.default_rng(7)
    w = rng.standard_t(3, size=(16, 512)) * 0.02
    names = ("fp3_er_pos", "fp3_er_neg", "fp3_ea_pos", "fp3_ea_neg")
    # independent reference: per group, for each value set, absmax scale and nearest value by argmin
    g = w.reshape(16, 4, 128)
    best_err = np.full((16, 4), np.inf)
    best_q = np.zeros_like(g)
    for name in names:
        vals = np.array(PAPER_VALUES[name], float)
        scale = np.abs(g).max(-1, keepdims=True) / np.abs(vals).max()
        x = g / scale
        q = vals[np.abs(x[..., None] - vals).argmin(-1)] * scale
        err = ((q - g) ** 2).sum(-1)
        better = err < best_err
        best_err = np.where(better, err, best_err)
        best_q = np.where(better[..., None], q, best_q)
    deq, idx, _ = quantize_mixture(w, [get_format(n) for n in names])
    assert np.allclose(deq, best_q.reshape(w.shape), rtol=0, atol=1e-12)
    ref_sqnr = 10 * np.log10((w ** 2).sum() / ((w - best_q.reshape(w.shape)) ** 2).sum())
    assert sqnr_db(w, deq) == pytest.approx(ref_sqnr, abs=1e-9)
    for name in names:  # the mixture's error is <= each member's, group by group
        single, _ = quantize_groups(w, get_format(name))
        assert sqnr_db(w, deq) >= sqnr_db(w, single)
        assert (((deq - w) ** 2).reshape(16, 4, 128).sum(-1) <= ((single - w) ** 2).reshape(16, 4, 128).sum(-1)).all()
    assert len(set(idx.ravel().tolist())) > 1  # the mixture really mixes on this tensor


def test_bad_shapes_say_what_was_expected():
    with pytest.raises(ValueError, match="multiple of group_size"):
        quantize_groups(np.zeros((2, 100)), get_format("int4"), 128)
    with pytest.raises(ValueError, match="finite weights"):
        quantize_groups(np.full((1, 128), np.nan), get_format("int4"))
    with pytest.raises(ValueError, match="at least one format"):
        quantize_mixture(np.zeros((1, 128)), [])
