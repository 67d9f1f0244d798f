"""Tech tables that extend a shipped one (``tech: {extends: generic-45nm, energy_pj: {...}}``), and
the systolic presets' LPDDR DRAM and PE-register figures (issue 14), worked from their sources."""
from __future__ import annotations

import pytest

from archsim.errors import SpecError
from archsim.spec.load import load_arch, load_tech, tech_names


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


# ----------------------------------------------------------------------------- tech table files that extend


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_a_tech_file_extends_a_shipped_table_and_another_file(tmp_path):
    base = load_tech("generic-45nm")
    a = _write(tmp_path / "a.yaml", "extends: generic-45nm\nenergy_pj:\n"
               "  mac.int8: {value: 0.5, source: 'measured here'}\n  my.action: 1.25\n")
    b = _write(tmp_path / "b.yaml", "extends: a.yaml\ndescription: b over a\nenergy_pj: {mac.int4: 0.07}\n")
    ta, tb = load_tech(a), load_tech(b)
    assert ta.name == "a" and tb.name == "b" and tb.description == "b over a"  # the file stem by default
    assert ta.energy("mac.int8") == tb.energy("mac.int8") == 0.5 and ta.sources["mac.int8"] == "measured here"
    assert tb.energy("my.action") == 1.25 and tb.energy("mac.int4") == 0.07 and ta.energy("mac.int4") == base.energy("mac.int4")
    assert "mac.int4" not in tb.sources  # a replaced figure does not keep the base's source
    assert tb.sram_points == base.sram_points and tb.energy("dram_bit") == base.energy("dram_bit")
    # an arch spec names the file; an inline mapping may extend one too
    arch = load_arch(_spec_with_tech(b))
    assert arch.tech.energy("mac.int4") == 0.07
    assert load_tech({"extends": b, "energy_pj": {"mac.int4": 0.08}}).energy("mac.int8") == 0.5


def test_a_cycle_of_extends_is_a_one_line_error(tmp_path):
    _write(tmp_path / "x.yaml", "extends: y.yaml\n")
    _write(tmp_path / "y.yaml", "extends: x.yaml\n")
    self_ref = _write(tmp_path / "self.yaml", "extends: self.yaml\n")
    for path, chain in ((tmp_path / "x.yaml", "x.yaml -> .*y.yaml -> .*x.yaml"), (self_ref, "self.yaml -> .*self.yaml")):
        with pytest.raises(SpecError, match=rf"extends: a cycle of tech tables \(.*{chain}\)$") as err:
            load_tech(str(path))
        assert "\n" not in str(err.value)
    with pytest.raises(SpecError, match=r"extends: a cycle of tech tables"):  # through an arch spec too
        load_arch(_spec_with_tech(str(tmp_path / "y.yaml")))


@pytest.mark.parametrize("text, message", [
    ("extends: nope\n", r"bad\.yaml: extends: unknown tech table 'nope'"),
    ("extends: generic-45nm\nsram: []\n", r"bad\.yaml: sram: unknown key"),
    ("extends: generic-45nm\nenergy_pj: {mac.int8: -1}\n", r"bad\.yaml: energy_pj\.mac\.int8: expected a number >= 0"),
    ("extends: generic-45nm\nenergy_pj: {mac.imt8: 1}\n", r"bad\.yaml: energy_pj\.mac\.imt8: not in the extended table; "
                                                            r"did you mean 'mac\.int8'\?"),
])
def test_errors_in_an_extending_file_name_the_file_and_key(tmp_path, text, message):
    path = _write(tmp_path / "bad.yaml", text)
    with pytest.raises(SpecError, match=message) as err:
        load_tech(path)
    assert "\n" not in str(err.value)


def _simd_spec(preset, tech):
    import importlib.resources

    import yaml

    spec = yaml.safe_load((importlib.resources.files("archsim.presets.arch") / f"{preset}.yaml").read_text())
    spec["tech"] = tech
    return spec


def _simd_tech_inline(**energy_overrides):
    """presets/tech/simd-45nm.yaml's own contents as an inline tech block (``extends`` and all)."""
    import importlib.resources

    import yaml

    tech = yaml.safe_load((importlib.resources.files("archsim.presets.tech") / "simd-45nm.yaml").read_text())
    tech["energy_pj"].update(energy_overrides)
    return tech


SIMD_CASES = [("simd-edge", "int8", "int8"), ("simd-edge", "int4", "fp8_e4m3"), ("simd-edge", "bf16", "bf16"),
              ("simd-1024", "int8", "int8"), ("simd-1024", "posit8_0", "posit8_0")]


@pytest.mark.parametrize("preset, weights, activations", SIMD_CASES)
def test_simd_presets_energy_is_the_tech_files_as_if_inline(preset, weights, activations):
    """The simd presets name the file ``simd-45nm``; the same spec with the file's contents inline (the
    form the table had before it moved to a file) gives the same report energy, and the energy
    follows the table (doubling the lane's int8 multiply raises it)."""
    from archsim.simulation import simulate

    arch = load_arch(preset)
    assert arch.tech.name == "simd-45nm" and "simd-45nm" in tech_names()

    def energy(a):
        return simulate("mobilenet_v1", a, weights=weights, activations=activations, image_size=64,
                        trace_layers=0).energy_pj

    by_file = energy(arch)
    assert by_file == pytest.approx(energy(load_arch(_simd_spec(preset, _simd_tech_inline()))), rel=1e-12)
    if (weights, activations) == ("int8", "int8"):
        doubled = {"simd.mult.int8": 2 * load_tech("simd-45nm").energy("simd.mult.int8")}
        assert energy(load_arch(_simd_spec(preset, _simd_tech_inline(**doubled)))) > by_file


def test_the_simd_tech_table_cites_every_figure_it_adds():
    simd, base = load_tech("simd-45nm"), load_tech("generic-45nm")
    added = [k for k in simd.energy_pj if k not in base.energy_pj]
    assert len(added) >= 19 and all(k.startswith("simd.") for k in added)
    assert all(simd.sources.get(k) for k in added)
    assert simd.energy("simd.mult.int8") == base.energy("mult.int8")  # the 8-bit lane multiply is Horowitz's
