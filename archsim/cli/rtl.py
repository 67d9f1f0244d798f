"""``archsim rtl``: generate, co-simulate and synthesize a template's RTL.

Examples::

    archsim rtl generate --arch systolic-32x32-ws --out build/rtl
    archsim rtl cosim --arch systolic-32x32-ws --set rows=4 --set cols=4 --tiles 8
    archsim rtl cosim --arch my.yaml --source resnet50 --sim verilator --waves
    archsim rtl synth --arch systolic-32x32-ws --set rows=8 --set cols=8 --target ecp5 --pnr --json synth.json
    archsim rtl generate --arch pim-hbm2 --out build/pim
    archsim rtl lint --arch systolic-32x32-ws --set rows=4 --set cols=4
    archsim rtl cosim --arch pim-hbm2 --tiles 4 --source program --workload gpt2
"""
from __future__ import annotations

import argparse
import json
import sys

from archsim.cli._progress import Count, Stages, add_quiet
from archsim.errors import ArchsimError, SpecError


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", required=True, metavar="NAME|FILE", help="arch preset name or YAML file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override an arch spec value, e.g. rows=4 (repeatable)")
    p.add_argument("--depth", type=int, default=None, metavar="N",
                   help="entries per lane of the RTL's local tile buffers, for designs that have them "
                   "(default: the design's own, sized from the array)")
    p.add_argument("--multiplier", choices=["inferred", "ecp5_dsp"],
                   help="the multipliers of the design's PEs and lanes, for designs that offer the choice: inferred "
                   "a*b (default; synth --target ecp5 takes the design's ECP5 choice) or the ECP5 MULT18X18D "
                   "primitive with its registers")
    p.add_argument("--out-ram", choices=["auto", "block", "distributed"], dest="out_ram",
                   help="ram_style hint for the output buffer, for designs that take one (synth --target ecp5 "
                   "takes the design's ECP5 choice)")
    p.add_argument("--banks", type=int, default=0, metavar="N",
                   help="a channel of N bank units in all-bank lockstep with one global buffer, for designs "
                   "with banks (default: one bank)")
    p.add_argument("--unit", metavar="NAME", help="a unit of the template with its own standalone RTL instead "
                   "of the template's top module, e.g. topk (SpAtten's top-k engine; the template entry's "
                   "unit_rtl lists them)")
    add_quiet(p)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("rtl", help="generate, co-simulate and synthesize the template's RTL",
                              description="Generate Verilog from an arch spec, check it against archsim's "
                              "models under cocotb, and synthesize it with yosys / nextpnr.")
    sub = p.add_subparsers(dest="rtl_command", metavar="ACTION")

    g = sub.add_parser("generate", help="write Verilog, a FuseSoC .core and a JSON manifest",
                       description="Elaborate the arch spec's RTL (Amaranth) and write the top module's Verilog, a "
                       "FuseSoC .core (Icarus, Verilator and yosys targets) and a JSON manifest of the parameters and "
                       "ports into --out. Progress on stderr (-q: none).")
    _common(g)
    g.add_argument("--out", required=True, metavar="DIR", help="output folder")
    g.add_argument("--wrapper", choices=["none", "axi"], default="none",
                   help="none (default): the engine's own ports; axi: AXI4-Lite registers and AXI4-Stream data "
                   "around it (designs with the host interface; docs/rtl_host_interface.md)")
    g.set_defaults(func=cmd_generate)

    c = sub.add_parser("cosim", help="replay tile commands on the RTL and compare with the models",
                       description="Co-simulate the generated RTL under cocotb (Icarus or Verilator): replay tiles "
                       "(random, from a compiled workload, or a real layer) and compare every value and cycle count "
                       "with archsim's models. Exit status 1 if any tile differs. Progress on stderr (-q: none).")
    _common(c)
    c.add_argument("--tiles", type=int, default=8, metavar="N", help="number of tiles (default 8)")
    c.add_argument("--source", default="random", metavar="SRC",
                   help="random (default); program (first tiles of mappers.compile of --workload); or a real "
                   "layer the design offers, e.g. resnet50 or gpt2 (an unknown name lists the design's sources; "
                   "docs/rtl.md)")
    c.add_argument("--workload", metavar="NAME", help="zoo workload for --source program")
    c.add_argument("--layer", metavar="OP", help="layer of --workload for --source program (default: first with MACs)")
    c.add_argument("--seed", type=int, default=0, help="seed of the random operands and shapes")
    c.add_argument("--max-stream", type=int, default=16, metavar="N",
                   help="cap on a tile's streamed length (the dimension the design streams, e.g. the rows of a "
                   "weight-stationary tile or the weight rows per bank; default 16)")
    c.add_argument("--sim", default="icarus", choices=["icarus", "verilator"], help="Verilog simulator")
    c.add_argument("--waves", action="store_true", help="write a waveform (FST for Icarus, VCD for Verilator)")
    c.add_argument("--build-dir", metavar="DIR", help="simulator build folder (default: a cache under /tmp)")
    c.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE ('-': print JSON on stdout "
                   "instead of the summary)")
    c.add_argument("--verilog", nargs="+", metavar="FILE",
                   help="co-simulate your own Verilog instead of archsim's: it must implement the host interface "
                   "(docs/rtl_host_interface.md) for --arch; a waveform is always written")
    c.add_argument("--top", metavar="NAME", help="top module of the --verilog files")
    c.set_defaults(func=cmd_cosim)

    s = sub.add_parser("synth", help="synthesize with yosys (and place & route with nextpnr-ecp5)",
                       description="Synthesize the generated Verilog with yosys (ECP5 or generic cells) and report "
                       "cells, LUTs, DSPs and memory; with --pnr, place and route on an ECP5-85k with nextpnr for an "
                       "out-of-context Fmax. Results are cached. Progress on stderr (-q: none).")
    _common(s)
    s.add_argument("--target", default="ecp5", choices=["ecp5", "generic", "gates"],
                   help="yosys flow (default ecp5; gates: 2-input gates with a NAND2-equivalent area)")
    s.add_argument("--wrapper", choices=["none", "axi", "regs"], default="none",
                   help="none (default); axi: synthesize the design inside its AXI wrapper (as rtl generate); "
                   "regs: every port behind a register (rtl/lib/port_regs.py), so Fmax includes port paths")
    s.add_argument("--pnr", action="store_true", help="place and route on an ECP5-85k (out of context): Fmax")
    s.add_argument("--freq", type=float, default=200.0, metavar="MHZ", help="nextpnr target clock (default 200)")
    s.add_argument("--seed", type=int, default=1, help="nextpnr seed (default 1)")
    s.add_argument("--no-cache", action="store_true", help="ignore the result cache")
    s.add_argument("--json", metavar="FILE", help="write the figures as JSON to FILE ('-': print JSON on stdout "
                   "instead of the table)")
    s.set_defaults(func=cmd_synth)

    lint = sub.add_parser("lint", help="Verilator -Wall lint of the Verilog with its shipped waivers (rtl.lint)")
    _common(lint)
    lint.add_argument("--wrapper", choices=["none", "axi"], default="none",
                      help="none (default) or axi: lint the design inside its AXI wrapper (as rtl generate)")
    lint.add_argument("--no-waivers", action="store_true", help="lint without the .vlt waivers (raw counts)")
    lint.set_defaults(func=cmd_lint)

    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def _design(args, target: str | None = None):
    from archsim.spec import load_arch
    from rtl.generate import design_class, design_for, target_options, unit_design_class, unit_design_for

    if args.depth is not None and args.depth < 1:
        raise SpecError(f"--depth: expected a positive integer, got {args.depth}")
    if args.depth is not None and args.depth > MAX_RTL_DEPTH:
        raise SpecError(f"--depth: expected at most {MAX_RTL_DEPTH} entries per lane, got {args.depth}")
    arch = load_arch(args.arch, args.overrides)
    unit = getattr(args, "unit", None)
    cls = unit_design_class(arch, unit) if unit else design_class(arch)
    options = target_options(arch, target) if target and not unit else {}
    if args.depth is not None:
        names = cls.depth_options
        if not names:
            raise SpecError(f"--depth: the {arch.template}{' ' + unit if unit else ''} RTL has no local tile buffers")
        options.update({name: args.depth for name in names})
    if args.multiplier:
        options["multiplier"] = args.multiplier
    if args.out_ram:
        options["out_ram"] = args.out_ram
    if args.banks:
        name = cls.banks_option
        if not name:
            raise SpecError(f"--banks: the {arch.template} RTL has no banks")
        options[name] = args.banks
    design = unit_design_for(arch, unit, options or None) if unit else design_for(arch, options or None)
    check_rtl_size(design)
    if getattr(args, "wrapper", "none") == "axi":  # rtl generate --wrapper axi
        if unit:
            raise SpecError(f"--wrapper axi: the {unit} unit's RTL has no host interface; use --wrapper none")
        from rtl.lib.axi_design import axi_wrapped

        design = axi_wrapped(design)
    return arch, design


#: entries per lane of a generated local buffer: the 256x256 preset uses 1024; a depth of 1e8
#: would have the generator build (and the simulator hold) gigabytes before any error
MAX_RTL_DEPTH = 65536


def check_rtl_size(design) -> None:
    """Refuse a design whose local buffers are deeper than :data:`MAX_RTL_DEPTH` (from any source:
    ``--depth``, ``--set`` or the spec) before any hardware is built."""
    for key, value in design.config_dict().items():
        if key.endswith("_depth") and isinstance(value, int) and value > MAX_RTL_DEPTH:
            raise SpecError(f"rtl {key}: expected at most {MAX_RTL_DEPTH} entries per lane, got {value:,}")


def design_label(arch, overrides) -> str:
    """The design's name by its effective parameters: the preset's name when
    nothing is overridden, else the template with the overrides and the base
    preset (a 4x4 override of systolic-32x32-ws is not called 32x32)."""
    if not overrides:
        return arch.name
    return f"{arch.template}[{', '.join(str(o) for o in overrides)}] (base preset {arch.name})"


def cmd_generate(args) -> int:
    from rtl.generate import write_outputs

    from archsim.outputs import OutputDir

    OutputDir.check(args.out)  # refuse a user's folder or a file before the long Verilog step, not after
    with Stages("rtl generate", ["design", "Verilog", "files"], args.quiet) as stages:
        stages.start("design")
        arch, design = _design(args)
        stages.start("Verilog")
        design.verilog()  # the long step (Amaranth elaboration and yosys); write_outputs reuses it
        stages.start("files")
        files = write_outputs(design, args.out)
    ports = design.ports()
    print(f"{design_label(arch, args.overrides)}: {design.toplevel} ({len(ports)} ports)")
    for kind, path in files.items():
        print(f"  {kind:<8} {path}")
    return 0


def _check_cosim_args(args) -> None:
    """One-line errors for ``rtl cosim``'s numeric flags and output paths, before anything is built
    (the same for archsim's RTL and for ``--verilog``)."""
    from archsim.outputs import OutputDir, check_owned_file

    if args.tiles < 1:
        raise SpecError(f"--tiles: expected a positive integer, got {args.tiles}")
    if args.seed < 0:
        raise SpecError(f"--seed: expected a non-negative integer, got {args.seed}")
    if args.max_stream < 1:
        raise SpecError(f"--max-stream: expected a positive integer, got {args.max_stream}")
    for flag, value in (("--workload", args.workload), ("--layer", args.layer)):
        if value is not None and args.source != "program":
            raise SpecError(f"{flag}: used only with --source program (got --source {args.source})")
    if args.workload is not None and not args.workload.lower().endswith((".onnx", ".yaml", ".yml", ".csv")):
        from workloads.zoo import canonical_name

        canonical_name(args.workload)  # an unknown name fails now, not after the design is built
    if args.json is not None and args.json != "-":
        check_owned_file(args.json)
    if args.build_dir is not None:  # the simulator writes (and removes) files there: a folder archsim owns
        OutputDir(args.build_dir, "rtl cosim")


def cmd_cosim(args) -> int:
    if (args.verilog or args.top) and args.unit:
        raise SpecError(f"--verilog: co-simulates a template's top module; not with --unit {args.unit}")
    if args.verilog or args.top:  # bring your own RTL (rtl.cosim.byo)
        return cmd_cosim_verilog(args)
    from rtl.api import run_design_cosim

    from archsim.outputs import write_owned_json

    _check_cosim_args(args)
    bars: list = []  # the tile bar, once the simulator runs
    with Stages("rtl cosim", ["design", "tiles", f"build ({args.sim})", "start"], args.quiet) as stages:
        stages.start("design")
        arch, design = _design(args)
        stages.start("tiles")
        items = design.cosim_items(args.source, tiles=args.tiles, seed=args.seed, max_stream=args.max_stream,
                                   arch=arch, workload=args.workload, layer=args.layer)
        if not items:
            raise ArchsimError(f"source {args.source!r} gave no tiles")

        def progress(stage: str, done: int, total: int) -> None:
            """Stages up to the build, then a bar per tile the driver reports (rtl.cosim.progress)."""
            if stage == "build":
                stages.start(f"build ({args.sim})")
            elif stage == "start":
                stages.start("start")
            elif stage == "run":
                if not bars:
                    stages.close()
                    bars.append(Count(f"rtl cosim ({args.sim})", len(items), "tile", args.quiet))
                bars[0].to(done, total or None)

        try:
            report = run_design_cosim(design, items, sim=args.sim, waves=args.waves, build_dir=args.build_dir,
                                      progress=progress)
        finally:
            for bar in bars:
                bar.close()
    if args.json == "-":
        print(json.dumps(report.as_dict(), indent=2, sort_keys=False))
        return 0 if report.ok else 1
    print(f"{design_label(arch, args.overrides)}: {design.toplevel} on {args.sim}, {len(items)} tiles from "
          f"{args.source}")
    print(report.summary())
    if args.json:
        write_owned_json(args.json, report.as_dict(), "rtl cosim")
    return 0 if report.ok else 1


def cmd_synth(args) -> int:
    import math

    from archsim.outputs import check_owned_file, write_owned_json
    from rtl.synth import synthesize_verilog

    if not (math.isfinite(args.freq) and args.freq > 0):
        raise SpecError(f"--freq: expected a positive clock in MHz, got {args.freq:g}")
    to_stdout = args.json == "-"
    if args.json is not None and not to_stdout:
        check_owned_file(args.json)
    names = ["design", "Verilog", "yosys"] + (["nextpnr"] if args.pnr else [])
    with Stages("rtl synth", names, args.quiet) as stages:
        stages.start("design")
        arch, design = _design(args, target=args.target)
        stages.start("Verilog")
        verilog, top = design.verilog(), design.toplevel
        if args.wrapper == "regs":  # for timing only: not a design to simulate
            from rtl.lib.port_regs import port_regs_top

            verilog, top = port_regs_top(design)
        # "yosys", then "nextpnr" (or "cached") as synthesize_verilog reaches them
        result = synthesize_verilog(verilog, top, target=args.target, pnr=args.pnr,
                                    freq_mhz=args.freq, seed=args.seed, use_cache=not args.no_cache,
                                    progress=stages.start)
    label = design_label(arch, args.overrides)
    result = {"written_by": "archsim rtl synth", "arch": arch.name, "design": label,
              "overrides": list(args.overrides), **result, "params": design.config_dict()}
    if to_stdout:
        print(json.dumps(result, indent=2, sort_keys=False))
        return 0
    print(synth_table(result))
    if args.json:
        write_owned_json(args.json, result, "rtl synth")
    return 0


def cmd_lint(args) -> int:
    """Warnings per rule; exit 1 when any remain."""
    from rtl.lint import lint_design, verilator_command

    verilator_command()  # one-line error before elaborating when Verilator is missing
    arch, design = _design(args)
    result = lint_design(design, waived=not args.no_waivers)
    waivers = "without waivers" if args.no_waivers else f"with {design.toplevel}.vlt"
    print(f"{design_label(arch, args.overrides)}: {design.toplevel}, verilator -Wall {waivers}: "
          f"{result.count} warnings")
    for rule, n in result.per_rule().most_common():
        print(f"  {rule:<16} {n}")
    return 0 if result.count == 0 else 1


def synth_table(result: dict) -> str:
    """The figures of ``archsim rtl synth`` as an aligned table."""
    from archsim import fmt

    rows = [["design", result.get("design", result.get("arch", ""))], ["top", result.get("top", "")],
            ["target", result.get("target", "")]]
    skip = {"written_by", "arch", "design", "overrides", "top", "target", "params", "tools", "utilization",
            "critical_path"}
    for key, value in result.items():
        if key in skip:
            continue
        if key == "fmax_mhz":
            rows.append(["Fmax", f"{value:.1f} MHz"])
        else:
            rows.append([key.replace("_", " "), fmt.number(value)])
    path = result.get("critical_path")
    if path:
        rows.append(["critical path", f"{path.get('from')} -> {path.get('to')} (logic {path.get('logic_ns')} ns, "
                                      f"routing {path.get('routing_ns')} ns)"])
    for name, use in (result.get("utilization") or {}).items():
        rows.append([f"used {name}", f"{use.get('used')} of {use.get('available')}"])
    rows.append(["tools", ", ".join(f"{k} {v}" for k, v in (result.get("tools") or {}).items())])
    return fmt.table(rows, align="ll")


__all__ = ["register"]
if __name__ == "__main__":  # pragma: no cover
    sys.exit(1)


def cmd_cosim_verilog(args) -> int:
    """``archsim rtl cosim --verilog FILE... --top NAME --arch SPEC``: print the report and the
    first mismatching tile; exit status 0 when every tile matches."""
    from archsim.outputs import write_owned_json
    from rtl.cosim.byo import read_sources, require_host, run_user_verilog

    if not args.verilog or not args.top:
        raise SpecError("--verilog FILE... and --top NAME go together (your Verilog and its top module)")
    _check_cosim_args(args)
    read_sources(args.verilog)  # a missing file is named before anything is built
    arch, design = _design(args)
    require_host(design)
    items = design.cosim_items(args.source, tiles=args.tiles, seed=args.seed, max_stream=args.max_stream,
                               arch=arch, workload=args.workload, layer=args.layer)
    if not items:
        raise SpecError(f"source {args.source!r} gave no tiles")
    user = run_user_verilog(arch, args.verilog, args.top, items, sim=args.sim, waves=True,
                            build_dir=args.build_dir, options=design.options)
    line = user.first_mismatch()
    if args.json == "-":
        print(json.dumps({**user.report.as_dict(), "first_mismatch": line}, indent=2, sort_keys=False))
        return 0 if user.report.ok else 1
    print(f"{args.top} (your Verilog: {', '.join(args.verilog)}) as {design_label(arch, args.overrides)} on {args.sim}, "
          f"{len(items)} tiles from {args.source}")
    print(user.report.summary())
    if line:
        print(line)
    if args.json:
        out = user.report.as_dict()
        out["first_mismatch"] = line
        write_owned_json(args.json, out, "rtl cosim")
    return 0 if user.report.ok else 1
