"""SIMD PE area: from synthesis of the RTL PE by format set and multiplier (archsim/templates/simd/area.py).

Expected values are the synthesis runs' own figures (docs/simd_rtl.md and the
runs recorded in area.py), Horowitz's 45 nm table for the anchor, and
arithmetic by hand -- never the model's output.
"""
from __future__ import annotations

import pytest

from archsim.area import area_breakdown
from archsim.spec import load_arch
from archsim.templates.simd import area
from archsim.templates.simd.params import SUPPORTED_FORMATS, SimdParams


def _params(formats, **kw):
    return SimdParams(pes=1, formats=list(formats), weight_format=formats[0], activation_format=formats[0], **kw)


def test_anchor_is_the_fixed_fp16_pe_priced_by_its_parts():
    # fp16 mult 1640 + 2 fp32 adds 4184 + fp32 mult 7700 (Horowitz ISSCC 2014) + 234 FFs x 4.522 um2
    assert area.ANCHOR_UM2 == pytest.approx(1640 + 8368 + 7700 + 1058.148)
    um2, source = area.pe_um2(_params(["fp16"]))
    assert um2 == pytest.approx(area.ANCHOR_UM2)
    assert "synthesized" in source and "Horowitz" in source


def test_the_eleven_format_pe_is_its_synthesized_cells():
    cells, how = area.pe_cells(_params(list(SUPPORTED_FORMATS)))
    assert cells == 12504 and how.startswith("synthesized")  # docs/simd_rtl.md, pipeline_cycles 10


def test_estimate_is_fitted_to_two_pes_and_close_on_the_other_measured_ones():
    fixed = [5333, 5339, 5505, 5886, 7182, 5641, 5684, 5193, 5283, 6021, 5894]  # docs/simd_rtl.md, in order
    # 11-format PE: sum(fixed) - 10 B + M = 12,504; int4+fp16 PE: 5,339 + 5,193 - B + M = 7,182
    base = (sum(fixed) - 12504 - (5339 + 5193 - 7182)) / 9
    assert area.BASE_CELLS == pytest.approx(base)
    assert area.MIXED_CELLS == pytest.approx(7182 - 5339 - 5193 + base)
    assert area.additive_cells(SUPPORTED_FORMATS) == pytest.approx(12504)
    residuals = area.estimate_residuals()
    assert residuals, "no measured multi-format array PE to check the estimate on"
    for formats, measured, estimate in residuals:
        assert estimate == pytest.approx(measured, rel=0.10), formats


def test_area_follows_the_format_set_and_multiplier():
    edge = load_arch("simd-edge")
    (pe,) = [i for i in area_breakdown(edge) if i.component == "simd_pe"]
    assert pe.count == 64 and pe.unit_um2 == pytest.approx(12504 * area.ANCHOR_UM2 / 5193)
    small = load_arch("simd-edge", overrides={"formats": ["int8"], "weight_format": "int8",
                                              "activation_format": "int8"})
    (pe8,) = [i for i in area_breakdown(small) if i.component == "simd_pe"]
    assert pe8.unit_um2 == pytest.approx(5505 * area.ANCHOR_UM2 / 5193)  # the fixed int8 PE, synthesized
    mixpe = _params(["int4", "fp16"], multiplier="shift_add")
    assert area.pe_cells(mixpe)[0] == 7142  # synthesized 2026-11-27
    assert area.pe_cells(_params(["int4", "fp16"], dequant=True))[0] == 4173
    assert area.pe_cells(_params(["int4", "int8"], multiplier="bit_serial"))[0] == 5788
    # bit-serial on another set: the array estimate x the measured bit_serial / array ratio on int4+int8
    cells, how = area.pe_cells(_params(["int2", "int8"], multiplier="bit_serial"))
    assert cells == pytest.approx(area.additive_cells(["int2", "int8"]) * 5788 / 5837)
    assert "bit_serial / array" in how


def test_unsynthesized_styles_and_widths_say_how_they_were_derived():
    cells, how = area.pe_cells(_params(["int8", "fp8_e4m3"], multiplier="shift_add"))
    assert how.startswith("estimated") and "shift_add / array" in how
    wide, how = area.pe_cells(SimdParams(pes=1, lane_bits=32))
    assert "extrapolated" in how
    assert wide == pytest.approx(area.BASE_CELLS + (12504 - area.BASE_CELLS) * 2)


def test_other_templates_area_is_unchanged():
    # a systolic preset still prices int8 MACs at Horowitz's 8b mult 282 + 32b add 137 um2, no SIMD unit
    items = {i.component: i for i in area_breakdown(load_arch("scalesim-32x32-os"))}
    assert "simd_pe" not in items
    assert items["mac"].count == 1024 and items["mac"].unit_um2 == pytest.approx(282 + 137)


def test_pe_style_tpe_is_said_to_be_unpriced():
    """The area model prices whole synthesized PEs and has no term for the integer dot unit, the only
    part pe_style changes: a tpe PE's area is the standard PE's, and the area says so (its source, the
    model's ``unpriced``) with the measured dot-unit ratio cited (docs/tpe.md: 1.40x NAND2-eq.,
    1.45x LUT4), never silently."""
    from archsim.area import area_unpriced, area_um2

    std, tpe = (load_arch("simd-edge", [f"pe_style={s}"]) for s in ("standard", "tpe"))
    assert area_unpriced(std) == {}
    assert list(area_unpriced(tpe)) == ["pe_style"]
    said = area_unpriced(tpe)["pe_style"]
    assert said.startswith("tpe: not priced: the area is the standard PE's") and "1.40x" in said and "1.45x" in said
    assert area_um2(tpe) == area_um2(std)
    source = next(i.source for i in area_breakdown(tpe) if i.component == "simd_pe")
    assert "pe_style tpe: not priced" in source
    assert "not priced" not in next(i.source for i in area_breakdown(std) if i.component == "simd_pe")


def test_compare_says_the_area_does_not_price_pe_style(capsys):
    from pathlib import Path

    from archsim.cli import main

    tiny = str(Path(__file__).resolve().parents[1] / "workloads" / "examples" / "tiny_cnn.yaml")
    assert main(["compare", "--arch", "simd-edge", "--arch", "simd-edge", "--set-b", "pe_style=tpe",
                 "--workload", tiny]) == 0
    lines = capsys.readouterr().out.splitlines()
    said = [line for line in lines if line.startswith("area A") or line.startswith("area B")]
    assert len(said) == 1 and said[0].startswith("area B (simd-edge): pe_style tpe: not priced"), said
