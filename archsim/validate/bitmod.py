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
    return out + pe_claims()


# ----------------------------------------------------------------------------- the bit-serial PE in decode

SOURCE_SIM = ("BitMoD (Chen et al., HPCA 2025, arXiv:2411.11745) authors' simulator, "
              "abdelfattah-lab/BitMoD-HPCA-25 bitmod_sim/pe_array.py "
              "(pe_latency = ceil(floor(w_prec) / 2) for a bit-serial PE: 2 cycles at w_prec 3.0625 and 4.0625) "
              "and bitmod_sim/accelerator.py (_calc_tile_fc: ceil(cin / pe_dp_size) * ceil(cout / rows) * "
              "ceil(tokens / cols) tiles x pe_latency); test_bitmod.py / test_baseline.py: generation arrays "
              "64 x 16 (BitMoD, pe_dp_size 4) and 64 x 12 (FP16, pe_dp_size 1)")
#: Llama-2-7B linear layers, (out_features, in_features)
LLAMA2_7B_SHAPES = {
    "q_proj": (4096, 4096), "k_proj": (4096, 4096), "v_proj": (4096, 4096), "o_proj": (4096, 4096),
    "gate_proj": (11008, 4096), "up_proj": (11008, 4096), "down_proj": (4096, 11008),
}
DECODE_MODELS = {"llama2-7b": LLAMA2_7B_SHAPES, "llama3-8b": LLAMA3_8B_SHAPES}
#: (decoder layers, lm_head (vocab, hidden)) of each model: a token runs every layer's linears, then the lm_head
MODEL_DEPTH = {"llama2-7b": (32, (32000, 4096)), "llama3-8b": (32, (128256, 4096))}
SOURCE_FIG7 = ("BitMoD (Chen et al., HPCA 2025, arXiv:2411.11745) Fig. 7 data: the authors' plot notebook "
               "abdelfattah-lab/BitMoD-HPCA-25 sim/plot/speedup_plot.ipynb, cycle_fp16_g / cycle_bitmod_agg_g "
               "(generation cycles per token; BitMoD lossy = w3.0625, 64 x 16 array; FP16 64 x 12)")
#: the authors' generation cycles per token (Fig. 7 data): FP16, BitMoD lossy (w3)
FIG7_DECODE_CYCLES = {"llama2-7b": {"fp16": 413518608, "bitmod_w3": 79493200},
                      "llama3-8b": {"fp16": 469624976, "bitmod_w3": 90099088}}
SOURCE_FIG8 = ("BitMoD (Chen et al., HPCA 2025, arXiv:2411.11745) Fig. 8 data: the authors' plot notebook "
               "abdelfattah-lab/BitMoD-HPCA-25 sim/plot/energy_plot.ipynb, energy_fp16_g / energy_bitmod_agg_g "
               "[on-chip, total] uJ per generated token")
#: the authors' generation energy per token, (on-chip, total) uJ (Fig. 8 data)
FIG8_DECODE_UJ = {"llama2-7b": {"fp16": (129318, 2113617), "bitmod_w3": (52631, 434198)},
                  "llama3-8b": {"fp16": (146812, 2399478), "bitmod_w3": (59753, 491953)}}
#: DRAM bytes per cycle of the authors' simulator (128-bit bus, DDR)
DRAM_BYTES_PER_CYCLE = 32
#: the authors' generation arrays: rows x columns, dot-product lanes per PE, cycles per weight
AUTHORS_ARRAYS = {"bitmod": (64, 16, 4, 2), "fp16": (64, 12, 1, 1)}


def authors_decode_compute_cycles(shapes: dict, array: str) -> int:
    """Compute cycles of one decode token's linear layers in the authors' simulator (one token: one column)."""
    rows, _cols, dp, latency = AUTHORS_ARRAYS[array]
    return sum(-(-n_in // dp) * -(-n_out // rows) * 1 * latency for n_out, n_in in shapes.values())


def decode_models(bits: int):
    """(BitMoD bit-serial, bit-parallel int4 lanes, FP16 lanes) simd models, 64 PEs each (``bitmod-simd``):
    the bit-serial and int4 PEs take a 64-bit word of 4 int16 activations, the FP16 PE one fp16 lane
    (the authors' FP16 baseline PE)."""
    from archsim.spec import load_arch

    bitmod = load_arch("bitmod-simd", {"weight_format": f"fp{bits}_er_pos"}).model()
    common = {"pe": "lanes", "multiplier": "array"}
    parallel = load_arch("bitmod-simd", {**common, "formats": ["int4", "int16"], "weight_format": "int4",
                                          "activation_format": "int16"}).model()
    fp16 = load_arch("bitmod-simd", {**common, "formats": ["fp16"], "lane_bits": 16, "weight_format": "fp16",
                                      "activation_format": "fp16", "group_size": 0}).model()
    return bitmod, parallel, fp16


def decode_tiles(model, shapes: dict) -> list:
    """One decode GEMV tile (M = 1) per linear layer, at the model's own formats and group size."""
    from archsim.templates.simd.tile import SimdTile

    p = model.params
    return [SimdTile(1, n_in, n_out, p.weight_format, p.activation_format, group_size=p.group_size)
            for n_out, n_in in shapes.values()]


def decode_compute_cycles(model, shapes: dict) -> int:
    """Sum over the linear layers of one decode token of the fast model's tile cycles, less the
    fixed ``pipeline_cycles`` (the authors' model has no fill latency)."""
    return sum(model.tile_cycles(t) - model.params.pipeline_cycles for t in decode_tiles(model, shapes))


def decode_token_energy_pj(model, model_name: str) -> tuple[float, float]:
    """(PE datapath pJ, weight DRAM pJ) of one decode token's linear layers: the ``simd.*`` actions priced
    by the arch's tech table (simd-45nm), and the stored weight bits at its ``dram_bit``."""
    tech = model.arch.tech
    pe = dram = 0.0
    for tile, repeat in decode_token_layers(model, model_name):
        for name, count in model.tile_actions(tile).items():
            if name.startswith("simd."):
                pe += repeat * tech.energy(name) * count
        dram += repeat * tile.k * tile.n * weight_bits(model) * tech.energy("dram_bit")
    return pe, dram


def weight_bits(model) -> float:
    """Stored bits per weight: BitMoD b + (8-bit scale + 2-bit selector) / 128; int4 with an fp32 scale
    per group of 128 (MixPE); fp16 16."""
    p = model.params
    if p.pe == "bitmod":
        return int(p.weight_format[2]) + 10 / p.group_size
    return {"int4": 4 + 32 / 128, "fp16": 16.0}[p.weight_format]


def decode_token_layers(model, model_name: str) -> list:
    """(tile, repeat) of one decode token: each decoder layer's linears x layers, then the lm_head."""
    from archsim.templates.simd.tile import SimdTile

    layers, (vocab, hidden) = MODEL_DEPTH[model_name]
    p = model.params
    head = SimdTile(1, hidden, vocab, p.weight_format, p.activation_format, group_size=p.group_size)
    return [(t, layers) for t in decode_tiles(model, DECODE_MODELS[model_name])] + [(head, 1)]


def decode_token_cycles(model, model_name: str) -> tuple[float, float, float]:
    """(compute, weight DRAM, decode) cycles of one token's linear layers; decode = sum of
    max(compute, DRAM) per layer (the authors' rule), weights streamed at 32 B/cycle."""
    compute = dram = decode = 0.0
    for tile, repeat in decode_token_layers(model, model_name):
        c = model.tile_cycles(tile) - model.params.pipeline_cycles
        d = tile.k * tile.n * weight_bits(model) / 8 / DRAM_BYTES_PER_CYCLE
        compute, dram, decode = compute + repeat * c, dram + repeat * d, decode + repeat * max(c, d)
    return compute, dram, decode


def pe_claims() -> list[Claim]:
    """Cycles of the bit-serial PE against the authors' simulator (the paper's Fig. 7/8 bars are not
    given as numbers in any text archsim found; its cycle model is in the authors' code)."""
    out = []
    for bits in (3, 4):
        bitmod, _parallel, _fp16 = decode_models(bits)
        from archsim.templates.simd.tile import SimdTile

        p = bitmod.params
        lanes = p.lanes(p.weight_format, p.activation_format)
        one = SimdTile(1, 2 * 128, 1, p.weight_format, p.activation_format, group_size=128)
        two = SimdTile(1, 3 * 128, 1, p.weight_format, p.activation_format, group_size=128)
        per_weight = (bitmod.tile_cycles(two) - bitmod.tile_cycles(one)) / (128 / lanes)
        out.append(Claim("bitmod", f"bit-serial PE: cycles per {bits}-bit weight (lane step)", per_weight, 2.0, 0.0,
                         SOURCE_SIM, unit="cycles",
                         note="extra cycles of one more 128-weight group on a 4-lane PE / 32 lane steps; "
                              "every BitMoD value x2 has at most two set bits"))
        for model_name, shapes in DECODE_MODELS.items():
            ours = decode_compute_cycles(bitmod, shapes)
            theirs = authors_decode_compute_cycles(shapes, "bitmod")
            out.append(Claim("bitmod", f"{model_name} w{bits}g128 decode compute cycles, 64 x 4-lane bit-serial PEs",
                             float(ours), float(theirs), 0.01, SOURCE_SIM, unit="cycles",
                             note="archsim adds the last group's 8-cycle bit-serial dequantization per round "
                                  "of 64 outputs, which the authors' tile count leaves out"))
    bitmod, _parallel, fp16 = decode_models(3)
    shapes = DECODE_MODELS["llama2-7b"]
    ours = decode_compute_cycles(fp16, shapes) / decode_compute_cycles(bitmod, shapes)
    theirs = (authors_decode_compute_cycles(shapes, "fp16") / authors_decode_compute_cycles(shapes, "bitmod"))
    out.append(Claim("bitmod", "llama2-7b decode compute speedup, bit-serial w3 vs FP16 PE rows (iso-PE-count, 64)",
                     ours, theirs, 0.01, SOURCE_SIM, unit="x",
                     note="the 64 PE rows a decode token uses in both of the authors' generation arrays; "
                          "compute only (the authors take max(compute, DRAM) per layer)"))
    for model_name, published in FIG7_DECODE_CYCLES.items():
        ours_b = decode_token_cycles(bitmod, model_name)[2]
        ours_f = decode_token_cycles(fp16, model_name)[2]
        why = ("linear layers and lm_head, max(compute, weight DRAM at 32 B/cycle) per layer; archsim stores "
               "3 + 10/128 bits per weight (scale and 2-bit selector), the authors 3 + 8/128")
        out.append(Claim("bitmod", f"{model_name} decode cycles per token, BitMoD w3 (64 bit-serial PEs)", ours_b,
                         float(published["bitmod_w3"]), 0.02, SOURCE_FIG7, unit="cycles", note=why))
        out.append(Claim("bitmod", f"{model_name} decode cycles per token, FP16 (64 fp16 PEs)", ours_f,
                         float(published["fp16"]), 0.02, SOURCE_FIG7, unit="cycles", note=why))
        out.append(Claim("bitmod", f"{model_name} decode speedup per token, BitMoD w3 over FP16", ours_f / ours_b,
                         published["fp16"] / published["bitmod_w3"], 0.02, SOURCE_FIG7, unit="x",
                         note="memory-bound: the ratio of stored weight bits"))
        pe_b, dram_b = decode_token_energy_pj(bitmod, model_name)
        pe_f, dram_f = decode_token_energy_pj(fp16, model_name)
        e_pub = FIG8_DECODE_UJ[model_name]
        why_e = ("PE datapath (simd-45nm actions) + weight DRAM at 20.3 pJ/bit (Horowitz); the authors: 28 nm PEs, "
                 "CACTI SRAM, DRAM 2400 pJ per 128-bit access (18.75 pJ/bit); DRAM dominates both")
        out.append(Claim("bitmod", f"{model_name} decode energy per token, BitMoD w3", (pe_b + dram_b) / 1e6,
                         float(e_pub["bitmod_w3"][1]), 0.10, SOURCE_FIG8, unit="uJ", note=why_e))
        out.append(Claim("bitmod", f"{model_name} decode energy reduction per token, BitMoD w3 vs FP16",
                         (pe_f + dram_f) / (pe_b + dram_b), e_pub["fp16"][1] / e_pub["bitmod_w3"][1], 0.10,
                         SOURCE_FIG8, unit="x", note=why_e))
    return out
