"""The template contract, proved with a toy that lives only in the tests
(``tests/toy_template``: one scalar MAC): its one ``Template`` entry is all
archsim needs to map, simulate, check levels and co-simulate it; and no
shared module names a template or reads a template's own parameters."""
from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import archsim
import toy_template
import toy_template.conformance
from archsim.spec import load_arch
from archsim.templates import get_template, template_names

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY_CNN = REPO / "workloads" / "examples" / "tiny_cnn.yaml"


@pytest.fixture
def toy():
    toy_template.register()
    yield get_template("toymac")
    toy_template.unregister()


def test_registered_through_its_entry_only(toy):
    assert "toymac" in template_names()
    assert toy.model_cls.__name__ == "ToyMacModel" and toy.rtl_cls.__name__ == "ToyMacDesign"


def test_whole_network_simulates_at_one_mac_per_cycle(toy):
    import workloads

    graph = workloads.load(str(TINY_CNN))
    r = archsim.simulate(graph, toy_template.BASE_ARCH)
    assert r.macs == graph.total_macs()
    gemm_layers = [l for l in r.layers if l.macs]
    assert gemm_layers
    for layer in gemm_layers:  # one MAC unit: never more than one MAC a cycle
        assert layer.cycles >= layer.macs and 0 < layer.utilization <= 1
        assert layer.unit_busy_cycles["mac"] > 0
    assert set(r.units) <= {"mac", "vector", "dma"}
    assert r.energy_pj > 0


@pytest.mark.parametrize("overrides", toy_template.conformance.conformance_archs())
def test_fast_detailed_and_reference_agree(toy, overrides):
    hook = toy.conformance_module
    arch = load_arch(hook.base_arch, overrides)
    model = arch.model()
    items = hook.sample_tiles(np.random.default_rng(5), arch.params, 8)
    assert not toy.coverage_fn(arch.params, items)
    for tile, ops in items:
        values, cycles = model.detailed_tile(tile, ops)
        assert cycles == model.tile_cycles(tile) == model.detailed_tile_cycles(tile)
        assert np.array_equal(values, model.tile_values(tile, ops))
        toy.reference_fn(tile, ops, arch.params, values)
    bad = np.asarray(model.tile_values(*items[1])) + 1
    with pytest.raises(AssertionError):
        toy.reference_fn(items[1][0], items[1][1], arch.params, bad)


@pytest.mark.rtl
def test_rtl_cosim_is_bit_and_cycle_exact(toy):
    from rtl import run_cosim
    from rtl.cosim import simulator_missing_reason

    if simulator_missing_reason("icarus"):
        pytest.skip(simulator_missing_reason("icarus"))
    hook = toy.conformance_module
    arch = load_arch(hook.base_arch, {"max_k": 5})
    items = hook.sample_tiles(np.random.default_rng(3), arch.params, 6)
    report = run_cosim(arch, items, sim="icarus")
    assert report.ok, report.summary()
    assert [t.rtl_cycles for t in report.tiles] == [tile.k + 1 for tile, _ in items]


# ----------------------------------------------------------------------------- no template in shared code

SHARED = ["archsim/engine", "archsim/spec/load.py", "archsim/spec/model.py", "archsim/report", "archsim/area.py",
          "archsim/simulation.py", "mappers/__init__.py", "mappers/registry.py", "archsim/spec/options.py",
          "mappers/emit.py", "mappers/verify.py", "rtl/generate.py", "rtl/design.py", "rtl/api.py", "rtl/cosim",
          "rtl/synth.py", "archsim/cli"]
#: what a shared module may not touch: a template's name, its classes, or its own parameters
FORBIDDEN_NAMES = {"systolic", "pim", "roofline", "simd"}  # not "lut": also a yosys cell type
FORBIDDEN_ATTRS = {"rows", "cols", "dataflow", "preload", "mac_precision", "input_precision",
                   "acc_precision", "banks_per_channel", "peak_tflops", "compute_units"}


def _shared_files():
    for entry in SHARED:
        path = REPO / entry
        yield from (sorted(path.rglob("*.py")) if path.is_dir() else [path])


def test_no_shared_module_names_a_template_or_reads_its_params():
    problems = []
    for path in _shared_files():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS \
                    and not (isinstance(node.value, ast.Name) and node.value.id == "args"):  # a CLI flag
                problems.append(f"{where}: reads .{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FORBIDDEN_NAMES:
                problems.append(f"{where}: names {node.value!r}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                if any(part in FORBIDDEN_NAMES for m in mods for part in m.split(".")):
                    problems.append(f"{where}: imports {mods}")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in FORBIDDEN_ATTRS:
                problems.append(f"{where}: probes {node.args[1].value!r}")
    assert not problems, "\n".join(problems)


def test_rtl_cosim_items_are_legal_tiles(toy):
    """``archsim rtl cosim``'s tiles for the toy: the random source's dot products, legal on the arch;
    another source is refused in one line."""
    from archsim.errors import ArchsimError

    arch = load_arch(toy.conformance_module.base_arch, {"max_k": 5})
    design = toy.rtl_cls(arch.params)
    items = design.cosim_items("random", tiles=4, seed=1)
    assert len(items) == 4 and {t.k for t, _ in items} >= {1, 5}  # the hook's edge cases come first
    for tile, ops in items:
        arch.model().check_tile(tile)
        assert len(ops["input"]) == len(ops["weight"]) == tile.k
    with pytest.raises(ArchsimError, match="expected random"):
        design.cosim_items("program")
