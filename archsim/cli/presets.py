"""``archsim presets``: list the shipped presets, show one's YAML, diff two.

    archsim presets                      every preset with a one-line description
    archsim presets show systolic-32x32-ws
    archsim presets diff systolic-32x32-ws systolic-32x32-os
"""
from __future__ import annotations

import argparse
from typing import Any

from archsim.errors import SpecError

SWEEP_PRESET_PACKAGE = "archsim.presets.sweeps"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "presets",
        help="list shipped presets (arch specs, sweeps, tech tables); show or diff them",
        description="List every shipped preset (arch specs, sweeps and technology tables) with a one-line "
        "description; 'show NAME' prints a preset's YAML, 'diff A B' what differs between two.",
    )
    sub = p.add_subparsers(dest="presets_command", metavar="ACTION")
    sub.add_parser("list", help="every preset with its description (the default)",
                   description="Every shipped preset with its one-line description.").set_defaults(func=run)
    s = sub.add_parser("show", help="print a preset's YAML file",
                       description="Print a shipped preset's YAML file as shipped (an arch spec, a sweep or a "
                       "technology table), with the path it was read from as a comment.")
    s.add_argument("name", metavar="NAME")
    s.set_defaults(func=run_show)
    d = sub.add_parser("diff", help="what differs between two presets",
                       description="What differs between two presets of one kind: for arch specs the resolved "
                       "values (defaults filled, tech tables merged), one dotted key a line; for sweeps and "
                       "technology tables the YAML's values.")
    d.add_argument("a", metavar="A")
    d.add_argument("b", metavar="B")
    d.set_defaults(func=run_diff)
    p.set_defaults(func=run)


def _packages() -> list[tuple[str, str]]:
    from archsim.spec.load import ARCH_PRESET_PACKAGE, TECH_PRESET_PACKAGE

    return [("arch spec", ARCH_PRESET_PACKAGE), ("sweep", SWEEP_PRESET_PACKAGE), ("tech table", TECH_PRESET_PACKAGE)]


def preset_table() -> list[tuple[str, list[tuple[str, str]]]]:
    """[(section title, [(name, description)])] for arch specs, sweeps and tech tables."""
    from archsim.spec.load import ARCH_PRESET_PACKAGE, TECH_PRESET_PACKAGE, preset_descriptions

    return [
        ("arch specs (archsim run --arch NAME)", list(preset_descriptions(ARCH_PRESET_PACKAGE).items())),
        ("sweeps (archsim sweep NAME)", list(preset_descriptions(SWEEP_PRESET_PACKAGE).items())),
        ("tech tables (tech: NAME in an arch spec)", list(preset_descriptions(TECH_PRESET_PACKAGE).items())),
    ]


def find_preset(name: str) -> tuple[str, Any]:
    """(kind, file) of the shipped preset ``name`` (arch specs first), or a :class:`SpecError` with
    the closest names."""
    import difflib

    from archsim.spec.load import _preset_files

    every: list[str] = []
    for kind, package in _packages():
        files = _preset_files(package)
        if name in files:
            return kind, files[name]
        every += list(files)
    close = difflib.get_close_matches(name, every, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise SpecError(f"presets: no preset named {name!r}{hint}; 'archsim presets' lists them")


def run(args: argparse.Namespace) -> int:
    for i, (title, rows) in enumerate(preset_table()):
        if i:
            print()
        print(f"{title}:")
        if not rows:
            print("  (none)")
            continue
        width = max(len(name) for name, _ in rows)
        for name, desc in rows:
            print(f"  {name:<{width}}  {desc}".rstrip())
    return 0


def run_show(args: argparse.Namespace) -> int:
    kind, entry = find_preset(args.name)
    text = entry.read_text(encoding="utf-8")
    print(f"# {kind} preset {args.name}: {entry}")
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists stay values)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _values(name: str, kind: str, entry: Any) -> dict[str, Any]:
    if kind == "arch spec":
        from archsim.spec import load_arch

        doc = load_arch(name).to_dict()
        doc.pop("source", None)
        return flatten(doc)
    from archsim.inputs import load_yaml_text

    return flatten(load_yaml_text(entry.read_text(encoding="utf-8"), str(entry), SpecError) or {})


def preset_diff(a: str, b: str) -> list[tuple[str, str, str]]:
    """[(dotted key, value in a, value in b)] for every key whose values differ ("-" where absent)."""
    kind_a, entry_a = find_preset(a)
    kind_b, entry_b = find_preset(b)
    if kind_a != kind_b:
        raise SpecError(f"presets diff: {a} is an {kind_a} preset and {b} a {kind_b} preset; expected two of one kind")
    va, vb = _values(a, kind_a, entry_a), _values(b, kind_b, entry_b)
    missing = object()
    rows = []
    for key in list(va) + [k for k in vb if k not in va]:
        x, y = va.get(key, missing), vb.get(key, missing)
        if x != y:
            rows.append((key, "-" if x is missing else _shown(x), "-" if y is missing else _shown(y)))
    return rows


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


def run_diff(args: argparse.Namespace) -> int:
    from archsim import fmt

    rows = preset_diff(args.a, args.b)
    if not rows:
        print(f"{args.a} and {args.b}: no differences")
        return 0
    print(fmt.table([list(r) for r in rows], header=["key", args.a, args.b], align="lll"))
    return 0
