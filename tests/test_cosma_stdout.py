"""HiGHS prints a copyright banner from C++ to standard output once per process; archsim's
reports on stdout (``archsim validate --json``) must stay parseable."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("highspy")


def test_validate_json_on_stdout_is_pure_json_with_the_ilp():
    out = subprocess.run([sys.executable, "-m", "archsim", "validate", "--only", "cosma", "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode in (0, 1), out.stderr
    claims = json.loads(out.stdout)  # raises on a banner line before the JSON
    assert claims and all(c["group"] == "cosma" for c in claims)
