"""Bad flags found by trying every subcommand: each is one line on stderr (exit 2), given before
any long step runs (the RTL design is never built), never a silent default or a late refusal."""
from __future__ import annotations

import pytest

import archsim.cli.rtl as cli_rtl
from cli_errors import one_line_error


@pytest.fixture
def no_design(monkeypatch):
    """Fail the test if a command builds the RTL design (the long step the check must precede)."""
    def built(*_a, **_k):
        raise AssertionError("the design was built before the bad flag was refused")

    monkeypatch.setattr(cli_rtl, "_design", built)


def test_rtl_generate_refuses_a_file_as_out_before_building(capsys, tmp_path, no_design):
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    one_line_error(capsys, ["rtl", "generate", "--arch", "systolic-32x32-ws", "--out", str(mine), "-q"],
                    str(mine), "not a folder")
    assert mine.read_text() == "mine\n"


def test_rtl_generate_refuses_a_users_folder_before_building(capsys, tmp_path, no_design):
    (tmp_path / "mine.v").write_text("module m; endmodule\n")
    one_line_error(capsys, ["rtl", "generate", "--arch", "systolic-32x32-ws", "--out", str(tmp_path), "-q"],
                    "not written by archsim")


@pytest.mark.parametrize("flag", ["--workload", "--layer"])
def test_rtl_cosim_refuses_program_flags_without_source_program(capsys, no_design, flag):
    # --workload / --layer feed only --source program; with random tiles they were silently ignored
    one_line_error(capsys, ["rtl", "cosim", "--arch", "systolic-32x32-ws", flag, "resnet50", "-q"],
                    flag, "--source program")


def test_rtl_cosim_unknown_workload_is_refused_before_building(capsys, no_design):
    one_line_error(capsys, ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--source", "program",
                             "--workload", "resnet-5O", "-q"], "unknown workload 'resnet-5O'")


def test_run_refuses_negative_trace_layers(capsys, tmp_path):
    one_line_error(capsys, ["run", "--arch", "systolic-32x32-ws", "--workload", "resnet50", "--trace-layers", "-5",
                             "--out", str(tmp_path / "o")], "--trace-layers", "-5")
    assert not (tmp_path / "o").exists()
