"""Shared level-agreement harness: fast model vs detailed model vs RTL, for every template.

For each registered template (``archsim.templates.template_names()``) the
template's conformance hook (``TEMPLATE.conformance``, see
``archsim.templates.base.Conformance``) supplies small configurations and
random legal tiles with operands. For every configuration x tile this file
checks that

- the fast model's cycles equal the detailed model's, and the fast model's
  values equal the detailed model's bit for bit (same dtype);
- the values equal a reference computed *here* with numpy from the operands
  and the spec's parameters (``REFERENCES``; never the template's value code);
- the hook's samples really cover the cases it promises (``COVERAGE``);

and, marked ``rtl``, that for each template with an RTL design in
``rtl.generate.DESIGNS`` a few sampled tiles replayed on the RTL through
``rtl.run_cosim`` give the models' values and cycles.

Adding a template = its hook + one entry in ``REFERENCES`` and ``COVERAGE``.
A template with no detailed model (roofline) is skipped with its own reason.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable

import numpy as np
import pytest

from archsim.spec.load import load_arch
from archsim.templates import get_template, template_names
from archsim.templates.base import NoDetailedModel, conformance_of

SAMPLES = 16  # tiles per configuration
RTL_SAMPLES = 12  # tiles co-simulated per template with RTL


# ----------------------------------------------------------------------------- references (independent)


def _wrap(exact: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of exact (Python int) values to ``bits`` bits."""
    mod, half = 1 << bits, 1 << (bits - 1)
    return np.vectorize(lambda v: (int(v) + half) % mod - half, otypes=[object])(exact)


def systolic_reference(tile, ops, params) -> np.ndarray:
    """``out = psum + input @ weight`` exactly, wrapped to the accumulator width."""
    a = np.asarray(ops["input"]).astype(object)
    w = np.asarray(ops["weight"]).astype(object)
    assert a.shape == (tile.m, tile.k) and w.shape == (tile.k, tile.n)
    exact = a.dot(w)
    if tile.accumulate:
        exact = exact + np.asarray(ops["psum"]).astype(object)
    return _wrap(exact, int(params.acc_precision.removeprefix("int")))


def pim_reference(tile, ops, params) -> tuple[np.ndarray, np.ndarray]:
    """dot: ``out[b, r] = sum_k W[b, r, k] x[k]``; axpy: ``out[j] = sum_{b,t} x[b*rows+t] W[b, t, j]``.

    Returns (reference, error bound): int8 sums are exact and wrapped to the
    int32 accumulators (bound 0); bf16 products are exact in fp32 and summed
    in fp32 in some order, so each output may differ from the exact sum by at
    most ``n * 2**-24 * sum |terms|`` (n = additions on the longest path,
    bounded here by the number of terms incl. padding plus the accumulations).
    """
    w = np.asarray(ops["weight"])
    x = np.asarray(ops["input"])
    assert w.shape == (tile.banks, tile.rows, tile.k)
    ce = params.column_bytes // {"int8": 1, "bf16": 2}[params.mac_precision]
    if tile.mode == "dot":
        assert x.shape == (tile.k,)
        terms = w.astype(np.float64) * x.astype(np.float64)  # [b, r, k]
        kc = -(-tile.k // ce)
        n_adds = kc * ce + kc
    else:
        assert x.shape == (tile.banks * tile.rows,)
        terms = (w.astype(np.float64) * x.reshape(tile.banks, tile.rows, 1)).reshape(-1, tile.k)
        n_adds = tile.banks * tile.rows + tile.banks
    axis = -1 if tile.mode == "dot" else 0
    if params.mac_precision == "int8":
        exact = terms.astype(np.int64).sum(axis=axis)  # |terms| <= 2**14: exact in int64
        return _wrap(exact, 32).astype(np.int64), np.zeros(exact.shape)
    exact = terms.sum(axis=axis)
    return exact, n_adds * 2.0 ** -24 * np.abs(terms).sum(axis=axis) * 1.0001


def check_systolic(tile, ops, params, values) -> None:
    want = systolic_reference(tile, ops, params)
    assert values.shape == want.shape
    assert values.astype(object).tolist() == want.tolist()


def check_pim(tile, ops, params, values) -> None:
    want, bound = pim_reference(tile, ops, params)
    assert values.shape == want.shape
    if params.mac_precision == "int8":
        assert values.tolist() == want.tolist()
    else:
        err = np.abs(values.astype(np.float64) - want)
        assert (err <= bound).all(), f"max error {err.max()} over bound {bound[np.argmax(err - bound)]}"


#: template -> checker of the model's values against this file's reference
REFERENCES: dict[str, Callable[[Any, Any, Any, np.ndarray], None]] = {
    "systolic": check_systolic,
    "pim": check_pim,
}


# ----------------------------------------------------------------------------- coverage the hooks promise


def systolic_coverage(params, items) -> list[str]:
    tiles = [t for t, _ in items]
    R, C = params.rows, params.cols
    flows = {"ws", "os", "is"} if params.dataflow == "auto" else {params.dataflow}
    need = {
        "every dataflow the build runs": {t.dataflow for t in tiles} == flows,
        "an accumulating tile": any(t.accumulate for t in tiles),
        "m = 1": any(t.m == 1 for t in tiles),
        "the 1x1x1 tile": any((t.m, t.k, t.n) == (1, 1, 1) for t in tiles),
        "a full tile": any({"ws": (t.k, t.n) == (R, C), "is": (t.k, t.m) == (R, C),
                            "os": (t.m, t.n) == (R, C)}[t.dataflow] for t in tiles),
        "a partial tile": R * C == 1 or any({"ws": t.k * t.n, "is": t.k * t.m, "os": t.m * t.n}[t.dataflow] < R * C
                                            for t in tiles),
        "a hidden preload": params.preload != "double_buffered" or flows == {"os"}
        or any(t.preload_hidden for t in tiles),
    }
    return [k for k, ok in need.items() if not ok]


def pim_coverage(params, items) -> list[str]:
    tiles = [t for t, _ in items]
    eb = {"int8": 1, "bf16": 2}[params.mac_precision]
    row_elems = params.row_bytes // eb
    need = {
        "a dot GEMV with values": any(t.mode == "dot" and o is not None for t, o in items),
        # axpy needs a whole column of lanes in the accumulators
        "an axpy GEMV": params.acc_registers < params.column_bytes // eb or any(t.mode == "axpy" for t in tiles),
        "a write": any(t.kind == "write" for t in tiles),
        "the 1-row, 1-element GEMV": any((t.kind, t.rows, t.k) == ("gemv", 1, 1) for t in tiles),
        "more rows than accumulators": any(t.kind == "gemv" and t.mode == "dot" and t.rows > params.acc_registers
                                           for t in tiles),
        "a weight row over two DRAM rows": any(t.kind == "gemv" and t.k > row_elems for t in tiles),
        "an input larger than the buffer": any(
            t.kind == "gemv" and t.input_elements() * eb > params.input_buffer_bytes for t in tiles),
        "every bank of the channel": any(t.banks == params.banks_per_channel for t in tiles),
    }
    return [k for k, ok in need.items() if not ok]


COVERAGE: dict[str, Callable[[Any, list], list[str]]] = {
    "systolic": systolic_coverage,
    "pim": pim_coverage,
}


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
            assert name in REFERENCES and name in COVERAGE, f"add {name!r} to REFERENCES and COVERAGE"
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
    missing = COVERAGE[name](params, items)
    assert not missing, f"samples miss: {', '.join(missing)}"
    check_values = REFERENCES[name]
    for tile, ops in items:
        fast_cycles = model.tile_cycles(tile)
        if ops is None:  # no output values: cycles only
            assert model.detailed_tile_cycles(tile) == fast_cycles, tile
            continue
        fast_values = np.asarray(model.tile_values(tile, ops))
        det_values, det_cycles = model.detailed_tile(tile, ops)
        det_values = np.asarray(det_values)
        assert det_cycles == fast_cycles, tile
        assert det_values.dtype == fast_values.dtype, tile
        assert np.array_equal(det_values, fast_values), tile
        check_values(tile, ops, params, fast_values)


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
    hook = get_template("systolic").conformance
    params = _arch("systolic", hook, {"rows": 2, "cols": 3, "dataflow": "ws"}).params
    tile, ops = next((t, o) for t, o in hook.sample_tiles(np.random.default_rng(0), params, 8) if t.accumulate)
    good = get_template("systolic").model_cls(params).tile_values(tile, ops)
    check_systolic(tile, ops, params, good)
    bad = good.copy()
    bad[0, 0] += 1
    with pytest.raises(AssertionError):
        check_systolic(tile, ops, params, bad)
    pim = get_template("pim").conformance
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


def _rtl_cases():
    from rtl.generate import DESIGNS

    for name in template_names():
        hook, reason = _hook_status(name)
        if hook is None:
            yield pytest.param(name, id=name, marks=pytest.mark.skip(reason=reason))
        elif name not in DESIGNS:
            yield pytest.param(name, id=name, marks=pytest.mark.skip(
                reason=f"template {name!r} has no RTL design registered in rtl.generate.DESIGNS"))
        else:
            yield pytest.param(name, id=name)


@pytest.mark.rtl
@pytest.mark.parametrize("name", list(_rtl_cases()))
def test_rtl_matches_models(name):
    from rtl import run_cosim
    from rtl.cosim import simulator_missing_reason

    missing = simulator_missing_reason("icarus")
    if missing:
        pytest.skip(missing)
    hook = get_template(name).conformance
    arch = _arch(name, hook, hook.rtl_arch)
    model = arch.model()
    items = [(t, o) for t, o in hook.sample_tiles(_rng(name, -1), arch.params, RTL_SAMPLES) if o is not None]
    assert len(items) >= RTL_SAMPLES // 2
    for tile, ops in items:  # the models the RTL is compared with are right on these tiles
        REFERENCES[name](tile, ops, arch.params, np.asarray(model.tile_values(tile, ops)))
    report = run_cosim(arch, items, sim="icarus")
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items)
    for check, (tile, _ops) in zip(report.tiles, items):
        assert check.values_ok
        assert check.rtl_cycles == model.tile_cycles(tile) == check.detailed_cycles, check.label
