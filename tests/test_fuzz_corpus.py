"""The generated corpus of malformed inputs (tests/fuzz/corpus.py), run in-process.

Every malformed case must exit non-zero with a one-line error and no traceback,
within a few seconds, leaving every sentinel file untouched; every control case
must succeed. A handful of real subprocess cases cover what in-process runs
cannot: signals and a closed stdout.
"""
from __future__ import annotations

import collections
import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.corpus import BUILDERS, TINY, run_case
from fuzz.corpus import build_cases as _build_cases

ROOT = Path(__file__).resolve().parent.parent
MAX_CASE_S = 5.0


@functools.lru_cache(maxsize=1)
def _cases():
    return tuple(_build_cases())


def build_cases():
    return list(_cases())


def test_corpus_size_and_builders():
    cases = build_cases()
    assert len(cases) >= 300
    classes = collections.Counter(c.cls for c in cases)
    assert set(classes) >= {"spec", "workload_yaml", "onnx", "csv", "sweep", "cli", "path", "output", "control"}
    assert set(BUILDERS) >= {"spec", "workload_yaml", "onnx", "csv", "sweep", "cli", "path", "control"}
    from archsim.templates import template_names

    # the spec builder walks the registry: every template with a shipped preset is fuzzed
    from fuzz.corpus import _preset_raw, arch_presets

    with_presets = {_preset_raw(p).get("template") for p in arch_presets()}
    fuzzed = {c.files["arch.yaml"] for c in cases if c.cls == "spec" and "arch.yaml" in c.files}
    for template in with_presets & set(template_names()):
        assert any(f"template: {template}".encode() in data for data in fuzzed), template


def test_every_case_fails_cleanly_and_every_control_succeeds(tmp_path):
    cases = build_cases()
    verdicts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad = []
    slowest = (0.0, "")
    for i, case in enumerate(cases):
        root = tmp_path / f"{i:04d}"
        root.mkdir()
        outcome = run_case(case, root)
        verdict = outcome.verdict
        if verdict == "ok" and outcome.seconds > MAX_CASE_S:
            verdict = "slow"
        verdicts[case.cls][verdict] += 1
        slowest = max(slowest, (outcome.seconds, case.id))
        if verdict != "ok":
            last = (outcome.stderr.strip().splitlines() or [""])[-1][:300]
            bad.append(f"{verdict}: {case.id} (exit {outcome.status}, {outcome.seconds:.1f} s): {last}")
    summary = {cls: dict(counter) for cls, counter in sorted(verdicts.items())}
    print(f"\nfuzz corpus: {len(cases)} cases; by class: {summary}; slowest {slowest[0]:.2f} s ({slowest[1]})")
    assert not bad, "\n".join(bad)


def test_error_names_the_problem_without_echoing_the_file(tmp_path):
    """A file that is not a spec: the message is one line with a short excerpt, not the whole line."""
    secret = "root:x:0:0:root:/root:/bin/bash-" + "s" * 80
    (tmp_path / "arch.yaml").write_text(secret + "\n")
    from archsim.cli import main
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["run", "--arch", str(tmp_path / "arch.yaml"), "--workload", str(TINY)]) == 2
    text = err.getvalue()
    assert text.count("\n") == 1 and "root:x:0:0:root:/root:/" in text and "s" * 40 not in text


def _archsim(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "archsim", *args], cwd=kw.pop("cwd", ROOT),
                            stdout=kw.pop("stdout", subprocess.PIPE), stderr=subprocess.PIPE, **kw)


def test_broken_pipe_is_quiet():
    proc = _archsim("presets")
    proc.stdout.close()  # the reader left, as `archsim presets | head -0` does
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""
    assert proc.returncode in (0, 141)


def test_fifo_as_workload_does_not_hang(tmp_path):
    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    start = time.monotonic()
    proc = _archsim("run", "--arch", "systolic-32x32-ws", "--workload", str(fifo), "--out", str(tmp_path / "o"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and time.monotonic() - start < 30
    assert err.decode().strip() == f"archsim: error: {fifo}: is a FIFO, not a regular workload file"


SIGTERM_WRITER = """
import sys, time
from archsim.outputs import OutputDir
out = OutputDir(sys.argv[1], "test")
with out.atomic("report.json") as tmp:
    tmp.write_text("half a rep")
    print("writing", flush=True)
    time.sleep(60)
"""


def test_sigterm_mid_write_removes_the_temporary_file_and_keeps_the_old_output(tmp_path):
    from archsim.outputs import OutputDir

    out = tmp_path / "out"
    OutputDir(out, "test").write("report.json", "the good report\n")
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_WRITER, str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"writing"
    assert any(n.startswith(".archsim-tmp-") for n in os.listdir(out))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err.decode()
    assert sorted(os.listdir(out)) == [".archsim-output", "report.json"]
    assert (out / "report.json").read_text() == "the good report\n"


def test_sigkill_leftovers_are_cleaned_by_the_next_run(tmp_path):
    from archsim.outputs import OutputDir

    out = tmp_path / "out"
    OutputDir(out, "test").write("report.json", "v1\n")
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_WRITER, str(out)], cwd=ROOT, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"writing"
    proc.kill()  # no chance to clean up
    proc.wait(timeout=20)
    leftovers = [n for n in os.listdir(out) if n.startswith(".archsim-tmp-")]
    assert len(leftovers) == 1 and f"-{proc.pid}-" in leftovers[0]
    OutputDir(out, "test")  # the next claim of the folder
    assert sorted(os.listdir(out)) == [".archsim-output", "report.json"]
    assert (out / "report.json").read_text() == "v1\n"


def _loses_data(argv):
    Path("userdir/notes.txt").unlink()
    print("archsim: error: oops", file=sys.stderr)
    return 2


def _two_lines(argv):
    print("archsim: error: first\narchsim: error: second", file=sys.stderr)
    return 2


def _raises(argv):
    raise RuntimeError("bug")


def _hangs(argv):
    time.sleep(30)


@pytest.mark.parametrize("entry, verdict", [
    (lambda argv: 0, "silent_accept"), (_raises, "traceback"), (_hangs, "hang"), (_loses_data, "data_loss"),
    (_two_lines, "not_one_line"),
    (lambda argv: (print("archsim: error: fine", file=sys.stderr), 2)[1], "ok"),
])
def test_the_harness_sees_each_kind_of_failure(tmp_path, entry, verdict):
    """The judge can fail: each kind of bad behaviour gets its verdict."""
    from fuzz.corpus import Case

    outcome = run_case(Case("probe", "probe", ["run"]), tmp_path, timeout_s=0.5, main=entry)
    assert outcome.verdict == verdict
