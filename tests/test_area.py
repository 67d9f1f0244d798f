"""Area model: per-component arithmetic from the tech table, defaults with sources, scaling."""
from __future__ import annotations

import dataclasses
import math

import pytest

from archsim.area import DEFAULT_AREA_UM2, SOURCES, area_breakdown, area_mm2
from archsim.spec import load_arch


def test_systolic_32x32_by_hand():
    arch = load_arch("systolic-32x32-ws")  # int8 x int8 -> int32, double-buffered weights, 3 x 256 KiB, 32 lanes
    items = {item.component: item for item in area_breakdown(arch)}
    assert set(items) == {"mac", "pe_registers", "sram.input", "sram.weight", "sram.output", "vector_unit"}
    # generic-45nm mac.int8 = Horowitz ISSCC 2014 (45 nm): 8b mult 282 um2 + 32b add 137 um2 = 419
    assert items["mac"].um2 == pytest.approx(1024 * (282.0 + 137.0))
    assert items["mac"].source == "tech:generic-45nm-lpddr"  # generic-45nm + an LPDDR DRAM figure
    # per PE: 8b input + 8b weight + 32b partial sum + 8b weight shadow = 56 bits, at the
    # NanGate FreePDK45 DFF_X1 cell area of 4.522 um2
    assert items["pe_registers"].um2 == pytest.approx(1024 * 56 * 4.522)
    # 256 KiB sits halfway (in log size: 2^16, 2^18, 2^20 B) between the 64 KiB and 1 MiB points;
    # those are a 0.346 um2 45 nm 6T bitcell x 8 bits at 60 % / 70 % array efficiency:
    # 0.346 * 8 / 0.60 = 4.61, 0.346 * 8 / 0.70 = 3.95 um2 per byte
    per_byte = 4.61 + 0.5 * (3.95 - 4.61)
    assert items["sram.input"].um2 == pytest.approx(262144 * per_byte)
    # per lane: Horowitz ISSCC 2014 fp32 mult 7700 + fp32 add 4184 um2, plus 32 x 32-bit registers of DFFs
    assert items["vector_unit"].um2 == pytest.approx(32 * (7700 + 4184 + 1024 * 4.522))
    total = 1024 * 419.0 + 1024 * 56 * 4.522 + 3 * 262144 * per_byte + 32 * (7700 + 4184 + 1024 * 4.522)
    assert area_mm2(arch) == pytest.approx(total / 1e6)


def test_grows_with_array_and_buffers():
    base = load_arch("systolic-32x32-ws")
    bigger = load_arch(base, {"rows": 64})
    assert area_mm2(bigger) > area_mm2(base)
    mac = {i.component: i.um2 for i in area_breakdown(bigger)}["mac"]
    assert mac == pytest.approx(2 * {i.component: i.um2 for i in area_breakdown(base)}["mac"])
    assert area_mm2(load_arch(base, {"buffers.input.bytes": 524288})) > area_mm2(base)
    assert area_mm2(load_arch(base, {"input_precision": "int16", "acc_precision": "int32"})) > area_mm2(base)


def test_tech_figures_win_and_missing_ones_fall_back_with_source():
    arch = load_arch("systolic-32x32-ws")
    tech = dataclasses.replace(arch.tech, name="t22", node_nm=22, area_um2={"mac.int8": 100.0}, sram_area_points=())
    items = {i.component: i for i in area_breakdown(dataclasses.replace(arch, tech=tech))}
    assert items["mac"].unit_um2 == 100.0 and items["mac"].source == "tech:t22"
    scale = (22 / 45) ** 2
    assert items["pe_registers"].unit_um2 == pytest.approx(DEFAULT_AREA_UM2["reg.bit"] * scale)
    assert "NanGate" in items["pe_registers"].source and "scaled" in items["pe_registers"].source
    assert "Mistry" in items["sram.input"].source
    assert all(SOURCES[key] for key in DEFAULT_AREA_UM2)


def test_unknown_figure_names_itself(monkeypatch):
    from archsim.area import AreaInputs
    from archsim.templates.systolic import SystolicModel

    arch = load_arch("systolic-32x32-ws")
    assert math.isfinite(area_mm2(arch))
    tech = dataclasses.replace(arch.tech, area_um2={})
    monkeypatch.setattr(SystolicModel, "area_inputs", lambda self: AreaInputs(macs={"int64": 4}))
    with pytest.raises(KeyError, match="mac.int64"):
        area_breakdown(dataclasses.replace(arch, tech=tech))


def test_prices_any_compute_component_in_the_tech_table(monkeypatch):
    """An adder-based PE array (no MACs): 1024 int8 adders and 64 fp32 adders, priced at the
    tech table's own keys -- generic-45nm: Horowitz ISSCC 2014 8b add 36 um2, fp32 add 4184 um2."""
    from archsim.area import AreaInputs
    from archsim.templates.systolic.fast import SystolicModel

    arch = load_arch("scalesim-32x32-ws")  # tech: generic-45nm
    monkeypatch.setattr(SystolicModel, "area_inputs",
                        lambda self: AreaInputs(components={"add.int8": 1024, "add.fp32": 64}))
    items = {item.component: item for item in area_breakdown(arch)}
    assert "mac" not in items
    assert items["add.int8"].um2 == pytest.approx(1024 * 36.0) and items["add.int8"].source == "tech:generic-45nm"
    assert items["add.fp32"].um2 == pytest.approx(64 * 4184.0) and items["add.fp32"].figure == "add.fp32"
    monkeypatch.setattr(SystolicModel, "area_inputs", lambda self: AreaInputs(components={"exp.fp32": 4}))
    with pytest.raises(KeyError, match="exp.fp32"):  # a component with no figure anywhere is refused, not dropped
        area_breakdown(arch)
