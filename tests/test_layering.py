"""Import direction: no module imports a module of a higher layer (docs/architecture.md).

Layers, lowest first (a module may import its own layer and the ones below):

1. archsim core: program, spec, templates, numerics, engine, report, area and
   the small shared modules (errors, fmt, cache, inputs, outputs, presets);
2. workloads;
3. mappers;
4. rtl;
5. archsim orchestration: cli, dse, simulation, accuracy, validate, __main__,
   and the ``archsim`` package itself (its lazy top-level names run them).

Checked: every ``import`` / ``from ... import`` statement of every ``.py`` file
under archsim/, workloads/, mappers/ and rtl/, parsed with ``ast`` -- at module
level AND inside functions, methods, class bodies and ``if TYPE_CHECKING:``
blocks alike (a deferred import still runs back up when the function runs).
Relative imports are resolved against the importing module. Imports of
anything else (numpy, amaranth, the standard library) are not layered.

Within a layer, no two modules import each other (again module and function
level alike): e.g. the systolic fast and detailed models share their operand
helpers through ``archsim.templates.systolic.operands`` instead.
"""
from __future__ import annotations

import ast
import pathlib
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("archsim", "workloads", "mappers", "rtl")
ORCHESTRATION = {"cli", "dse", "simulation", "accuracy", "validate", "__main__"}
LAYER_NAMES = {1: "archsim core", 2: "workloads", 3: "mappers", 4: "rtl", 5: "archsim orchestration"}


def layer_of(module: str) -> int | None:
    """The layer of a dotted module name (None: not one of ours)."""
    parts = module.split(".")
    if parts[0] == "archsim":
        return 5 if len(parts) == 1 or parts[1] in ORCHESTRATION else 1
    return {"workloads": 2, "mappers": 3, "rtl": 4}.get(parts[0])


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.AST, module: str, is_package: bool, root: pathlib.Path) -> list[str]:
    """Dotted names an import statement loads (``from pkg import sub`` counts as ``pkg.sub``
    when ``sub`` is a module or package of ours)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = root.joinpath(*target.split("."), alias.name)
        out.append(f"{target}.{alias.name}" if sub.is_dir() or sub.with_suffix(".py").is_file() else target)
    return out


def _files(root: pathlib.Path):
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            yield path, _module_name(path, root)


def mutual_imports(root: pathlib.Path = REPO) -> list[tuple[str, str]]:
    """Pairs of our modules that import each other (at any level)."""
    edges = set()
    for path, module in _files(root):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for name in _imported(node, module, path.name == "__init__.py", root):
                if layer_of(name) is not None and name != module:
                    edges.add((module, name))
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def violations(root: pathlib.Path = REPO) -> list[str]:
    """``path:line: <module> (layer) imports <module> (higher layer) [where]`` for every upward import."""
    out = []
    for path, module in _files(root):
        mine = layer_of(module)
        tree = ast.parse(path.read_text(), str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            for name in _imported(node, module, path.name == "__init__.py", root):
                theirs = layer_of(name)
                if theirs is None or theirs <= mine:
                    continue
                where, up = "module level", parents.get(node)
                while up is not None:
                    if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        where = f"in {up.name}()"
                        break
                    up = parents.get(up)
                out.append(f"{path.relative_to(root)}:{node.lineno}: {module} ({LAYER_NAMES[mine]}) imports "
                           f"{name} ({LAYER_NAMES[theirs]}) {where}")
    return out


#: upward imports that arrived from parallel branches merged after this test was written, each with
#: what its owner has to do; the test fails on any other upward import, and on an entry here that
#: no longer happens (remove it then), so the list only shrinks
KNOWN_UPWARD: dict = {}
#: modules that import each other, arrived the same way (same rules as KNOWN_UPWARD)
KNOWN_MUTUAL: dict = {}


def _pair(line: str) -> tuple[str, str]:
    parts = line.split(": ", 1)[1].split(" ")
    return parts[0], parts[parts.index("imports") + 1]


def test_no_import_runs_back_up():
    found = violations()
    new = [f for f in found if _pair(f) not in KNOWN_UPWARD]
    assert not new, "imports that run back up a layer (docs/architecture.md):\n" + "\n".join(new)
    stale = set(KNOWN_UPWARD) - {_pair(f) for f in found}
    assert not stale, f"fixed: remove from KNOWN_UPWARD: {sorted(stale)}"


def test_no_two_modules_import_each_other():
    found = mutual_imports()
    assert not [m for m in found if m not in KNOWN_MUTUAL], found
    assert not set(KNOWN_MUTUAL) - set(found), f"fixed: remove from KNOWN_MUTUAL: {set(KNOWN_MUTUAL) - set(found)}"


def test_catches_planted_upward_imports(tmp_path):
    """A core module importing the compiler (module level), a template importing rtl inside a
    method, a relative import out of the orchestration, and workloads importing mappers are all found."""
    files = {
        "archsim/__init__.py": "",
        "archsim/spec/__init__.py": "",
        "archsim/spec/load.py": "import mappers.options\n",
        "archsim/templates/__init__.py": "",
        "archsim/templates/mytpl/__init__.py": "",
        "archsim/templates/mytpl/model.py": textwrap.dedent("""\
            class M:
                def f(self):
                    from rtl.design import RtlDesign
            """),
        "archsim/engine/__init__.py": "from ..simulation import simulate\n",
        "archsim/simulation.py": "from mappers import compile\nimport workloads\n",  # allowed: orchestration
        "archsim/report.py": "from archsim import fmt\n",  # allowed: a core module
        "archsim/fmt.py": "",
        "workloads/__init__.py": "from mappers.lower import lower_op\n",
        "mappers/__init__.py": "from workloads import Graph\nimport numpy\n",  # allowed: lower layer, not ours
        "mappers/options.py": "",
        "rtl/__init__.py": "from mappers import compile\n",  # allowed: rtl sits above mappers
        "rtl/design.py": "",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = violations(tmp_path)
    assert len(found) == 4, found
    assert any("archsim/spec/load.py:1: archsim.spec.load (archsim core) imports mappers.options (mappers) "
               "module level" in f for f in found)
    assert any("archsim.templates.mytpl.model" in f and "rtl.design (rtl) in f()" in f for f in found)
    assert any("archsim.engine (archsim core) imports archsim.simulation (archsim orchestration)" in f
               for f in found)
    assert any("workloads (workloads) imports mappers.lower (mappers)" in f for f in found)


def test_catches_a_planted_import_cycle(tmp_path):
    """The old systolic pair: fast imports detailed inside a method, detailed imports fast at module level."""
    files = {"archsim/__init__.py": "", "archsim/templates/__init__.py": "", "archsim/templates/sys/__init__.py": "",
             "archsim/templates/sys/fast.py": "def f():\n    from archsim.templates.sys.detailed import D\n",
             "archsim/templates/sys/detailed.py": "from archsim.templates.sys.fast import wrap\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert mutual_imports(tmp_path) == [("archsim.templates.sys.detailed", "archsim.templates.sys.fast")]


#: rtl/ packages shared by every template (issue 23 item 1: no template's RTL imports another's package)
RTL_SHARED = {"lib", "cosim"}


def rtl_cross_template_imports(root: pathlib.Path = REPO) -> list[str]:
    """``path:line: <module> imports <module>`` where a template's rtl/<t>/ package imports another
    template's rtl/<u>/ package, or a shared package (rtl/lib, rtl/cosim) imports any template's."""
    packages = {p.name for p in (root / "rtl").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    templates = packages - RTL_SHARED
    out = []
    for path, module in _files(root):
        parts = module.split(".")
        if parts[0] != "rtl" or len(parts) < 2 or parts[1] not in packages:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for name in _imported(node, module, path.name == "__init__.py", root):
                theirs = name.split(".")
                if theirs[0] == "rtl" and len(theirs) > 1 and theirs[1] in templates and theirs[1] != parts[1]:
                    out.append(f"{path.relative_to(root)}:{node.lineno}: {module} imports {name}")
    return out


def test_no_template_rtl_imports_another_templates_package():
    templates = {p.name for p in (REPO / "rtl").iterdir() if (p / "__init__.py").is_file()} - RTL_SHARED
    assert {"systolic", "simd", "pim", "lut", "attention"} <= templates
    found = rtl_cross_template_imports()
    assert not found, "put the shared part in rtl/lib (issue 23 item 1):\n" + "\n".join(found)


def test_catches_planted_cross_template_rtl_imports(tmp_path):
    """A template importing another's package (absolute, relative, inside a function) and the library
    importing a template are found; rtl/lib and the template's own modules are not."""
    files = {
        "rtl/__init__.py": "", "rtl/design.py": "from rtl.pim import design\n",  # the dispatcher: allowed
        "rtl/lib/__init__.py": "", "rtl/lib/fp.py": "from rtl.simd.pe import mul\n",
        "rtl/pim/__init__.py": "", "rtl/pim/design.py": "from rtl.lib import fp\nfrom .mac import M\n",
        "rtl/pim/mac.py": "", "rtl/simd/__init__.py": "", "rtl/simd/pe.py": "from ..pim.mac import M\n",
        "rtl/lut/__init__.py": "", "rtl/lut/core.py": "def f():\n    import rtl.pim.design\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = sorted(rtl_cross_template_imports(tmp_path))
    assert found == ["rtl/lib/fp.py:1: rtl.lib.fp imports rtl.simd.pe",
                     "rtl/lut/core.py:2: rtl.lut.core imports rtl.pim.design",
                     "rtl/simd/pe.py:1: rtl.simd.pe imports rtl.pim.mac"], found
