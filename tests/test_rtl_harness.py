"""The co-simulation harness without a simulator: errors, and the report's text."""
from __future__ import annotations

import pytest

import rtl.cosim.harness as harness
from archsim.errors import ToolError
from rtl.cosim import run_job, simulator_missing_reason
from rtl.design import CosimReport, TileCheck


def test_missing_simulator_is_a_one_line_tool_error(monkeypatch):
    monkeypatch.setattr(harness.shutil, "which", lambda *a, **k: None)
    assert simulator_missing_reason("icarus") == "Icarus Verilog not found (apt-get install iverilog)"
    with pytest.raises(ToolError, match=r"^Icarus Verilog not found \(apt-get install iverilog\)$"):
        run_job("module t; endmodule", "t", {})
    assert simulator_missing_reason("xsim") == "unknown simulator 'xsim'; expected one of icarus, verilator"


def test_report_summary_names_failures():
    good = TileCheck(0, "ws m=2 k=2 n=2", 9, 9, 9, True)
    slow = TileCheck(1, "os m=2 k=3 n=2", 8, 7, 7, True)
    wrong = TileCheck(2, "is m=1 k=1 n=1", 5, 5, 5, False, "out[0,0] = 1, expected 2")
    report = CosimReport("systolic", "icarus", [good, slow, wrong])
    assert good.ok and not slow.ok and not wrong.ok and not report.ok
    assert report.failures() == [
        "tile 1 (os m=2 k=3 n=2): cycles rtl=8 fast=7 detailed=7",
        "tile 2 (is m=1 k=1 n=1): out[0,0] = 1, expected 2",
    ]
    text = report.summary()
    assert "FAIL: 1/3 tiles match archsim on icarus" in text
    assert text.splitlines()[1].split()[-1] == "PASS" and text.splitlines()[2].split()[-1] == "FAIL"
    assert not CosimReport("systolic", "icarus", []).ok  # no tiles is not a pass


def test_a_build_made_by_another_python_or_cocotb_is_not_reused(monkeypatch):
    """The cached simulator build links this venv's cocotb VPI libraries: another venv (or another
    cocotb) must get its own build folder, else the old objects point at libraries that may be gone."""
    import sys

    import cocotb

    from rtl.cosim import harness

    here = harness.default_build_dir("module m; endmodule\n", "icarus")
    assert harness.default_build_dir("module m; endmodule\n", "icarus") == here  # same toolchain: reused
    monkeypatch.setattr(sys, "executable", "/elsewhere/.venv/bin/python3")
    assert harness.default_build_dir("module m; endmodule\n", "icarus") != here
    monkeypatch.undo()
    monkeypatch.setattr(cocotb, "__file__", "/elsewhere/site-packages/cocotb/__init__.py")
    assert harness.default_build_dir("module m; endmodule\n", "icarus") != here


class _ToyDesign:
    """A design with the shared check: models say out = [[1, 2]] in 7 cycles (detailed: ``det``)."""

    @staticmethod
    def make(det=((1, 2),), counter=True):
        import numpy as np

        from rtl.design import RtlDesign, TileModels

        class Toy(RtlDesign):
            template = "toy"
            has_cycle_counter = counter

            @staticmethod
            def label(tile):
                return f"toy {tile}"

            def tile_models(self, tile, ops):
                return TileModels(np.array([[1, 2]]), 7, np.array(det), 7)

            def rtl_tile_values(self, tile, g):
                return np.array(g["out"])

            def locate(self, tile, ops, at, extra):
                return f"lane {at[1]}"

        return Toy(None)


def _verdict(design, **g):
    return design.check([("t0", {})], {"tiles": [{"cycles": 7, "port_cycles": 7, "out": [[1, 2]], **g}]})


def test_the_shared_check_passes_a_matching_tile_and_names_each_kind_of_failure():
    toy = _ToyDesign.make()
    assert _verdict(toy).ok
    (msg,) = _verdict(toy, out=[[1, 3]]).failures()
    assert msg == "tile 0 (toy t0): out[0,1] = 3, expected 2 (archsim models); lane 1; 1 of 2 values differ"
    (msg,) = _verdict(toy, port_cycles=6).failures()  # the hardware counter disagrees with the ports
    assert msg == "tile 0 (toy t0): tile_cycles counter says 7, ports say 6"
    assert _verdict(toy, port_cycles=None).ok  # behind a bus wrapper: the counter stands alone
    assert "counter says None" in _verdict(toy, cycles=None).failures()[0]  # a counter the driver did not read
    assert _verdict(_ToyDesign.make(counter=False), port_cycles=None).ok  # a design without a counter
    (msg,) = _verdict(_ToyDesign.make(det=((1, 5),))).failures()
    assert msg.endswith("fast and detailed models disagree on values (model bug)")
    assert _verdict(toy, cycles=8).failures() == ["tile 0 (toy t0): tile_cycles counter says 8, ports say 7",
                                                  "tile 0 (toy t0): cycles rtl=8 fast=7 detailed=7"]
    missing = toy.check([("t0", {}), ("t1", {})], {"tiles": [{"cycles": 7, "port_cycles": 7, "out": [[1, 2]]}]})
    assert missing.failures() == ["tile 1 (toy t1): no result from the RTL",
                                  "tile 1 (toy t1): cycles rtl=None fast=7 detailed=7"]


def test_a_killed_simulator_is_named_as_killed_not_as_a_build_error(tmp_path):
    import logging

    from rtl.cosim.harness import _run_in, killed_by
    from archsim.errors import ArchsimError

    assert killed_by(143) == "killed by SIGTERM" and killed_by(-9) == "killed by SIGKILL"
    assert killed_by(1) == killed_by(2) == killed_by(0) == killed_by(None) == ""

    class Killed:  # a runner whose build process a timeout ended with SIGTERM (the shell's 128 + 15)
        log = logging.getLogger("fake-runner")

        def build(self, **_kw):
            raise SystemExit(143)

    with pytest.raises(ArchsimError) as err:
        _run_in(tmp_path, "module m; endmodule", "m", {}, "icarus", False, True, None, None, True,
                lambda sim: Killed())
    assert "build was killed by SIGTERM" in str(err.value) and "build failed" not in str(err.value)


def test_an_x_read_by_a_bus_model_is_named_in_one_line(tmp_path):
    """cocotbext-axi converts m_axis tdata to int in its own coroutine; an X there fails the cocotb
    test with a raw ValueError the driver never sees. The harness reads the log and says what it was."""
    import logging

    from rtl.cosim.harness import _run_in

    trace = ('Traceback (most recent call last):\n'
             '  File "/venv/lib/python3.11/site-packages/cocotbext/axi/axis.py", line 713, in _run\n'
             '    frame.tdata.append((int(self.bus.tdata.value) >> (offset * self.byte_size)) & self.byte_mask)\n'
             "ValueError: Can't convert LogicArray to int: it contains non-0/1 values\n")

    class XOnTheBus:
        log = logging.getLogger("fake-runner")

        def build(self, **_kw):
            pass

        def test(self, log_file, **_kw):
            log_file.write_text(trace)  # the test failed: no result file

    with pytest.raises(ToolError) as err:
        _run_in(tmp_path, "module m; endmodule", "m", {}, "icarus", False, True, None, None, True,
                lambda sim: XOnTheBus())
    msg = str(err.value)
    assert "an AXI4-Stream bus model read X/Z bits" in msg and "axis.py" in msg and "\n" not in msg
