"""``archsim validate``: regenerate every published comparison and print ours beside the paper's."""
from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="reproduce the published results archsim claims (ours vs paper, tolerance, pass/fail)",
        description="Regenerate every published comparison archsim claims and print archsim's figure "
        "beside the published one, with the tolerance and pass/fail. Exit status 1 if any fails (a figure "
        "archsim is known not to reproduce, for a stated reason, shows as 'differs').",
    )
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this comparison (repeatable)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")
    parser.add_argument("--list", action="store_true", help="list the comparisons and exit")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from archsim import validate

    if args.list:
        print("\n".join(validate.groups()))
        return 0
    names = args.only or validate.groups()
    unknown = [n for n in names if n not in validate.groups()]
    if unknown:  # before running anything: a typo should not cost the other comparisons' time
        from archsim.errors import ArchsimError

        raise ArchsimError(f"--only: unknown comparison {unknown[0]!r}; known: {', '.join(validate.groups()) or 'none'}")
    claims = []
    for name in names:
        print(f"validate: {name} ...", file=sys.stderr, flush=True)
        claims.extend(validate.run(name))
    if args.json:
        print(json.dumps([c.as_dict() for c in claims], indent=1))
    else:
        _print_table(claims)
    return 0 if all(c.status != "FAIL" for c in claims) else 1


def _print_table(claims) -> None:
    header = ("comparison", "quantity", "archsim", "published", "error", "tol", "result", "note")
    rows = [
        (
            c.group,
            c.name + (f" [{c.unit}]" if c.unit else ""),
            _number(c.ours),
            _number(c.published),
            f"{100 * c.rel_error:.1f}%",
            f"{100 * c.rel_tol:.3g}%",
            c.status,
            "; ".join(x for x in (c.note, c.explained and f"differs because: {c.explained}") if x),
        )
        for c in claims
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    passed = sum(c.passed for c in claims)
    differs = sum(c.status == "differs" for c in claims)
    line = f"{passed} of {len(claims)} published figures reproduced within tolerance"
    if differs:
        line += f"; {differs} differ for the reason in their note (a different baseline or setup)"
    print(line)


def _number(value: float) -> str:
    """Whole numbers in full (cycle counts must show their last digit), others to 4 significant digits."""
    if value == value and abs(value) < 1e15 and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4g}"
