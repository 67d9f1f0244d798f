"""Bring your own RTL: co-simulate a user's Verilog that implements the host signature.

``run_user_verilog(arch, files, top, items)`` builds the user's files with the chosen
simulator, replays the arch template's tile commands on module ``top`` through the host
interface (:mod:`rtl.lib.host`, ``docs/rtl_host_interface.md``) with the template's own
cocotb driver, and checks values and the hardware's ``tile_cycles`` counter against the
models, exactly as for archsim's own RTL, but through the host ports only (a port of the user's
top beyond the signature is not read, even one named like archsim's debug ``tile_start``: it may
mean something else there). A waveform is recorded by default, so that the
first mismatching tile can be found in it (:func:`first_mismatch` gives the tile, what
differs and the simulation time of its ``done``). ``archsim rtl cosim --verilog FILE...
--top NAME`` is the command line.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archsim.errors import SpecError
from rtl.cosim.harness import CosimRun, run_job
from rtl.design import CosimReport


@dataclass
class UserRun:
    """A user design's report, the raw run (its waveform, the driver's result) and the driver's
    per-tile records (:meth:`rtl.design.RtlDesign.rtl_tiles`: where each tile's ``done_ns`` is)."""

    report: CosimReport
    run: CosimRun
    tiles: list

    def first_mismatch(self) -> str:
        return first_mismatch(self.report, self.tiles)


def _design(arch: Any, options: Any = None):
    from rtl.generate import design_for

    return require_host(design_for(arch, options))


def require_host(design):
    """``design`` if its co-simulation driver uses only the host signature, else a one-line error."""
    problem = design.host_interface_problem()
    if problem:
        raise SpecError(f"--verilog: {problem}")
    return design


def read_sources(files: list[str]) -> dict[str, str]:
    """The user's Verilog files by build-folder name (``user<i>_<basename>``, order kept)."""
    if not files:
        raise SpecError("--verilog: expected one or more Verilog files")
    sources = {}
    for i, name in enumerate(files):
        path = Path(name)
        if not path.is_file():
            raise SpecError(f"--verilog: {name}: no such file")
        try:
            sources[f"user{i}_{path.name}"] = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise SpecError(f"--verilog: {name}: cannot read it as text ({err})") from None
    return sources


def run_user_verilog(arch: Any, files: list[str], top: str, items: list, *, sim: str = "icarus",
                     waves: bool = True, build_dir=None, quiet: bool = True, progress=None,
                     options: Any = None) -> UserRun:
    """Replay ``items`` on the user's module ``top`` (see the module docstring)."""
    if not top or not top.replace("_", "a").replace("$", "a").isalnum():
        raise SpecError(f"--top: expected a Verilog module name, got {top!r}")
    design = _design(arch, options)
    sources = read_sources(files)
    job = {**design.make_job(items), "host_ports_only": True}  # debug ports of the user's top are not ours
    # the harness builds "<top>.v" plus extra sources: here "<top>.v" only names where the files came from
    header = "// archsim rtl cosim --verilog: user sources " + ", ".join(str(f) for f in files) + "\n"
    run = run_job(header, top, job, sim=sim, waves=waves, build_dir=build_dir, quiet=quiet,
                  extra_sources=sources, progress=progress)
    report = design.check(items, run.result, sim=sim)
    report.design = f"{top} (user Verilog)"
    report.build_s, report.run_s = run.build_s, run.run_s
    report.waves = str(run.waves) if run.waves else None
    return UserRun(report, run, design.rtl_tiles(run.result))


def first_mismatch(report: CosimReport, tiles: list | None = None) -> str:
    """One line on the first tile that differs from the models ("" when all match)."""
    if report.error:
        return f"no tile checked: {report.error}"
    bad = next((t for t in report.tiles if not t.ok), None)
    if bad is None:
        return ""
    what = bad.mismatch if not bad.values_ok else (
        f"cycles: tile_cycles counter {bad.rtl_cycles}, models {bad.fast_cycles} (fast) / {bad.detailed_cycles} "
        "(detailed)")
    line = f"first mismatching tile: {bad.index} ({bad.label}): {what}"
    tiles = tiles or []  # the driver's per-tile records
    done_ns = tiles[bad.index].get("done_ns") if bad.index < len(tiles) else None
    if done_ns is not None:
        line += f"; its done pulse at {done_ns:g} ns"
    if report.waves:
        line += f"; waveform {report.waves}"
    return line
