"""Operator fusion (mappers.fusion): element-wise ops in the array's output path.

Expected figures are derived by hand from the op shapes: an unfused
element-wise pass of E int8 elements with n inputs moves (n + 1) * E DRAM
bytes; fused, the GEMM moves the residual's E bytes and nothing else changes.
"""
from __future__ import annotations

import pytest

import archsim
import mappers
import workloads
from archsim.errors import SpecError
from archsim.program import Load
from archsim.spec import load_arch
from mappers.emit import BufferLayout, Emitter
from mappers.fusion import op_class, plan_fusion
from mappers.lower import Gemm
from mappers.options import MapOptions
from mappers.systolic import SystolicMapper
from mappers.tiling import emit_gemm, traffic
from workloads.zoo._net import Net

ALL = ("bias", "relu", "gelu", "residual", "requant")
ARCH = "systolic-32x32-ws"


def _block(bias_add: bool = False) -> workloads.Graph:
    """x -> fc1 -> relu -> fc2 -(+ x)-> add -> gelu; fc3 reads fc2 too when bias_add is False."""
    net = Net("block", weight_precision="int8", act_precision="int8", acc_precision="int32")
    x = net.input("x", (1, 64, 96))
    h = net.linear("fc1", x, 96)
    h = net.eltwise("relu", "relu", h)
    h2 = net.linear("fc2", h, 96)
    s = net.eltwise("add", "add", h2, h)  # residual: h (relu) is produced before fc2 runs
    g = net.eltwise("gelu", "gelu", s)
    if bias_add:
        net.eltwise("bias", "add", g, const_params=96)
    return net.graph


def test_plan_follows_single_consumer_chains():
    plan = plan_fusion(_block(), ALL)
    assert plan.fused_into == {"relu": "fc1", "add": "fc2", "gelu": "fc2"}
    ep = plan.epilogues["fc2"]
    assert ep.classes == ("residual", "gelu") and ep.residual and ep.ops == ("add", "gelu")
    assert plan.epilogues["fc1"].classes == ("relu",) and not plan.epilogues["fc1"].residual


def test_plan_only_classes_the_unit_has():
    plan = plan_fusion(_block(), ("relu",))
    assert plan.fused_into == {"relu": "fc1"}  # the add stops fc2's chain (no residual unit)
    assert plan_fusion(_block(), ()).fused_into == {}


def test_a_tensor_read_twice_is_not_fused():
    # fc1's relu output feeds fc2 and the add: relu is fused (fc1 has one consumer),
    # but nothing follows relu into fc1's epilogue since relu has two consumers
    plan = plan_fusion(_block(), ALL)
    assert plan.epilogues["fc1"].ops == ("relu",)


def test_residual_joins_the_later_gemm():
    net = Net("res", weight_precision="int8", act_precision="int8", acc_precision="int32")
    x = net.input("x", (1, 64, 56, 56))
    a = net.conv("a", x, 64, 1)
    b = net.conv("b", x, 64, 1)
    net.eltwise("add", "add", a, b)
    plan = plan_fusion(net.graph, ALL)
    assert plan.fused_into == {"add": "b"}  # a is in DRAM when b runs, not the other way round


def test_op_classes():
    g = _block(bias_add=True)
    assert [op_class(g.op(n)) for n in ("relu", "add", "gelu", "bias")] == ["relu", "residual", "gelu", "bias"]
    assert op_class(g.op("fc1")) is None


def _runs(graph, arch=ARCH):
    mappers.clear_cache()
    return archsim.simulate(graph, arch, fusion=False), archsim.simulate(graph, arch)


def test_dram_bytes_saved_by_hand():
    # stall-free DRAM: every plan's estimate is its compute, so the residual's
    # constant bytes cannot change which plan the search picks
    free = load_arch(ARCH, overrides={"dram.bytes_per_cycle": float("inf"), "dram.latency_cycles": 0})
    off, on = _runs(_block(), free)
    E = 64 * 96  # int8: one byte per element
    l_off = {layer.name: layer for layer in off.layers}
    l_on = {layer.name: layer for layer in on.layers}
    # unfused: relu and gelu move E in + E out, the add 2E in + E out
    assert [l_off[n].dram_bytes for n in ("relu", "add", "gelu")] == [2 * E, 3 * E, 2 * E]
    for n in ("relu", "add", "gelu"):
        assert l_on[n].dram_bytes == 0 and l_on[n].cycles == 0
        assert l_on[n].mapping == {"fused_into": "fc2" if n != "relu" else "fc1"}
    # fused: fc1 unchanged, fc2 reads the residual tile once
    assert l_on["fc2"].mapping["tiles"] == l_off["fc2"].mapping["tiles"]
    assert l_on["fc1"].dram_bytes == l_off["fc1"].dram_bytes
    assert l_on["fc2"].dram_bytes == l_off["fc2"].dram_bytes + E
    assert l_on["fc2"].dram_bytes_by_operand["residual"] == E
    assert on.dram_bytes == off.dram_bytes - 7 * E + E
    assert on.total_cycles < off.total_cycles
    assert l_on["fc2"].mapping["epilogue"] == ["residual", "gelu"]


@pytest.mark.parametrize("order,spill", [("mnk", False), ("nmk", False), ("nkm", False), ("nkm", True)])
def test_residual_loads_equal_closed_form(order, spill):
    from mappers.tiling import TilePlan

    g = Gemm("g", 100, 70, 50, residual=True, epilogue=("residual",))
    plan = TilePlan("ws", 40, 32, 32, order, spill)
    arch = load_arch(ARCH)
    em = Emitter(BufferLayout.from_arch(arch))
    emit_gemm(em, g, plan, lambda sm, sk, sn, acc: [])
    res = sum(c.nbytes for c in em.commands if isinstance(c, Load) and c.operand == "residual")
    assert res == 100 * 50  # every output element once, int8
    assert int(traffic(g, 40, 32, 32, ["mnk", "nmk", "nkm"].index(order), spill).residual) == res


def test_resnet50_fusion_removes_the_elementwise_passes():
    graph = workloads.load("resnet50")
    off, on = _runs(graph)
    elementwise = [op for op in graph.ops() if op.kind == "elementwise"]
    fused = [layer for layer in on.layers if layer.mapping.get("fused_into")]
    assert len(fused) == len(elementwise) == 65  # every ReLU and residual add follows a conv
    # each unfused pass moved (inputs + 1) x its elements; fused, each add costs its residual once
    moved = sum((op.num_inputs + 1) * op.operand_bytes()["output"] for op in elementwise)
    residual = sum(op.operand_bytes()["output"] for op in elementwise if op.num_inputs == 2)
    assert sum(layer.dram_bytes_by_operand.get("residual", 0) for layer in on.layers) == residual
    assert not any(layer.dram_bytes_by_operand.get("residual") for layer in off.layers)
    unfused = sum(layer.dram_bytes for layer in off.layers if layer.op == "elementwise")
    assert unfused == moved  # the passes fusion removes
    # the GEMMs' own tilings may change with the residual tiles' room; within 1 % of the hand figure
    assert on.dram_bytes == pytest.approx(off.dram_bytes - moved + residual, rel=0.01)
    assert on.total_cycles < off.total_cycles


def test_scalesim_presets_do_not_fuse():
    graph = workloads.load("resnet18")
    off, on = _runs(graph, "scalesim-32x32-ws")
    assert not any(layer.mapping.get("fused_into") for layer in on.layers)
    assert on.to_dict() == off.to_dict() | {"options": on.to_dict()["options"]}


def test_fusion_falls_back_when_the_residual_does_not_fit():
    # OS 64x64 with 32 KiB buffers: two int32 64x64 accumulator tiles fill the output buffer
    arch = load_arch(ARCH, overrides={"rows": 64, "cols": 64, "dataflow": "os", "buffers.input.bytes": 32768,
                                      "buffers.weight.bytes": 32768, "buffers.output.bytes": 32768})
    graph = workloads.load("resnet18")
    result = archsim.simulate(graph, arch)
    layers = {layer.name: layer for layer in result.layers}
    assert layers["layer1.0.add"].mapping == {}  # ran as its own vector pass
    assert layers["layer1.0.add"].dram_bytes > 0
    assert layers["layer1.0.relu1"].mapping == {"fused_into": "layer1.0.conv1"}


@pytest.mark.parametrize("value, message", [
    ("[relu, softmax]", r"^.*: output_ops: expected names from bias, relu, gelu, residual, requant, got 'softmax'$"),
    ("relu", r"^.*: output_ops: expected a list of bias, relu, gelu, residual, requant, got 'relu'$"),
])
def test_bad_output_ops_is_one_line(value, message):
    with pytest.raises(SpecError, match=message):
        load_arch(ARCH, overrides=[f"output_ops={value}"])


def test_fusion_option_type():
    from archsim.errors import MappingError

    with pytest.raises(MappingError, match=r"^fusion: expected true or false, got 'yes'$"):
        archsim.simulate(_block(), ARCH, fusion="yes")
    assert MapOptions().fusion is True


def test_cli_no_fusion(tmp_path, capsys):
    from archsim.cli import main

    assert main(["run", "--arch", ARCH, "--workload", "resnet18", "--no-plots", "--out", str(tmp_path / "a"),
                 "--no-fusion"]) == 0
    assert main(["run", "--arch", ARCH, "--workload", "resnet18", "--no-plots", "--out", str(tmp_path / "b")]) == 0
    import json

    a = json.loads((tmp_path / "a" / "report.json").read_text())
    b = json.loads((tmp_path / "b" / "report.json").read_text())
    assert a["options"]["mapper"] == {"fusion": False}
    assert a["total_cycles"] > b["total_cycles"]
    assert SystolicMapper(load_arch("scalesim-32x32-ws"), MapOptions()).output_ops == ()
