"""Arch spec loading: presets, validation messages, overrides, tech tables."""
from __future__ import annotations

import dataclasses
import math
import re
import textwrap
from typing import Literal

import pytest

import archsim.templates as templates
from archsim.errors import SpecError
from archsim.spec import ArchSpec, load_arch, load_tech, preset_descriptions, preset_names, tech_names
from archsim.templates.base import Template, TemplateModel, TemplateParams


@dataclasses.dataclass(frozen=True)
class FakeParams(TemplateParams):
    rows: int
    cols: int = 4
    dataflow: Literal["ws", "os", "is"] = "ws"
    input_precision: str = "int8"
    weight_precision: str = "int8"
    acc_precision: str = "int32"
    scale: float = 1.0
    flags: tuple[int, ...] = ()

    def validate(self) -> None:
        if self.rows <= 0:
            raise ValueError(f"rows: expected a positive integer, got {self.rows}")

    def min_buffer_bytes(self):
        """One rows x cols tile per operand: int8 inputs and weights, int32 outputs."""
        tile = self.rows * self.cols
        return {"input": tile, "weight": tile, "output": 4 * tile}, f"one {self.rows}x{self.cols} tile"


class FakeModel(TemplateModel):
    units = {"array": "compute", "vector": "vector", "dma": "dma"}


# a loader-only fake: nothing here maps a graph, so its mapper module is never imported
FAKE = Template("fake", "test template", params="test_spec_load:FakeParams", model="test_spec_load:FakeModel",
                mapper="test_spec_load")


@pytest.fixture
def fake_template():
    templates.register(FAKE)
    yield
    templates.unregister("fake")


BASE = """\
name: tiny
description: a tiny test arch
template: fake
params: {rows: 4, cols: 4, dataflow: ws}
clock_mhz: 500
buffers:
  input:  {bytes: 1024}
  weight: {bytes: 1 KiB, banks: 2}
  output: {bytes: 4096, bytes_per_cycle: 16}
dram: {bytes_per_cycle: 8, latency_cycles: 10}
vector_unit: {lanes: 4, cycles_per_op: {exp: 3}}
"""


def write(tmp_path, text, name="arch.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def error_of(*args, **kw) -> str:
    with pytest.raises(SpecError) as info:
        load_arch(*args, **kw)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_load_file_fills_dataclasses(tmp_path, fake_template):
    arch = load_arch(write(tmp_path, BASE))
    assert isinstance(arch, ArchSpec)
    assert arch.params == FakeParams(rows=4, cols=4, dataflow="ws")
    assert arch.clock_mhz == 500.0
    assert arch.buffers["weight"].bytes == 1024 and arch.buffers["weight"].banks == 2
    assert arch.buffers["output"].bytes_per_cycle == 16
    assert arch.buffers["input"].bytes_per_cycle == 64  # default
    assert arch.dram.bytes_per_cycle == 8 and arch.dram.latency_cycles == 10
    assert arch.vector_unit.lanes == 4 and arch.vector_unit.cycles_per_op == {"exp": 3}
    assert arch.tech.name == "generic-45nm"  # default table
    assert arch.source.endswith("arch.yaml")
    assert isinstance(arch.model(), FakeModel) and arch.model() is arch.model()


#: (text replaced in BASE, or None to append; the new text; the one-line error after ``arch.yaml: ``)
BAD_EDITS = [
    ("dataflow: ws}", "dataflow: ws, colour: red}", r"params\.colour: unknown key; expected one of rows, cols, dataflow, .*"),
    ("rows: 4,", "rows: four,", r"params\.rows: expected int, got 'four'"),
    ("dataflow: ws", "dataflow: xs", r"params\.dataflow: expected one of 'ws', 'os', 'is', got 'xs'"),
    ("rows: 4,", "rows: -4,", r"params\.rows: expected a positive integer, got -4"),
    ("rows: 4,", "", r"params\.rows: missing; expected int"),
    (None, "colour: red\n", r"colour: unknown key; expected one of name, description, template, .*"),
    ("{bytes: 1024}", "{bytes: lots}",
     r"buffers\.input\.bytes: expected a positive number of bytes \(e\.g\. 65536 or '64 KiB'\), got 'lots'"),
    ("bytes_per_cycle: 8,", "bytes_per_cycle: 0,", r"dram\.bytes_per_cycle: expected a positive number, got 0"),
    ("  input:  {bytes: 1024}\n", "",
     r"buffers\.input: missing; expected input, weight and output buffers, or one 'unified'"),
    ("clock_mhz: 500\n", "", r"clock_mhz: missing; expected a positive number"),
    ("template: fake", "template: warp", r"template: expected one of .*fake.*, got 'warp'"),
    (None, "tech: nosuch-3nm\n", r"tech: unknown tech table 'nosuch-3nm'; expected one of generic-45nm.* or a file path"),
]


@pytest.mark.parametrize("old, new, message", BAD_EDITS, ids=[m.split(":")[0].replace("\\", "") for _, _, m in BAD_EDITS])
def test_a_bad_key_or_section_is_one_line_naming_it(tmp_path, fake_template, old, new, message):
    """Unknown keys, wrong types, a failing validate(), missing sections: one line naming the file and key."""
    if old is None:
        text = BASE + new
    else:
        assert old in BASE
        text = BASE.replace(old, new)
    assert re.fullmatch(r".*arch\.yaml: " + message, error_of(write(tmp_path, text)))


def test_bad_yaml_missing_file_and_unknown_preset(tmp_path):
    path = write(tmp_path, "name: [unclosed\n")
    assert re.fullmatch(r".*arch\.yaml: line \d+: invalid YAML: .*", error_of(path))
    assert re.fullmatch(r".*nope\.yaml: no such file", error_of(str(tmp_path / "nope.yaml")))
    assert re.fullmatch(r"unknown arch 'nosuch': not a file and not a preset; expected one of .*systolic-32x32-ws.*", error_of("nosuch"))


def test_buffer_must_hold_one_tile(tmp_path, fake_template):
    # 4x4 int8 input tile = 16 B; 4x4 int32 output tile = 64 B
    ok = load_arch(write(tmp_path, BASE), overrides=["buffers.output.bytes=64", "buffers.input.bytes=16"])
    assert ok.buffers["output"].bytes == 64
    msg = error_of(write(tmp_path, BASE), overrides=["buffers.output.bytes=63"])
    assert re.fullmatch(r".*arch\.yaml: buffers\.output\.bytes: expected at least 64 bytes to hold one 4x4 tile, got 63", msg)
    msg = error_of(write(tmp_path, BASE), overrides=["rows=64", "cols=64"])
    # 64x64 int8 = 4096 B > 1024 B input buffer
    assert re.fullmatch(r".*arch\.yaml: buffers\.input\.bytes: expected at least 4096 bytes to hold one 64x64 tile, got 1024", msg)
    unified = BASE.replace(
        "  input:  {bytes: 1024}\n  weight: {bytes: 1 KiB, banks: 2}\n  output: {bytes: 4096, bytes_per_cycle: 16}\n",
        "  unified: {bytes: 95}\n",
    )
    msg = error_of(write(tmp_path, unified))  # needs 16 + 16 + 64 = 96
    assert re.fullmatch(r".*arch\.yaml: buffers\.unified\.bytes: expected at least 96 bytes to hold one 4x4 tile of every operand, got 95", msg)
    arch = load_arch(write(tmp_path, unified), overrides={"buffers.unified.bytes": 96})
    assert arch.buffer_for("weight").name == "unified"


def test_overrides(tmp_path, fake_template):
    path = write(tmp_path, BASE)
    arch = load_arch(path, overrides=["rows=8", "dataflow=os", "dram.bytes_per_cycle=16", "buffers.input.bytes=65536",
                                      "scale=2", "flags=[1, 2]", "clock_mhz=250"])
    assert (arch.params.rows, arch.params.dataflow, arch.params.scale, arch.params.flags) == (8, "os", 2.0, (1, 2))
    assert arch.dram.bytes_per_cycle == 16 and arch.buffers["input"].bytes == 65536 and arch.clock_mhz == 250
    arch2 = load_arch(arch, overrides={"rows": 16})
    assert arch2.params.rows == 16 and arch2.dram.bytes_per_cycle == 16 and arch2.tech is arch.tech
    assert re.fullmatch(r".*arch\.yaml: --set bogus=1: unknown key 'bogus'; expected a spec key \(name, .*\) or a fake param \(rows, .*\)",
                        error_of(path, overrides=["bogus=1"]))
    assert re.fullmatch(r"--set rows: expected KEY=VALUE \(e\.g\. rows=16 or dram\.bytes_per_cycle=16\)", error_of(path, overrides=["rows"]))
    assert re.fullmatch(r".*arch\.yaml: params\.rows: expected int, got 'x'", error_of(path, overrides=["rows=x"]))


def test_gb_per_s_converts_with_clock(tmp_path, fake_template):
    path = write(tmp_path, BASE.replace("bytes_per_cycle: 8,", "gb_per_s: 34,"))
    arch = load_arch(path)
    assert arch.dram.bytes_per_cycle == pytest.approx(34e9 / 500e6)
    assert load_arch(path, overrides=["clock_mhz=700"]).dram.bytes_per_cycle == pytest.approx(34e9 / 700e6)
    assert load_arch(path, overrides=["dram.bytes_per_cycle=5"]).dram.bytes_per_cycle == 5


def test_identity_and_hash(tmp_path, fake_template):
    a = load_arch(write(tmp_path, BASE))
    b = load_arch(write(tmp_path, BASE.replace("name: tiny", "name: other"), "b.yaml"))
    c = load_arch(a, overrides=["rows=8"])
    assert a.identity() == b.identity() and hash(a) == hash(b)
    assert a.identity() != c.identity()


def test_tech_table_figures_cite_sources():
    tech = load_tech("generic-45nm")
    assert tech.node_nm == 45
    # Horowitz ISSCC 2014 figures
    assert tech.energy("mac.int8") == pytest.approx(0.2 + 0.1)
    assert tech.energy("mac_int8") == tech.energy("mac.int8")
    assert tech.energy("dram_bit") == pytest.approx(1300 / 64, rel=1e-2)
    assert tech.sram_pj_per_byte(8192) == pytest.approx(10 / 8)
    assert tech.sram_pj_per_byte(1 << 20) == pytest.approx(100 / 8)
    assert tech.sram_pj_per_byte(1024) == pytest.approx(10 / 8)  # clamped
    # log-linear halfway between 8 KiB and 32 KiB (16 KiB): midway between 1.25 and 2.5
    assert tech.sram_pj_per_byte(16384) == pytest.approx((1.25 + 2.5) / 2)
    assert tech.sram_pj_per_byte(4 << 20) > tech.sram_pj_per_byte(1 << 20)
    for action in tech.energy_pj:
        assert tech.sources.get(action), action
    for comp in tech.area_um2:
        assert tech.sources.get(f"area.{comp}"), comp
    for size, _ in tech.sram_points:
        assert tech.sources.get(f"sram@{size}")
    with pytest.raises(KeyError):
        tech.energy("teleport")


def test_tech_errors(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("name: t\nenergy_pj: {mac.int8: fast}\nsram: [{bytes: 1024, pj_per_byte: 1}]\n")
    with pytest.raises(SpecError, match=r"^.*t\.yaml: energy_pj\.mac\.int8: expected a number, got 'fast'$"):
        load_tech(str(bad))
    bad.write_text("name: t\nsram: [{bytes: 2048, pj_per_byte: 1}, {bytes: 1024, pj_per_byte: 2}]\n")
    with pytest.raises(SpecError, match=r"^.*t\.yaml: sram: expected points in strictly ascending order of bytes$"):
        load_tech(str(bad))
    t = load_tech({"name": "mine", "energy_pj": {"mac.int8": 1}, "sram": [{"bytes": 1024, "pj_per_byte": 2}]})
    assert t.energy("mac.int8") == 1 and t.sram_pj_per_byte(10 << 20) == 2


def test_preset_listing():
    names = preset_names()
    for n in ["systolic-32x32-ws", "systolic-32x32-os", "systolic-128x128-ws", "tpuv1-256x256"] + [
        f"scalesim-{a}x{a}-{df}" for a in (32, 128) for df in ("os", "ws", "is")
    ]:
        assert n in names
    descs = preset_descriptions()
    assert all(descs[n] and "\n" not in descs[n] for n in names)
    assert "generic-45nm" in tech_names()




@pytest.mark.parametrize("name", [n for n in preset_names()])
def test_every_preset_loads(name):
    arch = load_arch(name)
    assert arch.name == name and arch.source == f"preset:{name}"
    assert arch.clock_mhz > 0 and arch.tech.name


def test_tpuv1_figures():
    arch = load_arch("tpuv1-256x256")
    p = arch.params
    assert (p.rows, p.cols, str(getattr(p.dataflow, "value", p.dataflow))) == (256, 256, "ws")
    assert arch.clock_mhz == 700
    assert arch.buffers["input"].bytes == 24 << 20
    assert arch.dram.bytes_per_cycle == pytest.approx(34e9 / 700e6)


def test_scalesim_presets_are_stall_free():
    arch = load_arch("scalesim-32x32-os")
    assert math.isinf(arch.dram.bytes_per_cycle) and arch.dram.latency_cycles == 0
    # SCALE-Sim's 64 Ki words per SRAM: int8 inputs/weights, int32 outputs
    assert (arch.buffers["input"].bytes, arch.buffers["weight"].bytes, arch.buffers["output"].bytes) == (
        64 * 1024, 64 * 1024, 4 * 64 * 1024)
    assert arch.params.mult_pipeline_stages == 0


def test_systolic_buffer_too_small():
    msg = error_of("systolic-32x32-ws", overrides=["buffers.output.bytes=1000"])
    # one 32x32 int32 tile = 4096 B
    assert re.fullmatch(r"systolic-32x32-ws\.yaml: buffers\.output\.bytes: expected at least 4096 bytes to hold one .*tile.*, got 1000", msg)
