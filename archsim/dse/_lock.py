"""One sweep per output folder: a lock that names the PID holding it.

Two sweeps appending to one ``results.jsonl`` would interleave and run points
twice. :class:`SweepLock` takes an exclusive ``flock`` (via ``filelock``) on
``<out>/.archsim-sweep.lock`` and writes its PID to ``<out>/.archsim-sweep.pid``;
a second sweep on the folder fails at once with a one-line error naming that
PID. The kernel drops the lock when the holder dies (SIGKILL included; its
workers die with it, see :mod:`archsim.dse._backends`), so a stale lock never
blocks a resume.
"""
from __future__ import annotations

import os

from filelock import FileLock, Timeout

from archsim.errors import ArchsimError
from archsim.outputs import OutputDir

LOCK_NAME = ".archsim-sweep.lock"
PID_NAME = ".archsim-sweep.pid"


class SweepLockedError(ArchsimError):
    """Another sweep holds the output folder."""


class SweepLock:
    """Context manager: hold the sweep lock of an owned output folder."""

    def __init__(self, out: OutputDir):
        self.out = out
        self.lock = FileLock(str(out.own(LOCK_NAME)), timeout=0)
        self.pid_path = out.own(PID_NAME)

    def _holder(self) -> str:
        try:
            text = self.pid_path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            return "unknown"
        return text if text.isdigit() else "unknown"

    def __enter__(self) -> "SweepLock":
        try:
            self.lock.acquire()
        except Timeout:
            raise SweepLockedError(
                f"{self.out.path}: another sweep (PID {self._holder()}) is running in this folder; "
                "wait for it to finish or choose another --out") from None
        self.out.write(PID_NAME, f"{os.getpid()}\n")
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()


__all__ = ["LOCK_NAME", "PID_NAME", "SweepLock", "SweepLockedError"]
