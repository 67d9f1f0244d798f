"""The append-only results file of a sweep: ``<out>/results.jsonl``.

One JSON object per line, one line per finished design point, keyed by the
point's configuration hash. Each line is written with one ``write`` on an
``O_APPEND`` descriptor, then flushed to disk with ``fsync`` before the point
counts as done, so a sweep killed at any moment (SIGKILL included) loses at
most the points still running.

The file is never rewritten: a line that is not a valid record (a torn last
line from a kill in the middle of a write, or junk a person or another tool
put there) is skipped and reported (:attr:`ResultStore.skipped`), and stays in
the file; before the next append a torn last line is ended with a newline so
the new record starts on a line of its own. A skipped point is run again.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

#: fields a record must have, with the types they must be
_REQUIRED = {"key": str, "status": str}


def _valid_record(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    for field, kind in _REQUIRED.items():
        if not isinstance(record.get(field), kind) or not record.get(field):
            return False
    metrics = record.get("metrics")
    return metrics is None or isinstance(metrics, dict)


class ResultStore:
    """Finished points of a sweep, read at open and appended to as points finish."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.records: dict[str, dict] = {}
        #: (line number, short excerpt) of every line that is not a valid record
        self.skipped: list[tuple[int, str]] = []
        self.dropped_bytes = 0  # bytes of a torn last line (kept in the file, skipped)
        self._needs_newline = False
        self._fd: int | None = None
        self._load()

    def _load(self) -> None:
        from archsim.errors import SpecError
        from archsim.inputs import excerpt, read_input_bytes

        if not os.path.lexists(self.path):
            return
        data = read_input_bytes(self.path, what="results", limit=1 << 40, error=SpecError)
        if data and not data.endswith(b"\n"):
            self._needs_newline = True
            self.dropped_bytes = len(data) - (data.rfind(b"\n") + 1)
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                record = None
            if not _valid_record(record):
                self.skipped.append((number, excerpt(line[:64])))
                continue
            self.records[record["key"]] = record  # a later record of the same key supersedes

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.records.values())

    def append(self, record: dict[str, Any]) -> None:
        """Write one record durably (one write + fsync)."""
        line = (json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=True) + "\n").encode()
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self._needs_newline:  # end a torn last line so this record starts a line of its own
            line = b"\n" + line
            self._needs_newline = False
        view = memoryview(line)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
        except OSError as err:  # disk full: a torn line at worst, skipped on resume
            from archsim.outputs import OutputError, os_error_text

            self._needs_newline = True
            raise OutputError(f"{self.path}: cannot write: {os_error_text(err)}; rerun to resume") from None
        self.records[record["key"]] = record

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
