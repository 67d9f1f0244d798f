"""Progress on stderr with tqdm: shown on a terminal, silent when stderr is not
one (pipes, CI logs) or with ``--quiet``; the long RTL steps (:class:`Stages`,
:class:`Count`) print plain lines instead when stderr is not a terminal: once a
step has run :data:`PLAIN_FIRST_S` seconds, a line naming it, then one every
:data:`PLAIN_EVERY_S` seconds, and a closing line with the stage times; so a log
shows that a job of minutes is alive, without carriage-return redraws, while a
quick command (or one that fails at once) stays as quiet as before.

- :class:`LayerProgress`: the ``progress(done, total, name)`` callback of
  :func:`archsim.simulate`, one bar per run titled with the network's name;
- :class:`Stages`: a named sequence of long steps (``rtl synth``: Verilog,
  yosys, nextpnr; ``rtl cosim``: design, tiles, build) with each stage's time;
- :class:`Count`: a bar of units (``rtl cosim``: one step per tile the simulator finished).
"""
from __future__ import annotations

import argparse
import sys
import threading
import time


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output on stderr")


PLAIN_FIRST_S = 5.0
PLAIN_EVERY_S = 30.0


def _plain(quiet: bool) -> bool:
    """Plain progress lines: not --quiet, and stderr is not a terminal."""
    if quiet:
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return not (isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _disable(quiet: bool):
    """tqdm's ``disable``: True with --quiet, else None (tqdm: off when stderr is not a terminal)."""
    return True if quiet else None


class LayerProgress:
    """tqdm bar per layer, created on the first callback (when the total is known)."""

    def __init__(self, desc: str, quiet: bool = False):
        self.desc = desc
        self.quiet = quiet
        self.bar = None

    def __call__(self, done: int, total: int, name: str) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.desc, unit="layer", file=sys.stderr, leave=False,
                            disable=_disable(self.quiet))
        self.bar.set_postfix_str(name[:30], refresh=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Stages:
    """``with Stages("synth", ["verilog", "yosys"], quiet) as st: st.start("verilog"); ...``

    The bar reads ``rtl synth: 2/4 stages, design 0.1s, Verilog 2.3s | yosys 12s [00:14]``:
    finished stages with their times, then the running one with its elapsed time,
    redrawn every ``refresh_s`` seconds while a tool runs (tqdm alone redraws only on
    updates). ``times`` holds each finished stage's seconds.
    """

    def __init__(self, desc: str, names: list[str], quiet: bool = False, refresh_s: float = 1.0):
        from tqdm import tqdm

        self.bar = tqdm(total=len(names), desc=desc, unit="stage", file=sys.stderr, leave=False,
                        disable=_disable(quiet), bar_format="{desc}: {n}/{total} stages{postfix} [{elapsed}]")
        self.desc, self.names = desc, list(names)
        self.plain = _plain(quiet)
        self.times: dict[str, float] = {}
        self.current: str | None = None
        self.since = 0.0
        self.began = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker = None
        self.closed = False
        self._next_line = 0.0  # plain mode: when the running stage is reported next
        self._lines = 0
        if not self.bar.disable or self.plain:
            self._ticker = threading.Thread(target=self._tick, args=(min(refresh_s, 1.0) if self.plain else refresh_s,),
                                            daemon=True)
            self._ticker.start()

    def start(self, name: str) -> None:
        """Mark the previous stage done and show ``name`` as running."""
        with self._lock:
            self._finish()
            self.current, self.since = name, time.perf_counter()
            self._next_line = self.since + PLAIN_FIRST_S
            self._show()

    def _finish(self) -> None:
        if self.current is not None:
            self.times[self.current] = time.perf_counter() - self.since
            self.current = None
            self.bar.update(1)

    def _show(self) -> None:
        done = ", ".join(f"{k} {v:.1f}s" for k, v in self.times.items())
        running = f"{self.current} {time.perf_counter() - self.since:.0f}s" if self.current else ""
        self.bar.set_postfix_str(" | ".join(t for t in (done, running) if t), refresh=False)
        self.bar.refresh()

    def _tick(self, refresh_s: float) -> None:
        while not self._stop.wait(refresh_s):
            with self._lock:
                now = time.perf_counter()
                if self.plain and self.current and now >= self._next_line:
                    step = (f"stage {self.names.index(self.current) + 1}/{len(self.names)}, "
                            if self.current in self.names else "")
                    _line(f"{self.desc}: {step}{self.current} running, {now - self.since:.0f}s")
                    self._next_line = now + PLAIN_EVERY_S
                    self._lines += 1
                self._show()

    def close(self, finished: bool = True) -> None:
        """End the bar (the running stage counts as done when ``finished``); again is a no-op."""
        if self.closed:
            return
        self.closed = True
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if finished:
            self._finish()
        self.bar.close()
        if self.plain and finished and (self._lines or time.perf_counter() - self.began >= PLAIN_FIRST_S):
            done = ", ".join(f"{k} {v:.1f}s" for k, v in self.times.items())
            _line(f"{self.desc}: done in {time.perf_counter() - self.began:.1f}s ({done})")

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, *exc) -> None:
        self.close(finished=exc[0] is None)


class Count:
    """A tqdm bar of ``total`` units (``rtl cosim``: tiles), advanced with :meth:`to`;
    usable as the ``progress(done, total)`` callback of :func:`rtl.api.run_cosim`."""

    def __init__(self, desc: str, total: int, unit: str, quiet: bool = False):
        from tqdm import tqdm

        # every update drawn: they come at most ~10 per second (rtl.cosim.progress polls)
        self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, disable=_disable(quiet),
                        mininterval=0, miniters=1)
        self.desc, self.unit, self.total, self.done = desc, unit, total, 0
        self.plain = _plain(quiet)
        self._next_line = time.perf_counter() + PLAIN_FIRST_S
        self._lines = 0

    def __call__(self, done: int, total: int) -> None:
        self.to(done, total)

    def to(self, done: int, total: int | None = None) -> None:
        if total is not None and total != self.bar.total:
            self.bar.total = total
            self.total = total
        self.bar.update(done - self.bar.n)
        self.done = done
        if self.plain and time.perf_counter() >= self._next_line:
            self._next_line = time.perf_counter() + PLAIN_EVERY_S
            self._lines += 1
            _line(f"{self.desc}: {done}/{self.total} {self.unit}s")

    def close(self) -> None:
        if self.plain and self._lines:
            _line(f"{self.desc}: {self.done}/{self.total} {self.unit}s")
            self.plain = False
        self.bar.close()

    def __enter__(self) -> "Count":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
