"""Operator fusion in the LUT mapper (mappers/lut.py, mappers/fusion.py): with ``output_ops``
the element-wise ops after a LUT GEMM run in its output path.

Expected figures by hand from the shapes: an unfused element-wise pass over E int8 elements
with i inputs moves (i + 1) * E DRAM bytes; fused, the GEMM reads the residual's E bytes and
moves nothing else new.
"""
from __future__ import annotations

import archsim
import mappers
from archsim.engine import core as engine_core
from archsim.spec.load import load_arch, preset_names
from workloads.zoo._net import Net

UNIT = "output_ops=[bias,relu,gelu,residual,requant]"
ARCH = "lut-m2n64k4"
M, D = 64, 96  # tokens x features: every element-wise tensor is M x D int8


def _block(weights: str = "ternary"):
    """x -> fc1 -> relu -> fc2 -(+ relu's output)-> add -> gelu."""
    net = Net("block", weight_precision=weights, act_precision="int8", acc_precision="int32")
    x = net.input("x", (1, M, D))
    h = net.linear("fc1", x, D)
    h = net.eltwise("relu", "relu", h)
    h2 = net.linear("fc2", h, D)
    s = net.eltwise("add", "add", h2, h)
    net.eltwise("gelu", "gelu", s)
    return net.graph


def _run(graph, overrides=(), **kw):
    mappers.clear_cache()
    engine_core.clear_cache()
    return archsim.simulate(graph, ARCH, overrides=list(overrides), **kw)


def _by_name(result):
    return {l.name: l for l in result.layers}


def test_fused_block_saves_the_vector_passes_bytes():
    plain = _by_name(_run(_block()))
    fused = _by_name(_run(_block(), [UNIT]))
    assert fused["fc1"].mapping["epilogue"] == ["relu"]
    assert fused["fc2"].mapping["epilogue"] == ["residual", "gelu"]
    for name in ("relu", "add", "gelu"):
        layer = fused[name]
        assert layer.mapping["fused_into"] == ("fc1" if name == "relu" else "fc2")
        assert (layer.cycles, layer.dram_bytes, layer.energy_pj) == (0, 0, 0)
        assert plain[name].dram_bytes > 0 and plain[name].cycles > 0
    e = M * D
    # unfused passes: relu 2E, add 3E, gelu 2E
    assert sum(plain[n].dram_bytes for n in ("relu", "add", "gelu")) == 7 * e
    # the GEMMs move the same A and B bytes; fc2 reads the residual tiles (E bytes)
    for name in ("fc1", "fc2"):
        for operand in ("input", "weight", "output"):
            assert fused[name].dram_bytes_by_operand[operand] == plain[name].dram_bytes_by_operand[operand]
    assert fused["fc2"].dram_bytes_by_operand["residual"] == e
    assert "residual" not in fused["fc1"].dram_bytes_by_operand
    total_plain = sum(l.dram_bytes for l in plain.values())
    total_fused = sum(l.dram_bytes for l in fused.values())
    assert total_plain - total_fused == 7 * e - e
    # the output path works at the drain rate: the GEMMs' compute is unchanged
    assert fused["fc2"].compute_cycles == plain["fc2"].compute_cycles


def test_no_fusion_gives_the_unfused_figures():
    plain = _run(_block())
    off = _run(_block(), [UNIT], fusion=False)
    assert [(l.name, l.cycles, l.dram_bytes_by_operand, l.energy_pj) for l in off.layers] == \
        [(l.name, l.cycles, l.dram_bytes_by_operand, l.energy_pj) for l in plain.layers]
    assert not any("fused_into" in l.mapping or "epilogue" in l.mapping for l in off.layers)


def test_a_gemm_on_the_vector_unit_does_not_fuse():
    """int8 weights are not built into the LUT core: the GEMMs run on the vector unit, which
    has no output path, so every element-wise op keeps its own pass."""
    fused = _by_name(_run(_block("int8"), [UNIT]))
    assert fused["fc1"].mapping["unit"] == "vector"
    for name in ("relu", "add", "gelu"):
        assert "fused_into" not in fused[name].mapping and fused[name].dram_bytes > 0


def test_shipped_lut_presets_declare_no_output_unit():
    """The LUT Tensor Core paper models no output unit: defaults are the unfused figures."""
    names = [n for n in preset_names() if n.startswith("lut-m")]
    assert names
    for name in names:
        assert not load_arch(name).output_ops
    fused = _run(_block())
    assert not any("fused_into" in l.mapping for l in fused.layers)


def test_a_fused_residual_gemm_runs_as_periods_with_the_same_bytes(monkeypatch):
    """Periods (tests/test_lut_compression.py) carry each output tile's residual tile. (M 256: with the
    precompute pipeline charged per step the search picks 16 x 512 x 64 tiles, so a 128-row GEMM is
    only 2 rows of 4 tiles, too few for a period of 16 steps.)"""
    import mappers.lut as ml

    net = Net("res", weight_precision="ternary", act_precision="int8", acc_precision="int32")
    x, r = net.input("x", (1, 256, 512)), net.input("r", (1, 256, 256))
    net.eltwise("add", "add", net.linear("fc", x, 256), r)
    monkeypatch.setattr(ml, "PERIOD_STEPS", 16)
    monkeypatch.setattr(ml, "PERIOD_ERROR", 0.05)
    runs = []
    for periods in (False, True):
        monkeypatch.setattr(ml, "PERIODS", periods)
        mappers.clear_cache()
        engine_core.clear_cache()
        runs.append(archsim.simulate(net.graph, "lut-m2n8k4-ecp5", overrides=[UNIT]).layers[0])
    whole, per = runs
    assert "periods" in per.mapping and per.mapping["epilogue"] == ["residual"]
    assert per.dram_bytes_by_operand == whole.dram_bytes_by_operand
    assert whole.dram_bytes_by_operand["residual"] == 256 * 256
    assert 0 < whole.cycles - per.cycles < 1e-2 * whole.cycles
