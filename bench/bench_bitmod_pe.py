"""BitMoD's bit-serial PE (simd ``pe: bitmod``) in LLM decode, beside the bit-parallel SIMD PE and the
authors' figures (Chen et al., BitMoD, HPCA 2025, arXiv:2411.11745).

One decode token's linear layers (every decoder layer's q, k, v, o, gate, up, down, then the lm_head;
attention score / context products left out, as in the authors' simulator) of Llama-2-7B and
Llama-3-8B, each a GEMV tile (M = 1) on 64 PEs (preset ``bitmod-simd``: the 64 PE rows of the authors'
64 x 16 generation array that one token uses; their FP16 baseline array has 64 rows too):

- ``bitmod``: the bit-serial PE, 4 x int16 activation lanes, FP3 / FP4 mixture weights g128 (2 cycles
  per weight; an 8-bit scale and a 2-bit selector per group);
- ``bitmod f16``: the same PE with the paper's FP16 activations (max-exponent alignment, block-float group
  accumulator, fp32 output: rtl/simd/bitmod_fp16.py); its PE area is the synthesized FP16 PE's;
- ``int4 lanes``: the bit-parallel SIMD PE (array multipliers) on the same 64-bit word: 4 int4 x int16
  lanes per cycle, fp32 group scale (MixPE order); at 3 bits it still runs int4 lanes (no 3-bit lane);
- ``fp16 lane``: one fp16 x fp16 lane per PE (the authors' FP16 baseline PE).

Columns: compute cycles (fast model, less the fixed pipeline fill); DRAM cycles of the weights at
32 B/cycle (the authors' 128-bit DDR bus; bits per weight: BitMoD b + 10/128, int4 4 + 32/128, fp16 16);
decode cycles = sum over layers of max(compute, DRAM) (the authors' rule); energy per token: PE datapath
(the simd-45nm table's ``simd.*`` actions; the bit-parallel lane's multiply is priced as
``simd.mult.int16``, the template's rule of the lane width: an upper estimate for int4 x int16) and
weight DRAM (``dram_bit``, 20.3 pJ/bit); PE area (the synthesized bit-serial PE, the simd template's
area model for the others). Normalization: iso-PE-count (64 PEs each); iso-area as MACs per cycle
per mm2 of PE area (compute only).

Run: ``python bench/bench_bitmod_pe.py``
"""
from __future__ import annotations

from archsim.validate.bitmod import (AUTHORS_ARRAYS, DECODE_MODELS, FIG7_DECODE_CYCLES, FIG8_DECODE_UJ,
                                     authors_decode_compute_cycles, decode_models, decode_token_cycles,
                                     decode_token_energy_pj, decode_token_layers)

#: the authors' per-PE figures (bitmod_sim/test_bitmod.py, test_baseline.py; 28 nm, before their x1.5 P&R scaling)
AUTHORS_PE = {"bitmod": (1507.7, 0.56), "fp16": (1968.7, 0.77)}  # (um2, pJ per PE per cycle)
PAPER_HEADLINE = "1.69x over ANT and 1.48x over OliVe on average (abstract; archsim models neither, not reproduced)"


def bitmod_fp16_model(bits: int):
    """The ``bitmod-simd`` model at ``bits`` with the paper's FP16 activations (4 fp16 lanes per 64-bit word)."""
    from archsim.spec import load_arch

    formats = list(load_arch("bitmod-simd").params.formats) + ["fp16"]
    return load_arch("bitmod-simd", {"weight_format": f"fp{bits}_er_pos", "formats": formats,
                                     "activation_format": "fp16"}).model()


def _row(model, name: str) -> dict:
    compute, dram, decode = decode_token_cycles(model, name)
    pe_pj, dram_pj = decode_token_energy_pj(model, name)
    macs = sum(repeat * t.k * t.n for t, repeat in decode_token_layers(model, name))
    count, um2, _src = model.area_inputs().units["simd_pe"]
    area_mm2 = count * um2 / 1e6
    return {"compute": compute, "dram": dram, "decode": decode, "pe_uj": pe_pj / 1e6,
            "total_uj": (pe_pj + dram_pj) / 1e6,
            "area_mm2": area_mm2, "macs_per_cycle_mm2": macs / compute / area_mm2}


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print("normalization: iso-PE-count (64 PEs) for cycles and energy; iso-area in the last column\n")
    hdr = (f"{'model':10} {'w':2} {'PE':10} {'compute cyc':>13} {'DRAM cyc':>13} {'decode cyc':>13} "
           f"{'PE uJ':>8} {'PE+DRAM uJ':>10} {'PE mm2':>7} {'MAC/cyc/mm2':>11}")
    for name in DECODE_MODELS:
        print(hdr)
        for bits in (3, 4):
            bitmod, parallel, fp16 = decode_models(bits)
            rows = {"bitmod": _row(bitmod, name), "bitmod f16": _row(bitmod_fp16_model(bits), name),
                    "int4 lanes": _row(parallel, name), "fp16 lane": _row(fp16, name)}
            for pe, r in rows.items():
                print(f"{name:10} {bits:<2} {pe:10} {r['compute']:13,.0f} {r['dram']:13,.0f} {r['decode']:13,.0f} "
                      f"{r['pe_uj']:8.1f} {r['total_uj']:10.0f} {r['area_mm2']:7.3f} {r['macs_per_cycle_mm2']:11.1f}")
            b, q, f, h = rows["bitmod"], rows["int4 lanes"], rows["fp16 lane"], rows["bitmod f16"]
            cells = h["area_mm2"] / b["area_mm2"]  # the synthesized FP16 PE's cells over the int16 PE's
            scaled_total = h["total_uj"] + h["pe_uj"] * (cells - 1)
            print(f"{'':14}fp16 vs int16 activations on the bit-serial PE: compute x{h['compute'] / b['compute']:.2f}, "
                  f"decode x{h['decode'] / b['decode']:.2f}, PE energy x{h['pe_uj'] / b['pe_uj']:.2f} (the energy "
                  f"table prices no alignment), PE area x{h['area_mm2'] / b['area_mm2']:.2f}; PE energy scaled by "
                  f"that cell ratio (estimate): {h['pe_uj'] * cells:.1f} uJ, PE+DRAM "
                  f"{scaled_total:,.0f} uJ (x{scaled_total / b['total_uj']:.4f})")
            for label, o in (("int4 lanes", q), ("fp16 lane", f)):
                print(f"{'':14}bit-serial vs {label:10}: compute x{o['compute'] / b['compute']:.2f}, decode "
                      f"x{o['decode'] / b['decode']:.2f}, PE energy x{o['pe_uj'] / b['pe_uj']:.2f} less, "
                      f"PE+DRAM x{o['total_uj'] / b['total_uj']:.2f} less, iso-area throughput "
                      f"x{b['macs_per_cycle_mm2'] / o['macs_per_cycle_mm2']:.2f}")
        fig7, fig8 = FIG7_DECODE_CYCLES[name], FIG8_DECODE_UJ[name]
        ours_b = decode_token_cycles(decode_models(3)[0], name)[2]
        ours_f = decode_token_cycles(decode_models(3)[2], name)[2]
        print(f"{'':14}paper (Fig. 7 data) decode cycles per token: BitMoD w3 {fig7['bitmod_w3']:,} "
              f"(archsim {ours_b:,.0f}, "
              f"{(ours_b / fig7['bitmod_w3'] - 1) * 100:+.2f}%), FP16 {fig7['fp16']:,} (archsim {ours_f:,.0f}, "
              f"{(ours_f / fig7['fp16'] - 1) * 100:+.2f}%): speedup x{fig7['fp16'] / fig7['bitmod_w3']:.2f} "
              f"(archsim x{ours_f / ours_b:.2f})")
        print(f"{'':14}paper (Fig. 8 data) energy per token, on-chip / total uJ: BitMoD w3 {fig8['bitmod_w3'][0]:,} / "
              f"{fig8['bitmod_w3'][1]:,}, FP16 {fig8['fp16'][0]:,} / {fig8['fp16'][1]:,}: "
              f"x{fig8['fp16'][0] / fig8['bitmod_w3'][0]:.2f}"
              f" / x{fig8['fp16'][1] / fig8['bitmod_w3'][1]:.2f} less (28 nm CACTI SRAM and a 1200 pJ per 64-bit DRAM "
              f"access; archsim's 45 nm table and PE-only on-chip energy differ)")
        theirs_b = authors_decode_compute_cycles(DECODE_MODELS[name], "bitmod")
        print(f"{'':14}authors' simulator, one decoder layer: {theirs_b:,} bit-serial compute cycles; archsim adds "
              f"the 8-cycle dequantization drain per round of 64 outputs\n")
    (ba, be), (fa, fe) = AUTHORS_PE["bitmod"], AUTHORS_PE["fp16"]
    rb, cb, db, lb = AUTHORS_ARRAYS["bitmod"]
    rf, cf, df, lf = AUTHORS_ARRAYS["fp16"]
    print(f"authors' PEs (28 nm): BitMoD {ba} um2 {be} pJ/cycle ({db} lanes, {lb} cycles/weight, {rb}x{cb} = "
          f"{rb * cb} PEs); FP16 {fa} um2 {fe} pJ/cycle ({df} lane, {rf}x{cf} = {rf * cf} PEs): arrays of "
          f"{rb * cb * ba / 1e6:.2f} vs {rf * cf * fa / 1e6:.2f} mm2 (iso-area); "
          f"MACs per cycle per um2 x{(db / lb / ba) / (df / lf / fa):.2f} for BitMoD")
    print(f"paper's headline: {PAPER_HEADLINE}")


if __name__ == "__main__":
    main()
