"""``area: synth``: synthesized figures per configuration, cached on disk, as sweep metrics."""
from __future__ import annotations

import csv
import os
import textwrap

import pytest

import rtl.synth
from archsim.cli import main
from archsim.dse import synth_figures
from archsim.spec import load_arch


@pytest.fixture
def counting_synth(tmp_path, monkeypatch):
    """Stand-in for yosys: figures are a function of the params; each call leaves a line in a file."""
    calls = tmp_path / "calls"

    def fake(params, target="ecp5", pnr=False, **kwargs):
        with open(calls, "a") as handle:
            handle.write(f"{params.rows}x{params.cols} {target}\n")
        return {"target": target, "luts": 10 * params.rows * params.cols, "ffs": 3 * params.rows, "dsps": params.rows,
                "cells": 11 * params.rows * params.cols}

    monkeypatch.setattr(rtl.synth, "synthesize", fake)
    monkeypatch.setenv("ARCHSIM_CACHE_DIR", str(tmp_path / "cache"))
    return calls


def test_figures_are_cached_by_configuration(counting_synth, tmp_path):
    arch = load_arch("systolic-32x32-ws", {"rows": 4, "cols": 4})
    first = synth_figures(arch, {"target": "generic"})
    assert first == {"synth_luts": 160.0, "synth_ffs": 12.0, "synth_dsps": 4.0, "synth_cells": 176.0}
    # same RTL parameters (a buffer size is not an RTL parameter here): read from the cache
    assert synth_figures(load_arch(arch, {"buffers.input.bytes": 65536}), {"target": "generic"}) == first
    assert counting_synth.read_text().splitlines() == ["4x4 generic"]
    synth_figures(load_arch(arch, {"rows": 8}), {"target": "generic"})
    synth_figures(arch, {"target": "ecp5"})
    assert counting_synth.read_text().splitlines() == ["4x4 generic", "8x4 generic", "4x4 ecp5"]
    assert len(os.listdir(tmp_path / "cache" / "synth")) == 3


def test_sweep_with_area_synth(counting_synth, tmp_path, capsys):
    (tmp_path / "tiny.yaml").write_text(textwrap.dedent("""
        name: tiny_mm
        input: [1, 16, 32]
        layers:
          - {name: fc1, op: matmul, n: 32}
          - {name: fc2, op: matmul, n: 16}
    """))
    (tmp_path / "tiny2.yaml").write_text((tmp_path / "tiny.yaml").read_text().replace("n: 16", "n: 48"))
    (tmp_path / "s.yaml").write_text(textwrap.dedent("""
        name: synth
        base: systolic-32x32-ws
        axes: {rows: [4, 8], dataflow: [ws, os]}
        workloads: [tiny.yaml, tiny2.yaml]
        objectives: {cycles: min, luts: min}
        constraints: ["cells <= 60"]
        area: synth
        synth: {target: generic}
    """))
    out = tmp_path / "out"
    assert main(["sweep", str(tmp_path / "s.yaml"), "--out", str(out), "--workers", "1", "--no-plots", "--no-progress"]) == 0
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert {r["rows"]: float(r["synth_luts"]) for r in rows} == {"4": 1280.0, "8": 2560.0}
    assert len(rows) == 8
    # synthesized once per RTL configuration (rows x dataflow: 4), not per point (8: two workloads)
    assert sorted(counting_synth.read_text().splitlines()) == ["4x32 generic"] * 2 + ["8x32 generic"] * 2
    assert all(r["feasible"] == "false" for r in rows)  # cells <= 60 holds nowhere
