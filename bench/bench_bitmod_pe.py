"""BitMoD's bit-serial PE (simd ``pe: bitmod``) in LLM decode, beside the bit-parallel SIMD PE and the
authors' figures (Chen et al., BitMoD, HPCA 2025, arXiv:2411.11745).

One decode token's linear layers (q, k, v, o, gate, up, down; attention and the other layers left out)
of Llama-2-7B and Llama-3-8B, each a GEMV tile (M = 1) on 64 PEs (preset ``bitmod-simd``: the 64 PE
rows of the authors' 64 x 16 generation array that one token uses):

- ``bitmod w3`` / ``bitmod w4``: the bit-serial PE, 4 x int16 activation lanes, FP3 / FP4 mixture
  weights g128 (2 cycles per weight, an 8-bit scale and a 2-bit selector per group);
- ``int4 lanes``: the bit-parallel SIMD PE (array multipliers) on the same 64-bit word: 4 x int4 x int16
  lanes per cycle, fp32 group scale (MixPE order); at 3 bits it still runs int4 lanes (no 3-bit lane);
- ``fp16 lane``: one fp16 x fp16 lane per PE (the authors' FP16 baseline PE).

Columns: compute cycles (fast model, less the fixed pipeline fill); DRAM cycles of the weights at
32 B/cycle (the authors' 128-bit DDR bus; bits per weight: BitMoD b + 10/128, int4 4 + 32/128, fp16 16);
decode cycles = sum over layers of max(compute, DRAM) (the authors' rule); PE datapath energy (the
simd-45nm tech table's ``simd.*`` actions, no SRAM / DRAM; the bit-parallel lane's multiply is priced
as ``simd.mult.int16``, the template's rule of the lane width: an upper estimate for int4 x int16); PE area (synthesized bit-serial PE,
the simd template's area model for the others). Normalization: iso-PE-count (64 PEs each) for the
cycles; iso-area as MACs per cycle per mm2 of PE area.

Run: ``python bench/bench_bitmod_pe.py``
"""
from __future__ import annotations

from archsim.validate.bitmod import (AUTHORS_ARRAYS, DECODE_MODELS, authors_decode_compute_cycles, decode_compute_cycles,
                                     decode_models, decode_pe_energy_pj, decode_tiles)

DRAM_BYTES_PER_CYCLE = 32
#: the authors' per-PE figures (bitmod_sim/test_bitmod.py, test_baseline.py; 28 nm, before their x1.5 P&R scaling)
AUTHORS_PE = {"bitmod": (1507.7, 0.56), "fp16": (1968.7, 0.77)}  # (um2, pJ per PE per cycle)
PAPER_HEADLINE = "1.69x over ANT and 1.48x over OliVe on average (abstract; archsim models neither, not reproduced)"


def _weight_bits(model) -> float:
    p = model.params
    if p.pe == "bitmod":
        return int(p.weight_format[2]) + 10 / 128
    return {"int4": 4 + 32 / 128, "fp16": 16.0}[p.weight_format]


def _row(model, shapes):
    compute = dram = decode = 0
    for tile in decode_tiles(model, shapes):
        c = model.tile_cycles(tile) - model.params.pipeline_cycles
        d = tile.k * tile.n * _weight_bits(model) / 8 / DRAM_BYTES_PER_CYCLE
        compute, dram, decode = compute + c, dram + d, decode + max(c, d)
    macs = sum(t.k * t.n for t in decode_tiles(model, shapes))
    area = model.area_inputs().units["simd_pe"]
    area_mm2 = area[0] * area[1] / 1e6
    return {"compute": compute, "dram": dram, "decode": decode, "energy_uj": decode_pe_energy_pj(model, shapes) / 1e6,
            "area_mm2": area_mm2, "macs_per_cycle_mm2": macs / compute / area_mm2}


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print("normalization: iso-PE-count (64 PEs) for cycles and energy; iso-area in the last column\n")
    hdr = (f"{'model':10} {'w':3} {'PE':11} {'compute cyc':>12} {'DRAM cyc':>11} {'decode cyc':>11} "
           f"{'PE energy uJ':>12} {'PE mm2':>7} {'MAC/cyc/mm2':>11}")
    for name, shapes in DECODE_MODELS.items():
        print(hdr)
        for bits in (3, 4):
            bitmod, parallel, fp16 = decode_models(bits)
            rows = {"bitmod": _row(bitmod, shapes), "int4 lanes": _row(parallel, shapes), "fp16 lane": _row(fp16, shapes)}
            for pe, r in rows.items():
                print(f"{name:10} {bits:<3} {pe:11} {r['compute']:12,.0f} {r['dram']:11,.0f} {r['decode']:11,.0f} "
                      f"{r['energy_uj']:12.2f} {r['area_mm2']:7.3f} {r['macs_per_cycle_mm2']:11.1f}")
            b, q, f = rows["bitmod"], rows["int4 lanes"], rows["fp16 lane"]
            print(f"{'':14} bit-serial vs int4 lanes: compute x{q['compute'] / b['compute']:.2f}, decode "
                  f"x{q['decode'] / b['decode']:.2f}, PE energy x{q['energy_uj'] / b['energy_uj']:.2f} less, "
                  f"iso-area throughput x{b['macs_per_cycle_mm2'] / q['macs_per_cycle_mm2']:.2f}")
            print(f"{'':14} bit-serial vs fp16 lane:  compute x{f['compute'] / b['compute']:.2f}, decode "
                  f"x{f['decode'] / b['decode']:.2f}, PE energy x{f['energy_uj'] / b['energy_uj']:.2f} less")
        ours = decode_compute_cycles(decode_models(3)[0], shapes)
        theirs_b = authors_decode_compute_cycles(shapes, "bitmod")
        theirs_f = authors_decode_compute_cycles(shapes, "fp16")
        print(f"{'':14} authors' simulator (64 rows): bit-serial {theirs_b:,} compute cycles (archsim {ours:,}, "
              f"{(ours / theirs_b - 1) * 100:+.2f}%: the 8-cycle dequantization drain per round), "
              f"FP16 {theirs_f:,}: x{theirs_f / theirs_b:.2f}\n")
    (ba, be), (fa, fe) = AUTHORS_PE["bitmod"], AUTHORS_PE["fp16"]
    rb, cb, db, lb = AUTHORS_ARRAYS["bitmod"]
    rf, cf, df, lf = AUTHORS_ARRAYS["fp16"]
    print(f"authors' PEs (28 nm): BitMoD {ba} um2 {be} pJ/cycle ({db} lanes, {lb} cycles/weight, {rb}x{cb} = "
          f"{rb * cb} PEs); FP16 {fa} um2 {fe} pJ/cycle ({df} lane, {rf}x{cf} = {rf * cf} PEs): arrays of "
          f"{rb * cb * ba / 1e6:.2f} vs {rf * cf * fa / 1e6:.2f} mm2 (iso-area); "
          f"MACs per cycle per um2 x{(db / lb / ba) / (df / lf / fa):.2f} for BitMoD")
    print(f"paper's headline: {PAPER_HEADLINE}; its Fig. 7/8 per-model bars were not found as numbers")


if __name__ == "__main__":
    main()
