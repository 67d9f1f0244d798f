"""Every ASIC preset whose template has RTL states the basis of its clock (issue 23 item 7): a
``# clock basis:`` comment giving its own RTL's critical path in LUT4 levels (measured by
bench/bench_clock_claims.py) and whether that depth supports the claimed clock by the rule
``rtl.synth.LUT4_LEVELS_PER_NS``; the verdict must agree with the stated levels, and the bench must
have a reduced configuration for the preset (so a new preset is not left unchecked). No synthesis
here: the measurements are the bench's, recorded in docs/rtl.md."""
from __future__ import annotations

import importlib.util
import re
from importlib.resources import files
from pathlib import Path

import pytest

from archsim.errors import ArchsimError
from archsim.spec import load_arch
from archsim.spec.load import preset_names
from archsim.templates import get_template
from rtl.synth import LUT4_LEVELS_PER_NS

ROOT = Path(__file__).resolve().parents[1]
BASIS = re.compile(r"clock basis:(?P<text>.*?)\b(?P<verdict>does not support|supports) the claim", re.S)
#: the basis of a preset whose configuration archsim's RTL refuses to build (nothing to synthesize)
NO_RTL = "no RTL builds this configuration"


def _asic_rtl_presets() -> list[str]:
    return [n for n in preset_names()
            if not n.endswith("-ecp5") and get_template(load_arch(n).template).rtl]


def _comments(name: str) -> str:
    text = (files("archsim.presets.arch") / f"{name}.yaml").read_text()
    return " ".join(line.split("#", 1)[1].strip() for line in text.splitlines() if "#" in line)


def _bench_reduced() -> dict:
    spec = importlib.util.spec_from_file_location("bench_clock_claims", ROOT / "bench" / "bench_clock_claims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.REDUCED


def test_there_are_asic_presets_with_rtl():
    names = _asic_rtl_presets()
    assert "systolic-32x32-ws" in names and "pim-gpt-gddr6" in names and "fusemax-edge" in names
    assert not any(n.endswith("-ecp5") or n.startswith("gpu-") for n in names)


def basis_error(comments: str, clock_mhz: float) -> str | None:
    """Why a preset's comments do not state a clock basis consistent with its levels (None: they do)."""
    m = BASIS.search(comments)
    if not m:
        return ("no '# clock basis: ... N LUT4 levels ... supports|does not support the claim' comment "
                "(run bench/bench_clock_claims.py --only PRESET and state its row)")
    levels = re.findall(r"(\d+) LUT4 levels", m.group("text"))
    if not levels:
        return "its clock basis names no 'N LUT4 levels'"
    allowed_mhz = LUT4_LEVELS_PER_NS * 1000.0 / int(levels[-1])
    if (m.group("verdict") == "supports") != (allowed_mhz >= clock_mhz):
        return (f"{levels[-1]} LUT4 levels allow {allowed_mhz:.0f} MHz by the rule, yet the preset says its RTL "
                f"{m.group('verdict')} the claimed {clock_mhz:g} MHz")
    return None


def _rtl_refuses(name: str) -> bool:
    """Whether the RTL refuses the preset at the bench's reduced size (a configuration it does not build)."""
    from rtl.generate import design_for

    try:  # the design checks its configuration here; no elaboration
        design_for(load_arch(name, _bench_reduced().get(name, {})))
    except (ValueError, ArchsimError):
        return True
    return False


@pytest.mark.parametrize("name", _asic_rtl_presets())
def test_the_preset_states_a_clock_basis_consistent_with_its_logic_levels(name):
    comments = _comments(name)
    if _rtl_refuses(name):
        assert "clock basis:" in comments and NO_RTL in comments, (
            f"{name}: archsim's RTL refuses this configuration, so its clock basis must say '{NO_RTL}'")
        return
    assert NO_RTL not in comments, f"{name}: says '{NO_RTL}', but the RTL builds it"
    error = basis_error(comments, load_arch(name).clock_mhz)
    assert error is None, f"{name}: {error}"


def test_the_clock_claims_bench_covers_every_asic_preset_with_rtl():
    missing = sorted(set(_asic_rtl_presets()) - set(_bench_reduced()))
    assert not missing, f"bench/bench_clock_claims.py REDUCED has no configuration for {', '.join(missing)}"


def test_a_basis_that_contradicts_its_levels_or_is_missing_is_caught():
    # 41 levels allow 244 MHz by the rule (10 per ns): not 1 GHz; 9 levels allow 1,111 MHz
    assert "allow 244 MHz" in basis_error("clock basis: the paper's; 41 LUT4 levels, so it supports the claim", 1000)
    assert basis_error("clock basis: the paper's; 41 LUT4 levels: it does not support the claim", 1000) is None
    assert "allow 1111 MHz" in basis_error("clock basis: 9 LUT4 levels; does not support the claim", 1000)
    assert basis_error("clock basis: 9 LUT4 levels, which supports the claim", 1000) is None
    assert "no '# clock basis" in basis_error("clock_mhz: 1000 # 1 GHz: a round figure", 1000)
    assert "names no" in basis_error("clock basis: the paper's; supports the claim", 1000)
