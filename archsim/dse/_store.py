"""The append-only results file of a sweep: ``<out>/results.jsonl``.

One JSON object per line, one line per finished design point, keyed by the
point's configuration hash. Each line is written with one ``write`` on an
``O_APPEND`` descriptor, then flushed to disk with ``fsync`` before the point
counts as done, so a sweep killed at any moment (SIGKILL included) loses at
most the points still running. A torn last line (a kill in the middle of a
write) is cut off when the file is opened again and the point recomputed.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterator


class ResultStore:
    """Finished points of a sweep, read at open and appended to as points finish."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.records: dict[str, dict] = {}
        self.dropped_bytes = 0
        self._fd: int | None = None
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1  # everything after the last newline is a torn write
        if end < len(data):
            self.dropped_bytes = len(data) - end
            with open(self.path, "r+b") as handle:
                handle.truncate(end)
                handle.flush()
                os.fsync(handle.fileno())
        for number, line in enumerate(data[:end].splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = record["key"]
            except (ValueError, KeyError, TypeError):
                warnings.warn(f"{self.path}: line {number}: unreadable record ignored", stacklevel=2)
                continue
            self.records[key] = record  # a later record of the same key supersedes

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
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
        self.records[record["key"]] = record

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
