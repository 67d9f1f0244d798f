"""Progress granularity: ``rtl synth`` reports yosys and nextpnr as separate stages (also through
the result cache), ``rtl cosim`` advances a bar per tile the simulator finishes (a line per tile
from the cocotb driver, tailed by the parent), and both stay quiet off a terminal or with -q.

The synthesis tools are replaced by fakes that write the files yosys / nextpnr write, so the
stage order is checked without running them; the co-simulation tests run Icarus (mark ``rtl``).
"""
from __future__ import annotations

import io
import json
import re
import sys
import threading
import time

import pytest

import rtl.synth
from archsim.cli import main
from archsim.cli._progress import Count, Stages
from rtl.cosim import progress as tile_progress
from sim_skip import require_icarus

TINY_V = "module tiny(input clk, input rst, input a, output reg q); always @(posedge clk) q <= a; endmodule\n"


class FakeTTY(io.StringIO):
    """stderr as tqdm sees a terminal."""

    def isatty(self) -> bool:
        return True


def _tty(monkeypatch) -> FakeTTY:
    """Make stderr a fake terminal; in the test body, as pytest's capture resets sys.stderr after fixtures."""
    stream = FakeTTY()
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


@pytest.fixture
def fake_tools(monkeypatch, tmp_path):
    """yosys / nextpnr stand-ins: record the order of calls, write stat.json / report.json."""
    monkeypatch.setenv("ARCHSIM_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[str] = []

    def fake_run(cmd, cwd, what, timeout):
        calls.append(what)
        if what == "yosys":
            stat = {"modules": {"\\tiny": {"num_cells": 9, "num_cells_by_type": {"LUT4": 5, "TRELLIS_FF": 3,
                                                                                 "CCU2C": 1}}}}
            (cwd / "stat.json").write_text(json.dumps(stat))
        else:
            (cwd / "report.json").write_text(json.dumps({"fmax": {"clk": {"achieved": 123.456}},
                                                         "utilization": {}}))
        return ""

    monkeypatch.setattr(rtl.synth, "run_tool", fake_run)
    return calls


# ----------------------------------------------------------------------------- synthesis stages


def test_synthesize_verilog_reports_each_tool_before_running_it(fake_tools):
    events: list[str] = []
    fake_tools_seen = fake_tools

    def progress(stage):
        events.append(f"stage {stage}")
        fake_tools_seen.append(f"stage {stage}")

    r = rtl.synth.synthesize_verilog(TINY_V, "tiny", target="ecp5", pnr=True, progress=progress)
    assert fake_tools_seen == ["stage yosys", "yosys", "stage nextpnr", "nextpnr-ecp5"]
    assert (r["luts"], r["ffs"], r["carry"], r["cells"], r["fmax_mhz"]) == (5, 3, 1, 9, 123.46)

    events.clear()
    again = rtl.synth.synthesize_verilog(TINY_V, "tiny", target="ecp5", pnr=True, progress=progress)
    assert events == ["stage cached"] and again == r  # the cache answers; no tool ran
    assert fake_tools_seen.count("yosys") == 1


def test_existing_signature_still_works(fake_tools):
    r = rtl.synth.synthesize_verilog(TINY_V, "tiny", target="generic", pnr=False)
    assert fake_tools == ["yosys"] and "fmax_mhz" not in r


def _tiny_design(monkeypatch):
    from rtl.design import RtlDesign

    monkeypatch.setattr(RtlDesign, "verilog", lambda self: TINY_V)


def test_rtl_synth_shows_yosys_then_nextpnr_with_times(fake_tools, monkeypatch, capsys):
    tty = _tty(monkeypatch)
    _tiny_design(monkeypatch)
    assert main(["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2", "--pnr"]) == 0
    err = tty.getvalue()
    assert re.search(r"rtl synth: 2/4 stages, design [\d.]+s, Verilog [\d.]+s \| yosys \d+s", err), err
    assert re.search(r"rtl synth: 3/4 stages, design [\d.]+s, Verilog [\d.]+s, yosys [\d.]+s \| nextpnr \d+s",
                     err), err
    out = capsys.readouterr().out
    assert re.search(r"^Fmax\s+123\.5 MHz$", out, re.M) and not out.lstrip().startswith("{")


def test_rtl_synth_cached_is_one_stage(fake_tools, monkeypatch):
    tty = _tty(monkeypatch)
    _tiny_design(monkeypatch)
    argv = ["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2"]
    assert main(argv) == 0
    tty.seek(0), tty.truncate()
    assert main(argv) == 0
    assert "| cached" in tty.getvalue() and "yosys" not in tty.getvalue()
    assert fake_tools == ["yosys"]


@pytest.mark.parametrize("quiet", [True, False])
def test_rtl_synth_quiet(fake_tools, monkeypatch, capsys, quiet):
    _tiny_design(monkeypatch)
    if quiet:  # a terminal, but -q
        monkeypatch.setattr(sys, "stderr", FakeTTY())
    argv = ["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2"] + (["-q"] if quiet
                                                                                                    else [])
    assert main(argv) == 0
    assert (sys.stderr.getvalue() if quiet else capsys.readouterr().err) == ""  # -q / not a terminal: silent


def test_stages_redraw_while_a_stage_runs(monkeypatch):
    tty = _tty(monkeypatch)
    with Stages("job", ["a"], refresh_s=0.05) as st:
        st.start("a")
        time.sleep(0.3)
    draws = [d for d in re.split(r"\r", tty.getvalue()) if "| a" in d or ", a" in d or "stages, a" in d]
    assert len(draws) >= 3, tty.getvalue()  # redrawn by the ticker, not only on start / finish
    assert set(st.times) == {"a"} and st.times["a"] >= 0.3


# ----------------------------------------------------------------------------- the tile progress file


def test_tile_done_appends_lines(tmp_path, monkeypatch):
    path = tmp_path / "p.txt"
    monkeypatch.setenv(tile_progress.ENV, str(path))
    monkeypatch.setattr(tile_progress, "_out", None)
    for i in range(4):
        tile_progress.tile_done(i, 3)
    tile_progress._out.close()
    assert path.read_text() == "0 3\n1 3\n2 3\n3 3\n"


def test_tile_done_without_env_is_a_no_op(monkeypatch):
    monkeypatch.delenv(tile_progress.ENV, raising=False)
    monkeypatch.setattr(tile_progress, "_out", None)
    tile_progress.tile_done(1, 2)
    assert tile_progress._out is False


def test_parse_ignores_a_partial_last_line():
    assert tile_progress.parse("1 8\n2 8\n3 ") == (2, 8)
    assert tile_progress.parse("1 8") is None
    assert tile_progress.parse("") is None


def test_tail_follows_a_growing_file(tmp_path):
    path = tmp_path / "p.txt"
    seen: list[tuple[int, int]] = []
    got_two = threading.Event()

    def callback(done, total):
        seen.append((done, total))
        if done == 2:
            got_two.set()

    with tile_progress.Tail(path, callback, interval_s=0.01):
        time.sleep(0.05)  # the file does not exist yet: no error, no call
        with open(path, "a") as f:
            f.write("0 5\n1 5\n2 5\n4")  # "4" is half a line
            f.flush()
            assert got_two.wait(2.0)
            f.write(" 5\n")
    assert seen[-1] == (4, 5) and seen[0][0] <= 2
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_count_bar_moves_to_the_reported_total(monkeypatch):
    tty = _tty(monkeypatch)
    with Count("cosim", 8, "tile") as bar:
        bar(3, 8)
        bar(5, 6)  # the driver's total wins
    assert "0/8" in tty.getvalue() and "3/8" in tty.getvalue() and "5/6" in tty.getvalue()  # every update drawn


# ----------------------------------------------------------------------------- co-simulation per tile


@pytest.mark.rtl
def test_cosim_reports_every_tile(tmp_path):
    require_icarus()
    from archsim.spec import load_arch
    from rtl import cosim_items, run_cosim

    arch = load_arch("systolic-32x32-ws", ["rows=2", "cols=2"])
    items = cosim_items(arch, "random", tiles=3, seed=1, max_stream=4)
    events: list[tuple[str, int, int]] = []
    build = tmp_path / "build"
    report = run_cosim(arch, items, progress=lambda *e: events.append(e), build_dir=build)
    assert report.ok, report.summary()
    assert [e[0] for e in events[:2]] == ["build", "start"]
    assert events[-1] == ("run", 3, 3)
    # the driver wrote one line per finished tile (the parent may see several at one poll)
    assert (build / "progress.txt").read_text() == "0 0\n1 3\n2 3\n3 3\n"


@pytest.mark.rtl
@pytest.mark.parametrize("quiet", [False, True])
def test_rtl_cosim_bar_per_tile(monkeypatch, tmp_path, capsys, quiet):
    tty = _tty(monkeypatch)
    require_icarus()
    argv = ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2", "--tiles", "3",
            "--max-stream", "4", "--build-dir", str(tmp_path / "b")] + (["-q"] if quiet else [])
    assert main(argv) == 0
    assert "PASS: 3/3 tiles" in capsys.readouterr().out
    err = tty.getvalue()
    if quiet:
        assert err == ""
    else:
        assert re.search(r"rtl cosim \(icarus\):\s+100%\|.*\| 3/3 \[", err), err
        assert "build (icarus)" in err and "start" in err


# ----------------------------------------------------------------------------- rtl help


@pytest.mark.parametrize("action", ["generate", "cosim", "synth"])
def test_rtl_help_names_no_template(action):
    """The RTL option flags are asked of the design (RtlDesign), so their help names no template."""
    import argparse

    from archsim.cli import build_parser
    from archsim.templates import template_names

    rtl_parser = next(a for a in build_parser()._actions if a.dest == "command").choices["rtl"]
    sub = next(a for a in rtl_parser._actions if isinstance(a, argparse._SubParsersAction)).choices[action]
    text = " ".join(sub.format_help().split()).lower()
    for flag in ("--depth", "--multiplier", "--out-ram", "--banks"):
        assert flag in text
    found = [name for name in template_names() if re.search(rf"\b{name}\b", text)]
    assert not found, found
