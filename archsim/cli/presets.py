"""``archsim presets``: list every shipped preset with a one-line description."""
from __future__ import annotations

import argparse

SWEEP_PRESET_PACKAGE = "archsim.presets.sweeps"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "presets",
        help="list shipped presets (arch specs, sweeps, tech tables)",
        description="List every shipped preset (arch specs, sweeps and technology tables) with a one-line description.",
    )
    p.set_defaults(func=run)


def preset_table() -> list[tuple[str, list[tuple[str, str]]]]:
    """[(section title, [(name, description)])] for arch specs, sweeps and tech tables."""
    from archsim.spec.load import ARCH_PRESET_PACKAGE, TECH_PRESET_PACKAGE, preset_descriptions

    return [
        ("arch specs (archsim run --arch NAME)", list(preset_descriptions(ARCH_PRESET_PACKAGE).items())),
        ("sweeps (archsim sweep NAME)", list(preset_descriptions(SWEEP_PRESET_PACKAGE).items())),
        ("tech tables (tech: NAME in an arch spec)", list(preset_descriptions(TECH_PRESET_PACKAGE).items())),
    ]


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
