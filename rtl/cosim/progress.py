"""Per-tile progress of a co-simulation, across the simulator's process boundary.

cocotb runs the driver inside the simulator, a child process of archsim. A driver
calls :func:`tile_done` after each tile; it appends ``"<done> <total>"`` to the
file named by ``ARCHSIM_COSIM_PROGRESS`` (nothing when unset). The parent's
:class:`Tail` polls that file from a thread and hands the latest count to a
callback (a tqdm bar in ``archsim rtl cosim``). One short line per tile costs
microseconds next to the simulation of a tile.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

ENV = "ARCHSIM_COSIM_PROGRESS"
_out = None  # the open progress file of this (simulator) process, or False when none is asked for


def tile_done(done: int, total: int) -> None:
    """Record, from a cocotb driver, that ``done`` of ``total`` tiles are finished."""
    global _out
    if _out is None:
        path = os.environ.get(ENV)
        _out = open(path, "a", encoding="ascii") if path else False  # noqa: SIM115 - kept open for the run
    if _out:
        _out.write(f"{int(done)} {int(total)}\n")
        _out.flush()


def parse(text: str) -> tuple[int, int] | None:
    """The last complete ``"<done> <total>"`` line of ``text`` (None when there is none)."""
    lines = text.split("\n")[:-1]  # the part after the last newline may still be being written
    for line in reversed(lines):
        parts = line.split()
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            return int(parts[0]), int(parts[1])
    return None


class Tail:
    """Poll ``path`` every ``interval_s`` seconds (while the simulator runs) and call
    ``callback(done, total)`` when the count changes; ``with Tail(...):`` starts and stops it."""

    def __init__(self, path: str | os.PathLike, callback: Callable[[int, int], None], interval_s: float = 0.1):
        self.path = Path(path)
        self.callback = callback
        self.interval_s = interval_s
        self.last: tuple[int, int] | None = None
        self._offset = 0
        self._pending = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def poll(self) -> None:
        """Read what was appended since the last poll; report a new count."""
        try:
            with open(self.path, encoding="ascii", errors="replace") as f:
                f.seek(self._offset)
                chunk = f.read()
                self._offset = f.tell()
        except OSError:
            return
        self._pending += chunk
        latest = parse(self._pending)
        self._pending = self._pending[self._pending.rfind("\n") + 1:]
        if latest is not None and latest != self.last:
            self.last = latest
            self.callback(*latest)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def __enter__(self) -> "Tail":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()  # the last lines, written just before the simulator exited
