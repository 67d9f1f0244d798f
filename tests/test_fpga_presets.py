"""An FPGA preset's clock is a claim about its own RTL: the preset states the synthesis run that
measured it and the sha256 of the Verilog that run synthesized. These tests fail when the preset's
RTL changes (measure it again and update the preset) or when its clock exceeds the stated Fmax."""
from __future__ import annotations

import hashlib
import re

import pytest

from archsim.spec import load_arch
from archsim.spec.load import preset_names

MEASURED = [n for n in preset_names() if n in ("systolic-8x8-ecp5", "lut-m2n8k4-ecp5")]


def _header(name: str) -> str:
    from importlib.resources import files

    return (files("archsim.presets.arch") / f"{name}.yaml").read_text()


@pytest.mark.parametrize("name", MEASURED)
def test_the_preset_runs_the_rtl_whose_fmax_it_states(name):
    from rtl.generate import design_for, target_options

    text = _header(name)
    stated_sha = re.search(r"Verilog sha256 ([0-9a-f]{64})", text).group(1)
    fmax_mhz = float(re.search(r"seed 1, [^:]*: ([0-9.]+) MHz", text).group(1))
    arch = load_arch(name)
    design = design_for(arch, target_options(arch, "ecp5"))
    assert hashlib.sha256(design.verilog().encode()).hexdigest() == stated_sha, (
        f"{name}: its RTL changed since the run that measured {fmax_mhz} MHz; synthesize it again "
        "(bench/bench_rtl_synth.py) and update the preset's clock and sha256")
    assert arch.clock_mhz <= fmax_mhz


def test_every_ecp5_preset_states_where_its_clock_comes_from():
    for name in (n for n in preset_names() if n.endswith("-ecp5")):
        text = _header(name)
        assert re.search(r"(?i)fmax|synthes", text.split("\nname:")[0]), f"{name}: no synthesis basis for its clock"
