"""Long steps off a terminal print plain progress lines (a log shows the job is alive); quick ones and
-q stay silent; the rtl subcommands describe themselves."""
from __future__ import annotations

import argparse
import re
import time

import pytest

from archsim.cli import _progress
from archsim.cli._progress import Count, Stages


@pytest.fixture
def fast_lines(monkeypatch):
    monkeypatch.setattr(_progress, "PLAIN_FIRST_S", 0.2)
    monkeypatch.setattr(_progress, "PLAIN_EVERY_S", 0.3)


def test_a_long_stage_off_a_terminal_prints_plain_lines(fast_lines, capsys):
    with Stages("rtl cosim", ["design", "build (icarus)"], refresh_s=0.05) as st:
        st.start("design")
        st.start("build (icarus)")
        time.sleep(0.75)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.strip().splitlines()
    running = [l for l in lines if l.startswith("rtl cosim: stage 2/2, build (icarus) running, ")]
    assert 2 <= len(running) <= 3  # after 0.2 s, then every 0.3 s of a 0.75 s stage
    assert re.fullmatch(r"rtl cosim: done in 0\.\ds \(design 0\.0s, build \(icarus\) 0\.\ds\)", lines[-1])


def test_a_quick_job_and_quiet_stay_silent(fast_lines, capsys):
    with Stages("rtl generate", ["design"]) as st:
        st.start("design")
    with Stages("rtl generate", ["design"], quiet=True, refresh_s=0.05) as st:
        st.start("design")
        time.sleep(0.4)
    assert capsys.readouterr().err == ""


def test_a_count_off_a_terminal_reports_now_and_then(fast_lines, capsys):
    bar = Count("rtl cosim (icarus)", 8, "tile")
    for done in range(1, 9):
        time.sleep(0.06)
        bar.to(done)
    bar.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines and lines[-1] == "rtl cosim (icarus): 8/8 tiles"
    assert all(re.fullmatch(r"rtl cosim \(icarus\): \d/8 tiles", l) for l in lines)
    assert len(lines) <= 4


@pytest.mark.parametrize("action", ["generate", "cosim", "synth"])
def test_rtl_subcommands_have_a_description(action):
    from archsim.cli import build_parser

    rtl_parser = next(a for a in build_parser()._actions if a.dest == "command").choices["rtl"]
    sub = next(a for a in rtl_parser._actions if isinstance(a, argparse._SubParsersAction)).choices[action]
    assert sub.description and len(sub.description) > 60
    assert "Progress on stderr" in sub.description


def test_rtl_generate_labels_an_overridden_design_by_its_parameters(tmp_path, capsys):
    from archsim.cli import main

    assert main(["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=4", "--set", "cols=4",
                 "--out", str(tmp_path / "g"), "-q"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("systolic[rows=4, cols=4] (base preset systolic-32x32-ws): ")
    assert "32x32" not in first.split("(base preset")[0]
