"""Where design points run: a local process pool (default) or a Ray cluster.

A backend takes chunks of tasks and yields each chunk's outcomes as it
finishes. Workers are long-lived (pool processes or Ray actors), so the
caches in :mod:`archsim.dse._evaluate` and the engine's memo stay warm across
the chunks each one runs. Results do not depend on the backend: a task's
outcome is a function of the task alone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import socket
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Iterator

from archsim.dse._evaluate import Evaluate, run_chunk
from archsim.errors import ArchsimError, SpecError

BACKENDS = ("local", "ray")


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 0.5


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker die when ``parent_pid`` dies, SIGKILL included.

    On Linux the kernel sends SIGKILL on the parent's death (``prctl(PR_SET_PDEATHSIG)``);
    elsewhere, and as a second line, a daemon thread exits the worker once its
    parent is gone. SIGINT is ignored: Ctrl-C is the parent's to handle (it then
    ends the workers itself)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    _exit_when(lambda: os.getppid() != parent_pid)


def _exit_when(gone) -> None:
    """A daemon thread that ends this process (``os._exit(1)``) once ``gone()`` is true."""

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if gone():
                os._exit(1)

    threading.Thread(target=watch, name="archsim-parent-watch", daemon=True).start()


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """SIGKILL the pool's worker processes (a point may run for minutes; Ctrl-C must not wait)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.join(timeout=2)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass


class LocalBackend:
    """A ``ProcessPoolExecutor`` of ``workers`` processes (default: the cores this process may use)."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or default_workers()

    def run(self, evaluate: Evaluate, chunks: list[list[Any]]) -> Iterator[list[dict]]:
        if not chunks:
            return
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        pool = ProcessPoolExecutor(max_workers=min(self.workers, len(chunks)), mp_context=context,
                                   initializer=_die_with_parent, initargs=(os.getpid(),))
        pending = set()
        finished = False
        index_of = {}
        try:
            # keep a bounded window in flight so a huge sweep is not pickled all at once
            queue = iter(enumerate(chunks))
            window = 4 * self.workers

            def submit_more() -> None:
                while len(pending) < window:
                    item = next(queue, None)
                    if item is None:
                        return
                    future = pool.submit(run_chunk, evaluate, item[1])
                    index_of[future] = item[0]
                    pending.add(future)

            submit_more()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    pending.discard(future)
                    chunk = chunks[index_of.pop(future)]
                    try:
                        yield future.result()
                    except BrokenProcessPool as err:
                        raise ArchsimError(f"a sweep worker process died ({err}); rerun the sweep to resume") from None
                    except Exception as err:  # noqa: BLE001 - e.g. a task that cannot be pickled
                        yield [{"key": t.key, "status": "error", "metrics": {"area_mm2": t.area_mm2},
                                "error": f"{type(err).__name__}: {err}", "elapsed_s": 0.0} for t in chunk]
                submit_more()
            finished = True
        finally:
            if not finished:  # interrupted (Ctrl-C, SIGTERM, an error): stop the running points now
                _kill_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)


class _RayWorker:
    """A Ray actor: one long-lived worker that keeps its caches across chunks."""

    def __init__(self, evaluate: Evaluate, driver: tuple[str, int] | None = None):
        self.evaluate = evaluate
        # die with the driver (the sweep process), SIGKILL included, when on the driver's host:
        # the raylet is the actor's parent, so PR_SET_PDEATHSIG cannot name the driver
        if driver is not None and driver[0] == socket.gethostname():
            _exit_when(lambda: _pid_gone(driver[1]))

    def pid(self) -> int:
        return os.getpid()

    def run(self, chunk: list[Any]) -> list[dict]:
        return run_chunk(self.evaluate, chunk)


class RayBackend:
    """Ray actors, one per CPU: joins ``address`` if given, else starts a local instance."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None):
        self.workers = workers
        self.address = address

    def run(self, evaluate: Evaluate, chunks: list[list[Any]]) -> Iterator[list[dict]]:
        if not chunks:
            return
        try:
            import ray
            from ray.util import ActorPool
        except ImportError:
            raise SpecError("--backend ray: ray is not installed; pip install 'archsim[ray]'") from None
        import logging

        started = False
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, logging_level=logging.WARNING)
            else:
                ray.init(num_cpus=self.workers or default_workers(), include_dashboard=False, logging_level=logging.WARNING)
            started = True
        actors = []
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
            count = max(1, min(self.workers or cpus, len(chunks)))
            actor_cls = ray.remote(num_cpus=1)(_RayWorker)
            driver = (socket.gethostname(), os.getpid())
            actors = [actor_cls.remote(evaluate, driver) for _ in range(count)]
            pool = ActorPool(actors)
            for chunk in chunks:
                pool.submit(lambda actor, c: actor.run.remote(c), chunk)
            while pool.has_next():
                yield pool.get_next_unordered()
        finally:
            for actor in actors:
                ray.kill(actor)
            if started:
                ray.shutdown()


def make_backend(name: str, workers: int | None = None, address: str | None = None):
    if workers is not None and workers < 1:
        raise SpecError(f"--workers: expected a positive integer, got {workers}")
    if name == "local":
        if address:
            raise SpecError("--address: only used with --backend ray")
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(workers, address)
    raise SpecError(f"--backend: expected one of {', '.join(BACKENDS)}, got {name!r}")
