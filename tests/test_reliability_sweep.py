"""Sweeps that survive anything: random SIGKILLs and resumes, the folder lock, Ctrl-C, junk lines,
sweep-wide settings checked up front, a non-zero exit when points fail."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from archsim.dse import build_plan, parse_sweep, run_sweep
from archsim.dse._lock import SweepLockedError
from archsim.errors import SpecError
from fuzz.sweep_kill import ROOT, kill_loop, valid_records
from test_dse_helpers import fake_evaluate, fake_loader, no_workload_check

SPEC = {
    "name": "r",
    "base": "fake-base",
    "axes": {"rows": [8, 16, 32], "dataflow": ["ws", "os"]},
    "workloads": ["w1", "w2"],
    "objectives": {"latency": "min", "energy": "min"},
}


def make_plan(data=SPEC):
    return build_plan(parse_sweep(data, source="r.yaml"), loader=fake_loader, workload_check=no_workload_check)


def test_random_sigkills_and_resumes_record_every_point_exactly_once(tmp_path):
    figures = kill_loop(tmp_path / "out", kills=4, seed=15, delay_s=0.25, rows=4, min_wait_s=1.0, max_wait_s=2.2)
    assert figures["kills"] >= 1 and figures["resumes"] >= figures["kills"]
    assert figures["workers_seen"] >= 1  # some kill hit a sweep with running workers
    assert figures["orphans"] == 0  # workers died with their parent
    assert figures["duplicates"] == 0 and figures["lost"] == 0 and figures["unexpected"] == 0
    assert figures["recorded"] == figures["points"] == 4 * 3 * 2 * 2


HOLD_LOCK = textwrap.dedent("""
    import sys, time
    from archsim.dse._lock import SweepLock
    from archsim.outputs import OutputDir
    with SweepLock(OutputDir(sys.argv[1], "sweep")):
        print("held", flush=True)
        time.sleep(30)
""")


def test_second_sweep_on_a_folder_is_refused_naming_the_first_pid(tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out)], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        plan = make_plan()
        with pytest.raises(SweepLockedError, match=rf"another sweep \(PID {holder.pid}\) is running in this folder"):
            run_sweep(plan.spec, out, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
        assert not (out / "results.jsonl").exists() or valid_records(out / "results.jsonl") == []
    finally:
        holder.kill()
        holder.wait()
    plan = make_plan()  # the holder's death released the lock
    result = run_sweep(plan.spec, out, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    assert result.ran == 12


SLOW_SWEEP = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from archsim.dse import build_plan, parse_sweep, run_sweep
    from test_dse_helpers import fake_loader, no_workload_check, fake_metrics
    import os

    def slow(task):
        time.sleep(0.2 if task.index < 4 else 60)  # later points run "for minutes"
        return fake_metrics(task)

    plan = build_plan(parse_sweep({spec!r}, source="r.yaml"), loader=fake_loader, workload_check=no_workload_check)
    try:
        run_sweep(plan.spec, sys.argv[1], plan=plan, evaluate=slow, workers=2, progress=False, plots=False)
    except KeyboardInterrupt:
        sys.exit(130)
""")


def as_a_terminal_job() -> None:
    """In the child before exec: SIGINT at its default, as for a command typed at a terminal.

    A disposition of "ignore" survives exec, and Python then installs no KeyboardInterrupt
    handler; a test suite started as a background job (``cmd &`` in a script, nohup, some CI
    runners) has SIGINT ignored, so without this the sweep ignores the Ctrl-C under test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_in_seconds_keeps_finished_points_and_says_how_to_resume(tmp_path):
    out = tmp_path / "out"
    script = tmp_path / "slow.py"
    script.write_text(SLOW_SWEEP.format(tests=str(ROOT / "tests"), spec=SPEC))
    proc = subprocess.Popen([sys.executable, str(script), str(out)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=as_a_terminal_job)
    jsonl = out / "results.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(valid_records(jsonl)) < 4:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        time.sleep(0.05)
    time.sleep(0.3)  # the 60 s points are running now
    workers = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == proc.pid]
    assert workers
    start = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole process group
    _, err = proc.communicate(timeout=20)
    stopped_s = time.monotonic() - start
    assert proc.returncode == 130, err.decode()[-2000:]
    assert stopped_s < 5.0
    text = err.decode()
    assert re.search(r"r: stopped after 4 of 12 points; the finished ones are kept in .*results\.jsonl; "
                     r"run the same command again to resume", text), text
    assert "Traceback" not in text
    assert len(valid_records(jsonl)) == 4
    assert not [w for w in workers if _ppid(w) is not None]  # no worker left running


def _ppid(pid: int):
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else int(fields[1])


JUNK = [b"not json at all", b'{"key": [1], "status": "ok"}', b"[]", b'{"key": "x"}', b"\xff\xfe\x00binary",
        b'{"key": "y", "status": "ok", "metrics": 5}', b"{" * 5000]


def test_junk_lines_are_skipped_reported_and_kept(tmp_path):
    plan = make_plan()
    run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    path = tmp_path / "results.jsonl"
    lines = path.read_bytes().split(b"\n")[:-1]
    dropped = lines.pop(3)  # one point's record is lost ...
    mixed = lines[:2] + JUNK[:4] + lines[2:] + JUNK[4:]
    path.write_bytes(b"\n".join(mixed) + b"\n" + b'{"key": "torn", "sta')  # ... junk mid-file and a torn end
    before = path.read_bytes()
    logged = []
    result = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False,
                       plots=False, log=logged.append)
    assert result.ran == 1 and result.reused == 11
    assert path.read_bytes().startswith(before)  # never rewritten: every junk byte is still there
    skipped = [line for line in logged if "unreadable line" in line]
    assert len(skipped) == 1 and "skipped 8 unreadable line(s) (3, 4, 5, 6, 16, ...;" in skipped[0]
    assert "they stay in the file" in skipped[0]
    records = valid_records(path)
    assert json.loads(dropped)["key"] in {r["key"] for r in records}
    assert len({r["key"] for r in records if r["key"] not in ("x", "y")}) == 12


@pytest.mark.parametrize("simulate, message", [
    ({"objective": "speed"}, r"r\.yaml: simulate: objective: expected one of .*, got 'speed'"),
    ({"detailed": "yes"}, r"r\.yaml: simulate\.detailed: expected true or false, got 'yes'"),
    ({"weights": "int8"}, r"r\.yaml: simulate: give both weights and activations, or neither"),
    ({"weights": "int3", "activations": "int8"}, r"r\.yaml: simulate\.weights/activations: .*int3.*"),
])
def test_sweep_wide_settings_are_checked_before_the_first_point(tmp_path, simulate, message):
    plan = make_plan({**SPEC, "simulate": simulate})
    with pytest.raises(SpecError, match=message):
        run_sweep(plan.spec, tmp_path / "out", plan=plan, workers=1, progress=False, plots=False)
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_cli_sweep_exits_non_zero_with_a_summary_when_points_fail(tmp_path, monkeypatch, capsys):
    import archsim.dse
    from archsim.cli import main

    real = archsim.dse.run_sweep

    def with_fake_points(spec, out, **kw):
        return real(spec, out, **{**kw, "evaluate": fake_evaluate, "workers": 1})

    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: s\nbase: systolic-32x32-ws\naxes: {rows: [8, 13]}\nworkloads: [resnet50]\n")
    monkeypatch.setattr(archsim.dse, "run_sweep", with_fake_points)
    rc = main(["sweep", str(sweep), "--out", str(tmp_path / "o"), "--no-plots", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1
    # fake_evaluate fails rows=13 on purpose: 1 of the 2 points
    assert "archsim: error: 1 of 2 points failed (1 x RuntimeError: model bug on purpose" in err


def test_disk_full_mid_sweep_then_resume_records_every_point_once(tmp_path, monkeypatch):
    import errno

    import archsim.dse._store as store_module
    from archsim.errors import ArchsimError

    real_write, calls = os.write, []

    def full_after_three(fd, data):
        calls.append(len(data))
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(store_module.os, "write", full_after_three)
    plan = make_plan()
    with pytest.raises(ArchsimError, match=r"results\.jsonl: cannot write: no space left on device; rerun to resume"):
        run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    monkeypatch.undo()
    assert len(valid_records(tmp_path / "results.jsonl")) == 3
    result = run_sweep(plan.spec, tmp_path, plan=plan, evaluate=fake_evaluate, workers=1, progress=False, plots=False)
    assert result.reused == 3 and result.ran == 9
    keys = [r["key"] for r in valid_records(tmp_path / "results.jsonl")]
    assert len(keys) == len(set(keys)) == 12


RAY_WORKER = textwrap.dedent("""
    import socket, sys, time
    from archsim.dse._backends import _RayWorker
    _RayWorker(None, (socket.gethostname(), int(sys.argv[1])))
    print("up", flush=True)
    time.sleep(30)
""")


def test_a_ray_worker_on_the_drivers_host_exits_when_the_driver_is_killed():
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    worker = subprocess.Popen([sys.executable, "-c", RAY_WORKER, str(driver.pid)], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert worker.stdout.readline().strip() == b"up"
        time.sleep(0.7)
        assert worker.poll() is None  # the driver lives: the worker stays
        driver.kill()
        driver.wait()
        assert worker.wait(timeout=5) == 1
    finally:
        driver.kill()
        worker.kill()


RAY_SWEEP = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {tests!r})
    from archsim.dse import build_plan, parse_sweep, run_sweep
    from test_dse_helpers import fake_loader, no_workload_check, fake_metrics

    def slow(task):
        with open(os.path.join({pids!r}, str(os.getpid())), "w"):  # runs in a Ray worker: no sys.argv
            pass
        time.sleep(60)
        return fake_metrics(task)

    plan = build_plan(parse_sweep({spec!r}, source="r.yaml"), loader=fake_loader, workload_check=no_workload_check)
    run_sweep(plan.spec, sys.argv[1], plan=plan, evaluate=slow, backend="ray", workers=2, progress=False, plots=False)
""")


def test_ray_workers_die_with_a_sigkilled_sweep(tmp_path):
    pytest.importorskip("ray")
    pids = tmp_path / "pids"
    pids.mkdir()
    script = tmp_path / "ray_sweep.py"
    script.write_text(RAY_SWEEP.format(tests=str(ROOT / "tests"), spec=SPEC, pids=str(pids)))
    path = os.pathsep.join(p for p in (str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out")], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": path},  # Ray's workers import the helpers too
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(os.listdir(pids)) < 2:
            assert proc.poll() is None
            time.sleep(0.2)
        workers = [int(p) for p in os.listdir(pids)]
        assert len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)  # the driver only
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_ppid(w) is not None for w in workers):
            time.sleep(0.2)
        assert not [w for w in workers if _ppid(w) is not None]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # Ray's own processes, if any are left
        except ProcessLookupError:
            pass
