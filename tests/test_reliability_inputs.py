"""Bad inputs found by the round-3 fuzzing: each class refused with one line naming the file, flag or
key, never a hang, a traceback, an unbounded allocation or a silent accept."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from archsim.cli import main
from archsim.errors import SpecError, WorkloadError
import archsim.inputs as inputs
from archsim.spec import load_arch

ROOT = Path(__file__).resolve().parents[1]


def cli_error(capsys, argv: list[str]) -> str:
    """The one-line error of a CLI call that must fail with exit code 2 (no traceback)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ----------------------------------------------------------------------------- 3: alias bombs

def bomb(levels: int, width: int = 9) -> str:
    """A "billion laughs" sequence: level 0 holds ``width`` scalars, level i ``width`` aliases of i-1."""
    lines = [f"  - &l0 [{', '.join(['x'] * width)}]"]
    lines += [f"  - &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines)


def test_expanded_nodes_counts_every_alias_use():
    # closed form: a level-0 list is 1 + w nodes; level i is 1 + w * size(i-1)
    w = 3
    size = [1 + w]
    for _ in range(3):
        size.append(1 + w * size[-1])
    node = yaml.compose(f"[{bomb(3, w).replace(chr(10), ',').replace('  - ', '')}]")
    # the outer list holds the four levels themselves
    assert inputs.expanded_nodes(node, 10**9) == 1 + sum(size)


@pytest.mark.parametrize("where", ["name", "clock_mhz"])
def test_an_alias_bomb_as_an_arch_value_is_refused_not_expanded(tmp_path, capsys, where):
    path = tmp_path / "bomb.yaml"
    spec = (ROOT / "archsim/presets/arch/systolic-32x32-ws.yaml").read_text()
    spec = spec.replace("name: systolic-32x32-ws\n", "").replace("clock_mhz: 1000", "")
    path.write_text(f"description:\n{bomb(8)}\n{where}: *l8\n" + spec.replace("description:", "# description:"))
    message = cli_error(capsys, ["run", "--arch", str(path), "--workload", "resnet18", "--out", str(tmp_path / "o")])
    assert message == (f"archsim: error: {path}: YAML aliases expand to more than {inputs.MAX_YAML_NODES:,} values "
                       "(an alias bomb?); write the values out or use fewer aliases")


def test_a_self_referring_alias_is_refused():
    with pytest.raises(SpecError, match=r"^x\.yaml: YAML aliases expand to more than"):
        inputs.load_yaml_text("a: &a [1, *a]\n", "x.yaml", SpecError)


def test_aliases_that_expand_moderately_still_load():
    doc = inputs.load_yaml_text("base: &b {rows: 8, cols: 8}\nother: *b\n", "x.yaml", SpecError)
    assert doc["other"] == {"rows": 8, "cols": 8}


def test_an_absurd_pim_channel_count_is_refused(capsys):
    message = cli_error(capsys, ["run", "--arch", "pim-hbm2", "--set", "channels=100000000000000000000",
                                 "--workload", "gpt2", "--phase", "decode"])
    assert message == ("archsim: error: pim-hbm2.yaml: params.channels: expected channels x stacks <= 65536, "
                       "got 1e+20")


# ----------------------------------------------------------------------------- 4: tracebacks

@pytest.mark.parametrize("char, shown", [("\x01", r"\x01"), ("\x7f", r"\x7f"), ("\x1b", r"\x1b")])
def test_control_characters_in_yaml_are_one_line(tmp_path, char, shown):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: tiny\ntemplate: systolic\ndescription: a{char}b\n")
    with pytest.raises(SpecError) as info:
        load_arch(str(path))
    assert str(info.value) == (f'{path}: line 3: control character "{shown}" is not allowed in YAML '
                               '(quote it as an escape, e.g. "\\t")')


def test_control_characters_in_a_workload_yaml(tmp_path):
    import workloads

    path = tmp_path / "w.yaml"
    path.write_text("name: w\ninput: [1, 8]\nlayers:\n  - {name: fc, op: matmul, n: 4}\n  # \x02\n")
    with pytest.raises(WorkloadError, match=r"w\.yaml: line 5: control character \"\\x02\" is not allowed"):
        workloads.load(str(path))


ATTENTION = """\
name: att
input: [1, 16, 64]
layers:
  - {{name: q, op: matmul, n: 64}}
  - {{name: k, op: matmul, n: 64, inputs: [q]}}
  - {{name: att, op: attention, {field}, inputs: [q, k]}}
"""


@pytest.mark.parametrize("field, message", [
    ("heads: 0", r"layers\[2\] \(att\): heads: expected a positive integer, got 0$"),
    ("heads: -4", r"layers\[2\] \(att\): heads: expected a positive integer, got -4$"),
    ("heads: 4, head_dim: 0", r"layers\[2\] \(att\): head_dim: expected a positive integer, got 0$"),
])
def test_attention_heads_zero_is_one_line(tmp_path, field, message):
    import workloads

    path = tmp_path / "a.yaml"
    path.write_text(ATTENTION.format(field=field))
    with pytest.raises(WorkloadError, match=message):
        workloads.load(str(path))


def test_negative_cosim_seed_names_the_flag(capsys):
    message = cli_error(capsys, ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--set", "rows=4", "--set", "cols=4",
                                 "--tiles", "1", "--seed", "-1"])
    assert message == "archsim: error: --seed: expected a non-negative integer, got -1"


# ----------------------------------------------------------------------------- 5: memory

def test_rtl_depth_of_1e8_is_refused_before_building(capsys, tmp_path):
    message = cli_error(capsys, ["rtl", "generate", "--arch", "systolic-32x32-ws", "--depth", "100000000",
                                 "--out", str(tmp_path / "g")])
    assert message == "archsim: error: --depth: expected at most 65536 entries per lane, got 100000000"
    assert not (tmp_path / "g").exists()


def test_a_deep_buffer_from_any_source_is_refused():
    from archsim.cli.rtl import MAX_RTL_DEPTH, check_rtl_size
    from rtl.generate import design_for

    design = design_for(load_arch("systolic-32x32-ws"), {"left_depth": MAX_RTL_DEPTH + 1})
    with pytest.raises(SpecError, match=rf"^rtl left_depth: expected at most {MAX_RTL_DEPTH} entries per lane, "
                                        rf"got {MAX_RTL_DEPTH + 1:,}$"):
        check_rtl_size(design)


def test_the_memory_guard_stops_a_block_whose_resident_memory_grows():
    from archsim.engine.guard import ResourceLimitError, memory_guard, rss_bytes

    start = rss_bytes()
    if start is None:
        pytest.skip("no /proc/self/statm")
    blocks = []
    with pytest.raises(ResourceLimitError, match=r"^run too large: the simulator's resident memory reached .*, "
                                                 r"above the limit of .*ARCHSIM_MEMORY_LIMIT"):
        with memory_guard(start + 64 * 2**20):
            for _ in range(400):  # up to 4 GB if nothing stopped it
                blocks.append(b"\x01" * (10 * 2**20))  # touched pages: resident
                time.sleep(0.002)
    assert len(blocks) < 400
    peak = len(blocks) * 10 * 2**20
    blocks.clear()
    assert peak < 1024 * 2**20  # stopped within a few polls of the limit


UNDER_ULIMIT = textwrap.dedent("""
    import resource, sys, time
    from archsim.engine.guard import ResourceLimitError, _statm, memory_guard
    resource.setrlimit(resource.RLIMIT_AS, (_statm(0) + 400 * 2**20, resource.RLIM_INFINITY))
    blocks = []
    try:
        with memory_guard():
            for _ in range(250):  # 4 MiB per 10 ms: the guard's band (the top 10 % of the cap) spans
                blocks.append(b"x" * (4 * 2**20))  # several of its 50 ms polls even on a loaded machine
                time.sleep(0.01)
    except ResourceLimitError as err:
        print(err)
    except MemoryError:
        print("MemoryError")
""")


def test_under_ulimit_v_the_guard_stops_before_a_memory_error(tmp_path):
    if not Path("/proc/self/statm").exists():
        pytest.skip("no /proc/self/statm")
    out = subprocess.run([sys.executable, "-c", UNDER_ULIMIT], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.startswith("run too large: the simulator's address space reached "), out.stdout + out.stderr
    assert "raise ulimit -v" in out.stdout


def test_the_memory_guard_stops_a_simulation():
    """End to end, in a fresh interpreter (in a test worker that earlier tests warmed, the guarded run
    could end before the first stop landed): a limit below what the process holds stops the run with
    the one-line resident-memory error."""
    import subprocess
    import sys

    from archsim.engine.guard import rss_bytes

    if rss_bytes() is None:
        pytest.skip("no /proc/self/statm")
    code = ("import sys, time, archsim\n"
            "from archsim.engine.guard import ResourceLimitError\n"
            "layers = []\n"
            "try:\n"
            "    archsim.simulate('resnet50', 'systolic-32x32-ws', batch=4,\n"
            "                     progress=lambda d, t, n: (layers.append(n), time.sleep(0.002)))\n"
            "except ResourceLimitError as err:\n"
            "    print('stopped after', len(layers), 'layers:', err); sys.exit(3)\n")
    import os

    env = {**os.environ, "ARCHSIM_MEMORY_LIMIT": "1000000"}  # 1 MB: below any Python process
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "resident memory" in out.stdout and "ARCHSIM_MEMORY_LIMIT" in out.stdout
    assert int(out.stdout.split("stopped after ")[1].split()[0]) < 122  # before ResNet-50's last layer


def test_a_memory_stop_swallowed_by_the_code_is_repeated(monkeypatch):
    """Code inside the guarded block that catches ``Exception`` (an optional import, a fallback) can
    swallow the guard's stop if it lands there; the guard stops again while memory stays over."""
    import time

    from archsim.engine import guard
    from archsim.engine.guard import ResourceLimitError, memory_guard, rss_bytes

    if rss_bytes() is None:
        pytest.skip("no /proc/self/statm")
    monkeypatch.setattr(guard, "RSS_POLL_S", 0.001)
    monkeypatch.setattr(guard, "RESTOP_S", 0.05)
    swallowed = 0
    with pytest.raises(ResourceLimitError, match="resident memory"):
        with memory_guard(limit=1):
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                try:
                    while time.monotonic() < deadline:
                        sum(range(1000))
                except Exception:  # noqa: BLE001 - the block under test swallows the first stop
                    swallowed += 1
                    if swallowed > 1:
                        raise
    assert swallowed == 2  # the first stop swallowed, the second (the guard again) let through


def test_the_guard_ends_cleanly_when_a_stop_lands_as_the_block_ends(monkeypatch):
    """A stop tripped while the guarded block is already ending (in its ``finally``) must not leave the
    watcher running or the stop handler installed: in CI such a guard went on stopping the xdist worker's
    report writer after the test, and the worker died. The watcher re-trips every poll here, so a stop
    lands during the shut-down on most of the rounds."""
    import signal
    import threading
    import time

    from archsim.engine import guard
    from archsim.engine.guard import ResourceLimitError, memory_guard, rss_bytes

    if rss_bytes() is None:
        pytest.skip("no /proc/self/statm")
    monkeypatch.setattr(guard, "RSS_POLL_S", 0.0001)
    monkeypatch.setattr(guard, "RESTOP_S", 0.0)
    before = signal.getsignal(signal.SIGUSR2)
    for _ in range(30):
        with pytest.raises(ResourceLimitError):
            with memory_guard(limit=1):
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline:
                    sum(range(100))
        assert signal.getsignal(signal.SIGUSR2) is before
        assert not any(t.name == "archsim-memory-guard" for t in threading.enumerate())
    time.sleep(0.01)  # a stray stop would land here and fail the test


# ----------------------------------------------------------------------------- 6: silent accepts

@pytest.mark.parametrize("override, message", [
    ("vector_unit.cycles_per_op.expo=9", r"vector_unit\.cycles_per_op\.expo: unknown vector op; did you mean 'exp'\?"),
    ("vector_unit.cycles_per_op.foo=9", r"vector_unit\.cycles_per_op\.foo: unknown vector op \(known: add, "),
    ("vector_unit.cycles_per_op.Gelu=9", r"cycles_per_op\.Gelu: unknown vector op; did you mean 'gelu'\?"),
])
def test_a_cycles_per_op_typo_is_refused(override, message):
    with pytest.raises(SpecError, match=message):
        load_arch("systolic-32x32-ws", [override])


def test_cycles_per_op_takes_onnx_vector_names():
    arch = load_arch("systolic-32x32-ws", ["vector_unit.cycles_per_op.vector:HardMax=7",
                                           "vector_unit.cycles_per_op.reduce_mean=3"])
    assert arch.vector_unit.cycles_per_op["vector:HardMax"] == 7
    assert arch.vector_unit.cycles_per_op["reduce_mean"] == 3


def test_a_cycles_per_op_typo_in_a_spec_file(tmp_path):
    path = tmp_path / "a.yaml"
    text = (ROOT / "archsim/presets/arch/systolic-32x32-ws.yaml").read_text()
    path.write_text(text.replace("softmax: 6", "sofmax: 6"))
    with pytest.raises(SpecError, match=r"a\.yaml: vector_unit\.cycles_per_op\.sofmax: unknown vector op; "
                                        r"did you mean 'softmax'\?"):
        load_arch(str(path))


def test_a_cycles_per_op_typo_as_a_sweep_axis(tmp_path):
    from archsim.dse import build_plan, parse_sweep

    spec = {"name": "s", "base": "systolic-32x32-ws", "axes": {"vector_unit.cycles_per_op.expp": [2, 4]},
            "workloads": ["resnet18"], "objectives": {"latency": "min"}}
    with pytest.raises(SpecError, match=r"s\.yaml: axes\.vector_unit\.cycles_per_op\.expp: "):
        build_plan(parse_sweep(spec, source="s.yaml"))


DUPLICATES = [
    ("arch top level", "name: a\nname: b\ntemplate: systolic\n", 2, "name", 1),
    ("arch nested", "name: a\ntemplate: systolic\nparams:\n  rows: 8\n  cols: 8\n  rows: 16\n", 6, "rows", 4),
    ("arch flow mapping", "name: a\ntemplate: systolic\nbuffers: {input: {bytes: 1}, input: {bytes: 2}}\n", 3,
     "input", 3),
]


@pytest.mark.parametrize("what, text, line, key, first", DUPLICATES, ids=[d[0] for d in DUPLICATES])
def test_duplicate_keys_in_an_arch_file(tmp_path, what, text, line, key, first):
    path = tmp_path / "a.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_arch(str(path))
    assert str(info.value) == (f'{path}: line {line}: invalid YAML: duplicate key "{key}" (first on line {first}; '
                               "YAML keys must be unique)")


def test_duplicate_keys_in_a_workload_file(tmp_path):
    import workloads

    path = tmp_path / "w.yaml"
    path.write_text("name: w\ninput: [1, 8]\nlayers:\n  - {name: fc, op: matmul, n: 4, n: 8}\n")
    with pytest.raises(WorkloadError, match=r'w\.yaml: line 4: .*duplicate key "n" \(first on line 4'):
        workloads.load(str(path))
    path.write_text("name: w\nname: v\ninput: [1, 8]\nlayers:\n  - {name: fc, op: matmul, n: 4}\n")
    with pytest.raises(WorkloadError, match=r'w\.yaml: line 2: .*duplicate key "name" \(first on line 1'):
        workloads.load(str(path))


def test_duplicate_keys_in_a_sweep_file(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nbase: systolic-32x32-ws\naxes:\n  rows: [8, 16]\n  rows: [32]\n"
                    "workloads: [resnet18]\nobjectives: {latency: min}\n")
    message = cli_error(capsys, ["sweep", str(path), "--out", str(tmp_path / "o"), "--dry-run"])
    assert message == (f'archsim: error: {path}: line 5: invalid YAML: duplicate key "rows" (first on line 4; '
                       "YAML keys must be unique)")


CONVS = """\
name: c
input: [1, 3, 32, 32]
layers:
  - {{name: conv1, op: conv2d, out_channels: 16, kernel: 3, padding: 1}}
  - {{name: conv2, op: conv2d, {fields}, out_channels: 16, kernel: 3, padding: 1}}
"""


@pytest.mark.parametrize("fields, message", [
    # same element count and last dim as the producer: it used to pass as an implicit reshape
    ("in_channels: 32, in_h: 16, in_w: 32, batch: 1",
     r"channels mismatch conv1 -> conv2: conv1 produces \[1, 16, 32, 32\] but conv2 \(conv2d\) expects exactly "
     r"\[1, 32, 16, 32\] \(NCHW\)"),
    # a batch of 1 used to broadcast into a batch of 4
    ("batch: 4", r"batch mismatch conv1 -> conv2: conv1 produces \[1, 16, 32, 32\] but conv2 \(conv2d\) expects "
                 r"exactly \[4, 16, 32, 32\]"),
    ("in_channels: 8", r"shape mismatch conv1 -> conv2: conv1 produces \[1, 16, 32, 32\] but conv2 \(conv2d\) "
                       r"expects input 0 of \[1, 8, 32, 32\]"),
])
def test_a_conv_must_agree_with_its_producer(tmp_path, fields, message):
    import workloads

    path = tmp_path / "c.yaml"
    path.write_text(CONVS.format(fields=fields))
    with pytest.raises(WorkloadError, match=message):
        workloads.load(str(path))


def test_a_conv_after_an_explicit_reshape_is_checked(tmp_path):
    import workloads

    path = tmp_path / "c.yaml"
    path.write_text(CONVS.format(fields="in_channels: 16").replace(
        "  - {name: conv2", "  - {name: r, op: reshape, shape: [1, 32, 16, 32]}\n  - {name: conv2"))
    with pytest.raises(WorkloadError, match=r"mismatch r -> conv2: r produces \[1, 32, 16, 32\]"):
        workloads.load(str(path))


@pytest.mark.parametrize("ir, opset, message", [
    (999, 17, r"m\.onnx: ONNX IR version 999 is newer than this onnx .* reads \(up to \d+\); export with an older "
              r"IR version, or update onnx"),
    (8, 999, r"m\.onnx: ONNX opset 999 is newer than this onnx .* knows \(up to \d+\)"),
])
def test_an_onnx_file_from_the_future_is_refused(tmp_path, ir, opset, message):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import workloads

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(WorkloadError, match=message):
        workloads.load(str(path))
    assert onnx.IR_VERSION < 999


# ----------------------------------------------------------------------------- 7: concurrent runs

HOLD_RUN_LOCK = textwrap.dedent("""
    import sys, time
    from archsim.report.run_lock import hold_run_lock
    lock = hold_run_lock(sys.argv[1])
    print("held", flush=True)
    time.sleep(30)
""")


def test_a_second_run_on_one_folder_is_refused_naming_the_first(tmp_path, capsys):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD_RUN_LOCK, str(out)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        message = cli_error(capsys, ["run", "--arch", "systolic-32x32-ws", "--workload", "resnet18", "--out", str(out)])
        assert message == (f"archsim: error: {out}: another archsim run (PID {holder.pid}) is writing to this folder; "
                           "wait for it to finish or choose another --out")
        assert not (out / "report.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert main(["run", "--arch", "systolic-32x32-ws", "--workload", "resnet18", "--out", str(out), "--no-plots",
                 "--quiet"]) == 0  # the holder's death released it
    assert main(["run", "--arch", "systolic-32x32-ws", "--workload", "resnet18", "--out", str(out), "--no-plots",
                 "--quiet"]) == 0  # and a finished run released it too
    assert (out / "report.json").is_file()
