"""Units by kind: the engine attributes busy, compute and stall time by the kind
each model declares for its units (compute, vector, dma, bank)."""
from __future__ import annotations

import pytest

import archsim
import mappers
import workloads
from archsim.engine import run_program
from archsim.errors import SpecError
from archsim.program import LayerProgram, Program, VectorOp
from archsim.spec import load_arch


def test_pim_asic_layer_is_compute_not_stall():
    """A vector-only PIM layer (a layernorm on the ASIC): all of its time is the
    ASIC's work, none of it is stall (it was reported as 100 % stall before)."""
    arch = load_arch("pim-hbm2")
    r = archsim.simulate("gpt2", arch, phase="decode", kv_len=63)
    norm = next(l for l in r.layers if l.name == "h0.norm1")
    assert norm.cycles > 0
    assert norm.compute_cycles == norm.cycles and norm.stall_cycles == 0
    # the ASIC is the only busy unit: 768 elements x layernorm's cost per element over the lanes
    assert set(norm.unit_busy_cycles) == {"asic"}
    vu = arch.vector_unit
    per_element = vu.cycles_per_op.get("layernorm", vu.default_cycles)
    assert norm.unit_busy_cycles["asic"] == -(-768 * per_element // vu.lanes)


def test_every_unit_reported_with_its_busy_time():
    r = archsim.simulate("resnet18", "systolic-32x32-ws")
    assert set(r.units) == {"array", "vector", "dma"}
    total = sum(l.cycles for l in r.layers)
    for name, u in r.units.items():
        busy = sum(l.unit_busy_cycles.get(name, 0) for l in r.layers)
        assert u["busy_cycles"] == pytest.approx(busy)
        assert u["utilization"] == pytest.approx(busy / total)
        assert 0 < u["utilization"] <= 1


def test_a_command_on_an_undeclared_unit_is_an_error():
    arch = load_arch("systolic-32x32-ws")
    prog = Program(arch.name, "w", [LayerProgram("x", "softmax", 0, [VectorOp(0, (), "exp", 4, unit="npu")], ("u",))])
    with pytest.raises(SpecError, match=r"^template systolic: commands run on unit\(s\) npu that its model does "
                                        r"not declare \(units: array, vector, dma\)$"):
        run_program(prog, arch)


def test_precision_pairs_reach_the_template_and_the_report():
    r = archsim.simulate("resnet18", "systolic-32x32-ws", weights="int16", activations="int8")
    assert r.precisions == ["int16/int8"]
    assert load_arch("systolic-32x32-ws").params.weight_precision == "int8"  # the preset is untouched
    with pytest.raises(SpecError, match=r"^pim-hbm2: pim runs weights/activations int8/int8, bf16/bf16, got int4/bf16$"):
        archsim.simulate("gpt2", "pim-hbm2", phase="decode", weights="int4", activations="bf16")
    with pytest.raises(SpecError, match=r"^systolic-32x32-ws: systolic runs integer operands: --weights one of "
                                        r"int8, int16, got 'bf16'$"):
        archsim.simulate("resnet18", "systolic-32x32-ws", weights="bf16", activations="int8")


def test_roofline_peak_follows_the_precision():
    gpu = load_arch("gpu-a100")
    model = gpu.model()
    hz = gpu.clock_mhz * 1e6
    # NVIDIA A100 datasheet: 624 TOPS int8, 312 TFLOP/s bf16 (dense); a MAC is two operations
    assert model.peak_macs_per_cycle("int8") == pytest.approx(624e12 / hz / 2)
    assert model.peak_macs_per_cycle("bf16") == pytest.approx(312e12 / hz / 2)
    graph = workloads.load("gpt2", phase="decode", kv_len=63, weight_precision="bf16", act_precision="bf16")
    r = run_program(mappers.compile(graph, gpu), gpu)
    assert r.peak_macs_per_cycle == pytest.approx(312e12 / hz / 2)
