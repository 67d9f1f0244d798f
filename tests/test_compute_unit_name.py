"""The compute unit is the template's to name (issue 24 item 2): ``emit_gemm(unit=...)``
puts every compute tile on that unit (also in a period cut from the stream), and the
engine asks the model's peak with both operand formats."""
from __future__ import annotations

import pytest

from archsim.program import Compute
from mappers.emit import BufferLayout, Emitter
from mappers.lower import Gemm
from mappers.periods import periodic_slice
from mappers.tiling import TilePlan, emit_gemm


def _split(sm, sk, sn, acc):
    return [("fold", sm, sk, sn, acc)]


def _stream(unit=None):
    g, plan = Gemm("g", 64, 256, 2048), TilePlan("ws", 16, 64, 16, "nkm")
    em = Emitter(BufferLayout(False, {"input": 1 << 20, "weight": 1 << 20, "output": 1 << 20}))
    emit_gemm(em, g, plan, _split, **({} if unit is None else {"unit": unit}))
    return g, plan, em.commands


def test_emit_gemm_runs_tiles_on_the_named_unit():
    _, _, default = _stream()
    _, _, named = _stream("mac")
    assert {c.unit for c in default if isinstance(c, Compute)} == {"array"}  # the default name
    assert {c.unit for c in named if isinstance(c, Compute)} == {"mac"}
    # only the unit differs: same commands, same order, same dependencies
    assert [(type(c), c.deps) for c in named] == [(type(c), c.deps) for c in default]
    assert sum(isinstance(c, Compute) for c in named) == (64 // 16) * (256 // 64) * (2048 // 16)


def test_a_period_keeps_the_named_unit():
    g, plan, _ = _stream()
    layout = BufferLayout(False, {"input": 1 << 20, "weight": 1 << 20, "output": 1 << 20})
    cut = periodic_slice(g, plan, _split, layout, min_steps=16, unit="mac")
    assert cut is not None
    assert {c.unit for c in cut[0] if isinstance(c, Compute)} == {"mac"}


def test_engine_asks_the_peak_with_both_formats():
    import archsim
    from archsim.engine.core import ArchContext

    arch = archsim.load_arch("systolic-32x32-ws")
    calls = []

    class Recording(type(arch.model())):
        def peak_macs_per_cycle(self, weights=None, activations=None):
            calls.append((weights, activations))
            return 7.0 if activations == "int4" else 3.0  # an activation-serial rate

    object.__setattr__(arch, "_model", Recording(arch))
    ctx = ArchContext(arch)
    assert ctx.peak_for("int8", "int4") == 7.0 and ctx.peak_for("int8", "int8") == 3.0
    assert ("int8", "int4") in calls and ("int8", "int8") in calls
    assert ctx.peak_for("", "") == ctx.peak == 3.0  # the arch's own: asked with neither format
    assert calls[0] == (None, None)


def test_emitter_names_the_dma_and_vector_units():
    """Every unit name is the template's: an Emitter told its DMA and vector units' names puts
    Loads / Stores and VectorOps there (defaults: "dma", "vector")."""
    from mappers.emit import emit_vector
    from mappers.lower import VectorWork

    layout = BufferLayout(False, {"input": 1 << 16, "weight": 1 << 16, "output": 1 << 16})
    work = VectorWork("softmax", 4096, 4096 * 2, 4096 * 2)
    units = {}
    for names in ({}, {"dma_unit": "axi", "vector_unit": "sfu"}):
        em = Emitter(layout, **names)
        emit_gemm(em, Gemm("g", 32, 64, 32), TilePlan("ws", 16, 64, 16, "mnk"), _split, unit="pe")
        emit_vector(em, work, layout)
        units[tuple(names.values())] = {(type(c).__name__, c.unit) for c in em.commands}
    assert units[()] == {("Load", "dma"), ("Store", "dma"), ("Compute", "pe"), ("VectorOp", "vector")}
    assert units[("axi", "sfu")] == {("Load", "axi"), ("Store", "axi"), ("Compute", "pe"), ("VectorOp", "sfu")}
