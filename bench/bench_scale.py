"""The largest configuration of each RTL template that fits an ECP5-85k (issue 23 item 10).

For each template a list of candidate configurations in increasing size is synthesized with yosys
through the existing entry points (``rtl.synth.synthesize_verilog`` with the template's ECP5
``target_options``, as ``archsim rtl synth --target ecp5``; the attention array through
``rtl.attention.synth.synthesize_no_share``, as ``python -m rtl.attention.synth``). Fit is decided
by the counts against the LFE5U-85F's resources (:data:`DEVICE`):

- LUT4 + 2 x CCU2C + 6 x TRELLIS_DPR16X4 <= 83,640 (a CCU2C carry cell occupies a slice's two
  LUT4s; a 16x4 LUT RAM four LUT4s and two more for its write port: nextpnr-ecp5's "Total LUT4s"
  before packing counts them so), TRELLIS_FF <= 83,640, MULT18X18D + ALU54B <= 156, DP16KD <= 208.

The candidates run smallest first and a template stops at its first candidate that does not fit
(or whose yosys run fails); nextpnr-ecp5 (``--85k --package CABGA381 --out-of-context``, seed 1,
``--freq 150``, timing allowed to fail) then places and routes the largest fitting one on its own
yosys netlist, under ``--pnr-timeout``. yosys: ``ARCHSIM_YOSYS=native`` (Debian 0.23: faster, no
4 GiB limit) is recommended; the tool versions are printed with every row.

Usage:
    ARCHSIM_YOSYS=native python bench/bench_scale.py [--template T ...] [--only NAME ...]
        [--no-pnr] [--yosys-timeout S] [--pnr-timeout S] [--workdir DIR] [--json FILE]

``--only`` restricts to named candidates (e.g. to skip sizes already measured; the largest fitting
one of those run is then placed and routed); ``--reuse`` takes the counts and netlist an earlier
run left in the work folder (e.g. ``--no-pnr`` first for every template, then place and route).
One JSON line per run is printed as it finishes.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from archsim.errors import ToolError  # noqa: E402
from archsim.spec import load_arch  # noqa: E402
from rtl.generate import design_for, target_options  # noqa: E402
from rtl.synth import _tool_version, place_and_route, synthesize_verilog  # noqa: E402

#: LFE5U-85F (ECP5-85k) resources, Lattice FPGA-DS-02012 table 1.1: 83,640 LUT4 (and as many
#: flip-flops), 156 18x18 multipliers, 208 sysMEM EBR (DP16KD) blocks
DEVICE = {"lut4": 83_640, "ffs": 83_640, "dsps": 156, "bram": 208}


@dataclass(frozen=True)
class Candidate:
    """One configuration: a preset with overrides, extra RTL options and the yosys flow."""

    name: str
    arch: str
    overrides: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    flow: str = "rtl.synth"  # or "attention no-share" (rtl.attention.synth)
    premap_shifts: bool = False
    note: str = ""


def _lut(n: int) -> Candidate:
    # item 6's LUT core build: one weight x activation pair (W2 x A8), M2 K4, N = n, local buffers
    return Candidate(f"lut W2xA8 M2 N{n} K4", "lut-m2n8k4-ecp5",
                     {"tile_n": n, "weight_formats": ["int2"], "activation_formats": ["int8"],
                      "weight_format": "int2", "activation_format": "int8"}, premap_shifts=True)


def _attention(r: int, c: int, lanes: int) -> Candidate:
    return Candidate(f"attention {r}x{c}, {lanes} lane{'s' if lanes > 1 else ''}", "fusemax-edge",
                     {"rows": r, "cols": c, "pe1d": lanes}, flow="attention no-share")


#: per template, smallest first; each is the template's item-6 FPGA configuration grown along the
#: dimension that replicates its datapath (systolic PEs, SIMD PEs, PIM banks, LUT columns N,
#: attention PEs and 1D lanes)
CANDIDATES: dict[str, list[Candidate]] = {
    "systolic": [Candidate(f"systolic {r}x{c} ws", "systolic-8x8-ecp5", {"rows": r, "cols": c})
                 for r, c in ((8, 8), (12, 12), (13, 12), (16, 16))],
    "simd": [Candidate(f"simd {n} PEs", "simd-edge", {"pes": n}) for n in (1, 2, 4, 6, 7, 8)],
    "pim": [Candidate(f"pim {n} bank{'s' if n > 1 else ''} (bare units)", "pim-gpt-gddr6", {},
                      options={"banks": n} if n > 1 else {}) for n in (1, 2, 3, 4)],
    "lut": [_lut(n) for n in (8, 16, 32, 48, 64, 128)],
    # ordered by size in LUT4 (a 2D PE is ~7.4k LUT4 equivalents, a 1D lane ~24.6k: docs/rtl.md)
    "attention": [_attention(r, c, p) for r, c, p in ((2, 2, 1), (2, 3, 1), (2, 2, 2), (2, 4, 1), (3, 3, 1))],
}


def lut4_equivalents(res: dict[str, Any]) -> int:
    """LUT4 sites that yosys' ECP5 counts occupy: LUT4 + 2 per CCU2C + 6 per TRELLIS_DPR16X4 (4 RAM
    LUT4s and 2 of its write port), as nextpnr-ecp5's "Total LUT4s" before packing."""
    return res.get("luts", 0) + 2 * res.get("carry", 0) + 6 * (res.get("lutram") or 0)


def fits(res: dict[str, Any]) -> tuple[bool, str]:
    """Whether yosys' counts fit the device, and the binding resource's share."""
    use = {"lut4": lut4_equivalents(res), "ffs": res.get("ffs", 0),
           "dsps": res.get("dsps", 0), "bram": res.get("bram", 0)}
    shares = {k: use[k] / DEVICE[k] for k in DEVICE}
    worst = max(shares, key=shares.get)
    return all(v <= 1.0 for v in shares.values()), f"{worst} {100 * shares[worst]:.0f}%"


def synthesize(c: Candidate, work: Path, timeout_s: float) -> dict[str, Any]:
    """yosys' ECP5 counts of one candidate; its netlist stays in ``work`` for nextpnr."""
    arch = load_arch(c.arch, c.overrides)
    options = {**target_options(arch, "ecp5"), **c.options}
    design = design_for(arch, options)
    t0 = time.perf_counter()
    if c.flow == "attention no-share":
        from rtl.attention.synth import synthesize_no_share

        res = synthesize_no_share(design.verilog(), design.toplevel, "ecp5", workdir=str(work), timeout_s=timeout_s)
    else:
        res = synthesize_verilog(design.verilog(), design.toplevel, target="ecp5", premap_shifts=c.premap_shifts,
                                 use_cache=False, workdir=work, timeout_s=timeout_s)
    res["yosys_wall_s"] = round(time.perf_counter() - t0, 1)
    res["options"] = options
    return res


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[1], timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def run_template(template: str, args, tools: dict[str, str], rev: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    largest: tuple[Candidate, Path] | None = None
    for c in CANDIDATES[template]:
        if args.only and c.name not in args.only:
            continue
        work = Path(args.workdir) / c.name.replace(" ", "_").replace(",", "").replace("(", "").replace(")", "")
        row: dict[str, Any] = {"template": template, "candidate": c.name, "arch": c.arch, "overrides": c.overrides,
                               "commit": rev, "tools": tools}
        saved = work / "counts.json"
        try:
            if args.reuse and saved.exists() and (work / "netlist.json").exists():
                res = json.loads(saved.read_text())
            else:
                res = synthesize(c, work, args.yosys_timeout) | {"commit": rev}
                saved.write_text(json.dumps(res))
        except (ToolError, ValueError) as err:
            row["error"] = str(err).splitlines()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
            break
        ok, binding = fits(res)
        # a reused row is the earlier run's: its commit and the yosys that counted it
        row.update({"commit": res.get("commit", "unknown (reused)"), "tools": {**tools, **res.get("tools", {})}})
        row.update({k: res.get(k) for k in ("luts", "carry", "ffs", "dsps", "bram", "lutram", "yosys_wall_s",
                                            "options")})
        row.update({"lut4_eq": lut4_equivalents(res), "fits": ok, "binding": binding})
        rows.append(row)
        print(json.dumps(row), flush=True)
        if not ok:
            break
        largest = (c, work)
    if largest and not args.no_pnr:
        c, work = largest
        row = next(r for r in rows if r["candidate"] == c.name)
        try:
            row.update(place_and_route(work, freq_mhz=150.0, seed=1, timeout_s=args.pnr_timeout))
        except ToolError as err:
            row["pnr_error"] = str(err).splitlines()[0]
        print(json.dumps({"template": template, "candidate": c.name, "pnr": {
            k: row.get(k) for k in ("fmax_mhz", "critical_path", "nextpnr_s", "pnr_error")}}), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--template", nargs="+", choices=sorted(CANDIDATES), help="templates (default: all)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="candidate names to run (see CANDIDATES)")
    ap.add_argument("--no-pnr", action="store_true", help="yosys counts only")
    ap.add_argument("--yosys-timeout", type=float, default=900.0, metavar="S")
    ap.add_argument("--pnr-timeout", type=float, default=900.0, metavar="S")
    ap.add_argument("--workdir", default="sim_out/scale", help="yosys / nextpnr work folders (kept)")
    ap.add_argument("--reuse", action="store_true",
                    help="take a candidate's counts and netlist from its work folder when an earlier run left them")
    ap.add_argument("--json", metavar="FILE", help="write every row to FILE")
    args = ap.parse_args(argv)
    tools = {"yosys": _tool_version("yosys")} | ({} if args.no_pnr else {"nextpnr-ecp5": _tool_version("nextpnr-ecp5")})
    rev = commit()
    rows = []
    for template in args.template or list(CANDIDATES):
        rows += run_template(template, args, tools, rev)
    print(f"\n{'candidate':36s} {'LUT4-eq':>11s} {'FF':>7s} {'DSP':>4s} {'BRAM':>4s} {'fits':>5s} "
          f"{'binding':>12s} {'yosys s':>8s} {'Fmax':>7s} {'pnr s':>6s}")
    for r in rows:
        if "error" in r:
            print(f"{r['candidate']:36s} yosys failed: {r['error']}")
            continue
        fmax = r.get("fmax_mhz")
        print(f"{r['candidate']:36s} {r['lut4_eq']:11,d} {r['ffs']:7,d} {r['dsps']:4d} {r['bram']:4d} "
              f"{str(r['fits']):>5s} {r['binding']:>12s} {r['yosys_wall_s']:8.0f} "
              f"{(f'{fmax:.1f}' if fmax else '-'):>7s} {r.get('nextpnr_s', '-')!s:>6s}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
