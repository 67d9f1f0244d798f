"""Progress on stderr with tqdm: shown on a terminal, silent when stderr is not
one (pipes, CI logs) or with ``--quiet``.

- :class:`LayerProgress`: the ``progress(done, total, name)`` callback of
  :func:`archsim.simulate`, one bar per run titled with the network's name;
- :class:`Stages`: a named sequence of long steps (``rtl synth``: Verilog,
  yosys, nextpnr; ``rtl cosim``: build, simulate) with elapsed time.
"""
from __future__ import annotations

import argparse
import sys


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output on stderr")


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
    """``with Stages("synth", ["verilog", "yosys"], quiet) as st: st.start("verilog"); ...``"""

    def __init__(self, desc: str, names: list[str], quiet: bool = False):
        from tqdm import tqdm

        self.bar = tqdm(total=len(names), desc=desc, unit="stage", file=sys.stderr, leave=False,
                        disable=_disable(quiet), bar_format="{desc}: {n}/{total} stages {postfix} [{elapsed}]")
        self.started = 0

    def start(self, name: str) -> None:
        """Mark the previous stage done and show ``name`` as running."""
        if self.started:
            self.bar.update(1)
        self.started += 1
        self.bar.set_postfix_str(name)

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, *exc) -> None:
        if self.started and exc[0] is None:
            self.bar.update(1)
        self.bar.close()
