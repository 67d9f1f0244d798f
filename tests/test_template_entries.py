"""Entry-completeness check (contract v3): every registered template's entry is whole.

Run for every template ``archsim.templates.template_names()`` lists, and for the
toy template that lives only in the tests (``tests/toy_template``), so a sixth
template gets these checks without editing this file. For each template:

- the model builds from every shipped preset of the template (and from its
  conformance hook's ``base_arch``), and there is at least one such arch;
- every ``unit`` a command of its mapper's programs names is declared in the
  model's ``units`` with a kind in ``UNIT_KINDS`` (programs of a CNN, an
  encoder, an LLM decode step, an attention block and low-bit LLM decode steps, on
  each of those archs);
- every energy action its model counts on those programs (``tile_actions``,
  plus ``dram_bit`` and, when vector work runs, ``vector.op``, which the engine
  prices for every run) has a price in the tech table each of those archs
  ships with (``sram_*_bytes.<operand>`` actions are priced per byte by the
  SRAM model, not the table);
- every component of its ``area_inputs()`` has an area figure;
- its RTL design (if any) overrides ``RtlDesign.cosim_items``, and so does each unit design
  (``unit_rtl``), a ``UnitDesign`` overriding ``accepts``;
- its reference check (if it has a detailed model) rejects a planted wrong
  value in a tile its own conformance hook samples.

The last group plants one omission of each kind and checks that the
corresponding check reports it.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mappers
import toy_template
import workloads
from archsim.errors import SpecError
from archsim.spec import arch_from_params
from archsim.spec.load import load_arch
from archsim.spec.load import preset_names
from archsim.templates import get_template, template_names
from archsim.templates.base import UNIT_KINDS, NoDetailedModel, Template, TemplateModel, conformance_of
from archsim.program import Compute, VectorOp
from rtl.design import RtlDesign, UnitDesign

TOY = "toymac"
#: (zoo workload, builder options): a CNN, an encoder, an LLM decode step, an attention block,
#: and low-bit-weight LLM decode steps (ternary, int4: what the LUT array runs)
GRAPHS = (("resnet18", {}), ("bert_base", {"seq_len": 32}), ("gpt2", {"phase": "decode"}), ("attn_bert", {}),
          ("bitnet-b1.58-2b", {"phase": "decode"}), ("llama2_7b_w4a16", {"phase": "decode"}))
#: actions the engine prices on every run (engine/core.py layer_energy), besides the model's own
ENGINE_ACTIONS = ("dram_bit",)
#: planted wrong values tried per configuration of a template's conformance hook
REFERENCE_CONFIGS = 2


# ----------------------------------------------------------------------------- the checks


def archs_of(entry: Template) -> list:
    """Arch specs the entry is checked on: its shipped presets, else its conformance hook's base arch."""
    archs = []
    for name in preset_names():
        arch = load_arch(name)
        if arch.template == entry.name:
            archs.append(arch)
    if not archs and entry.conformance is not None:
        archs.append(load_arch(entry.conformance_module.base_arch))
    return archs


def unbuilt_models(entry: Template, archs: list) -> list[str]:
    """Problems building the entry's model from its archs (none = every arch builds one)."""
    if not archs:
        return [f"{entry.name}: no arch builds its model (no shipped preset, no conformance base_arch)"]
    out = []
    for arch in archs:
        model = arch.model()
        if not isinstance(model, TemplateModel):
            out.append(f"{arch.name}: model {type(model).__name__} is not a TemplateModel")
    return out


_PROGRAMS: dict = {}


def programs_of(arch) -> list:
    """Programs of :data:`GRAPHS` on ``arch`` (graphs whose mapping is refused for capacity are skipped)."""
    key = arch.identity()
    if key not in _PROGRAMS:
        out = []
        for workload, options in GRAPHS:
            graph = workloads.load(workload, **options)
            try:
                out.append(mappers.compile(graph, arch))
            except Exception as err:  # noqa: BLE001 - only documented capacity refusals may pass
                if "do not fit" not in str(err):
                    raise
        _PROGRAMS[key] = out
    return _PROGRAMS[key]


def _commands(programs: list):
    for program in programs:
        for layer in program.layers:
            yield from layer.commands


def undeclared_units(programs: list, units: dict[str, str]) -> list[str]:
    """Units commands name that ``units`` does not declare (or declares with an unknown kind)."""
    out = set()
    for cmd in _commands(programs):
        if cmd.unit not in units:
            out.add(f"unit {cmd.unit!r} ({type(cmd).__name__}) is not declared in the model's units {sorted(units)}")
    for unit, kind in units.items():
        if kind not in UNIT_KINDS:
            out.add(f"unit {unit!r} has kind {kind!r}, expected one of {', '.join(UNIT_KINDS)}")
    return sorted(out)


def counted_actions(model, programs: list) -> set[str]:
    """Every energy action name the model counts on ``programs``, plus the engine's own."""
    names = set(ENGINE_ACTIONS)
    tiles = set()
    for cmd in _commands(programs):
        if isinstance(cmd, Compute):
            tiles.add(cmd.tile)
        elif isinstance(cmd, VectorOp):
            names.add("vector.op")
    for tile in tiles:
        names.update(name for name, count in model.tile_actions(tile).items() if count)
    return {n for n in names if not n.startswith(("sram_read_bytes.", "sram_write_bytes."))}


def unpriced_actions(actions: set[str], tech) -> list[str]:
    """Actions ``tech`` has no energy for."""
    out = []
    for name in sorted(actions):
        try:
            tech.energy(name)
        except KeyError:
            out.append(f"tech table {tech.name}: no energy for action {name!r}")
    return out


def unpriced_area(arch) -> list[str]:
    """Components of the model's ``area_inputs()`` with no area figure (tech table or default)."""
    from archsim.area import area_breakdown

    try:
        area_breakdown(arch)
    except KeyError as err:
        return [f"{arch.name}: {err.args[0]}"]
    return []


def missing_cosim(rtl_cls: type | None) -> list[str]:
    """The RTL design does not say which tiles ``archsim rtl cosim`` replays."""
    if rtl_cls is None or rtl_cls.cosim_items is not RtlDesign.cosim_items:
        return []
    return [f"RTL design {rtl_cls.__name__} does not override RtlDesign.cosim_items"]


def _planted(good: np.ndarray) -> np.ndarray:
    """``good`` with its largest-magnitude element moved by its own magnitude + 1 (far outside any
    rounding bound a reference may allow, and never a value that wraps back onto the right one)."""
    bad = np.array(good, copy=True)
    flat = bad.reshape(-1)
    i = int(np.argmax(np.abs(flat.astype(np.float64))))
    v = flat[i].item()
    flat[i] = v + (abs(v) + 1) if abs(v) < 2**20 else v / 2
    return bad


def reference_blind_spots(entry: Template, reference=None) -> list[str]:
    """Configurations whose reference check accepts a planted wrong value (or is missing)."""
    try:
        hook = conformance_of(entry)
    except NoDetailedModel:
        return []  # no detailed model: the level harness has nothing to check against a reference
    reference = reference or entry.reference_fn
    if reference is None:
        return [f"{entry.name}: has a detailed model but no reference check (Template(reference=...))"]
    out = []
    for i, overrides in enumerate(hook.conformance_archs()[:REFERENCE_CONFIGS]):
        arch = load_arch(hook.base_arch, overrides)
        model = arch.model()
        items = [(t, o) for t, o in hook.sample_tiles(np.random.default_rng(i), arch.params, 8) if o is not None]
        if not items:
            out.append(f"{entry.name} config {i}: the hook sampled no tile with operands")
            continue
        tile, ops = items[-1]
        good = np.asarray(model.tile_values(tile, ops))
        reference(tile, ops, arch.params, good)  # the right values pass
        try:
            reference(tile, ops, arch.params, _planted(good))
        except AssertionError:
            continue
        out.append(f"{entry.name} config {i} ({overrides}): the reference accepts a planted wrong value")
    return out


# ----------------------------------------------------------------------------- every template


@pytest.fixture(scope="module")
def toy_registered():
    toy_template.register()
    yield
    toy_template.unregister()


TEMPLATES = template_names() + [TOY]


@pytest.mark.parametrize("name", TEMPLATES)
def test_entry_is_complete(name, toy_registered):
    entry = get_template(name)
    archs = archs_of(entry)
    problems = unbuilt_models(entry, archs)
    for arch in archs:
        model = arch.model()
        programs = programs_of(arch)
        assert programs, f"{arch.name}: no workload mapped"
        problems += [f"{arch.name}: {p}" for p in undeclared_units(programs, model.units)]
        problems += unpriced_actions(counted_actions(model, programs), arch.tech)
        problems += unpriced_area(arch)
    problems += missing_cosim(entry.rtl_cls)
    for unit_cls in entry.unit_rtl_classes:  # units with their own RTL: UnitDesigns, cosim_items and accepts
        problems += missing_cosim(unit_cls)
        if not issubclass(unit_cls, UnitDesign) or unit_cls.accepts is UnitDesign.accepts:
            problems.append(f"unit RTL {unit_cls.__name__}: expected a UnitDesign overriding accepts")
    problems += reference_blind_spots(entry)
    assert not problems, "\n".join(problems)


def test_every_shipped_template_and_the_toy_are_checked(toy_registered):
    assert set(TEMPLATES) == set(template_names()) and TOY in TEMPLATES


# ----------------------------------------------------------------------------- planted omissions


@pytest.fixture(scope="module")
def toy_arch(toy_registered):
    return load_arch(toy_template.BASE_ARCH)


def test_catches_an_undeclared_unit(toy_arch):
    programs = programs_of(toy_arch)
    units = dict(toy_arch.model().units)
    assert not undeclared_units(programs, units)
    del units["mac"]  # the toy mapper's compute unit
    assert any("'mac'" in p for p in undeclared_units(programs, units))
    assert undeclared_units(programs, {**toy_arch.model().units, "mac": "alu"})  # a kind that does not exist


def test_catches_an_unpriced_action(toy_arch):
    actions = counted_actions(toy_arch.model(), programs_of(toy_arch))
    assert "mac.int8" in actions and "vector.op" in actions  # the toy's MAC and its vector work
    assert not unpriced_actions(actions, toy_arch.tech)
    table = {k: v for k, v in toy_arch.tech.energy_pj.items() if k not in ("mac.int8", "mac_int8")}
    tech = dataclasses.replace(toy_arch.tech, energy_pj=table)
    assert unpriced_actions(actions, tech) == [f"tech table {tech.name}: no energy for action 'mac.int8'"]


class _NoCosimDesign(RtlDesign):
    template = "ghost"


def test_catches_an_unpriced_area_component(toy_arch, monkeypatch):
    from archsim.area import AreaInputs

    assert not unpriced_area(toy_arch)
    monkeypatch.setattr(type(toy_arch.model()), "area_inputs", lambda self: AreaInputs(components={"exp.fp32": 1}))
    assert unpriced_area(toy_arch) == [
        "toymac-1: no area figure 'exp.fp32' in tech table 'generic-45nm' nor in archsim.area defaults"]


def test_catches_a_design_without_cosim_items(toy_arch):
    from archsim.errors import ArchsimError

    assert not missing_cosim(get_template(TOY).rtl_cls)
    assert missing_cosim(_NoCosimDesign)
    with pytest.raises(ArchsimError, match="no cosim_items"):  # and the CLI's error is one line, not a bare raise
        _NoCosimDesign(toy_arch.params).cosim_items("random")


def test_catches_a_template_no_arch_builds(toy_registered):
    ghost = dataclasses.replace(get_template(TOY), name="ghost", conformance=None)
    assert archs_of(ghost) == []
    assert unbuilt_models(ghost, []) == [
        "ghost: no arch builds its model (no shipped preset, no conformance base_arch)"]


def test_catches_a_reference_that_accepts_anything(toy_registered):
    entry = get_template(TOY)
    assert not reference_blind_spots(entry)
    blind = reference_blind_spots(entry, reference=lambda tile, ops, params, values: None)
    assert len(blind) == min(REFERENCE_CONFIGS, len(entry.conformance_module.conformance_archs()))


def test_catches_a_detailed_model_without_reference(toy_registered):
    entry = dataclasses.replace(get_template(TOY), reference=None)
    assert reference_blind_spots(entry) == [
        "toymac: has a detailed model but no reference check (Template(reference=...))"]


# ----------------------------------------------------------------------------- no probes in shared code


def _hook_names() -> set[str]:
    """Every hook the base classes declare (methods and attributes a template may override); of
    RtlDesign's, the optional ones (its required methods -- check, ports, ... -- are common words)."""
    from archsim.templates.base import TemplateModel, TemplateOptions, TemplateParams
    from mappers.registry import Mapper

    names = set()
    for cls in (TemplateParams, TemplateModel, TemplateOptions, Mapper):
        names |= {n for n in vars(cls) if not n.startswith("_")}
    return names | {"units", "output_ops", "target_options", "cosim_items", "sim_sources"}


#: shared code: everything but the template packages (archsim/templates/<name>/, mappers/<name>.py, rtl/<name>/)
def _shared_files() -> list:
    import pathlib

    repo = pathlib.Path(__file__).resolve().parents[1]
    names = set(template_names())
    out = []
    paths = sorted(repo.glob("archsim/**/*.py")) + sorted(repo.glob("mappers/*.py")) + sorted(repo.glob("rtl/**/*.py"))
    for path in paths:
        rel = path.relative_to(repo).parts
        in_template = ((rel[:2] == ("archsim", "templates") and len(rel) > 3)
                       or (rel[0] == "rtl" and len(rel) > 2 and rel[1] in names)
                       or (rel[0] == "mappers" and path.stem in names))
        if in_template:
            continue
        out.append(path)
    return out


def hook_probes(paths) -> list[str]:
    """``getattr(x, "hook", ...)`` / ``hasattr(x, "hook")`` calls naming a declared hook."""
    import ast

    hooks = _hook_names()
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in hooks):
                out.append(f"{path}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return out


def test_shared_code_never_probes_a_hook():
    paths = _shared_files()
    assert any(p.name == "core.py" for p in paths) and any(p.name == "generate.py" for p in paths)
    assert not any("templates/systolic" in str(p) or p.name == "systolic.py" for p in paths)
    assert not hook_probes(paths), "\n".join(hook_probes(paths))


def test_catches_a_planted_probe(tmp_path):
    bad = tmp_path / "engine.py"
    bad.write_text("def f(model, result):\n    hook = getattr(model, 'report_extras', None)\n"
                   "    return hasattr(model, 'units') or getattr(model, 'name', '')\n")
    found = [p.split(": ", 1)[1] for p in hook_probes([bad])]
    assert found == ["getattr(..., 'report_extras')", "hasattr(..., 'units')"]


# ----------------------------------------------------------------------------- one constructor convention


@pytest.mark.parametrize("name", TEMPLATES)
def test_model_builds_from_an_arch_spec_only(name, toy_registered):
    """Every model refuses bare params (a TypeError naming the helper) and builds from the arch spec
    ``archsim.spec.arch_from_params`` wraps them in, with the params passed through untouched."""
    entry = get_template(name)
    arch = archs_of(entry)[0]
    with pytest.raises(TypeError, match=rf"^{entry.model_cls.__name__}\(arch\): expected an archsim\.spec\.ArchSpec, "
                                        rf"got bare params {type(arch.params).__name__}; .*arch_from_params"):
        entry.model_cls(arch.params)
    wrapped = arch_from_params(arch.params, tech=arch.tech)
    assert (wrapped.template, wrapped.params, wrapped.tech) == (name, arch.params, arch.tech)
    model, preset_model = wrapped.model(), arch.model()
    assert type(model) is type(preset_model) and model.units == preset_model.units


def test_arch_from_params_refuses_params_no_template_takes():
    class NotParams:
        pass

    with pytest.raises(SpecError, match=r"^no template takes params NotParams$"):
        arch_from_params(NotParams())


#: roots of the shared and template code whose arch specs have fixed fields: archsim's core (not the
#: orchestration, which takes users' objects), the mappers, the RTL and the toy template
CONVENTION_ROOTS = ("archsim", "mappers", "rtl", "tests/toy_template")
ORCHESTRATION = ("cli", "dse", "simulation", "accuracy", "validate")


def _convention_files() -> list:
    import pathlib

    repo = pathlib.Path(__file__).resolve().parents[1]
    out = []
    for root in CONVENTION_ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            rel = path.relative_to(repo).parts
            if rel[0] == "archsim" and len(rel) > 1 and rel[1].removesuffix(".py") in ORCHESTRATION:
                continue
            out.append(path)
    return out


def _on_arch(node) -> bool:
    """``arch``, ``x.arch``, ``params``, ``x.params`` or anything read off them (``arch.params``,
    ``self.arch.vector_unit``): objects whose fields are fixed by their dataclasses."""
    import ast

    while isinstance(node, ast.Attribute):
        if node.attr in ("arch", "params"):
            return True
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("arch", "params")


def constructor_probes(paths) -> list[str]:
    """What the one constructor convention replaced: ``_params_of`` helpers, ``getattr`` /
    ``hasattr`` of ``"params"`` (is it an arch or bare params?) and of a named field on an arch spec
    (its fields are fixed: read them). ``getattr(arch.params, f.name)`` over a dataclass's fields is no probe."""
    import ast

    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") == "params_of":
                out.append(f"{path}:{node.lineno}: def {node.name}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):
                attr = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
                if attr == "params" or (attr is not None and _on_arch(node.args[0])):
                    out.append(f"{path}:{node.lineno}: {node.func.id}({ast.unparse(node.args[0])}, {attr!r})")
    return out


def test_no_params_or_arch_probe_in_shared_or_template_code():
    paths = _convention_files()
    names = {p.name for p in paths}
    assert {"base.py", "fast.py", "generate.py", "rtl_design.py", "systolic.py", "model.py"} <= names
    assert not any(p.name == "_plan.py" for p in paths)  # orchestration is not scanned
    assert not constructor_probes(paths), "\n".join(constructor_probes(paths))


def test_catches_planted_constructor_probes(tmp_path):
    bad = tmp_path / "model.py"
    bad.write_text("def _params_of(x):\n    return x.params if hasattr(x, 'params') else x\n"
                   "def f(self, arch, tech):\n    return getattr(arch, 'output_ops', ()), "
                   "getattr(self.arch.vector_unit, 'lanes', 0), getattr(tech, 'name', ''), "
                   "[getattr(arch.params, f) for f in ('rows',)], getattr(params, 'pe', 'lanes')\n")
    found = [p.split(": ", 1)[1] for p in constructor_probes([bad])]
    assert found == ["def _params_of", "hasattr(x, 'params')", "getattr(arch, 'output_ops')",
                     "getattr(self.arch.vector_unit, 'lanes')", "getattr(params, 'pe')"]
