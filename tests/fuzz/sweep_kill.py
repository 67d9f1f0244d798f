"""A sweep killed with SIGKILL at random times, then resumed, until it finishes.

Each round starts the sweep in a child process (fake evaluator, 2 workers),
SIGKILLs the *parent only* at a random moment, and checks that its worker
processes die with it (no orphans). A last run resumes to the end. Then the
results file must hold every point of the plan exactly once (valid records;
a torn line from a kill is skipped, never counted).

Used by tests/test_reliability_sweep.py (a short loop) and
bench/bench_sweep_kill.py (a long one, with figures).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from archsim.dse import build_plan, parse_sweep, run_sweep
    from test_dse_helpers import fake_loader, no_workload_check, slow_evaluate
    spec = parse_sweep({spec!r}, source="kill.yaml")
    plan = build_plan(spec, loader=fake_loader, workload_check=no_workload_check)
    run_sweep(spec, sys.argv[1], plan=plan, evaluate=slow_evaluate, workers=2, progress=False, plots=False)
""")


def sweep_spec(rows: int = 6) -> dict:
    """A sweep of ``rows * 3 * 2 * 2`` points on the tests' fake arch."""
    return {
        "name": "kill",
        "base": "fake-base",
        "axes": {"rows": [8 * (i + 1) for i in range(rows)], "dataflow": ["ws", "os", "is"],
                 "buffers.input.bytes": [8192, 65536]},
        "workloads": ["w1", "w2"],
        "objectives": {"latency": "min", "energy": "min"},
    }


def plan_keys(spec: dict) -> set[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from archsim.dse import build_plan, parse_sweep
    from test_dse_helpers import fake_loader, no_workload_check

    plan = build_plan(parse_sweep(spec, source="kill.yaml"), loader=fake_loader, workload_check=no_workload_check)
    return {t.key for t in plan.tasks}


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def valid_records(path: Path) -> list[dict]:
    records = []
    if not path.exists():
        return records
    for line in path.read_bytes().split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            records.append(record)
    return records


def kill_loop(out: Path, *, kills: int, seed: int = 0, delay_s: float = 0.02, rows: int = 6,
              min_wait_s: float = 0.8, max_wait_s: float = 2.0, log=lambda text: None) -> dict:
    """Run the sweep with ``kills`` random SIGKILLs of its parent, then to the end; return the figures."""
    rng = random.Random(seed)
    spec = sweep_spec(rows)
    script = out.parent / f"{out.name}-sweep.py"
    script.write_text(SCRIPT.format(tests=str(ROOT / "tests"), spec=spec))
    env = dict(os.environ, DSE_TEST_DELAY=str(delay_s))
    figures = {"kills": 0, "resumes": 0, "orphans": 0, "workers_seen": 0, "torn_lines": 0}
    starts = 0
    while True:
        proc = subprocess.Popen([sys.executable, str(script), str(out)], cwd=ROOT, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        starts += 1
        if figures["kills"] >= kills:
            _, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"final resume failed ({proc.returncode}): {err.decode()[-2000:]}")
            break
        deadline = time.monotonic() + rng.uniform(min_wait_s, max_wait_s)
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        if proc.poll() is not None:  # finished before the kill: start over with a fresh folder is not needed
            proc.communicate()
            break
        workers = _children(proc.pid)
        figures["workers_seen"] += len(workers)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers must follow by themselves
        proc.wait(timeout=10)
        proc.stderr.close()
        figures["kills"] += 1
        gone_by = time.monotonic() + 3.0
        while time.monotonic() < gone_by and any(_alive(w) for w in workers):
            time.sleep(0.02)
        orphans = [w for w in workers if _alive(w)]
        figures["orphans"] += len(orphans)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # leave nothing behind even if the check failed
        except ProcessLookupError:
            pass
        log(f"kill {figures['kills']}: {len(valid_records(out / 'results.jsonl'))} records, "
            f"{len(workers)} workers, {len(orphans)} orphans")
    figures["resumes"] = starts - 1
    expected = plan_keys(spec)
    records = valid_records(out / "results.jsonl")
    counts = Counter(r["key"] for r in records)
    lines = [line for line in (out / "results.jsonl").read_bytes().split(b"\n") if line.strip()]
    figures.update({
        "points": len(expected),
        "recorded": len(set(counts) & expected),
        "duplicates": sum(n - 1 for n in counts.values()),
        "lost": len(expected - set(counts)),
        "unexpected": len(set(counts) - expected),
        "torn_lines": len(lines) - len(records),
    })
    return figures
