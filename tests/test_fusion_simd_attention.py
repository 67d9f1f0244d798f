"""Operator fusion on the simd and attention templates (mappers.fusion via mappers.simd / mappers.attention).

Expected figures are derived by hand from the op shapes (int8 activations, one
byte per element): an unfused element-wise pass over E elements with n inputs
moves (n + 1) * E DRAM bytes (plus its learned constants); fused, the GEMM also
reads a residual tile of E bytes. With stall-free DRAM a vector pass takes
E * reads * cycles_per_op / lanes cycles of the vector unit, and the GEMM's own
cycles do not change, so the fused run is exactly that much shorter (a partly
filled last lane step counts whole).
"""
from __future__ import annotations

import dataclasses

import pytest

import archsim
import mappers
from archsim.errors import SpecError
from archsim.spec import load_arch
from mappers.options import make_options
from workloads.zoo._net import Net

ALL = ["bias", "relu", "gelu", "residual", "requant"]
ARCHS = ("simd-edge", "simd-1024", "fusemax-edge", "fusemax-cloud")
STALL_FREE = {"dram.bytes_per_cycle": float("inf"), "dram.latency_cycles": 0}
C, H, W = 16, 14, 14
E_CONV = C * H * W  # elements of the conv block's tensors
E_MM = 64 * 128  # elements of the matmul's output


def conv_graph():
    """conv0 -> conv1 -> + bias -> + conv0's output (residual) -> relu."""
    net = Net("convblock", weight_precision="int8", act_precision="int8", acc_precision="int32")
    x = net.input("x", (1, C, H, W))
    h0 = net.conv("conv0", x, C, 3, padding=1, bias=False)  # two consumers: nothing fuses into it
    h = net.conv("conv1", h0, C, 3, padding=1, bias=False)
    h = net.eltwise("bias", "add", h, const_params=C)
    h = net.eltwise("add", "add", h, h0)
    net.eltwise("relu", "relu", h)
    return net.graph


def matmul_graph():
    """x[64, 96] @ W[96, 128] -> gelu."""
    net = Net("mmgelu", weight_precision="int8", act_precision="int8", acc_precision="int32")
    x = net.input("x", (1, 64, 96))
    h = net.linear("fc", x, 128, bias=False)
    net.eltwise("gelu", "gelu", h)
    return net.graph


# graph, the GEMM, {vector pass: (hand DRAM bytes, reads per element, vector op)}, residual bytes when fused,
# elements per pass
CASES = {
    "conv": (conv_graph, "conv1", {"bias": (2 * E_CONV + C, 1, "add"), "add": (3 * E_CONV, 2, "add"),
                                    "relu": (2 * E_CONV, 1, "relu")}, E_CONV, E_CONV),
    "matmul": (matmul_graph, "fc", {"gelu": (2 * E_MM, 1, "gelu")}, 0, E_MM),
}


def _runs(graph, arch):
    mappers.clear_cache()
    return archsim.simulate(graph, arch, fusion=False), archsim.simulate(graph, arch)


def _layers(result):
    return {layer.name: layer for layer in result.layers}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ARCHS)
def test_dram_bytes_saved_by_hand(name, case):
    make, gemm, passes, residual, _ = CASES[case]
    off, on = _runs(make(), load_arch(name, overrides={"output_ops": ALL}))
    l_off, l_on = _layers(off), _layers(on)
    for n, (nbytes, _, _) in passes.items():
        assert l_off[n].dram_bytes == nbytes  # the unfused pass, from the shapes
        assert l_on[n].dram_bytes == 0 and l_on[n].cycles == 0 and l_on[n].commands == 0
        assert l_on[n].mapping == {"fused_into": gemm}
    assert l_on[gemm].mapping["epilogue"] == {"conv": ["bias", "residual", "relu"], "matmul": ["gelu"]}[case]
    assert l_on[gemm].mapping["tiles"] == l_off[gemm].mapping["tiles"]  # same plan: the bytes compare exactly
    assert l_on[gemm].dram_bytes_by_operand.get("residual", 0) == residual
    assert on.dram_bytes == off.dram_bytes - sum(b for b, _, _ in passes.values()) + residual
    assert on.total_cycles < off.total_cycles


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ARCHS)
def test_cycles_saved_by_hand(name, case):
    make, gemm, passes, _, elements = CASES[case]
    arch = load_arch(name, overrides={"output_ops": ALL, **STALL_FREE})
    off, on = _runs(make(), arch)
    l_off, l_on = _layers(off), _layers(on)
    vu = arch.vector_unit
    vector = {n: -(-elements * reads * vu.cycles_per_op.get(op, vu.default_cycles) // vu.lanes)  # ceil
              for n, (_, reads, op) in passes.items()}
    assert {n: l_off[n].cycles for n in passes} == vector
    assert l_on[gemm].cycles == l_off[gemm].cycles
    assert on.total_cycles == off.total_cycles - sum(vector.values())


def _figures(result) -> dict:
    """report.json without what says how the run was asked for (options, the arch spec echo)."""
    d = result.to_dict()
    return {k: v for k, v in d.items() if k not in ("options", "arch")}


@pytest.mark.parametrize("name", ARCHS)
def test_no_fusion_equals_no_output_unit(name):
    graph = conv_graph()
    mappers.clear_cache()
    no_fusion = archsim.simulate(graph, load_arch(name, overrides={"output_ops": ALL}), fusion=False)
    mappers.clear_cache()
    no_unit = archsim.simulate(graph, load_arch(name, overrides=["output_ops=[]"]))
    mappers.clear_cache()
    preset = archsim.simulate(graph, name)  # the shipped simd / attention presets declare no output unit
    assert _figures(no_fusion) == _figures(no_unit) == _figures(preset)
    assert not any(layer.mapping.get("fused_into") for layer in preset.layers)


def test_simd_falls_back_when_the_residual_does_not_fit():
    # smallest simd tile 8 x 8: two int32 accumulator tiles take 512 B, plus two int8 residual tiles 640 B
    arch = load_arch("simd-edge", overrides={"output_ops": ALL, "buffers.output.bytes": 600})
    result = archsim.simulate(conv_graph(), arch)
    layers = _layers(result)
    assert "epilogue" not in layers["conv1"].mapping
    for n in ("bias", "add", "relu"):
        assert layers[n].dram_bytes > 0 and "fused_into" not in layers[n].mapping
    # without a residual the chain fits: the matmul's gelu still fuses
    assert _layers(archsim.simulate(matmul_graph(), arch))["gelu"].mapping == {"fused_into": "fc"}


@pytest.mark.parametrize("name", ARCHS)
def test_output_ops_accepted_and_checked(name):
    assert load_arch(name, overrides=["output_ops=[relu, gelu]"]).output_ops == ("relu", "gelu")
    with pytest.raises(SpecError, match=r"^[^\n]*: output_ops: expected names from bias, relu, gelu, residual, "
                                        r"requant, got 'softmax'$"):
        load_arch(name, overrides=["output_ops=[relu, softmax]"])


def test_pim_rejects_output_ops_in_one_line():
    arch = load_arch("pim-gddr6", overrides=["output_ops=[relu]"])
    with pytest.raises(SpecError, match=r"^pim-gddr6: output_ops: expected none for the pim template \(its "
                                        r"element-wise ops run on the ASIC; there is no GEMM output path to fuse "
                                        r"into\), got relu$"):
        archsim.simulate(matmul_graph(), arch)


def test_attention_gemm_commands_are_the_systolic_ones_relabelled():
    """The attention mapper emits its GEMM folds straight onto array2d (speed); the commands
    equal what relabelling the systolic mapper's output gives (the previous implementation)."""
    from archsim.templates.attention.model import gemm_params
    from archsim.templates.systolic.options import SystolicOptions
    from mappers.attention import AttentionMapper
    from mappers.systolic import SystolicMapper

    arch = load_arch("fusemax-edge")
    options = make_options(arch, {})
    shim = dataclasses.replace(arch, params=gemm_params(arch.params), template="systolic")
    plain = SystolicMapper(shim, dataclasses.replace(options, template=SystolicOptions(dataflow="ws")))
    units = {"array": "array2d", "vector": "array1d"}
    graph = matmul_graph()
    for op in graph.ops():
        want = [dataclasses.replace(c, unit=units.get(c.unit, c.unit)) for c in plain(op).commands]
        assert AttentionMapper(arch, options)(op).commands == want
