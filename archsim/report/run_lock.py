"""One ``archsim run`` per output folder at a time.

Two runs writing one folder would each replace the report files atomically, but the folder
could end with one run's ``report.json`` beside the other's ``layers.csv``: a silently
inconsistent report. :func:`hold_run_lock` takes an exclusive ``flock`` for the folder (a lock
file in the cache folder named by a hash of the folder's real path, as for the folder marker, so
nothing is created in the folder before the run succeeds) and records the holder's PID; a second
run on the folder fails at once with a one-line error naming it. The kernel drops the lock when
the holder dies (SIGKILL included).
"""
from __future__ import annotations

import os
from pathlib import Path

from filelock import FileLock, Timeout

from archsim.errors import ArchsimError


class RunLockedError(ArchsimError):
    """Another run holds the output folder."""


def _paths(out_dir: str | os.PathLike) -> tuple[Path, Path]:
    from archsim.outputs import _folder_lock_path

    base = _folder_lock_path(Path(out_dir))
    return base.with_suffix(".run.lock"), base.with_suffix(".run.pid")


def hold_run_lock(out_dir: str | os.PathLike) -> FileLock:
    """Take the run lock of ``out_dir`` or raise :class:`RunLockedError` naming the holder's PID.

    The lock is held as long as the returned object lives (``with`` it, or keep it in a local:
    it is released when the object is released)."""
    lock_path, pid_path = _paths(out_dir)
    lock = FileLock(str(lock_path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = pid_path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            holder = ""
        raise RunLockedError(
            f"{out_dir}: another archsim run (PID {holder if holder.isdigit() else 'unknown'}) is writing to this "
            "folder; wait for it to finish or choose another --out") from None
    try:
        pid_path.write_text(f"{os.getpid()}\n", encoding="ascii")
    except OSError:
        pass  # the PID is only for the message
    return lock


__all__ = ["RunLockedError", "hold_run_lock"]
