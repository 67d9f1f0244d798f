"""Resource guard: refuse a run whose estimated work or memory is beyond a limit, before it starts.

A run's cost grows with the work it simulates. Before compiling a workload,
:func:`check_work` estimates it from the graph alone (no tiling):

- ``ideal_cycles`` = total MACs / the array's peak MACs per cycle, a lower
  bound on the simulated cycles (tiles, commands and the simulator's memory
  grow with it);
- ``tensor_bytes`` = the bytes of every op's operands, summed (what the
  mapper tiles and the engine moves).

Either beyond its limit is a one-line :class:`~archsim.errors.ArchsimError`
with the estimate and how to raise the limit (``--work-limit`` on the CLI,
``work_limit=`` in :func:`archsim.simulate`, or ``ARCHSIM_WORK_LIMIT``).

The default (1e12 cycles) is a runaway guard, not a speed promise: ideal
cycles are a loose proxy for the simulator's cost (attention on fusemax-edge
at 256K tokens is 1e11 ideal cycles, yet its fast model times whole tiles of
the sequence at once), so the limit
sits above every shipped preset x zoo model (the largest, llama3_8b on
lut-m2n8k4-ecp5, is 3e10) while a batch of 10^9 (4e15) or an image size of
10^6 (8e13) is refused in milliseconds instead of growing without bound.

Estimates can miss (a template whose tiles or commands grow faster than its MACs), so
:func:`memory_guard` also measures: around the compile and the run, a watchdog thread reads the
process's resident memory (``/proc/self/statm``) every :data:`RSS_POLL_S` seconds and, above the
limit, stops the run with the same one-line error instead of a late ``MemoryError`` or the OOM
killer. The limit is ``ARCHSIM_MEMORY_LIMIT`` (bytes) if set, else the resident memory at the start
plus :data:`AVAILABLE_FRACTION` of the memory then available (``MemAvailable``); under
``ulimit -v`` the address space is also kept below that fraction of the limit, where allocations
would fail with a late ``MemoryError``.
"""
from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
from dataclasses import dataclass
from typing import Any

from archsim.errors import ArchsimError

DEFAULT_WORK_LIMIT_CYCLES = 1e12
#: tensor bytes allowed per ideal cycle of the limit (1e12 cycles -> 1e13 bytes)
BYTES_PER_LIMIT_CYCLE = 10.0


class ResourceLimitError(ArchsimError):
    """A run's estimated work or memory is beyond the limit."""


@dataclass(frozen=True)
class WorkEstimate:
    macs: int
    ideal_cycles: float
    tensor_bytes: int


def estimate_work(graph: Any, arch: Any) -> WorkEstimate:
    """MACs, ideal compute cycles and operand bytes of ``graph`` on ``arch`` (closed form, no tiling)."""
    macs = int(graph.total_macs())
    tensor_bytes = 0
    for op in graph.ops():
        tensor_bytes += int(sum(op.operand_bytes().values()))
    try:
        peak = float(arch.model().peak_macs_per_cycle())
    except Exception:  # noqa: BLE001 - a template without a peak: count a MAC a cycle
        peak = 1.0
    peak = peak if math.isfinite(peak) and peak > 0 else 1.0
    return WorkEstimate(macs=macs, ideal_cycles=macs / peak, tensor_bytes=tensor_bytes)


def work_limit(limit: float | None = None) -> float:
    """``limit`` if given, else ``ARCHSIM_WORK_LIMIT`` if set, else the default (ideal cycles)."""
    if limit is None:
        text = os.environ.get("ARCHSIM_WORK_LIMIT", "").strip()
        if not text:
            return DEFAULT_WORK_LIMIT_CYCLES
        try:
            limit = float(text)
        except ValueError:
            raise ResourceLimitError(f"ARCHSIM_WORK_LIMIT: expected a number of cycles, got {text[:20]!r}") from None
    if not (isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0):
        raise ResourceLimitError(f"work limit: expected a positive number of cycles, got {limit!r}")
    return float(limit)


def check_work(graph: Any, arch: Any, limit: float | None = None) -> WorkEstimate:
    """Raise :class:`ResourceLimitError` if the run of ``graph`` on ``arch`` is estimated beyond the limit."""
    cycles_limit = work_limit(limit)
    est = estimate_work(graph, arch)
    bytes_limit = cycles_limit * BYTES_PER_LIMIT_CYCLE
    how = "raise the limit with --work-limit N (or ARCHSIM_WORK_LIMIT) if this machine can take it"
    if est.ideal_cycles > cycles_limit:
        raise ResourceLimitError(
            f"run too large: about {est.ideal_cycles:.3g} compute cycles ({est.macs:.3g} MACs) estimated, "
            f"above the work limit of {cycles_limit:.3g} cycles; reduce the batch or input size, or {how}")
    if est.tensor_bytes > bytes_limit:
        raise ResourceLimitError(
            f"run too large: about {est.tensor_bytes:.3g} bytes of tensors estimated, above the limit of "
            f"{bytes_limit:.3g} bytes ({BYTES_PER_LIMIT_CYCLE:g} per cycle of the work limit); reduce the batch or "
            f"input size, or {how}")
    return est


RSS_POLL_S = 0.05
#: seconds after a stop before the guard stops again while the memory is still over the limit: code in
#: the block that catches ``Exception`` may have swallowed the first stop
RESTOP_S = 0.5
AVAILABLE_FRACTION = 0.9
_STOP_SIGNAL = signal.SIGUSR2  # delivered to the main thread by _thread.interrupt_main, never by the kernel


def _statm(field: int) -> int | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def rss_bytes() -> int | None:
    """This process's resident memory in bytes (Linux ``/proc``), or None where unknown."""
    return _statm(1)


def _address_space_cap() -> int | None:
    """90 % of ``ulimit -v`` (RLIMIT_AS) when one is set: past it allocations fail with MemoryError."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft in (resource.RLIM_INFINITY, -1) or soft <= 0 else int(AVAILABLE_FRACTION * soft)


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_limit_bytes(limit: int | None = None) -> int | None:
    """``limit`` if given, else ``ARCHSIM_MEMORY_LIMIT`` if set, else resident + 90 % of available
    memory now; None where the memory cannot be read (not Linux)."""
    if limit is None:
        text = os.environ.get("ARCHSIM_MEMORY_LIMIT", "").strip()
        if text:
            try:
                limit = int(float(text))
            except ValueError:
                raise ResourceLimitError(f"ARCHSIM_MEMORY_LIMIT: expected a number of bytes, got {text[:20]!r}") from None
            if limit <= 0:
                raise ResourceLimitError(f"ARCHSIM_MEMORY_LIMIT: expected a positive number of bytes, got {text[:20]!r}")
            return limit
        rss, available = rss_bytes(), _available_bytes()
        if rss is None or available is None:
            return None
        return rss + int(AVAILABLE_FRACTION * available)
    return int(limit)


@contextlib.contextmanager
def memory_guard(limit: int | None = None):
    """Stop the code in the ``with`` block with :class:`ResourceLimitError` once this process's
    resident memory is above the limit (:func:`memory_limit_bytes`).

    Only in the main thread (the stop is a signal handler); elsewhere, or where memory cannot be
    read, the block runs unguarded."""
    import _thread

    cap = memory_limit_bytes(limit)
    if cap is None or threading.current_thread() is not threading.main_thread() or rss_bytes() is None:
        yield
        return
    seen: list[int] = []
    done = threading.Event()
    as_cap = _address_space_cap()  # under `ulimit -v`, stop before the allocations fail

    def stop(signum, frame):  # runs in the main thread
        from archsim.fmt import nbytes

        if done.is_set():  # a stop tripped just before the block ended: the run is over
            return
        if seen[1] == "rss":
            what, limit, how = "resident memory", cap, "set ARCHSIM_MEMORY_LIMIT (bytes)"
        else:
            what, limit, how = "address space", as_cap, "raise ulimit -v"
        raise ResourceLimitError(
            f"run too large: the simulator's {what} reached {nbytes(seen[0])}, above the limit of "
            f"{nbytes(limit)}; reduce the batch or input size, or {how} if this machine can take it")

    def watch() -> None:
        import time

        stopped_at = None
        while not done.wait(RSS_POLL_S):
            rss = rss_bytes()
            vsz = _statm(0) if as_cap else None
            if rss is not None and rss > cap or vsz is not None and vsz > as_cap:
                now = time.monotonic()
                if stopped_at is None or now - stopped_at >= RESTOP_S:  # again if the block swallowed it
                    seen[:] = (rss, "rss") if rss is not None and rss > cap else (vsz, "as")
                    _thread.interrupt_main(_STOP_SIGNAL)
                    stopped_at = now

    previous = signal.signal(_STOP_SIGNAL, stop)
    watcher = threading.Thread(target=watch, name="archsim-memory-guard", daemon=True)
    try:  # started inside the try: a stop landing right after the start still shuts the watcher down
        watcher.start()
        yield
    finally:
        _shut_down(done, watcher, previous)


def _shut_down(done: threading.Event, watcher: threading.Thread, previous: Any) -> None:
    """End the watcher and put the previous handler back, even when a stop lands meanwhile.

    A stop the watcher tripped just before the block ended can be handled inside this ``finally``; if it
    escaped from here, the watcher would never learn it is done and the stop handler would stay
    installed, so the guard would go on stopping whatever the process runs next (an xdist worker's
    report writer, in CI). The block has ended: such a late stop is dropped; the block's own
    exception, if any, still propagates."""
    while True:
        try:
            done.set()
            watcher.join()
            signal.signal(_STOP_SIGNAL, previous)
            return
        except ResourceLimitError:
            continue


__all__ = ["DEFAULT_WORK_LIMIT_CYCLES", "ResourceLimitError", "WorkEstimate", "check_work", "estimate_work",
           "memory_guard", "memory_limit_bytes", "rss_bytes", "work_limit"]
