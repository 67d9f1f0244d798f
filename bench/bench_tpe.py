"""TPE (Wu et al., HPCA 2025) bit-weight PE transformation: standard vs carry-save PEs, synthesized.

Prints area (2-input gates in NAND2 equivalents, generic 4-LUTs, ECP5 cells), logic depth (the
clock proxy) and switching activity (the energy proxy, ``rtl.power``) of archsim's systolic PEs
and arrays with ``pe_style`` standard and tpe, beside the paper's figures (28 nm: systolic array
1.27x area efficiency, 1.04x energy efficiency; multiplier-adder tree 1.56x / 1.49x).

Area efficiency = throughput / area = clock / area at the same MACs per cycle; the clock of each
design is taken as inversely proportional to its longest path in gates (``ltp`` of the ``gates``
netlist), the stand-in for the paper's per-design synthesis clock. Energy efficiency = the
inverse ratio of switching units per cycle of the generic netlist under the same random int8
OS stream (``rtl.power.stream_units``; same MACs per cycle, so per-cycle = per-MAC).

The authors' Verilog (github.com/wqzustc/High-Performance-Tensor-Processing-Engines, MIT) is not
shipped with archsim: pass ``--tpe-src DIR`` (a checkout of that repository) to synthesize its OS
systolic PEs (``OPT1/systolic_array_os``: ``array_mac_based/pe.v`` and ``array_opt1_based``) with
the same flows. Its compressor is Synopsys DesignWare's ``DW02_tree`` (not open); archsim's own
3:2 compressor tree stands in for it (:func:`dw02_tree_verilog`).

The SIMD template's integer dot unit (``pe_style`` standard / tpe on its lanes, :func:`simd_dot`) is
synthesized beside them (``--only-simd``: that unit alone).

Usage: ``python bench/bench_tpe.py [--size 4] [--tpe-src DIR] [--no-ecp5] [--no-energy] [--only-simd]``
(one yosys run at a time; 4x4 arrays take about a minute each).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.templates.systolic import SystolicParams  # noqa: E402
from rtl.synth import synthesize_verilog  # noqa: E402

TIMEOUT_S = 900


def _verilog(component, name: str) -> str:
    from amaranth.back import verilog

    return verilog.convert(component, name=name, emit_src=False)


def ours(style: str, size: int, unit: str, dataflow: str = "os") -> tuple[str, str]:
    """(Verilog, top) of archsim's systolic PE or ``size x size`` array (no buffers, no controller)."""
    from rtl.systolic.array import SystolicArray
    from rtl.systolic.config import SystolicConfig
    from rtl.systolic.pe import ProcessingElement

    params = SystolicParams(rows=size, cols=size, dataflow=dataflow, pe_style=style)
    cfg = SystolicConfig.from_params(params)
    top = f"archsim_{unit}_{style}"
    comp = ProcessingElement(cfg) if unit == "pe" else SystolicArray(cfg)
    return _verilog(comp, top), top


def dot_unit(style: str, n: int = 8, lane: int = 8, acc: int = 32) -> tuple[str, str]:
    """(Verilog, top) of an accumulating ``n``-input int8 multiplier-adder tree (a tensor core's
    dot-product unit): ``acc += sum_i a_i * b_i`` per cycle from registered operands. ``standard``:
    complete products, a balanced tree of carry-propagate adders, a carry-propagate accumulate.
    ``tpe``: every product's Booth rows and the carry-save accumulator in one 3:2 tree, one
    registered carry-propagate add on the way out (the paper's OPT1 applied to the tree)."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from rtl.lib.csa import booth_rows, compress

    class Dot(wiring.Component):
        def __init__(self):
            super().__init__({"a": In(n * lane), "b": In(n * lane), "out": Out(acc)})

        def elaborate(self, platform):
            m = Module()
            a = [Signal(signed(lane), name=f"a{i}") for i in range(n)]
            b = [Signal(signed(lane), name=f"b{i}") for i in range(n)]
            for i in range(n):
                m.d.sync += [a[i].eq(self.a[i * lane:(i + 1) * lane]), b[i].eq(self.b[i * lane:(i + 1) * lane])]
            if style == "standard":
                terms = [a[i] * b[i] for i in range(n)]
                while len(terms) > 1:
                    terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i]
                             for i in range(0, len(terms), 2)]
                total = Signal(signed(acc), name="acc")
                m.d.sync += total.eq(total + terms[0])
                m.d.comb += self.out.eq(total)
            else:
                s, c = Signal(acc, name="acc_s"), Signal(acc, name="acc_c")
                rows = [r for i in range(n) for r in booth_rows(m, a[i], b[i], acc, f"pp{i}")]
                ns, nc = compress(m, rows + [s, c], acc, "t")
                out = Signal(acc, name="cpa")
                m.d.sync += [s.eq(ns), c.eq(nc), out.eq(s + c)]
                m.d.comb += self.out.eq(out)
            return m

    top = f"archsim_dot{n}_{style}"
    return _verilog(Dot(), top), top


def simd_params(style: str, lanes: int = 8):
    """The SIMD template's fixed int8 PE with ``lanes`` lanes (``lane_bits = 8 * lanes``) and ``pe_style``."""
    from archsim.templates.simd import SimdParams

    return SimdParams(pes=1, lane_bits=8 * lanes, formats=["int8"], pe_style=style)


def simd_dot(style: str, lanes: int = 8) -> tuple[str, str]:
    """(Verilog, top) of the SIMD PE's integer dot-product unit alone (:func:`rtl.simd.int_dot_slice.int_dot_slice`:
    the PE's own lanes between the operand register and the cycle-sum register), int8, ``lanes`` lanes."""
    from rtl.simd.config import SimdConfig
    from rtl.simd.int_dot_slice import int_dot_slice

    top = f"archsim_simd_dot{lanes}_{style}"
    return _verilog(int_dot_slice(SimdConfig.from_params(simd_params(style, lanes))), top), top


def simd_pe(style: str, lanes: int = 8) -> tuple[str, str]:
    """(Verilog, top) of the whole SIMD PE (``archsim_simd_pe``: lanes, group and output accumulators, the
    int64 -> fp32 and x scale group path), fixed int8, ``lanes`` lanes, ``pipeline_cycles`` 4."""
    from rtl.simd.config import SimdConfig
    from rtl.simd.pe import SimdPE

    top = f"archsim_simd_pe{lanes}_{style}"
    return _verilog(SimdPE(SimdConfig.from_params(simd_params(style, lanes))), top), top


def dw02_tree_verilog(num_inputs: int, width: int) -> str:
    """An open stand-in for DesignWare's ``DW02_tree`` (``num_inputs`` rows of ``width`` bits to a
    carry-save pair ``OUT0 + OUT1``): archsim's 3:2 compressor tree (:func:`rtl.lib.csa.compress`)."""
    from amaranth.hdl import Cat, Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from rtl.lib.csa import compress

    class Tree(wiring.Component):
        def __init__(self):
            super().__init__({"INPUT": In(num_inputs * width), "OUT0": Out(width), "OUT1": Out(width)})

        def elaborate(self, platform):
            m = Module()
            rows = [self.INPUT[i * width:(i + 1) * width] for i in range(num_inputs)]
            s, c = compress(m, rows, width, "t")
            m.d.comb += [self.OUT0.eq(s), self.OUT1.eq(c)]
            return m

    text = _verilog(Tree(), "DW02_tree")
    # the authors instantiate it with positional parameters #(num_inputs, input_width, verif_en)
    return text.replace("module DW02_tree(", "module DW02_tree #(parameter num_inputs = 0, parameter input_width = 0, "
                        "parameter verif_en = 0) (", 1)


AUTHOR_FILES = {
    "standard": ["OPT1/systolic_array_os/array_mac_based/pe.v"],
    "tpe": [f"OPT1/systolic_array_os/array_opt1_based/{f}" for f in (
        "pe.v", "opt1_mac.v", "booth_pp_gen.v", "booth_partial_product_generator_pp1.v",
        "booth_partial_product_generator.v", "inv_conveter_8.v", "inv_unit.v", "inv_unit_nor_out.v")],
}


def authors(style: str, src: Path) -> tuple[str, str]:
    """(Verilog, top) of the authors' OS systolic PE (8-bit operands, 32-bit accumulator)."""
    texts = []
    for rel in AUTHOR_FILES[style]:
        path = src / rel
        if not path.exists():
            raise SystemExit(f"--tpe-src: {path} not found (expected a checkout of "
                             "wqzustc/High-Performance-Tensor-Processing-Engines)")
        texts.append(path.read_text())
    if style == "tpe":
        texts.append(dw02_tree_verilog(6, 32))
    return "\n".join(texts), "PE"


def synth(verilog: str, top: str, target: str) -> dict:
    return synthesize_verilog(verilog, top, target=target, timeout_s=TIMEOUT_S)


# ---------------------------------------------------------------------------- energy proxy


def os_stream(size: int, k: int, cycles: int, flag_lag: int, seed: int = 0) -> tuple[list, list]:
    """Ports and per-cycle words driving an OS-only ``SystolicArray`` at full rate: random int8 A and W
    skewed by row / column, back-to-back k-long reductions, the first / last flags ``flag_lag`` cycles
    after the left operand enters (2: standard PEs, flags with the product; 1: carry-save PEs)."""
    rng = np.random.default_rng(seed)
    R = C = size
    a = rng.integers(0, 256, size=(cycles + R, R))
    w = rng.integers(0, 256, size=(cycles + C, C))
    ports = [("left_data", 8 * R), ("left_ok", R), ("top_data", 8 * C), ("top_ok", C),
             ("shift", 1), ("swap", 1), ("os", 1), ("os_acc", 1), ("first", R), ("last", R)]
    words = []
    for t in range(cycles):
        left = sum(int(a[t, r]) << (8 * r) for r in range(R) if t >= r)
        top = sum(int(w[t, c]) << (8 * c) for c in range(C) if t >= c)
        first = sum(1 << r for r in range(R) if t - flag_lag - r >= 0 and (t - flag_lag - r) % k == 0)
        last = sum(1 << r for r in range(R) if t - flag_lag - r >= 0 and (t - flag_lag - r) % k == k - 1)
        words.append([left, (1 << R) - 1, top, (1 << C) - 1, 1, 0, 1, 1, first, last])
    return ports, words


#: LUT delay of the glitch-aware runs (ns): every 4-LUT of the generic netlist switches this long after
#: its inputs (the testbench clock is 10 ns; the deepest netlist here has 20 levels)
LUT_DELAY_NS = 0.1


def timed_units(netlist_text: str, top: str, inputs: list, words: list, warmup_cycles: int) -> dict:
    """Like :func:`rtl.power.stream_units`, but each LUT has :data:`LUT_DELAY_NS` of delay, so the VCD holds
    the glitches of unbalanced paths (a carry ripple settling) that a zero-delay simulation cannot see."""
    import re
    import tempfile

    from rtl import power

    timed = re.sub(r"^(\s*assign)(\s+\S+\s*=\s*\d+'h[0-9a-f]+\s*>>)", rf"\1 #{LUT_DELAY_NS}\2", netlist_text,
                   flags=re.M)
    netlist = power.parse_netlist(netlist_text)
    tb = power._stream_tb(top, inputs, words, (warmup_cycles, 0))
    with tempfile.TemporaryDirectory(prefix="archsim-tpe-") as tmp:
        work = Path(tmp)
        power.run_icarus({"netlist.v": "`timescale 1ns/1ps\n" + timed, "tb.v": tb}, "tb", work)
        activity = power.count_activity(work / "activity.vcd", "tb.dut", "tb.measure", "tb.clk")
    return power.switching_units(netlist, activity)


def dot_energy_units(style: str, n: int = 8, cycles: int = 400, seed: int = 0, timed: bool = False) -> dict:
    """Switching units per cycle of :func:`dot_unit` under uniformly random int8 operands."""
    from rtl import power

    verilog, top = dot_unit(style, n)
    result = synthesize_verilog(verilog, top, target="generic", netlist=True, timeout_s=TIMEOUT_S)
    rng = np.random.default_rng(seed)
    words = [[int(v) for v in rng.integers(0, 1 << 62, 2)] for _ in range(cycles)]
    words = [[w % (1 << (8 * n)) for w in row] for row in words]
    text = Path(result["netlist"]).read_text()
    if timed:
        units = timed_units(text, top, [("a", 8 * n), ("b", 8 * n)], words, warmup_cycles=4)
    else:
        units = power.stream_units(text, top, [("a", 8 * n), ("b", 8 * n)], words, warmup_cycles=4, drain_cycles=0)
    return {"units_per_cycle": units["units"] / units["cycles"], "cycles": units["cycles"]}


def simd_dot_energy_units(style: str, lanes: int = 8, cycles: int = 400, seed: int = 0, timed: bool = False) -> dict:
    """Switching units per cycle of :func:`simd_dot` under uniformly random int8 operands, every lane on
    (the mode loaded by ``take`` in the first cycle)."""
    from rtl import power

    verilog, top = simd_dot(style, lanes)
    result = synthesize_verilog(verilog, top, target="generic", netlist=True, timeout_s=TIMEOUT_S)
    rng = np.random.default_rng(seed)
    ports = [("a", 8 * lanes), ("w", 8 * lanes), ("mask", lanes), ("take", 1), ("mode", 1)]
    words = [[int.from_bytes(rng.bytes(lanes), "little"), int.from_bytes(rng.bytes(lanes), "little"),
              (1 << lanes) - 1, int(t == 0), 0] for t in range(cycles)]
    text = Path(result["netlist"]).read_text()
    if timed:
        units = timed_units(text, top, ports, words, warmup_cycles=4)
    else:
        units = power.stream_units(text, top, ports, words, warmup_cycles=4, drain_cycles=0)
    return {"units_per_cycle": units["units"] / units["cycles"], "cycles": units["cycles"]}


def energy_units(style: str, size: int, k: int = 16, cycles: int = 400, timed: bool = False) -> dict:
    from rtl import power

    verilog, top = ours(style, size, "array")
    result = synthesize_verilog(verilog, top, target="generic", netlist=True, timeout_s=TIMEOUT_S)
    ports, words = os_stream(size, k, cycles, flag_lag=2 if style == "standard" else 1)
    text = Path(result["netlist"]).read_text()
    if timed:
        units = timed_units(text, top, ports, words, warmup_cycles=2 * size + 2)
    else:
        units = power.stream_units(text, top, ports, words, warmup_cycles=2 * size + 2, drain_cycles=0)
    return {"units_per_cycle": units["units"] / units["cycles"], "cycles": units["cycles"]}


# ---------------------------------------------------------------------------- table


def ratio(std: float, tpe: float) -> str:
    return f"{std / tpe:.2f}x" if tpe else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4, help="array rows = cols (default 4)")
    ap.add_argument("--tpe-src", type=Path, help="checkout of the authors' repository (optional)")
    ap.add_argument("--no-ecp5", action="store_true", help="skip the ECP5 flow")
    ap.add_argument("--no-energy", action="store_true", help="skip the switching-activity runs")
    ap.add_argument("--json", type=Path, help="also write every figure to this file")
    ap.add_argument("--only-simd", action="store_true",
                    help="only the SIMD template's int8 dot unit (pe_style standard / tpe, 8 lanes)")
    args = ap.parse_args(argv)

    designs = [("archsim PE (OS)", lambda s: ours(s, args.size, "pe")),
               (f"archsim {args.size}x{args.size} OS array", lambda s: ours(s, args.size, "array")),
               (f"archsim {args.size}x{args.size} WS array", lambda s: ours(s, args.size, "array", "ws"))]
    designs.append(("8-input dot unit (MAT)", lambda s: dot_unit(s)))
    if args.only_simd:
        designs = []
    designs.append(("SIMD int8 dot unit, 8 lanes", lambda s: simd_dot(s)))
    if args.tpe_src:
        designs.append(("authors' OS PE (OPT1)", lambda s: authors(s, args.tpe_src)))
    targets = ["gates", "generic"] + ([] if args.no_ecp5 else ["ecp5"])
    figures: dict = {}
    for label, build in designs:
        styles = ("standard", "tpe", "tpe_pipelined") if "array" in label else ("standard", "tpe")
        for style in styles:
            verilog, top = build(style)
            for target in targets:
                res = synth(verilog, top, target)
                figures.setdefault(label, {}).setdefault(style, {})[target] = {
                    k: v for k, v in res.items() if k in ("gates", "gate_equivalents", "ffs", "luts", "carry", "dsps",
                                                          "cells", "logic_levels")}
                print(f"  {label:28s} {style:8s} {target:7s} {figures[label][style][target]}", file=sys.stderr)

    print("\nArea and logic depth, standard vs tpe (ratios standard / tpe: > 1 means tpe is smaller or faster)")
    print(f"{'design':28s} {'GE std':>8s} {'GE tpe':>8s} {'GE':>6s} {'lvl std':>7s} {'lvl tpe':>7s} "
          f"{'lvl':>6s} {'area eff':>8s} {'LUT4 std':>8s} {'LUT4 tpe':>8s} {'LUT lvl':>9s}")
    for label, by in list(figures.items()):
        for style in [s for s in by if s != "standard"]:
            gs, gt = by["standard"]["gates"], by[style]["gates"]
            ls, lt = by["standard"]["generic"], by[style]["generic"]
            eff = (gs["gate_equivalents"] * gs["logic_levels"]) / (gt["gate_equivalents"] * gt["logic_levels"])
            name = label if style == "tpe" else f"  ({style})"
            print(f"{name:28s} {gs['gate_equivalents']:8.0f} {gt['gate_equivalents']:8.0f} "
                  f"{ratio(gs['gate_equivalents'], gt['gate_equivalents']):>6s} {gs['logic_levels']:7d} "
                  f"{gt['logic_levels']:7d} {ratio(gs['logic_levels'], gt['logic_levels']):>6s} {eff:7.2f}x "
                  f"{ls['luts']:8d} {lt['luts']:8d} {ls['logic_levels']:4d}/{lt['logic_levels']:<4d}")
            by[style]["area_efficiency_gates"] = eff
    if not args.no_ecp5:
        print("\nECP5 (synth_ecp5; the standard PE's multiplier maps to a MULT18X18D DSP)")
        for label, by in figures.items():
            s, t = by["standard"]["ecp5"], by["tpe"]["ecp5"]  # (tpe_pipelined: two more flip-flop rows)
            print(f"{label:28s} std LUT4 {s['luts']:5d} CCU2C {s['carry']:4d} FF {s['ffs']:4d} DSP {s['dsps']:3d} | "
                  f"tpe LUT4 {t['luts']:5d} CCU2C {t['carry']:4d} FF {t['ffs']:4d} DSP {t['dsps']:3d}")
    if not args.no_energy:
        sd = {s: simd_dot_energy_units(s) for s in ("standard", "tpe")}
        sdt = {s: simd_dot_energy_units(s, timed=True) for s in ("standard", "tpe")}
        figures["energy_simd_dot"], figures["energy_timed_simd_dot"] = sd, sdt
        print(f"\nSwitching units per cycle, SIMD int8 dot unit (8 lanes, every lane on), random int8: standard "
              f"{sd['standard']['units_per_cycle']:.0f}, tpe {sd['tpe']['units_per_cycle']:.0f} "
              f"({ratio(sd['standard']['units_per_cycle'], sd['tpe']['units_per_cycle'])}); with {LUT_DELAY_NS} ns "
              f"per LUT: {sdt['standard']['units_per_cycle']:.0f}, {sdt['tpe']['units_per_cycle']:.0f} "
              f"({ratio(sdt['standard']['units_per_cycle'], sdt['tpe']['units_per_cycle'])})")
    if not args.no_energy and not args.only_simd:
        e = {s: energy_units(s, args.size) for s in ("standard", "tpe", "tpe_pipelined")}
        figures["energy"] = e
        d = {s: dot_energy_units(s) for s in ("standard", "tpe")}
        figures["energy_dot"] = d
        figures["energy_timed"] = {s: energy_units(s, args.size, timed=True) for s in ("standard", "tpe", "tpe_pipelined")}
        figures["energy_timed_dot"] = {s: dot_energy_units(s, timed=True) for s in ("standard", "tpe")}
        print(f"\nSwitching units per cycle, 8-input dot unit, random int8 (generic 4-LUT netlist): standard "
              f"{d['standard']['units_per_cycle']:.0f}, tpe {d['tpe']['units_per_cycle']:.0f}, energy efficiency "
              f"{ratio(d['standard']['units_per_cycle'], d['tpe']['units_per_cycle'])}")
        print(f"Switching units per cycle, {args.size}x{args.size} OS array, random int8, k=16 reductions "
              f"(generic 4-LUT netlist): standard {e['standard']['units_per_cycle']:.0f}, "
              f"tpe {e['tpe']['units_per_cycle']:.0f} ({ratio(e['standard']['units_per_cycle'], e['tpe']['units_per_cycle'])}), "
              f"tpe_pipelined {e['tpe_pipelined']['units_per_cycle']:.0f} "
              f"({ratio(e['standard']['units_per_cycle'], e['tpe_pipelined']['units_per_cycle'])})")
    if not args.no_energy and not args.only_simd:
        t, td = figures["energy_timed"], figures["energy_timed_dot"]
        print(f"With {LUT_DELAY_NS} ns per LUT (glitches counted): OS array standard {t['standard']['units_per_cycle']:.0f}, "
              f"tpe {t['tpe']['units_per_cycle']:.0f}, tpe_pipelined {t['tpe_pipelined']['units_per_cycle']:.0f}; "
              f"dot unit standard {td['standard']['units_per_cycle']:.0f}, tpe {td['tpe']['units_per_cycle']:.0f}")
    print("\nPaper (SMIC 28 nm, Design Compiler, 16x16 int8 OS array, each design at its own clock): "
          "systolic array 1.27x area efficiency, 1.04x energy efficiency; multiplier-adder tree 1.56x / 1.49x.")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
