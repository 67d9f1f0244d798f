"""Hierarchical netlists for synthesis: one Verilog module per distinct body.

Amaranth emits one Verilog module per submodule *instance* (``top.array.lane0.exp2``,
``top.array.lane1.exp2``, ...) even when two instances are the same hardware. yosys then optimizes
each copy, and a flat flow optimizes all of them as one netlist (on the 2x2 attention array, Debian's
yosys 0.23 was still in ``opt`` after 44 minutes). :func:`dedupe_modules` keeps one module per distinct
body (its own name aside, its children's names replaced by their kept names, children first) and points
every instance at the kept one, so that a ``-noflatten`` flow maps each distinct unit once; nextpnr
flattens the hierarchy when it reads the netlist.
"""
from __future__ import annotations

import re

_MODULE_RE = re.compile(r"(?ms)^module (\\\S+|\w+)\s*\(.*?^endmodule\s*$")
_ESCAPED_RE = re.compile(r"\\\S+")
#: yosys' write_verilog numbers one helper reg per module (``dump_module$4``): not part of the hardware
_BACKEND_REG_RE = re.compile(r"(dump_module)\$\d+")


def _header_sorted(body: str) -> str:
    """``body`` with its header's port list sorted: Amaranth lists a module's ports in the order of their
    first use, which differs between equal instances; its instances connect ports by name."""
    head, sep, rest = body.partition(";")
    name, _, ports = head.partition("(")
    return name + "(" + ",".join(sorted(p.strip() for p in ports.rstrip(")").split(","))) + ")" + sep + rest


def _rename(text: str, names: dict[str, str]) -> str:
    """``text`` with every escaped identifier found in ``names`` replaced by its value."""
    return _ESCAPED_RE.sub(lambda m: names.get(m.group(0), m.group(0)), text)


def dedupe_modules(verilog: str) -> tuple[str, dict[str, str]]:
    """``verilog`` with duplicate modules removed, and ``{removed name: kept name}``.

    Two modules are duplicates when their texts are equal once the module's own name and the names of
    the modules it instantiates (already deduplicated) are replaced, yosys' numbered helper reg renamed
    and the header's port list sorted; the first one in the text is kept.
    Only escaped names (Amaranth's ``\\top.sub``) are merged: the top module is never removed.
    """
    spans = [(m.group(1), m.start(), m.end()) for m in _MODULE_RE.finditer(verilog)]
    bodies = {name: verilog[start:end] for name, start, end in spans}
    children = {name: {c for c in _ESCAPED_RE.findall(body) if c in bodies and c != name}
                for name, body in bodies.items()}
    kept_by_key: dict[str, str] = {}
    merged: dict[str, str] = {}
    done: set[str] = set()
    order = [name for name, _, _ in spans]
    while len(done) < len(order):
        ready = [n for n in order if n not in done and children[n] <= done]
        if not ready:
            raise ValueError("dedupe_modules: the module hierarchy has a cycle")
        for name in ready:
            done.add(name)
            if not name.startswith("\\"):
                continue
            key = _header_sorted(_BACKEND_REG_RE.sub(r"\1$N", _rename(bodies[name], {**merged, name: "\\<self>"})))
            if key in kept_by_key:
                merged[name] = kept_by_key[key]
            else:
                kept_by_key[key] = name
    if not merged:
        return verilog, {}
    out, pos = [], 0
    for name, start, end in spans:
        out.append(verilog[pos:start])
        if name in merged:  # drop the module and the attribute lines just before it
            out[-1] = re.sub(r"(?:\(\*[^\n]*\*\)\s*\n)*$", "", out[-1])
        else:
            out.append(_rename(verilog[start:end], merged))
        pos = end
    out.append(verilog[pos:])
    return "".join(out), merged
