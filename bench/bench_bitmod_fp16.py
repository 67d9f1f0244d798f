"""FP16 activations on BitMoD's bit-serial PE: the error of the block-float datapath
(archsim/templates/simd/bitmod_fp16.py: max-exponent alignment with 3 guard bits, 15-bit truncating
group accumulator, fp32 output accumulator) against the exact dot product, beside int16 activations.

GEMV tiles M = 1, K = 4096, N = 64, FP4 mixture weights (uniform codes, a random datatype selector and
8-bit scale code per group of 128), activations N(0, 1) rounded to fp16, and the same with 0.5% of the
channels x 100 (LLM activation outliers). Columns: SQNR of the PE's outputs against the exact float64
dot product, dB; worst |error| / sum |a w s| over the outputs (the truncation bound's normalization);
for int16 activations (a scaled to +-32767, exact) the same columns read inf / 0.

Run: ``python bench/bench_bitmod_fp16.py``
"""
from __future__ import annotations

import numpy as np

from archsim.spec import arch_from_params
from archsim.templates.simd import bitserial
from archsim.templates.simd.model import SimdModel
from archsim.templates.simd.params import SimdParams
from archsim.templates.simd.tile import SimdTile

K, N, G = 4096, 64, 128


def main() -> None:
    params = SimdParams(pes=64, lane_bits=64, pe="bitmod", formats=["fp4_er_pos", "int16", "fp16"],
                        weight_format="fp4_er_pos", activation_format="fp16", group_size=G, pipeline_cycles=2)
    model = SimdModel(arch_from_params(params))
    rng = np.random.default_rng(0)
    print(f"{'activations':<28} {'SQNR dB':>8} {'worst err / sum|a w s|':>24}")
    for label, outliers in (("fp16 N(0,1)", False), ("fp16 N(0,1), 0.5% x100", True)):
        tile = SimdTile(1, K, N, "fp4_er_pos", "fp16", group_size=G)
        ops = bitserial.make_operands(tile, params, rng)
        ops["dtype"] = rng.integers(0, 4, size=(K // G, N)).astype(np.uint8)
        a = rng.standard_normal((1, K))
        if outliers:
            a[:, rng.choice(K, K // 200, replace=False)] *= 100
        a16 = a.astype(np.float16)
        ops["input"] = a16.view(np.uint16).astype(np.uint32)
        w = bitserial.weights_x2(tile, ops) / 2
        s = np.repeat(np.asarray(ops["scale"], np.float64), G, axis=0)
        exact = a16.astype(np.float64) @ (w * s)
        size = np.abs(a16.astype(np.float64)) @ np.abs(w * s)
        got = model.tile_values(tile, ops).astype(np.float64)
        sqnr = 10 * np.log10(np.sum(exact ** 2) / np.sum((got - exact) ** 2))
        print(f"{label:<28} {sqnr:8.1f} {np.max(np.abs(got - exact) / size):24.2e}")
    tile = SimdTile(1, K, N, "fp4_er_pos", "int16", group_size=G)
    ops = bitserial.make_operands(tile, params, rng)
    w = bitserial.weights_x2(tile, ops)
    s = np.repeat(np.asarray(ops["scale"], np.int64), G, axis=0)
    a = bitserial.activations(tile, ops)
    exact = a @ (w * s)
    err = np.abs(model.tile_values(tile, ops) - exact).max()
    print(f"{'int16 (exact contract)':<28} {'inf' if err == 0 else 'ERR':>8} {err:24.2e}")
    print(f"cycles per tile, fp16 = int16 activations: {model.tile_cycles(SimdTile(1, K, N, 'fp4_er_pos', 'fp16', G))}"
          f" = {model.tile_cycles(tile)}")


if __name__ == "__main__":
    main()
