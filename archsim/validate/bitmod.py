"""BitMoD (Chen et al., HPCA 2025, arXiv:2411.11745): weight quantization error of its
per-group mixture of datatypes against INT and FP of the same width, group 128.

The paper measures its datatypes by LLM perplexity and accuracy (Tables VI/VIII) on six real
models, which archsim cannot run (no weights are fetched here). What archsim reproduces is the
quantity those results rest on: the weight quantization error (SQNR) of each datatype at group
size 128, on Llama-3-8B-shaped weight tensors generated with a fixed seed (see
:func:`llama3_8b_like_weights`), and the paper's ordering -- the BitMoD mixture has less error
than INT and FP of the same bits, at 3 and at 4 bits. The paper gives no SQNR numbers, so the
claims are orderings and the paper's choice of the FP3 extra-asymmetry value (+-6), not dB values.
"""
from __future__ import annotations

import numpy as np

from archsim.numerics import get_format, quantize_groups, quantize_mixture, sqnr_db
from archsim.numerics._bitmod import GROUP_SIZE, MIXTURES, TableFormat, _values_by_code
from archsim.validate import Claim

SOURCE = ("Chen et al., BitMoD: Bit-serial Mixture-of-Datatype LLM Acceleration, HPCA 2025 (arXiv:2411.11745), "
          "Sec. III datatypes and Table VI (3/4-bit weight-only, g128: BitMoD better than INT/FP baselines)")
SOURCE_FP3 = ("Chen et al., BitMoD, HPCA 2025 (arXiv:2411.11745), FP3 special values: extra asymmetry +-6 "
              "(authors' code bitmod_quant/quant_utils/quant_weight.py, FP3_EA_POS/NEG)")

#: Llama-3-8B linear layers, (out_features, in_features); groups run along in_features
LLAMA3_8B_SHAPES = {
    "q_proj": (4096, 4096), "k_proj": (1024, 4096), "v_proj": (1024, 4096), "o_proj": (4096, 4096),
    "gate_proj": (14336, 4096), "up_proj": (14336, 4096), "down_proj": (4096, 14336),
}
#: the single types each mixture is compared with (same bits, same g128 absmax scaling)
BASELINES = {3: ("int3", "fp3_e2m0"), 4: ("int4", "fp4_e2m1")}


def llama3_8b_like_weights(rows: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """``rows`` output rows of each Llama-3-8B linear layer (full input width), generated.

    Generator (numpy ``default_rng(seed)``): each element Student-t with 4 degrees of freedom
    (heavy tails), normalized to unit variance, times a per-output-row std drawn
    log-normal(ln 0.02, 0.3); then 0.2% of the input channels (at least 4) are outlier channels
    scaled x8, as LLM weights facing activation-outlier channels are. Row sampling keeps every
    group of 128 a real group of the layer's shape; only the number of rows is cut."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (n_out, n_in) in LLAMA3_8B_SHAPES.items():
        r = min(rows, n_out)
        t = rng.standard_t(4, size=(r, n_in)) / np.sqrt(2.0)  # var of t(4) is 4/2
        row_std = rng.lognormal(np.log(0.02), 0.3, size=(r, 1))
        w = t * row_std
        n_outlier = max(4, int(0.002 * n_in))
        cols = rng.choice(n_in, size=n_outlier, replace=False)
        w[:, cols] *= 8.0
        out[name] = w
    return out


def _pooled_sqnr(weights: dict[str, np.ndarray], quantize) -> float:
    """SQNR over all tensors together (total signal power / total noise power)."""
    ws = list(weights.values())
    return sqnr_db(np.concatenate([w.ravel() for w in ws]), np.concatenate([quantize(w).ravel() for w in ws]))


def sqnr_table(weights: dict[str, np.ndarray] | None = None, group_size: int = GROUP_SIZE) -> dict[str, float]:
    """SQNR (dB, pooled over the tensors) of each single type and of the mixtures, per bit width:
    ``bitmod<b>`` (ER+-, EA+-: the paper's), ``er<b>`` (ER+- only) and ``ea<b>`` (EA+- only)."""
    weights = llama3_8b_like_weights() if weights is None else weights
    table = {}
    for bits in (3, 4):
        for name in BASELINES[bits]:
            fmt = get_format(name)
            table[name] = _pooled_sqnr(weights, lambda w, f=fmt: quantize_groups(w, f, group_size)[0])
        for name in MIXTURES[bits]:
            fmt = get_format(name)
            table[name] = _pooled_sqnr(weights, lambda w, f=fmt: quantize_groups(w, f, group_size)[0])
        for key, names in ((f"bitmod{bits}", MIXTURES[bits]), (f"er{bits}", MIXTURES[bits][:2]),
                           (f"ea{bits}", MIXTURES[bits][2:])):
            mix = [get_format(n) for n in names]
            table[key] = _pooled_sqnr(weights, lambda w, m=mix: quantize_mixture(w, m, group_size)[0])
    return table


def best_fp3_ea_special(weights: dict[str, np.ndarray] | None = None, candidates=(5.0, 6.0, 7.0, 8.0, 9.0)) -> float:
    """The FP3 extra-asymmetry magnitude (of ``candidates``) whose +-pair mixture has the least error."""
    weights = llama3_8b_like_weights() if weights is None else weights
    noise = {}
    for mag in candidates:
        pair = [TableFormat(f"fp3_ea_{s}{mag:g}", 3, _values_by_code(3, sign * mag), "sweep")
                for s, sign in (("p", 1.0), ("n", -1.0))]
        noise[mag] = -_pooled_sqnr(weights, lambda w, m=pair: quantize_mixture(w, m)[0])
    return min(noise, key=noise.get)


def claims() -> list[Claim]:
    table = sqnr_table()
    out = []
    for bits in (3, 4):
        base = BASELINES[bits]
        best_single = max(table[n] for n in base)
        out.append(Claim(
            "bitmod", f"{bits}-bit g128: BitMoD mixture beats {' and '.join(base)} (1 = yes)",
            float(table[f"bitmod{bits}"] > best_single), 1.0, 0.0, SOURCE,
            note=f"SQNR bitmod{bits} {table[f'bitmod{bits}']:.2f} dB vs " + ", ".join(
                f"{n} {table[n]:.2f} dB" for n in base) + "; Llama-3-8B-shaped generated weights; "
                "the paper's ordering is by perplexity, archsim's by weight SQNR"))
    out.append(Claim(
        "bitmod", "FP3 extra-asymmetry special value with least error among 5..9", best_fp3_ea_special(), 6.0, 0.0,
        SOURCE_FP3, note="pooled squared error of the +-pair mixture at g128 on the generated weights",
        explained="the paper chose +-6 on its six real LLMs' weights; archsim sweeps generated weights, "
                  "whose tail shape (Student-t 4, x8 outlier channels) sets the optimum"))
    return out
