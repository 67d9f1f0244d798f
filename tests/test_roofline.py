"""Roofline template and the gpu-a100 preset: per-kernel max(compute, memory)
and GPT-2 decode throughput from bytes / bandwidth worked out independently."""
from __future__ import annotations

import pytest

from archsim.errors import SpecError
from archsim.spec.load import load_arch
from archsim.templates.roofline import RooflineTile


def test_a100_figures_and_kernel_bounds():
    arch = load_arch("gpu-a100")
    m = arch.model()
    # 312 TFLOP/s bf16 at 1410 MHz -> 221,276.6 flop per cycle; 1555 GB/s -> 1102.8 B per cycle
    assert m.peak_flops_per_cycle("bf16") == pytest.approx(312e12 / 1410e6)
    assert m.peak_flops_per_cycle("int8") == pytest.approx(624e12 / 1410e6)
    gemv = RooflineTile(flops=2 * 768 * 768, nbytes=768 * 768 * 2, precision="bf16")
    assert m.tile_bound(gemv) == "memory"
    assert m.tile_cycles(gemv) == -(-768 * 768 * 2 * 1410 // 1555_000)  # ceil(bytes / (1555e9 / 1410e6))
    gemm = RooflineTile(flops=2 * 4096 ** 3, nbytes=3 * 4096 * 4096 * 2, precision="bf16")
    assert m.tile_bound(gemm) == "compute"
    assert m.tile_cycles(gemm) == pytest.approx(2 * 4096 ** 3 / (312e12 / 1410e6), abs=1)


def test_roofline_rejects_bad_params():
    with pytest.raises(SpecError, match=r"gpu-a100\.yaml: params\.mem_gb_per_s: expected a positive number"):
        load_arch("gpu-a100", overrides=["mem_gb_per_s=0"])


def test_gpt2_decode_on_a100_is_bandwidth_bound():
    import mappers
    import workloads
    from archsim.engine import run_program

    arch = load_arch("gpu-a100")
    g = workloads.load("gpt2", phase="decode", kv_len=1023, weight_precision="bf16", act_precision="bf16")
    r = run_program(mappers.compile(g, arch), arch)
    # bytes per token, from GPT-2 small's published shape: the 124,439,808 parameters less the
    # position table (1024 x 768, only one row is read) in bf16, plus K and V of 12 layers x 1024
    # positions x 768 in bf16; activations add < 1 %.
    weights = (124_439_808 - 1024 * 768) * 2
    kv = 12 * 2 * 1024 * 768 * 2
    expected = 1555e9 / (weights + kv)
    assert r.extras["memory_bound_fraction"] == 1.0
    assert r.extras["tokens_per_s"] == pytest.approx(expected, rel=0.02)
    # energy = 400 W x latency
    assert r.extras["energy_per_token_pj"] == pytest.approx(400 / r.extras["tokens_per_s"] * 1e12, rel=1e-3)
