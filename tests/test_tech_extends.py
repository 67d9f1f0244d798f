"""Tech tables that extend a shipped one (``tech: {extends: generic-45nm, energy_pj: {...}}``), and
the systolic presets' LPDDR DRAM and PE-register figures (issue 14), worked from their sources."""
from __future__ import annotations

import pytest

from archsim.errors import SpecError
from archsim.spec.load import load_arch, load_tech


@pytest.mark.parametrize("name", ["systolic-32x32-ws", "systolic-32x32-os", "systolic-128x128-ws"])
def test_lpddr_presets_use_an_lpddr_dram_figure(name):
    arch = load_arch(name)
    # DRAMsim3 LPDDR3_8Gb_x32_1600: (IDD4R - IDD3N) x VDD over a BL8 burst (4 tCK of 1.25 ns), 8 x 32 bits
    lpddr3_read_pj_per_bit = (250e-3 - 21e-3) * 1.2 * 4 * 1.25e-9 / 256 * 1e12
    assert arch.tech.energy("dram_bit") == pytest.approx(lpddr3_read_pj_per_bit, abs=0.05)
    base = load_tech("generic-45nm")
    assert base.energy("dram_bit") == pytest.approx(1300 / 64, rel=1e-2)  # DDR3 (Horowitz) stays for TPUv1
    for action in ("mac.int8", "mac.bf16", "vector.op"):
        assert arch.tech.energy(action) == base.energy(action)
    assert "DRAMsim3" in arch.tech.sources["dram_bit"]
    # the spec survives a reload with overrides
    assert load_arch(name, overrides=["dram.latency_cycles=120"]).tech.energy("dram_bit") == arch.tech.energy("dram_bit")


def test_pe_register_access_is_a_register_not_a_mac():
    # Aladdin (Shao et al. ISCA 2014) register: 0.009 pJ per bit read; an int8 operand register: 8 bits
    assert load_tech("generic-45nm").energy("pe_reg_access") == pytest.approx(8 * 0.009)


def _spec_with_tech(tech):
    import importlib.resources

    import yaml

    text = (importlib.resources.files("archsim.presets.arch") / "systolic-32x32-ws.yaml").read_text()
    spec = yaml.safe_load(text)
    spec["tech"] = tech
    return spec


def test_extends_errors_are_one_line():
    with pytest.raises(SpecError) as err:
        load_arch(_spec_with_tech({"extends": "generic-45nm", "energy_pj": {"dram_bit": "lots"}}))
    assert "\n" not in str(err.value) and "tech.energy_pj.dram_bit" in str(err.value)
    with pytest.raises(SpecError, match=r"unknown tech table 'nope'"):
        load_arch(_spec_with_tech({"extends": "nope"}))
    with pytest.raises(SpecError, match=r"tech\.sram"):
        load_arch(_spec_with_tech({"extends": "generic-45nm", "sram": []}))
