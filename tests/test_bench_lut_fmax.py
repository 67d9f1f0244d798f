"""bench/bench_lut_fmax.py's budget: ``--timeout`` is the whole run's, yosys' counts are printed
before nextpnr starts, and nextpnr gets only what yosys left. yosys and nextpnr are stand-ins on a
fake clock, so nothing is synthesized."""
from __future__ import annotations

import bench.bench_lut_fmax as bench

COUNTS = {"luts": 1234, "carry": 5, "ffs": 678, "dsps": 2, "bram": 3, "lutram": 0, "tools": {"yosys": "stand-in"}}


def _stand_ins(monkeypatch, capsys, yosys_s: float):
    clock = [1000.0]
    seen: dict = {}

    def fake_synthesize(params, *, target, timeout_s, workdir, use_cache, progress, **kw):
        progress("yosys")
        seen["yosys_timeout_s"] = timeout_s
        clock[0] += yosys_s
        return dict(COUNTS)

    def fake_pnr(work, *, freq_mhz, seed, timeout_s):
        seen["pnr_timeout_s"] = timeout_s
        seen["printed_before_pnr"] = capsys.readouterr().out
        return {"fmax_mhz": 42.0, "critical_path": {"from": "a", "to": "b", "logic_ns": 1.0, "routing_ns": 2.0}}

    monkeypatch.setattr(bench, "synthesize", fake_synthesize)
    monkeypatch.setattr(bench, "place_and_route", fake_pnr)
    monkeypatch.setattr(bench.time, "time", lambda: clock[0])
    return seen


def test_nextpnr_gets_what_yosys_left_and_the_counts_are_printed_first(monkeypatch, capsys, tmp_path):
    seen = _stand_ins(monkeypatch, capsys, yosys_s=600.0)
    assert bench.main(["--only", "W2,A8", "--timeout", "2700", "--workdir", str(tmp_path)]) == 0
    assert seen["yosys_timeout_s"] == 2700
    assert seen["pnr_timeout_s"] == 2100  # 2700 - 600 by hand
    assert "1,234 LUT4, 5 CCU2C, 678 FF, 2 DSP, 3 BRAM" in seen["printed_before_pnr"]
    assert "42.0 MHz" in capsys.readouterr().out


def test_no_nextpnr_when_yosys_used_the_budget(monkeypatch, capsys, tmp_path):
    seen = _stand_ins(monkeypatch, capsys, yosys_s=880.0)
    assert bench.main(["--only", "W2,A8", "--timeout", "900", "--workdir", str(tmp_path)]) == 1
    assert "pnr_timeout_s" not in seen
    out = capsys.readouterr().out
    assert "1,234 LUT4" in out and "nextpnr-ecp5: not started, 20 s of --timeout 900 left" in out
