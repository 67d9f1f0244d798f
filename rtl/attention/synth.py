"""Synthesis figures of the attention RTL without yosys' SAT resource sharing.

``rtl.synthesize`` runs yosys' standard flows, whose ``share`` pass (SAT-based
resource sharing) did not finish in 25 minutes on the 4x4 attention array
(hundreds of fp32 units with mutually exclusive muxed inputs). This module runs
the same flows with that one pass left out -- ``synth -noshare`` for the
generic target; for ECP5 ``synth_ecp5``'s own script with its ``coarse``
section written out minus ``share`` and its ``map_luts`` with ``abc -lut 4`` in
place of ``abc9`` (which exits in its XAIGER2 step on this design) -- and
nextpnr-ecp5 as ``rtl.synth`` does:

    python -m rtl.attention.synth --set rows=4 --set cols=4 --set pe1d=4 --target ecp5 --pnr [--hier]

Figures are read by :func:`rtl.synth.resources_from_stat` (same names:
``luts``, ``ffs``, ``dsps``, ...); the generic target adds ``logic_levels`` (yosys ``ltp -noff``:
the longest path in 4-LUT cells, multipliers in LUTs) as :func:`rtl.synth.logic_levels`. Not cached.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from archsim.errors import ToolError
from rtl.synth import _native_yosys, _tool, logic_levels, place_and_route, resources_from_stat, run_tool

_ECP5_COARSE_NO_SHARE = ("proc -latches error; check; flatten; tribuf -logic; deminout; opt_expr; check; "
                         "opt_clean; opt -nodffe -nosdff; fsm; opt; wreduce; peepopt; opt_clean; "
                         "techmap -map +/cmp2lut.v -D LUT_WIDTH=4; opt_expr; opt_clean; "
                         "techmap -map +/mul2dsp.v -map +/lattice/dsp_map_18x18.v -D DSP_A_MAXWIDTH=18 "
                         "-D DSP_B_MAXWIDTH=18 -D DSP_A_MINWIDTH=2 -D DSP_B_MINWIDTH=2 -D DSP_NAME=$__MUL18X18; "
                         "chtype -set $mul t:$__soft_mul; alumacc; opt; memory -nomap; opt_clean")

#: the same for Debian's native yosys 0.23 (``ARCHSIM_YOSYS=native``): its ``proc`` has no
#: ``-latches`` and its DSP map lives under ``+/ecp5/``
_ECP5_COARSE_NO_SHARE_NATIVE = (_ECP5_COARSE_NO_SHARE.replace("proc -latches error", "proc")
                                .replace("+/lattice/dsp_map_18x18.v", "+/ecp5/dsp_map.v"))

#: ``map_luts`` with ``abc`` instead of ``abc9`` (yowasp's abc9 exits in its XAIGER2 step on this design)
_ECP5_MAP_LUTS_ABC = "techmap -map +/lattice/latches_map.v; abc -lut 4 -dress; clean"


#: a line of the hierarchy table that yosys 0.23's ``stat -json -top`` prints inside its JSON
_STAT_HIERARCHY_LINE = re.compile(r"(?m)^[ \t]+[^\s\"{}]+[ \t]+\d+[ \t]*\n")


def _stat_json_text(text: str) -> str:
    """yosys ``stat -json`` output as JSON: Debian's 0.23 writes the ``-top`` hierarchy's instance counts
    (``  part.part.add_unit   2``) between the modules and ``"design"``, which is not JSON."""
    return _STAT_HIERARCHY_LINE.sub("", text)


def synthesize_no_share(verilog: str, top: str, target: str = "ecp5", pnr: bool = False, freq_mhz: float = 200.0,
                        seed: int = 1, workdir: str | None = None, timeout_s: float = 7200.0,
                        hierarchical: bool = False) -> dict[str, Any]:
    """yosys (and nextpnr with ``pnr``) on ``verilog``; ``hierarchical`` maps each distinct module once
    (:func:`rtl.hier.dedupe_modules`, no ``flatten``: ``synth_ecp5 -noflatten``'s way, ecp5 only) and
    counts the whole design by ``stat -top`` (every instance); nextpnr flattens the netlist on reading it."""
    if hierarchical and target != "ecp5":
        raise ToolError("rtl.attention.synth: the hierarchical flow is for --target ecp5 only")
    merged: dict[str, str] = {}
    if hierarchical:
        from rtl.hier import dedupe_modules

        verilog, merged = dedupe_modules(verilog)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="archsim-attn-synth-")
        workdir = tmp.name
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    try:
        (work / "top.v").write_text(verilog)
        if target == "ecp5":
            native = bool(_native_yosys())
            coarse = _ECP5_COARSE_NO_SHARE_NATIVE if native else _ECP5_COARSE_NO_SHARE
            if hierarchical:
                coarse = coarse.replace("flatten; ", "")
            luts = _ECP5_MAP_LUTS_ABC.replace("+/lattice/", "+/ecp5/") if native else _ECP5_MAP_LUTS_ABC
            # native yosys 0.23: the check section's `autoname` ran > 10 minutes on one 1D lane; skipped
            script = (f"read_verilog top.v; synth_ecp5 -top {top} -run begin:coarse; {coarse}; "
                      f"synth_ecp5 -top {top} -run map_ram:map_luts; {luts}; "
                      + (f"synth_ecp5 -top {top} -run map_cells:check; blackbox =A:whitebox; write_json netlist.json; "
                       if native else f"synth_ecp5 -top {top} -run map_cells: -json netlist.json; ")
                      + f"tee -q -o stat.json stat -json{f' -top {top}' if hierarchical else ''}")
        else:
            script = (f"read_verilog top.v; synth -top {top} -flatten -lut 4 -noshare; tee -q -o stat.json stat -json; "
                      "tee -q -o ltp.txt ltp -noff")
        t0 = time.perf_counter()
        run_tool(_tool("yosys") + ["-q", "-l", "yosys.log", "-p", script], work, "yosys", timeout_s)
        stat = json.loads(_stat_json_text((work / "stat.json").read_text()))
        out: dict[str, Any] = {"target": target, "top": top,
                               "flow": "no share pass" + (", hierarchical" if hierarchical else ""),
                               **resources_from_stat(stat, target), "yosys_s": round(time.perf_counter() - t0, 1)}
        if hierarchical:
            out["modules_merged"] = len(merged)
        if (work / "ltp.txt").exists():  # generic: the longest path in 4-LUT levels (rtl.synth's rule)
            out.update(logic_levels((work / "ltp.txt").read_text()))
        if pnr:
            try:
                out.update(place_and_route(work, freq_mhz=freq_mhz, seed=seed, timeout_s=timeout_s))
            except ToolError as err:  # the yosys figures stand; say why there is no Fmax
                out["pnr_error"] = str(err)
        return out
    finally:
        if tmp is not None:
            tmp.cleanup()


def main(argv=None) -> int:
    from archsim.spec import load_arch
    from rtl.generate import design_for

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="fusemax-edge")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--target", default="ecp5", choices=["ecp5", "generic"])
    ap.add_argument("--pnr", action="store_true")
    ap.add_argument("--multiplier", choices=["inferred", "ecp5_dsp"], default="inferred",
                    help="the 2D PEs' multipliers (AttentionDesign's option; ecp5_dsp needs latency2d >= 1)")
    ap.add_argument("--freq", type=float, default=200.0, help="nextpnr's target clock (MHz)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's seed")
    ap.add_argument("--timeout", type=float, default=7200.0, help="each tool's time limit (s)")
    ap.add_argument("--workdir")
    ap.add_argument("--hier", action="store_true", help="map each distinct module once, not flattened "
                    "(rtl.hier.dedupe_modules; ecp5 only): the 2x2 array's flat coarse `opt` outlasts 44 min")
    args = ap.parse_args(argv)
    arch = load_arch(args.arch, args.overrides)
    design = design_for(arch, {"multiplier": args.multiplier} if args.multiplier != "inferred" else None)
    try:
        res = synthesize_no_share(design.verilog(), design.toplevel, args.target, args.pnr, freq_mhz=args.freq,
                                  seed=args.seed, workdir=args.workdir, timeout_s=args.timeout,
                                  hierarchical=args.hier)
    except ToolError as err:  # e.g. yosys over --timeout: one line, not a traceback
        print(f"rtl.attention.synth: {err}", file=sys.stderr)
        return 1
    res["params"] = design.config_dict()
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
