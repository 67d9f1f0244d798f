"""The TPE PE style (``pe_style="tpe"``: carry-save accumulation, Wu et al. HPCA 2025 OPT1).

Expected values come from a numpy matmul with two's-complement wrap and from the template's
independent reference; expected cycles from the timing contract's closed form written here by
hand (the standard PE's, with P = 0): never from the code under test. The RTL runs through the
same level harness calls as ``tests/test_template_levels.py`` (the systolic conformance hook's
tiles on an arch spec, ``rtl.run_cosim``).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from archsim.spec.load import load_arch
from archsim.templates import get_template
from archsim.templates.systolic import SystolicParams, SystolicTile
from archsim.templates.systolic.detailed import detailed_tile
from rtl.cosim import simulator_missing_reason

MISSING = simulator_missing_reason("icarus")
needs_icarus = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def _closed_form_cycles(tile: SystolicTile, R: int, C: int, drain: int = 0) -> int:
    """The timing contract by hand (docs: tile.py), P = 0, plus ``drain`` cycles of a pipelined edge adder."""
    if tile.dataflow == "os":
        return R + C + tile.k - 2 + drain
    return (0 if tile.preload_hidden else R) + R + C + {"ws": tile.m, "is": tile.n}[tile.dataflow] - 2 + drain


def test_tpe_needs_no_product_register_stage():
    with pytest.raises(ValueError, match=r"^mult_pipeline_stages: expected 0 with pe_style tpe "):
        SystolicParams(rows=2, cols=2, pe_style="tpe", mult_pipeline_stages=1).validate()
    with pytest.raises(ValueError, match=r"^pe_style: expected one of standard, tpe, tpe_pipelined, got 'booth'"):
        SystolicParams(rows=2, cols=2, pe_style="booth").validate()


@pytest.mark.parametrize("style,drain", [("tpe", 0), ("tpe_pipelined", 1)])
def test_tpe_cycles_and_values_equal_the_contract_and_numpy(style, drain):
    rng = np.random.default_rng(5)
    R, C = 4, 3
    for df in ("ws", "is", "os"):
        params = SystolicParams(rows=R, cols=C, dataflow=df, pe_style=style, acc_precision="int16")
        model = get_template("systolic").model_cls(load_arch("systolic-32x32-ws", dataclasses.asdict(params)))
        m, k, n = {"ws": (7, R, C), "is": (C, R, 6), "os": (R, 9, C)}[df]
        tile = SystolicTile(df, m, k, n)
        a = rng.integers(-128, 128, size=(m, k))
        w = rng.integers(-128, 128, size=(k, n))
        want = (a @ w + 2 ** 15) % 2 ** 16 - 2 ** 15  # int16 accumulator wraps
        ops = {"input": a.astype(np.int8), "weight": w.astype(np.int8)}
        assert model.tile_cycles(tile) == _closed_form_cycles(tile, R, C, drain)
        np.testing.assert_array_equal(model.tile_values(tile, ops), want)
        vals, cycles = detailed_tile(params, tile, ops)
        assert cycles == _closed_form_cycles(tile, R, C, drain)
        np.testing.assert_array_equal(vals, want)


def test_tpe_counts_the_carry_register():
    std = SystolicParams(rows=2, cols=2, dataflow="ws")
    tpe = dataclasses.replace(std, pe_style="tpe")
    tile = SystolicTile("ws", 5, 2, 2)
    arch = lambda p: load_arch("systolic-32x32-ws", dataclasses.asdict(p))  # noqa: E731
    cls = get_template("systolic").model_cls
    got = cls(arch(tpe)).tile_actions(tile)["pe_reg_access"] - cls(arch(std)).tile_actions(tile)["pe_reg_access"]
    assert got == 5 * 2 * 2  # one carry-register write per MAC


def _cosim(overrides: dict, tiles: int, seed: int):
    from rtl import run_cosim

    hook = get_template("systolic").conformance_module
    arch = load_arch(hook.base_arch, overrides)
    items = [(t, o) for t, o in hook.sample_tiles(np.random.default_rng(seed), arch.params, tiles) if o is not None]
    report = run_cosim(arch, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items) >= tiles // 2
    model = arch.model()
    drain = 1 if overrides["pe_style"] == "tpe_pipelined" else 0
    for check, (tile, _ops) in zip(report.tiles, items):
        assert check.values_ok
        assert check.rtl_cycles == model.tile_cycles(tile) == check.detailed_cycles == \
            _closed_form_cycles(tile, arch.params.rows, arch.params.cols, drain), check.label
    return report


@pytest.mark.rtl
@needs_icarus
@pytest.mark.parametrize("style", ["tpe", "tpe_pipelined"])
def test_tpe_rtl_matches_models_small(style):
    _cosim({"rows": 3, "cols": 4, "dataflow": "auto", "preload": "double_buffered", "pe_style": style,
            "acc_precision": "int16"}, tiles=12, seed=1)


@pytest.mark.rtl
@pytest.mark.slow
@needs_icarus
@pytest.mark.parametrize("overrides", [
    pytest.param({"rows": 4, "cols": 4, "dataflow": "auto", "preload": "double_buffered", "pe_style": "tpe"},
                 id="4x4-int8-int32"),
    # the two other configurations run with `-m long` (suite time); the small 12-tile test covers both styles
    pytest.param({"rows": 3, "cols": 2, "dataflow": "auto", "preload": "serial", "pe_style": "tpe",
                  "input_precision": "int16", "weight_precision": "int16", "acc_precision": "int64"},
                 id="3x2-int16-int64", marks=pytest.mark.long),
    pytest.param({"rows": 4, "cols": 3, "dataflow": "auto", "preload": "double_buffered", "pe_style": "tpe_pipelined"},
                 id="4x3-pipelined", marks=pytest.mark.long),
])
def test_tpe_rtl_matches_models_1000_tiles(overrides):
    report = _cosim(overrides, tiles=1100, seed=7)
    assert len(report.tiles) >= 1000
