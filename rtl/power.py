"""Switching energy of a synthesized netlist, from its simulated activity.

Synthesis gives no power, so energy here is measured the way a gate-level
power tool does, with a simple load model:

1. ``rtl.synth.synthesize_verilog(..., target="generic", netlist=True)`` gives
   the flat 4-LUT netlist (LUTs as constant-shift expressions, flip-flops as
   ``always`` blocks), simulatable by Icarus.
2. A testbench drives it and dumps a VCD of the netlist's nets
   (:func:`run_icarus`).
3. :func:`count_activity` counts each net bit's value changes inside the
   measured window (a gate signal is 1) and the clock cycles of the window.
4. :func:`switching_units` weighs every toggle by its load, ``1 + fanout``
   (the driver's output plus each LUT / flip-flop input it feeds), and adds
   ``CLOCK_UNITS_PER_FF`` per flip-flop per cycle for the clock pins.
5. Energy = units x the energy of one unit, calibrated on one reference
   circuit (:func:`calibration_pj_per_unit`): a registered int8 x int8
   multiplier under uniform random operands costs the tech table's
   ``mult.int8`` (Horowitz ISSCC 2014, 45 nm: 0.2 pJ) per multiply.

The pJ figures are therefore a 45 nm estimate with one calibration point; a
ratio between two designs measured this way does not depend on it (nor on
anything but the netlists, their stimuli and the load model).
"""
from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from archsim.errors import ToolError

#: clock-pin load per flip-flop per cycle, in toggle units (the clock rises and falls once each)
CLOCK_UNITS_PER_FF = 2.0

_IDENT = r"(?:\\\S+|[A-Za-z_][A-Za-z0-9_$]*)"
_REF = re.compile(rf"({_IDENT})\s*(?:\[(\d+)(?::(\d+))?\])?")
_DECL = re.compile(rf"^\s*(input|output|inout|wire|reg)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s+)?({_IDENT})")
_KEYWORDS = {"assign", "always", "posedge", "negedge", "begin", "end", "if", "else", "module", "endmodule",
             "input", "output", "wire", "reg", "signed", "initial", "case", "endcase", "default"}


@dataclass
class Netlist:
    """What the load model needs from a ``write_verilog`` netlist: fanout per net bit, flip-flop count."""

    module: str
    widths: dict[str, tuple[int, int]]  # name -> (msb, lsb)
    fanout: dict[tuple[str, int], int]
    flip_flops: int
    luts: int

    def bit_fanout(self, name: str, bit: int) -> int:
        return self.fanout.get((name, bit), 0)


def _sources(expr: str, widths: dict[str, tuple[int, int]]):
    """The (name, bit) pairs an expression reads (constants and keywords skipped)."""
    expr = re.sub(r"\d+'[sS]?[hbdoHBDO][0-9a-fA-FxzXZ_]+", " ", expr)  # sized constants
    for match in _REF.finditer(expr):
        name, hi, lo = _plain(match.group(1)), match.group(2), match.group(3)
        if name in _KEYWORDS or name not in widths:
            continue
        msb, lsb = widths[name]
        if hi is None:
            bits = range(min(msb, lsb), max(msb, lsb) + 1)
        elif lo is None:
            bits = [int(hi)]
        else:
            a, b = int(hi), int(lo)
            bits = range(min(a, b), max(a, b) + 1)
        for bit in bits:
            yield name, bit


def parse_netlist(text: str) -> Netlist:
    """Fanout of every net bit of a flat ``write_verilog -noattr`` netlist (one module).

    Items are ``assign`` statements (a LUT when the right side is a constant
    shifted by the inputs) and ``always @(posedge clk)`` blocks (one
    flip-flop per target bit; reset / enable conditions are loads too).
    """
    modules = re.findall(r"^module\s+(\S+?)\s*\(", text, re.M)
    if len(modules) != 1:
        raise ToolError(f"power: expected one flat module in the netlist, found {len(modules)}")
    widths: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        d = _DECL.match(line)
        if d:
            widths[_plain(d.group(4))] = (int(d.group(2)), int(d.group(3))) if d.group(2) is not None else (0, 0)
    fanout: dict[tuple[str, int], int] = {}
    luts = flip_flops = 0
    for item in re.split(r"\n\s*(?=assign\b|always\b|endmodule\b|initial\b)", text):
        item = item.strip()
        if item.startswith("assign"):
            _target, _, expr = item[len("assign"):].rstrip(";").partition("=")
            if re.match(r"\s*\d+'h[0-9a-fA-F]+\s*>>", expr):
                luts += 1
        elif item.startswith("always"):
            header = re.match(r"always\s*@\(posedge\s+(\S+?)\)", item)
            if not header:
                raise ToolError(f"power: unsupported process in the netlist: {item[:60]!r}")
            body = item[header.end():]
            targets = {key for lhs in re.findall(rf"({_IDENT}\s*(?:\[[\d:]+\])?)\s*<=", body)
                       for key in _sources(lhs, widths)}
            flip_flops += len(targets)
            expr = re.sub(rf"{_IDENT}\s*(?:\[[\d:]+\])?\s*<=", " ", body)
        else:
            continue
        for key in _sources(expr, widths):
            fanout[key] = fanout.get(key, 0) + 1
    return Netlist(modules[0], widths, fanout, flip_flops, luts)


def _plain(name: str) -> str:
    """A net name without Verilog's escape (netlist and VCD spell escaped names differently)."""
    return name[1:] if name.startswith("\\") else name


@dataclass
class Activity:
    """Toggles per net bit inside the measured window, and the window's clock cycles."""

    toggles: dict[tuple[str, int], int] = field(default_factory=dict)
    cycles: int = 0

    @property
    def total_toggles(self) -> int:
        return sum(self.toggles.values())


def _vcd_tokens(path: Path):
    with open(path) as f:
        for line in f:
            yield from line.split()


def count_activity(vcd: str | Path, scope: str, gate: str, clock: str) -> Activity:
    """Toggles of every variable directly under ``scope`` (a dotted VCD scope path) while ``gate`` is 1.

    ``gate`` and ``clock`` are dotted paths of 1-bit variables (``"tb.measure"``);
    the window's cycles are the clock's rising edges while the gate is 1. A
    change to or from x / z is not a toggle; a vector's toggles count per bit.
    """
    path = Path(vcd)
    tokens = _vcd_tokens(path)
    stack: list[str] = []
    codes: dict[str, list[tuple[str, int, int]]] = {}  # code -> [(name, msb, lsb)]
    widths: dict[str, int] = {}
    gate_code = clock_code = None
    for tok in tokens:
        if tok == "$scope":
            next(tokens)
            stack.append(next(tokens))
        elif tok == "$upscope":
            stack.pop()
        elif tok == "$var":
            next(tokens)  # the kind (wire / reg / ...)
            width, code, name = int(next(tokens)), next(tokens), _plain(next(tokens))
            rest = next(tokens)
            msb, lsb = width - 1, 0
            if rest != "$end":
                m = re.match(r"\[(\d+)(?::(\d+))?\]", rest)
                if m:
                    msb = int(m.group(1))
                    lsb = int(m.group(2)) if m.group(2) is not None else msb
                next(tokens)
            where = ".".join(stack)
            widths[code] = width
            if where == scope:
                codes.setdefault(code, []).append((name, msb, lsb))
            if f"{where}.{name}" == gate:
                gate_code = code
            if f"{where}.{name}" == clock:
                clock_code = code
        elif tok == "$enddefinitions":
            next(tokens)
            break
    if not codes:
        raise ToolError(f"power: no variables under scope {scope!r} in {path.name}")
    if gate_code is None or clock_code is None:
        raise ToolError(f"power: {gate if gate_code is None else clock} is not in {path.name}")
    values: dict[str, str] = {}
    counts: dict[str, list[int]] = {}
    activity = Activity()
    gate_on = False

    def flush(changes: list[tuple[str, str]]) -> None:
        """One timestamp's changes; the gate's new value applies to all of them (file order is arbitrary)."""
        nonlocal gate_on
        for code, value in changes:
            if code == gate_code:
                gate_on = value == "1"
        for code, value in changes:
            old = values.get(code)
            values[code] = value
            if not gate_on or old is None:
                continue
            if code == clock_code and value == "1" and old == "0":
                activity.cycles += 1
            if code not in codes or value[:1] in ("r", "R"):
                continue
            width = widths[code]
            a = old.rjust(width, old[0] if old[0] in "xz" else "0")
            b = value.rjust(width, value[0] if value[0] in "xz" else "0")
            per_bit = counts.setdefault(code, [0] * width)
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y and x in "01" and y in "01":
                    per_bit[i] += 1

    pending: list[tuple[str, str]] = []
    for tok in tokens:
        c0 = tok[0]
        if c0 == "#":
            flush(pending)
            pending = []
            continue
        if c0 == "$":
            continue
        if c0 in "bB":
            pending.append((next(tokens), tok[1:]))
        elif c0 in "rR":
            pending.append((next(tokens), "r"))
        else:
            pending.append((tok[1:], c0))
    flush(pending)
    for code, per_bit in counts.items():
        for name, msb, lsb in codes[code]:
            step = -1 if msb >= lsb else 1
            for i, bit in enumerate(range(msb, lsb + step, step)):
                if per_bit[i]:
                    key = (name, bit)
                    activity.toggles[key] = activity.toggles.get(key, 0) + per_bit[i]
    return activity


def switching_units(netlist: Netlist, activity: Activity) -> dict[str, float]:
    """Load-weighted toggles (``1 + fanout`` each) plus the flip-flops' clock load over the window."""
    data = sum(n * (1 + netlist.bit_fanout(name, bit)) for (name, bit), n in activity.toggles.items())
    clock = CLOCK_UNITS_PER_FF * netlist.flip_flops * activity.cycles
    return {"data_units": float(data), "clock_units": float(clock), "units": float(data + clock),
            "toggles": activity.total_toggles, "cycles": activity.cycles}


def run_icarus(sources: dict[str, str], top: str, workdir: Path, timeout_s: float = 3600.0) -> Path:
    """Compile and run plain Verilog ``sources`` (name -> text) with Icarus in ``workdir``."""
    iverilog, vvp = shutil.which("iverilog"), shutil.which("vvp")
    if not iverilog or not vvp:
        raise ToolError("power: Icarus Verilog not found (apt-get install iverilog)")
    workdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in sources.items():
        (workdir / name).write_text(text)
        paths.append(name)
    from rtl.synth import run_tool

    run_tool([iverilog, "-g2012", "-s", top, "-o", "sim.vvp", *paths], workdir, "power: iverilog", timeout_s)
    run_tool([vvp, "-n", "sim.vvp"], workdir, "power: vvp", timeout_s)
    return workdir


def rename_module(netlist_text: str, old: str, new: str) -> str:
    """The netlist with its module renamed (so a wrapper can take the original name)."""
    out, n = re.subn(rf"^module\s+{re.escape(old)}\s*\(", f"module {new}(", netlist_text, count=1, flags=re.M)
    if not n:
        raise ToolError(f"power: module {old!r} not found in the netlist")
    return out


def _stream_tb(dut: str, inputs: list[tuple[str, int]], words: list[list[int]], gate_cycles: tuple[int, int],
               record: tuple[str, str, int] | None = None) -> str:
    """A testbench that applies one word per input port per cycle and dumps ``dut``'s nets;
    ``record = (valid, data, width)``: writes ``data`` to outputs.txt at each cycle ``valid`` is high."""
    regs = "\n".join(f"  reg [{w - 1}:0] {name} = 0;" for name, w in inputs)
    conns = ", ".join(f".{name}({name})" for name, _ in inputs)
    monitor = ""
    if record:
        valid, data, width = record
        conns += f", .{valid}({valid}), .{data}({data})"
        monitor = (f"  wire {valid};\n  wire [{width - 1}:0] {data};\n  integer f;\n"
                   f"  initial f = $fopen(\"outputs.txt\");\n"
                   f"  always @(negedge clk) if ({valid} === 1'b1) $fdisplay(f, \"%h\", {data});\n")
    steps = []
    for cycle, row in enumerate(words):
        assigns = " ".join(f"{name} = {w}'h{v:x};" for (name, w), v in zip(inputs, row))
        steps.append(f"    @(negedge clk); {assigns}" + (" measure = 1;" if cycle == gate_cycles[0] else ""))
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0;
  reg rst = 0;
  reg measure = 0;
{regs}
{monitor}  {dut} dut(.clk(clk), .rst(rst), {conns});
  always #5 clk = ~clk;
  initial begin
    $dumpfile("activity.vcd");
    $dumpvars(0, tb.dut);
    $dumpvars(1, tb.measure, tb.clk);
{chr(10).join(steps)}
    repeat ({gate_cycles[1]}) @(negedge clk);
    measure = 0;
    @(negedge clk);
    $finish;
  end
endmodule
"""


def stream_units(netlist_text: str, top: str, inputs: list[tuple[str, int]], words: list[list[int]],
                 warmup_cycles: int = 0, drain_cycles: int = 0, workdir: Path | None = None,
                 record: tuple[str, str, int] | None = None) -> dict:
    """Switching units of a netlist fed one input word per port per cycle (a streaming datapath).

    The window opens at cycle ``warmup_cycles`` and closes ``drain_cycles``
    after the last word; only ``top``'s own nets count (the testbench's
    ``measure`` gate is dumped beside them, so the window is read from the
    same VCD). With ``record = (valid port, data port, width)`` the result's
    ``"outputs"`` lists ``data`` at every cycle ``valid`` is high, so the
    caller can check what the netlist computed.
    """
    netlist = parse_netlist(netlist_text)
    tb = _stream_tb(top, inputs, words, (warmup_cycles, drain_cycles), record)
    with (tempfile.TemporaryDirectory(prefix="archsim-power-") if workdir is None
          else contextlib.nullcontext(str(workdir))) as tmp:
        work = Path(tmp)
        run_icarus({"netlist.v": netlist_text, "tb.v": tb}, "tb", work)
        activity = count_activity(work / "activity.vcd", "tb.dut", "tb.measure", "tb.clk")
        outputs = []
        if record:
            lines = (work / "outputs.txt").read_text().split()
            outputs = [int(v, 16) if all(c in "0123456789abcdef" for c in v) else None for v in lines]
    units = switching_units(netlist, activity)
    return {**units, "outputs": outputs} if record else units


def calibration_pj_per_unit(tech_pj_per_mult: float, cycles: int = 400, seed: int = 0) -> float:
    """pJ per switching unit such that a registered int8 x int8 multiplier's measured units per
    multiply (uniform random operands) equal ``tech_pj_per_mult`` (the tech table's ``mult.int8``)."""
    import numpy as np

    from rtl.synth import synthesize_verilog

    text = ("module archsim_power_ref(input clk, input rst, input signed [7:0] a, input signed [7:0] b,\n"
            "  output reg signed [15:0] p);\n  reg signed [7:0] ra, rb;\n"
            "  always @(posedge clk) begin ra <= a; rb <= b; p <= ra * rb; end\nendmodule\n")
    synth = synthesize_verilog(text, "archsim_power_ref", target="generic", netlist=True)
    netlist_text = Path(synth["netlist"]).read_text()
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 256, size=(cycles, 2)).tolist()
    units = stream_units(netlist_text, "archsim_power_ref", [("a", 8), ("b", 8)], words,
                         warmup_cycles=2, drain_cycles=0)
    return tech_pj_per_mult * units["cycles"] / units["units"]
