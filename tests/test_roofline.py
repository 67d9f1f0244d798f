"""Roofline template and the gpu-a100 preset: per-kernel max(compute, memory)
and GPT-2 decode throughput from bytes / bandwidth worked out independently."""
from __future__ import annotations

import pytest

from archsim.errors import SpecError
from archsim.spec.load import load_arch
from archsim.templates.roofline import RooflineTile


PURE = ["kernel_overhead_us=0", "mem_efficiency=1"]


def test_a100_figures_and_kernel_bounds():
    arch = load_arch("gpu-a100", overrides=PURE)
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

    arch = load_arch("gpu-a100", overrides=PURE)
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


def _gpt2_decode(arch_name: str, overrides=()):
    import mappers
    import workloads
    from archsim.engine import run_program

    arch = load_arch(arch_name, overrides=list(overrides))
    g = workloads.load("gpt2", phase="decode", kv_len=1023, weight_precision="fp16", act_precision="fp16")
    prog = mappers.compile(g, arch)
    return prog, run_program(prog, arch)


def test_energy_is_board_power_times_time_whatever_the_clock():
    """Before issue 14 the energy per cycle was fixed: halving the clock halved the power."""
    _, fast = _gpt2_decode("gpu-t4", PURE)
    _, slow = _gpt2_decode("gpu-t4", PURE + ["clock_mhz=795"])
    for r in (fast, slow):
        assert r.energy_pj / r.latency_s == pytest.approx(70e12, rel=1e-9)  # 70 W in pJ/s
    assert slow.energy_pj == pytest.approx(fast.energy_pj, rel=1e-3)


def test_t4_sustained_bandwidth_and_host_overhead():
    """T4: 320 GB/s x 0.69 sustained; GPT-2 decode bytes as in the A100 test (fp16). The preset's
    own cycles are that roofline; its host cost (dispatch_us, overlapped) is in the extras, and the
    additive kernel_overhead_us still adds per kernel when asked for instead."""
    weights = (124_439_808 - 1024 * 768) * 2
    kv = 12 * 2 * 1024 * 768 * 2
    _, pure = _gpt2_decode("gpu-t4", PURE)
    assert pure.extras["tokens_per_s"] == pytest.approx(320e9 / (weights + kv), rel=0.02)
    prog, preset = _gpt2_decode("gpu-t4")
    assert preset.latency_s == pytest.approx(pure.latency_s / 0.69, rel=0.01)
    kernels = sum(len(l.commands) * l.mapping.get("repeat", 1) for l in prog.layers)
    _, added = _gpt2_decode("gpu-t4", ["dispatch_us=0", "kernel_overhead_us=80"])
    assert added.latency_s == pytest.approx(preset.latency_s + kernels * 80e-6, rel=0.01)
    # overlapped: at least the host's kernels x 76 us and the GPU's busy time, at most their sum
    x = preset.extras
    d = kernels * 76e-6
    assert x["dispatch_bound_busy_s"] == pytest.approx(preset.latency_s, rel=1e-6)
    assert max(d, preset.latency_s) <= x["dispatch_bound_latency_s"] <= d + preset.latency_s
    idle = x["dispatch_bound_latency_s"] - preset.latency_s
    assert x["dispatch_bound_energy_per_token_j"] == pytest.approx(70 * preset.latency_s + 30 * idle, rel=1e-6)


def test_dispatch_pipeline_by_hand():
    from archsim.templates.roofline.dispatch import pipelined

    # host 2 per kernel: queued at 2, 4, 6; kernels of 1 run 2-3, 4-5, 6-7
    step = pipelined([1, 1, 1], 2)
    assert (step.seconds, step.busy_s, step.idle_s) == (7, 3, 4)
    # a long first kernel lets the host run ahead: 2-7, 7-8, 8-9
    assert pipelined([5, 1, 1], 2).seconds == 9
    assert pipelined([5, 1, 1], 2).energy_j(70, 30) == 7 * 70 + 2 * 30
    with pytest.raises(SpecError, match=r"dispatch_us: expected 0 when kernel_overhead_us is set"):
        load_arch("gpu-t4", overrides=["kernel_overhead_us=80"])


def test_t4_preset_figures():
    arch = load_arch("gpu-t4")
    m = arch.model()
    assert m.peak_flops_per_cycle("fp16") * 1590e6 == pytest.approx(65e12)
    assert m.peak_flops_per_cycle("int8") * 1590e6 == pytest.approx(130e12)
    assert m.peak_flops_per_cycle("bf16") * 1590e6 == pytest.approx(8.1e12)  # Turing: no bf16 tensor cores
    assert arch.params.board_power_w == 70 and arch.params.mem_gb_per_s == 320
    with pytest.raises(SpecError, match=r"mem_efficiency: expected a fraction"):
        load_arch("gpu-t4", overrides=["mem_efficiency=1.5"])


def test_roofline_rejects_output_ops_in_one_line():
    """A GPU roofline runs each op as its own kernel; a spec claiming a fused output path must not be ignored."""
    import archsim
    from workloads.zoo import build

    arch = load_arch("gpu-t4", overrides=["output_ops=[bias, relu]"])
    with pytest.raises(SpecError, match=r"^gpu-t4: output_ops: expected none for the roofline template .*got bias, relu$"):
        archsim.simulate(build("resnet18"), arch)
