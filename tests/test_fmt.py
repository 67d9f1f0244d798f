"""archsim.fmt: units and numbers for people, and the reports that use it.

Expected strings are written by hand from the unit definitions
(1 KiB = 1024 B, 1 mJ = 1e9 pJ, ...).
"""
from __future__ import annotations

import pytest

import archsim
from archsim import fmt


@pytest.mark.parametrize("value, text", [
    (0, "0 s"), (5e-10, "500 ps"), (3.2e-9, "3.2 ns"), (4.12e-4, "412 µs"), (5.845863e-3, "5.85 ms"),
    (1.2, "1.2 s"), (3600, "3600 s"),
])
def test_seconds(value, text):
    assert fmt.seconds(value) == text


@pytest.mark.parametrize("value, text", [
    (0, "0 B"), (512, "512 B"), (1023, "1,023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (int(79.1 * 2**20), "79.1 MiB"), (2**30 - 1, "1 GiB"), (3 * 2**40, "3 TiB"),
])
def test_nbytes(value, text):
    assert fmt.nbytes(value) == text


@pytest.mark.parametrize("pj, text", [(0, "0 J"), (0.5, "0.5 pJ"), (43.3e3, "43.3 nJ"),
                                      (15.6e9, "15.6 mJ"), (4.8e12, "4.8 J"), (1.2e15, "1.2 kJ")])
def test_energy(pj, text):
    assert fmt.energy_pj(pj) == text


@pytest.mark.parametrize("fraction, text", [(0, "0 %"), (0.835, "83.5 %"), (0.0033, "0.33 %"), (1e-7, "1e-05 %"),
                                            (1.0, "100.0 %"), (0.01, "1.00 %")])
def test_percent(fraction, text):
    assert fmt.percent(fraction) == text


def test_small_values_are_not_zero():
    assert fmt.percent(1e-9) != "0 %" and fmt.seconds(1e-13) != "0 s" and fmt.energy_pj(1e-3) != "0 J"


@pytest.mark.parametrize("value, text", [(5845863, "5,845,863"), (2.0, "2"), (0.123456, "0.1235"), ("x", "x"),
                                         (True, "True")])
def test_number(value, text):
    assert fmt.number(value) == text


def test_table_aligns_columns():
    text = fmt.table([["a", "1,000", "5 ms"], ["bbbb", "12", "12.5 ms"]], header=["name", "cycles", "time"])
    assert text.splitlines() == [
        "name  cycles     time",
        "----  ------  -------",
        "a      1,000     5 ms",
        "bbbb      12  12.5 ms",
    ]
    lines = text.splitlines()
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule line up


def test_table_explicit_alignment():
    assert fmt.table([["1", "x"]], align="lr") == "1  x"


def test_summary_uses_fmt_and_counts_kernel_bytes():
    from archsim.report.writers import summary_rows

    gpu = dict(summary_rows(archsim.simulate("gpt2", "gpu-a100", phase="decode")))
    # the roofline moves each op's operands once: not "0 B"
    assert not gpu["DRAM traffic"].startswith("0 B")
    assert "inside memory / kernels" in gpu["DRAM traffic"]
    pim = dict(summary_rows(archsim.simulate("gpt2", "pim-hbm2", phase="decode")))
    assert not pim["DRAM traffic"].startswith("0 B")
    sys_ = archsim.simulate("resnet18", "systolic-32x32-ws")
    rows = dict(summary_rows(sys_))
    assert rows["DRAM traffic"] == fmt.nbytes(sys_.dram_bytes)
    assert rows["total cycles"] == f"{sys_.total_cycles:,}"
    assert rows["utilization"] == fmt.percent(sys_.utilization)


def test_progress_is_silent_off_a_terminal_and_with_quiet(tmp_path, capsys):
    from archsim.cli import main

    for extra in ([], ["--quiet"]):
        assert main(["run", "--arch", "gpu-a100", "--workload", "resnet18", "--no-plots",
                     "--out", str(tmp_path / f"r{len(extra)}"), *extra]) == 0
        captured = capsys.readouterr()
        assert captured.err == ""  # pytest's stderr is not a terminal
        assert "total cycles" in captured.out


def test_progress_shows_on_a_terminal(monkeypatch):
    import io

    from archsim.cli._progress import LayerProgress, Stages

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr("sys.stderr", err)
    bar = LayerProgress("arch x net")
    bar(1, 2, "conv1")
    bar(2, 2, "fc")
    bar.close()
    assert "arch x net" in err.getvalue() and "layer" in err.getvalue()
    quiet = Tty()
    monkeypatch.setattr("sys.stderr", quiet)
    with Stages("rtl synth", ["Verilog", "yosys"], quiet=True) as st:
        st.start("Verilog")
        st.start("yosys")
    assert quiet.getvalue() == ""


def test_rtl_design_label_uses_effective_parameters():
    from archsim.cli.rtl import design_label
    from archsim.spec import load_arch

    arch = load_arch("systolic-32x32-ws", overrides=["rows=4", "cols=4"])
    label = design_label(arch, ["rows=4", "cols=4"])
    assert label == "systolic[rows=4, cols=4] (base preset systolic-32x32-ws)"
    assert not label.startswith("systolic-32x32")
    assert design_label(load_arch("systolic-32x32-ws"), []) == "systolic-32x32-ws"
