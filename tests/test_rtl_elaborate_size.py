"""Issue 23 item 4: "no ``elaborate()`` over ~120 lines" -- every design is components.

Measured with ``ast`` on every ``.py`` file under rtl/: the physical lines of each ``elaborate``
method (``def`` line to last line, comments and blank lines included, as a reader sees them).
The bodies still over the limit are listed in ``KNOWN_OVER`` (docs/rtl.md, "Issue 23 checklist",
item 4): a new one fails, and so does a listed one that has been split (so the list stays true).
"""
from __future__ import annotations

import ast
import pathlib
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]
LIMIT_LINES = 120

# "path::Class" -> the complaint still stands for these (2026-11-27, lines then):
KNOWN_OVER: set[str] = set()


def elaborate_lines(root: pathlib.Path) -> dict[str, int]:
    """``"path::Class" -> lines`` of every ``elaborate`` method defined in a class under ``root``/rtl."""
    out = {}
    for path in sorted((root / "rtl").rglob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(cls, ast.ClassDef):
                continue
            for fn in cls.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "elaborate":
                    out[f"{path.relative_to(root).as_posix()}::{cls.name}"] = fn.end_lineno - fn.lineno + 1
    return out


def over_limit(root: pathlib.Path) -> dict[str, int]:
    return {k: n for k, n in elaborate_lines(root).items() if n > LIMIT_LINES}


def test_no_new_elaborate_over_the_limit():
    new = {k: n for k, n in over_limit(REPO).items() if k not in KNOWN_OVER}
    assert not new, f"elaborate() over {LIMIT_LINES} lines (split it into components): {new}"


def test_known_offenders_are_still_over_the_limit():
    """A listed body that was split must leave the list (and docs/rtl.md's checklist)."""
    lines = elaborate_lines(REPO)
    gone = sorted(k for k in KNOWN_OVER if k not in lines)
    fixed = sorted(k for k in KNOWN_OVER if k in lines and lines[k] <= LIMIT_LINES)
    assert not gone, f"KNOWN_OVER names an elaborate() that no longer exists: {gone}"
    assert not fixed, f"now within {LIMIT_LINES} lines, remove from KNOWN_OVER: {fixed}"


def test_the_measure_counts_a_planted_long_body(tmp_path):
    """The walk finds a method in a nested package and counts its lines from ``def`` to the end."""
    pkg = tmp_path / "rtl" / "toy"
    pkg.mkdir(parents=True)
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT_LINES))  # + def line + return = 122
    (pkg / "big.py").write_text(textwrap.dedent("""\
        class Big:
            def elaborate(self, platform):
        """) + body + "\n        return None\n\n\nclass Small:\n    def elaborate(self, platform):\n        return 1\n")
    assert elaborate_lines(tmp_path) == {"rtl/toy/big.py::Big": LIMIT_LINES + 2, "rtl/toy/big.py::Small": 2}
    assert over_limit(tmp_path) == {"rtl/toy/big.py::Big": LIMIT_LINES + 2}
