"""SIGTERM and Ctrl-C stop a long `archsim run` promptly: one line on stderr, exit 143 / 130, and
no report (whole or half-written) or temporary file left in the output folder."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: ResNet-50 at batch 100000 runs for minutes; it is stopped within seconds of starting
LONG_RUN = ["run", "--arch", "systolic-32x32-ws", "--workload", "resnet50", "--batch", "100000",
            "--work-limit", "1e20", "--no-plots", "-q"]
STARTED_WITHIN_S = 20.0
STOPPED_WITHIN_S = 8.0


def _start(tmp_path: Path, out_dir: Path, ignore_sigterm: bool) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARCHSIM_CACHE_DIR": str(tmp_path / "cache")}

    def child_setup() -> None:  # as a job supervisor or `trap '' TERM` leaves it
        if ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

    return subprocess.Popen([sys.executable, "-m", "archsim", *LONG_RUN, "--out", str(out_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=child_setup)


def _wait_until_running(proc: subprocess.Popen, tmp_path: Path) -> None:
    """Until the run holds its folder's lock (written after the signal handlers are in place)."""
    deadline = time.monotonic() + STARTED_WITHIN_S
    locks = tmp_path / "cache" / "locks"
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if locks.is_dir() and any(p.name.endswith(".run.pid") and p.read_text().strip() == str(proc.pid)
                                  for p in locks.iterdir()):
            time.sleep(0.5)  # into the simulation
            return
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the run did not start")


@pytest.mark.parametrize("signum, status, line, ignore_sigterm", [
    (signal.SIGTERM, 143, "archsim: terminated", False),
    (signal.SIGTERM, 143, "archsim: terminated", True),  # SIGTERM inherited as ignored: still stops the run
    (signal.SIGINT, 130, "archsim: interrupted", False),
])
def test_a_signal_stops_a_long_run_with_one_line(tmp_path, signum, status, line, ignore_sigterm):
    out_dir = tmp_path / "out"
    proc = _start(tmp_path, out_dir, ignore_sigterm)
    try:
        _wait_until_running(proc, tmp_path)
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=STOPPED_WITHIN_S)
        assert time.monotonic() - sent < STOPPED_WITHIN_S
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == status, err
    assert err.decode().strip().splitlines() == [line]
    left = sorted(os.listdir(out_dir)) if out_dir.exists() else []
    assert not [n for n in left if n != ".archsim-output"], left  # no report and no temporary file


def test_a_stop_while_reports_are_replaced_comes_after_the_whole_set(tmp_path, monkeypatch):
    """A SIGTERM that arrives between two report files is handled after the last one: the folder
    never holds one run's report.json beside an older run's layers.csv."""
    import archsim
    from archsim.outputs import OutputDir
    from archsim.report.writers import RUN_FILES, write_reports

    gemm = ROOT / "archsim" / "validate" / "scalesim_reference" / "topologies" / "gemm256.csv"
    result = archsim.simulate(str(gemm), "scalesim-32x32-ws")
    out = tmp_path / "o"
    write_reports(result, str(out), plots=False)
    for name in RUN_FILES:
        (out / name).write_text("older run\n")  # stands for an earlier run's set (the marker lists them)

    real_write = OutputDir.write

    def write_then_stop(self, name, data):
        path = real_write(self, name, data)
        if name == RUN_FILES[0]:
            signal.raise_signal(signal.SIGTERM)  # arrives right after the first file is in place
        return path

    class Stopped(Exception):
        pass

    def stop(signum, frame):
        raise Stopped

    monkeypatch.setattr(OutputDir, "write", write_then_stop)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(Stopped):
            write_reports(result, str(out), plots=False)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert [n for n in RUN_FILES if (out / n).read_text() == "older run\n"] == []
    assert json.loads((out / "report.json").read_text())["total_cycles"] == 64 * 350  # 256^3 GEMM, WS: 64 x 350
    assert not [n for n in os.listdir(out) if n.startswith(".archsim-tmp-")]
