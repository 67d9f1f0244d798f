"""COSMA allocation applied to the Program (mappers.allocation.apply): DRAM bytes counted by hand.

Every layer is a 16x32 @ 32x32 int8 linear layer (A 512 B, weight 1024 B, result 512 B) on
systolic-32x32-ws: one buffer tile each, so every operand crosses the DRAM interface exactly
once per load and the engine's bytes can be summed by hand. The plan may fill half the
``input`` buffer (mappers.allocation.apply.PLAN_SHARE).
"""
from __future__ import annotations

import pytest

import mappers
from archsim.engine import run_program
from archsim.errors import ArchsimError, MappingError
from archsim.program import Load, Store
from archsim.spec import load_arch
from mappers.allocation import apply as apply_mod
from mappers.allocation.problem import Problem, Tensor
from mappers.allocation.synthetic import nas_cells
from workloads.graph import Graph
from workloads.ops import Elementwise, MatMul

pytest.importorskip("highspy")

A_BYTES = 16 * 32  # each activation tensor, int8
W_BYTES = 32 * 32  # each layer's weight, int8


def _lin(name, k=32, n=32):
    return MatMul(name, m=16, k=k, n=n, weight_precision="int8", act_precision="int8", acc_precision="int32")


def _chain():
    """x -> a -> b -> c (graph output)."""
    g = Graph("chain3")
    g.add(_lin("a"), [None])
    g.add(_lin("b"), ["a"])
    g.add(_lin("c"), ["b"])
    return g


def _residual():
    """x -> a -> b -> c, out = a + c (the add runs in c's output path: a fused residual)."""
    g = _chain()
    g.name = "residual"
    g.add(Elementwise("out", fn="add", shape=(1, 16, 32), num_inputs=2, act_precision="int8"), ["a", "c"])
    return g


def _arch(input_bytes):
    return load_arch("systolic-32x32-ws", overrides=[f"buffers.input.bytes={input_bytes}"])


def _run(graph, input_bytes, allocation, **kw):
    arch = _arch(input_bytes)
    program = mappers.compile(graph, arch, allocation=allocation, **kw)
    return program, run_program(program, arch)


def _bytes(program, cls, operand=None):
    return sum(c.nbytes * layer.repeat for layer in program.layers for c in layer.commands
               if type(c) is cls and (operand is None or c.operand == operand))


COMPULSORY = A_BYTES + A_BYTES + 3 * W_BYTES  # read x, write the output, each weight once


@pytest.mark.parametrize("graph", [_chain, _residual])
def test_greedy_is_layer_by_layer_by_hand(graph):
    # every intermediate stored once and loaded by each reader: a (2 readers in the residual
    # block: b and the fused add) and b
    program, result = _run(graph(), 2048, "greedy")
    readers_of_a = 2 if graph is _residual else 1
    assert result.dram_bytes == COMPULSORY + A_BYTES * (1 + readers_of_a) + 2 * A_BYTES
    assert program.allocation == {}


@pytest.mark.parametrize("graph", [_chain, _residual])
def test_resident_tensors_move_no_bytes(graph):
    # input buffer 2048 B: the plan may hold 1024 B = two tensors, all each op needs except the
    # residual block's last step (a, b, out: 1536 B), which streams its output (compulsory)
    # while a and b stay: nothing leaves the chip but the compulsory bytes
    for method in ("ilp", "heuristic"):
        program, result = _run(graph(), 2048, method)
        assert result.dram_bytes == COMPULSORY
        assert _bytes(program, Store) == A_BYTES  # only the graph output
        assert _bytes(program, Load, "input") == A_BYTES  # only x, once (its first read)
        assert _bytes(program, Load, "residual") == 0
        assert program.allocation["non_compulsory_bytes"] == 0
        assert program.allocation["compulsory_bytes"] == COMPULSORY


def test_one_tensor_room_by_hand():
    # input buffer 1024 B: the plan holds one 512 B tensor, every step is streamed. Chain: a and b
    # cannot both stay at b's step: one of them goes out and comes back (512 + 512)
    program, result = _run(_chain(), 1024, "ilp")
    assert result.dram_bytes == COMPULSORY + 2 * A_BYTES
    # residual block: a (read by b and the fused add) stays, b goes out and back
    program, result = _run(_residual(), 1024, "ilp")
    assert result.dram_bytes == COMPULSORY + 2 * A_BYTES
    assert _bytes(program, Load, "residual") == 0  # a read on chip by the add


def _evicting():
    """x -> a -> b (1024 B) -> c -> d, e = a + d as a vector op (fusion off): a is read again
    at e after two steps (b, c) that need room beside it."""
    g = Graph("evict")
    g.add(_lin("a"), [None])
    g.add(_lin("b", n=64), ["a"])
    g.add(_lin("c", k=64), ["b"])
    g.add(_lin("d"), ["c"])
    g.add(Elementwise("e", fn="add", shape=(1, 16, 32), num_inputs=2, act_precision="int8"), ["a", "d"])
    return g


def test_evicted_tensor_is_written_once_and_reloaded():
    # input 3072 B, plan 1536 B. Step c holds b (1024) and c (512): a (512) must leave (written
    # back, 512 B); e needs a, d, e (1536 B) on chip: a comes back (one 512 B reload). b, c, d stay.
    weights = 2 * W_BYTES + 2 * 32 * 64
    compulsory = A_BYTES + A_BYTES + weights
    for method in ("ilp", "heuristic"):
        program, result = _run(_evicting(), 3072, method, fusion=False)
        assert result.dram_bytes == compulsory + 2 * A_BYTES
        reloads = [c for layer in program.layers if layer.op == "reload" for c in layer.commands]
        # x's first read and a's reload
        assert sorted(c.nbytes for c in reloads) == [A_BYTES, A_BYTES]
        assert _bytes(program, Store) == 2 * A_BYTES  # a's write-back and the output
        assert program.allocation["non_compulsory_bytes"] == 2 * A_BYTES
    # greedy: a stored and loaded twice, b stored and loaded, c and d each stored and loaded
    _, greedy = _run(_evicting(), 3072, "greedy", fusion=False)
    assert greedy.dram_bytes == compulsory + 3 * A_BYTES + 2 * 2 * A_BYTES + 2 * 2 * A_BYTES


def _nas():
    return nas_cells(cells=1, branches=4, channels=8, size=8)


@pytest.mark.parametrize("graph,input_bytes", [(_chain, 1024), (_residual, 1024), (_evicting, 3072),
                                                (_nas, 2048), (_nas, 4096)])
def test_engine_bytes_equal_the_plan_and_never_exceed_greedy(graph, input_bytes):
    _, greedy = _run(graph(), input_bytes, "greedy")
    for method in ("ilp", "heuristic"):
        program, result = _run(graph(), input_bytes, method)
        a = program.allocation
        assert a["method"] == method
        # activations: exactly the plan's bytes (weights: each loaded once, as greedy does; the
        # plan's weight bytes also count conv biases, which the mapper does not load)
        weights = result.dram_bytes_by_operand.get("weight", 0)
        assert weights == greedy.dram_bytes_by_operand.get("weight", 0)
        assert result.dram_bytes - weights == a["compulsory_bytes"] - a["weight_bytes"] + a["non_compulsory_bytes"]
        assert a["non_compulsory_bytes"] <= a["greedy_non_compulsory_bytes"]
        assert result.dram_bytes <= greedy.dram_bytes


def test_order_is_a_topological_order_of_the_graph():
    program, _ = _run(_nas(), 2048, "ilp")
    pos = {layer.name: i for i, layer in enumerate(program.layers)}
    g = _nas()
    for op in g.ops():
        for ref in g.inputs_of(op.name):
            if ref is not None:
                assert pos[ref.rpartition(":")[0] if ref not in g else ref] < pos[op.name]
    assert sorted(n for n in pos if not n.endswith(".reload")) == sorted(op.name for op in g.ops())


def test_check_order_refuses_a_read_before_its_producer():
    problem = Problem(("a", "b"), (Tensor("a:0", 10, 1, (0,)),), 100, 0)
    with pytest.raises(MappingError, match="reads a:0 before b produces it"):
        apply_mod.check_order(problem)


def test_template_without_the_tiling_path_is_refused():
    arch = load_arch("pim-hbm2")
    with pytest.raises(MappingError, match="template 'pim'") as err:
        mappers.compile(_chain(), arch, allocation="ilp")
    assert "\n" not in str(err.value)


def test_no_room_left_for_the_tiles_is_refused(monkeypatch):
    monkeypatch.setattr(apply_mod, "PLAN_SHARE", 1.0)  # let the plan fill the buffer
    with pytest.raises(ArchsimError, match="no input buffer left beside 1024 B of resident tensors"):
        mappers.compile(_chain(), _arch(1024), allocation="ilp")


def test_a_plan_without_addresses_is_refused(monkeypatch):
    """Neither the address ILP (planted: finds nothing) nor first fit (planted: puts every run one
    plan share higher) places the plan: one line naming the bytes and the note, not a Program whose
    layers silently get less than the rest of the buffer."""
    from mappers.allocation import plan as plan_mod
    from mappers.allocation.addresses import Placement

    real = plan_mod.assign_addresses

    def too_high(problem, plan):
        placements, peak = real(problem, plan)
        return [Placement(p.tensor, p.first, p.last, p.offset_bytes + problem.capacity_bytes)
                for p in placements], peak + problem.capacity_bytes

    def no_plan(*_args, **_kw):
        raise MappingError("planted: no feasible plan")

    monkeypatch.setattr(plan_mod, "assign_addresses", too_high)
    monkeypatch.setattr(plan_mod, "solve_placed", no_plan)
    with pytest.raises(MappingError) as err:
        mappers.compile(_chain(), _arch(2048), allocation="ilp")
    line = str(err.value)
    assert "\n" not in line
    # plan share 1024 B (half the 2048 B buffer); two 512 B tensors at most at a step, 1024 B higher
    assert line.startswith("allocation ilp: the resident tensors need ") and "B of scratchpad addresses but the " \
        "plan may use 1024 B of the input buffer (address ILP found no plan" in line, line
    assert "planted: no feasible plan" in line and "first fit places no re-solved plan" in line, line
    assert line.endswith("use allocation: greedy or a larger input buffer"), line


def test_greedy_program_is_unchanged_by_the_option():
    arch = _arch(2048)
    default = mappers.compile(_residual(), arch)
    greedy = mappers.compile(_residual(), arch, allocation="greedy")
    assert [(l.name, l.commands, l.signature) for l in default.layers] == \
        [(l.name, l.commands, l.signature) for l in greedy.layers]
    assert default.allocation == greedy.allocation == {}


def test_cli_allocation_flag_reports_the_plan(capsys, tmp_path):
    import json
    from pathlib import Path

    import workloads
    from archsim.cli import main

    tiny = str(Path(__file__).resolve().parents[1] / "workloads" / "examples" / "tiny_cnn.yaml")
    out = {}
    for method in ("greedy", "ilp"):
        code = main(["run", "--arch", "systolic-32x32-ws", "--workload", tiny, "--allocation", method,
                     "--no-plots", "--quiet", "--out", str(tmp_path / method)])
        printed = capsys.readouterr().out
        assert code == 0
        out[method] = json.loads((tmp_path / method / "report.json").read_text())
        assert ("scratchpad allocation" in printed) == (method == "ilp")
        assert ("scratchpad addresses" in printed) == (method == "ilp")
        if method == "ilp":  # the address ILP's note, where the run's other lines are
            row = next(line for line in printed.splitlines() if "scratchpad addresses" in line)
            assert "address ILP: proven the least traffic for this order" in row, row
    assert "allocation" not in out["greedy"]["options"]
    a = out["ilp"]["options"]["allocation"]
    assert a["address_note"] == "address ILP: proven the least traffic for this order"
    assert a["method"] == "ilp" and a["buffer"] == "input" and a["solve_s"] >= 0
    assert a["dram_bytes"] == out["ilp"]["dram_bytes"]
    # tiny_cnn's biases (int8: a byte each) are counted by the plan but not loaded by the mapper
    ops = list(workloads.load(tiny).ops())
    biases = sum(op.params() - op.out_channels * op.in_channels // op.groups * op.kernel_h * op.kernel_w
                 for op in ops if op.kind == "conv2d") + sum(op.n for op in ops if op.kind == "matmul" and op.bias)
    assert a["measured_compulsory_bytes"] == a["compulsory_bytes"] - biases
    assert a["measured_non_compulsory_bytes"] == a["dram_bytes"] - a["measured_compulsory_bytes"] >= 0
    assert out["ilp"]["dram_bytes"] <= out["greedy"]["dram_bytes"]
    # a bad value is one line naming the flag's choices (argparse), the spec key names the option
    with pytest.raises(ArchsimError, match="^allocation: expected one of greedy, ilp, heuristic, got 'best'$"):
        mappers.compile(_chain(), _arch(2048), allocation="best")


def test_transformer_program_moves_at_least_the_plans_bytes():
    # BERT-base (seq 16): attention ops read and write their tensors in DRAM (Problem.offchip);
    # the Program moves the plan's bytes plus the tiles' re-reads, never less -- up to the biases,
    # which the plan counts as weights and the systolic mapper does not load (counted here)
    import archsim
    from workloads.zoo import build

    graph = build("bert-base", seq_len=16)
    biases = sum(op.n for op in graph.ops() if op.kind == "matmul" and op.bias)
    arch = _arch(1 << 20)
    greedy = archsim.simulate(graph, arch)
    result = archsim.simulate(graph, arch, allocation="ilp")
    a = result.options["allocation"]
    # the attention ops (several GEMMs) and the embedding lookups (gathers): 12 + 3
    assert sorted(graph.op(n).kind for n in a["offchip_ops"]) == ["attention"] * 12 + ["embedding"] * 3
    assert result.dram_bytes >= a["compulsory_bytes"] + a["non_compulsory_bytes"] - biases
    assert a["non_compulsory_bytes"] < a["greedy_non_compulsory_bytes"]
    assert result.dram_bytes < greedy.dram_bytes


def test_unified_buffer_holds_the_resident_tensors():
    import dataclasses

    from archsim.spec.model import BufferSpec

    base = _arch(2048)
    arch = dataclasses.replace(base, buffers={"unified": BufferSpec("unified", 8192, 1, 64)})
    program = mappers.compile(_chain(), arch, allocation="ilp")
    result = run_program(program, arch)
    assert program.allocation["buffer"] == "unified" and program.allocation["plan_capacity_bytes"] == 4096
    assert result.dram_bytes == COMPULSORY  # a and b never leave the chip


def test_a_layer_that_cannot_be_tiled_beside_the_residents_is_refused(monkeypatch):
    real = mappers.map_layer

    def picky(op, arch, *args):  # a mapper that needs the whole input buffer
        if arch.buffers["input"].bytes < 2048:
            raise MappingError(f"{op.name}: no tile fits")
        return real(op, arch, *args)

    monkeypatch.setattr("mappers.allocation.apply.map_layer", picky)
    # step a holds x and a (2 x 512 B): 1024 B of the 2048 B buffer are left
    with pytest.raises(MappingError, match=r"^allocation ilp: layer 'a' cannot be tiled in the 1024 B of the input "
                                           r"buffer left beside 1024 B of resident tensors \(a: no tile fits\); use "
                                           r"allocation: greedy or a larger input buffer$"):
        mappers.compile(_chain(), _arch(2048), allocation="ilp")


def test_activation_times_activation_matmul_drops_both_operands():
    # q, k (16x32 int8, 512 B each) from two linear layers, s = q @ k^T (16x16 int8, 256 B, the graph
    # output). Plan 1024 B: steps q and k hold two tensors; step s (q, k, s: 1280 B) is streamed,
    # q and k stay (1024 B) and s is written out (compulsory): no Load of q or k at s
    g = Graph("qk")
    g.add(_lin("q"), [None])
    g.add(_lin("k"), ["q"])
    g.add(MatMul("s", m=16, k=32, n=16, transpose_b=True, weight_is_param=False, weight_precision="int8",
                 act_precision="int8", acc_precision="int32"), ["q", "k"])
    program, result = _run(g, 2048, "ilp")
    s = next(l for l in program.layers if l.name == "s")
    assert not [c for c in s.commands if type(c) is Load]
    assert result.dram_bytes == A_BYTES + 2 * W_BYTES + 16 * 16  # x, the two weights, s
