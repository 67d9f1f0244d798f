"""rtl.hier.dedupe_modules: one Verilog module per distinct body, instances pointed at it; and the
hierarchical no-share flow of rtl.attention.synth (stat parsing without yosys; a small design through
yosys with and without the hierarchy, under the synth mark)."""
import json
import re

import pytest
from amaranth import Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.hier import dedupe_modules


class _AddK(wiring.Component):
    """``y = a + k`` registered; ``k`` is the build parameter that makes two instances differ."""

    a: In(8)
    y: Out(8)

    def __init__(self, k):
        self.k = k
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.y.eq(self.a + self.k)
        return m


class _Pair(wiring.Component):
    """Two ``_AddK(k)`` in a chain; ``k1 == k2`` makes them the same hardware."""

    a: In(8)
    y: Out(8)

    def __init__(self, k1, k2):
        self.k1, self.k2 = k1, k2
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.first = f = _AddK(self.k1)
        m.submodules.second = s = _AddK(self.k2)
        m.d.comb += [f.a.eq(self.a), s.a.eq(f.y), self.y.eq(s.y)]
        return m


class _Top(wiring.Component):
    """Three pairs: (1, 1), (1, 1) again, (1, 2). By hand: distinct bodies are _AddK(1), _AddK(2),
    the pair (1, 1), the pair (1, 2) and the top: 5 of the 1 + 3 + 6 = 10 emitted modules."""

    a: In(8)
    y: Out(8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.p0 = p0 = _Pair(1, 1)
        m.submodules.p1 = p1 = _Pair(1, 1)
        m.submodules.p2 = p2 = _Pair(1, 2)
        m.d.comb += [p0.a.eq(self.a), p1.a.eq(p0.y), p2.a.eq(p1.y), self.y.eq(p2.y)]
        return m


def _modules(text):
    return re.findall(r"(?m)^module (\\\S+|\w+)", text)


def test_dedupe_keeps_one_module_per_distinct_body():
    text = verilog.convert(_Top(), name="top", emit_src=False)
    assert len(_modules(text)) == 10
    out, merged = dedupe_modules(text)
    kept = _modules(out)
    assert len(kept) == 5 and "top" in kept
    assert merged == {"\\top.p0.second": "\\top.p0.first", "\\top.p1": "\\top.p0",
                      "\\top.p1.first": "\\top.p0.first", "\\top.p1.second": "\\top.p0.first",
                      "\\top.p2.first": "\\top.p0.first"}
    # every instance names a kept module; the pair (1, 2) keeps its own second adder (k = 2)
    types = re.findall(r"(?m)^\s+(\\\S+)\s+\S+\s*\(", out)
    assert set(types) <= set(kept)
    assert sorted(types) == sorted(["\\top.p0", "\\top.p0", "\\top.p2", "\\top.p0.first", "\\top.p0.first",
                                    "\\top.p0.first", "\\top.p2.second"])
    assert "\\top.p2.second" in kept


def test_dedupe_leaves_a_design_without_duplicates_alone():
    text = verilog.convert(_Pair(1, 2), name="pair", emit_src=False)
    assert dedupe_modules(text) == (text, {})


def test_yosys_023_stat_hierarchy_lines_are_dropped():
    from rtl.attention.synth import _stat_json_text
    from rtl.synth import resources_from_stat

    # the shape of Debian yosys 0.23's `stat -json -top part` (a hierarchy table inside the JSON)
    text = ('{\n   "creator": "Yosys 0.23",\n   "modules": {\n      "\\\\part": {\n         "num_cells": 3\n'
            '      }\n   },\n       part.part.add_unit            2\n       part.part.mul_unit            1\n'
            '      "design": {\n         "num_cells": 9,\n         "num_cells_by_type": {\n'
            '            "LUT4": 5,\n            "MULT18X18D": 4\n         }\n      }\n}\n')
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    stat = json.loads(_stat_json_text(text))
    assert resources_from_stat(stat, "ecp5")["luts"] == 5 and resources_from_stat(stat, "ecp5")["dsps"] == 4


@pytest.mark.synth
@pytest.mark.slow
def test_hierarchical_and_flat_ecp5_counts_agree():
    """The small top through the no-share ECP5 flow both ways: the same FF / carry by hand (each 8-bit
    add: 4 CCU2C, 8 FF; six adds; the constants fold inside a module in either flow); then nextpnr on
    the hierarchical netlist."""
    from rtl.attention.synth import synthesize_no_share

    text = verilog.convert(_Top(), name="top", emit_src=False)
    flat = synthesize_no_share(text, "top", "ecp5", timeout_s=300)
    hier = synthesize_no_share(text, "top", "ecp5", timeout_s=300, hierarchical=True, pnr=True, freq_mhz=100)
    assert hier["modules_merged"] == 5 and hier["flow"].endswith("hierarchical")
    assert flat["ffs"] == hier["ffs"] == 6 * 8
    assert flat["carry"] == hier["carry"] == 6 * 4
    # nextpnr reads the hierarchical netlist (flattening it): every flip-flop placed, a clock reported
    assert "pnr_error" not in hier and hier["utilization"]["TRELLIS_FF"]["used"] == 6 * 8
    assert hier["fmax_mhz"] > 0
