"""Issue 23 item 5: the Verilog cache is keyed on every module that elaboration loads, not a hand list.

- In a fresh process per template (so nothing is imported yet), :meth:`RtlDesign.source_files` taken
  before elaboration (as :meth:`RtlDesign.verilog` takes it) includes every module of ours that
  elaboration then loads -- including the ones imported lazily inside functions.
- A planted edit in such a lazily loaded dependency (a copy of the tree) changes the cache path, i.e.
  the next ``verilog()`` misses; an edit in another template's package does not.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: one cheap configuration per template (base preset, overrides), elaborated in a fresh process
SMALL = {
    "systolic": ("systolic-32x32-ws", {"rows": 2, "cols": 2}),
    "simd": ("simd-edge", {"pes": 2}),
    "pim": ("pim-gpt-gddr6", {}),
    "lut": ("lut", {}),  # conformance.base_arch / rtl_arch, resolved in the child
    "attention": ("fusemax-edge", {"rows": 2, "cols": 2, "pe1d": 2}),
}

_CHILD = r"""
import json, sys
from pathlib import Path
from archsim.spec import load_arch
from rtl import design_for
base, over = sys.argv[1], json.loads(sys.argv[2])
if base == "lut":
    from archsim.templates.lut import conformance
    base, over = conformance.base_arch, dict(conformance.rtl_arch)
design = design_for(load_arch(base, over))
root = Path(sys.argv[3]).resolve()
env = Path(sys.prefix).resolve()  # a virtualenv inside the checkout (./setup's .venv) is not our code
keyed = set(design.source_files())
before = set(sys.modules)
if sys.argv[4] == "elaborate":
    design.convert_verilog()
    loaded = {str(Path(m.__file__).resolve()) for n, m in list(sys.modules.items())
              if n not in before and getattr(m, "__file__", None) and root in Path(m.__file__).resolve().parents
              and env not in Path(m.__file__).resolve().parents}
    print(json.dumps({"loaded": sorted(loaded), "keyed": sorted(keyed)}))
else:
    print(json.dumps({"path": str(design.verilog_cache_path())}))
"""


def _child(root: Path, template: str, what: str, cache: Path) -> dict:
    base, over = SMALL[template]
    env = {**os.environ, "PYTHONPATH": str(root), "ARCHSIM_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", _CHILD, base, json.dumps(over), str(root), what], env=env,
                         cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("template", list(SMALL))
def test_every_module_elaboration_loads_is_in_the_key(template, tmp_path):
    got = _child(REPO, template, "elaborate", tmp_path)
    missing = sorted(set(got["loaded"]) - set(got["keyed"]))
    assert not missing, f"{template}: loaded while elaborating but not in the Verilog cache key: {missing}"
    assert any(f.endswith(f"rtl/{template}/rtl_design.py") for f in got["keyed"])


@pytest.mark.parametrize("template, dependency, unrelated", [
    ("simd", "rtl/simd/broadcast.py", "rtl/attention/topk.py"),   # imported inside a function
    ("pim", "rtl/pim/host_engine.py", "rtl/simd/broadcast.py"),   # imported inside a function
    ("systolic", "rtl/lib/ecp5.py", "rtl/lut/precompute.py"),
])
def test_a_planted_edit_in_a_dependency_misses_the_cache(template, dependency, unrelated, tmp_path):
    tree = tmp_path / "tree"
    for package in ("archsim", "rtl", "mappers", "workloads"):
        shutil.copytree(REPO / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    first = _child(tree, template, "key", cache)["path"]
    assert _child(tree, template, "key", cache)["path"] == first  # the key is stable
    with open(tree / unrelated, "a") as fh:
        fh.write("\n# planted: another template's file\n")
    assert _child(tree, template, "key", cache)["path"] == first
    with open(tree / dependency, "a") as fh:
        fh.write("\n# planted: an edit in a dependency\n")
    assert _child(tree, template, "key", cache)["path"] != first
