"""archsim never deletes or overwrites a file it did not write; it replaces its own atomically;
the resource guard refuses runs beyond its limit; inputs are regular files of bounded size."""
from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.outputs import MARKER, OutputDir, OutputError, write_owned_json

TINY = str(Path(__file__).resolve().parent.parent / "workloads" / "examples" / "tiny_cnn.yaml")
RUN = ["run", "--arch", "systolic-32x32-ws", "--workload", TINY, "--no-plots", "--out"]


def cli(argv, cwd=None):
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        os.chdir(old)
    return status, out.getvalue(), err.getvalue()


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("out", [".", "..", "../work"])
def test_run_refuses_a_folder_holding_the_users_files(tmp_path, out):
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("months of work\n")
    (tmp_path / "data.csv").write_text("1,2\n")
    before = snapshot(tmp_path)
    status, _, err = cli(RUN + [out], cwd=work)
    assert status == 2
    assert re.fullmatch(r"archsim: error: .*: folder is not empty and was not written by archsim \(.*\); "
                        r"choose a new or empty folder\n", err), err
    assert snapshot(tmp_path) == before


def test_run_replaces_its_own_outputs_and_keeps_the_users_additions(tmp_path):
    out = tmp_path / "o"
    assert cli(RUN + [str(out)])[0] == 0
    marker = json.loads((out / MARKER).read_text())
    assert marker["written_by"] == "archsim run"
    assert sorted(marker["files"]) == ["COMPUTE_REPORT.csv", "layers.csv", "report.json", "summary.md", "trace.json"]
    (out / "my_notes.md").write_text("mine\n")
    inode = (out / "report.json").stat().st_ino
    first = (out / "report.json").read_bytes()
    assert cli(RUN + [str(out)])[0] == 0
    assert (out / "report.json").read_bytes() == first  # deterministic report, replaced ...
    assert (out / "report.json").stat().st_ino != inode  # ... by a rename, not rewritten in place
    assert (out / "my_notes.md").read_text() == "mine\n"
    assert not [n for n in os.listdir(out) if n.startswith(".archsim-tmp-")]


def test_a_users_file_at_a_name_archsim_never_wrote_is_not_replaced(tmp_path):
    out = OutputDir(tmp_path / "o", "test")
    (out.path / "plots").mkdir()
    (out.path / "plots" / "layers.png").write_bytes(b"the user's picture")
    with pytest.raises(OutputError, match=r"plots/layers\.png: exists and was not written by archsim"):
        out.write("plots/layers.png", b"png")
    assert (out.path / "plots" / "layers.png").read_bytes() == b"the user's picture"
    with pytest.raises(OutputError, match=r"output names stay inside"):
        out.write("../escape.txt", "x")


def test_disk_full_leaves_the_previous_output_and_no_temporary_file(tmp_path, monkeypatch):
    import archsim.outputs as outputs

    out = OutputDir(tmp_path / "o", "test")
    out.write("report.json", "good\n")

    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    real_open = open
    monkeypatch.setattr(outputs, "open", lambda path, mode="r", *a, **k: Full() if "w" in mode
                        else real_open(path, mode, *a, **k), raising=False)
    with pytest.raises(OutputError, match=r"o/report\.json: cannot write: no space left on device$"):
        out.write("report.json", "new\n")
    monkeypatch.undo()
    assert (out.path / "report.json").read_text() == "good\n"
    assert sorted(os.listdir(out.path)) == [MARKER, "report.json"]


def test_owned_json_file(tmp_path):
    user = tmp_path / "synth.json"
    user.write_text('{"luts": 12, "from": "my paper"}\n')
    with pytest.raises(OutputError, match=r"--json .*synth\.json: exists and was not written by archsim"):
        write_owned_json(user, {"luts": 1}, "rtl synth")
    assert json.loads(user.read_text())["from"] == "my paper"
    ours = tmp_path / "ours.json"
    write_owned_json(ours, {"luts": 1}, "rtl synth")
    write_owned_json(ours, {"luts": 2}, "rtl synth")  # archsim's own: replaced
    assert json.loads(ours.read_text()) == {"written_by": "archsim rtl synth", "luts": 2}
    with pytest.raises(OutputError, match=r"is not a regular file"):
        write_owned_json("/dev/null", {}, "rtl synth")


def test_rtl_generate_refuses_a_users_folder_and_replaces_its_own(tmp_path):
    gen = ["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2", "--out"]
    user = tmp_path / "hw"
    user.mkdir()
    (user / "archsim_systolic.v").write_text("// my hand-written module\n")
    status, _, err = cli(gen + [str(user)])
    assert status == 2 and "folder is not empty and was not written by archsim" in err
    assert (user / "archsim_systolic.v").read_text() == "// my hand-written module\n"
    assert cli(gen + [str(tmp_path / "gen")])[0] == 0
    first = snapshot(tmp_path / "gen")
    assert cli(gen + [str(tmp_path / "gen")])[0] == 0
    assert snapshot(tmp_path / "gen") == first


def test_resource_guard_refuses_with_the_estimate_and_can_be_raised(monkeypatch):
    # ResNet-50 is 4.09 GMACs per image (He et al. 2016: 3.8 G multiply-adds for the conv layers + FC);
    # the zoo's figure is 4,089,184,256. On a 32x32 array (1024 MACs/cycle) a batch of 10^9 is
    # 4.089e18 / 1024 = 3.99e15 cycles at the very least.
    status, _, err = cli(["run", "--arch", "systolic-32x32-ws", "--workload", "resnet50", "--batch", "1000000000"])
    assert status == 2
    assert err == ("archsim: error: run too large: about 3.99e+15 compute cycles (4.09e+18 MACs) estimated, "
                   "above the work limit of 1e+12 cycles; reduce the batch or input size, or raise the limit with "
                   "--work-limit N (or ARCHSIM_WORK_LIMIT) if this machine can take it\n")
    # tiny_cnn: conv1 3x16x9x1024 + ... is far below the default, but not below 10 cycles
    status, _, err = cli(["run", "--arch", "systolic-32x32-ws", "--workload", TINY, "--work-limit", "10"])
    assert status == 2 and "above the work limit of 10 cycles" in err
    monkeypatch.setenv("ARCHSIM_WORK_LIMIT", "10")
    status, _, err = cli(["run", "--arch", "systolic-32x32-ws", "--workload", TINY])
    assert status == 2 and "above the work limit of 10 cycles" in err


@pytest.mark.parametrize("make, message", [
    (lambda p: os.mkfifo(p), "is a FIFO, not a regular workload file"),
    (lambda p: (os.symlink(str(p) + ".b", p), os.symlink(p, str(p) + ".b")), "too many levels of symbolic links"),
    (lambda p: p.mkdir(), "is a folder, not a file"),
    (lambda p: p.write_bytes(b"layers: []\x00\n"), "not a text file (NUL byte at offset 10)"),
    (lambda p: p.write_bytes(b"\xff\xfe"), "not UTF-8 text (bad byte at offset 0)"),
])
def test_only_regular_text_files_are_read(tmp_path, make, message):
    from archsim.errors import WorkloadError
    import workloads

    path = tmp_path / "w.yaml"
    make(path)
    with pytest.raises(WorkloadError) as info:
        workloads.load(str(path))
    assert str(info.value) == f"{path}: {message}"


def test_size_limit_and_raising_it(tmp_path, monkeypatch):
    from archsim.errors import SpecError
    from archsim.inputs import read_input_text

    path = tmp_path / "big.yaml"
    path.write_text("a: 1\n" * 100)  # 500 bytes
    monkeypatch.setenv("ARCHSIM_MAX_INPUT_BYTES", "499")
    with pytest.raises(SpecError, match=r"big\.yaml: spec file is 500 bytes, above the 499-byte limit "
                                         r"\(set ARCHSIM_MAX_INPUT_BYTES to raise it\)$"):
        read_input_text(path, what="spec", error=SpecError)
    monkeypatch.setenv("ARCHSIM_MAX_INPUT_BYTES", "500")
    assert len(read_input_text(path, what="spec", error=SpecError)) == 500


def test_excerpt_is_short_and_printable():
    from archsim.inputs import excerpt

    assert excerpt("root:x:0:0:root:/root:/bin/bash and more") == '"root:x:0:0:root:/root:/bin/bash ..."'
    assert excerpt("a\x1b[31mb\n") == '"a\\x1b[31mb\\n"'


def test_a_folder_an_older_archsim_wrote_is_adopted_but_not_one_with_a_users_file(tmp_path):
    old = tmp_path / "old"
    (old / "plots").mkdir(parents=True)
    (old / "report.json").write_text("{}\n")
    (old / "plots" / "layers.png").write_bytes(b"png")
    assert cli(RUN + [str(old)])[0] == 0  # only run files and plots/*.png: archsim's, from before the marker
    assert json.loads((old / MARKER).read_text())["written_by"] == "archsim run"
    mixed = tmp_path / "mixed"
    (mixed / "plots").mkdir(parents=True)
    (mixed / "report.json").write_text("{}\n")
    (mixed / "plots" / "figure.pdf").write_bytes(b"%PDF")  # not something archsim writes
    status, _, err = cli(RUN + [str(mixed)])
    assert status == 2 and "was not written by archsim" in err
    assert (mixed / "report.json").read_text() == "{}\n"


def _write_many(folder: str, prefix: str, count: int) -> None:
    out = OutputDir(folder, kind="test")
    for i in range(count):
        out.write(f"{prefix}{i}.txt", f"{prefix}{i}\n")


def test_two_processes_writing_one_folder_keep_each_others_files_recorded(tmp_path):
    """Each marker update merges under a lock: neither process drops the names the other recorded,
    so a later claim still owns (and may replace) every file both wrote."""
    import multiprocessing

    folder = str(tmp_path / "shared")
    OutputDir(folder, kind="test")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(folder, p, 40)) for p in ("a", "b")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    recorded = set(json.loads((Path(folder) / MARKER).read_text())["files"])
    expected = {f"{p}{i}.txt" for p in ("a", "b") for i in range(40)}
    assert recorded == expected
    assert sorted(os.listdir(folder)) == sorted(expected | {MARKER})  # no lock file in the user's folder
    again = OutputDir(folder, kind="test")
    again.write("a0.txt", "replaced\n")  # owned: no refusal
    assert (Path(folder) / "a0.txt").read_text() == "replaced\n"


def test_a_file_another_process_recorded_after_our_claim_is_replaceable(tmp_path):
    first = OutputDir(tmp_path / "o", kind="test")
    second = OutputDir(tmp_path / "o", kind="test")
    second.write("late.txt", "second\n")  # first's in-memory list has never seen it
    first.write("late.txt", "first\n")
    assert (tmp_path / "o" / "late.txt").read_text() == "first\n"
