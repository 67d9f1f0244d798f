"""Running sweeps: outputs, failures, resume (including after a real SIGKILL).

Local vs Ray with the real simulator is in test_dse_cli.py."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from archsim.dse import build_plan, parse_sweep, run_sweep
from test_dse_helpers import fake_evaluate, fake_loader, fake_metrics, no_workload_check

ROOT = Path(__file__).resolve().parent.parent

SPEC = {
    "name": "t",
    "base": "fake-base",
    "axes": {"rows": [8, 13, 16, 32], "dataflow": ["ws", "os", "is"], "buffers.input.bytes": [8192, 65536]},
    "workloads": ["w1", "w2"],
    "objectives": {"latency": "min", "energy": "min", "area": "min"},
    "constraints": ["utilization >= 0.05"],
}


def make_plan(data=SPEC):
    return build_plan(parse_sweep(data, source="t.yaml"), loader=fake_loader, workload_check=no_workload_check)


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_local_run_outputs(tmp_path):
    plan = make_plan()
    result = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=2, progress=False)
    records = read_jsonl(tmp_path / "results.jsonl")
    assert len(records) == len(plan.tasks) == 48 and len({r["key"] for r in records}) == 48
    by_key = {t.key: t for t in plan.tasks}
    for r in records:
        task = by_key[r["key"]]
        if task.arch.params.rows == 13:  # the point that fails records its error; the others go on
            assert r["status"] == "error" and "RuntimeError: model bug on purpose" in r["error"]
        else:
            assert r["status"] == "ok" and r["metrics"] == pytest.approx(fake_metrics(task))
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert [int(r["index"]) for r in rows] == list(range(48))
    assert {"rows", "dataflow", "buffers.input.bytes", "cycles", "energy_pj", "area_mm2", "on_front"} <= set(rows[0])
    # the front, recomputed here from the metrics by brute force over feasible ok points
    for workload in ("w1", "w2"):
        ok = [r for r in rows if r["workload"] == workload and r["status"] == "ok" and float(r["utilization"]) >= 0.05]
        pts = [(float(r["latency_s"]), float(r["energy_pj"]), float(r["area_mm2"])) for r in ok]
        expected = {ok[i]["key"] for i, p in enumerate(pts)
                    if not any(all(b <= a for a, b in zip(p, q)) and q != p for q in pts)}
        front = [r for r in csv.DictReader(open(tmp_path / "pareto.csv")) if r["workload"] == workload]
        assert {r["key"] for r in front} == expected and expected
        assert {r["key"] for r in rows if r["workload"] == workload and r["on_front"] == "true"} == expected
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(
        f"{w}_{s}.png" for w in ("w1", "w2") for s in ("latency_vs_energy", "latency_vs_area", "energy_vs_area"))
    assert "Pareto front" in result.summary and "latency (min)" in result.summary
    assert result.counts == {"ok": 36, "error": 12}  # rows=13: 3 dataflows x 2 buffers x 2 workloads


def test_rerun_skips_finished_points(tmp_path):
    plan = make_plan()
    first = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    again = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    assert (first.ran, again.ran, again.reused) == (48, 0, 48)
    assert len(read_jsonl(tmp_path / "results.jsonl")) == 48
    retried = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False,
                        plots=False, retry_errors=True)
    assert retried.ran == 12  # only the failed points run again
    # a wider sweep reuses what it shares with the old one
    wider = make_plan({**SPEC, "axes": {**SPEC["axes"], "rows": [8, 13, 16, 32, 64]}})
    more = run_sweep(wider.spec, tmp_path, plan=wider, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    assert more.ran == 12 and more.reused == 48


def test_torn_last_line_is_recomputed(tmp_path):
    plan = make_plan()
    run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    path = tmp_path / "results.jsonl"
    data = path.read_bytes()
    last = data[:-1].rfind(b"\n") + 1
    path.write_bytes(data[: last + 25])  # the last record torn 25 bytes in
    result = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    assert result.ran == 1
    lines = path.read_bytes().splitlines()
    assert lines[47] == data[last:last + 25]  # the torn bytes are kept (the file is never rewritten), skipped
    records = [json.loads(line) for i, line in enumerate(lines) if i != 47]
    assert len(records) == 48 and len({r["key"] for r in records}) == 48


KILL_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from archsim.dse import build_plan, parse_sweep, run_sweep
    from test_dse_helpers import fake_loader, no_workload_check, slow_evaluate
    import test_dse_run
    plan = build_plan(parse_sweep(test_dse_run.SPEC, source="t.yaml"), loader=fake_loader, workload_check=no_workload_check)
    run_sweep(plan.spec, sys.argv[1], plan=plan, evaluate=slow_evaluate, workers=2, progress=False, plots=False)
""")


def test_sigkill_mid_sweep_then_resume_loses_and_duplicates_nothing(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT.format(tests=str(ROOT / "tests")))
    out = tmp_path / "out"
    env = dict(os.environ, DSE_TEST_DELAY="0.1")
    proc = subprocess.Popen([sys.executable, str(script), str(out)], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    jsonl = out / "results.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if jsonl.exists() and jsonl.read_bytes().count(b"\n") >= 10:
            break
        if proc.poll() is not None:
            pytest.fail(f"sweep ended before it was killed: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, no chance to clean up
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    done_before = {r["key"] for r in read_jsonl(jsonl)} if jsonl.read_bytes().endswith(b"\n") else None
    assert done_before is None or 10 <= len(done_before) < 48

    plan = make_plan()
    result = run_sweep(plan.spec, out, plan=plan, evaluate=fake_evaluate, workers=2, progress=False, plots=False)
    records = read_jsonl(jsonl)
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)) == 48  # nothing lost, nothing twice
    assert result.ran + result.reused == 48 and result.reused >= 10
    by_key = {t.key: t for t in plan.tasks}
    for r in records:
        if r["status"] == "ok":
            assert r["metrics"] == pytest.approx(fake_metrics(by_key[r["key"]]))
