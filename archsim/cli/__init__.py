"""The ``archsim`` command line.

Each subcommand lives in its own module under ``archsim.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed namespace and returning an exit status. Adding a
subcommand means adding a module and one line to ``_SUBCOMMANDS``.

User errors (:class:`archsim.errors.ArchsimError`) are printed as one line on
stderr with exit status 2, never as a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from archsim.errors import ArchsimError

# module names under archsim.cli, in the order they appear in --help
_SUBCOMMANDS = ["run", "presets", "workload", "rtl", "sweep", "compare"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="archsim",
        description="Simulate deep-learning accelerators, generate their RTL, and check one against the other.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMANDS:
        try:
            module = importlib.import_module(f"archsim.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"archsim.cli.{name}":
                continue  # subcommand not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ArchsimError as err:
        print(f"archsim: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("archsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
