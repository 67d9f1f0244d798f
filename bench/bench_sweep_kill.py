"""A sweep under a kill -9 loop: kills, resumes, points recorded, duplicates, orphans.

Starts a sweep (fake evaluator, 2 worker processes) again and again, SIGKILLs
its parent at a random moment each time (its workers must die by themselves),
and finally lets it finish. Prints the figures the reliability issue asks for;
exits 1 if any point is lost or recorded twice, or any worker outlived its
parent::

    python bench/bench_sweep_kill.py [--kills 40] [--rows 48] [--seed 1] [--delay 0.1]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tests.fuzz.sweep_kill import kill_loop  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=40, help="SIGKILLs before the last run (default 40)")
    parser.add_argument("--rows", type=int, default=48, help="sweep size: rows values x 3 x 2 x 2 points (default 48)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill times")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds per point in the fake evaluator (default 0.1)")
    parser.add_argument("--min-wait", type=float, default=1.5, dest="min_wait",
                        help="earliest kill after a start, s (a start imports archsim first; default 1.5)")
    parser.add_argument("--verbose", action="store_true", help="one line per kill")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="archsim-kill-") as tmp:
        figures = kill_loop(Path(tmp) / "out", kills=args.kills, seed=args.seed, delay_s=args.delay, rows=args.rows,
                            min_wait_s=args.min_wait, max_wait_s=args.min_wait + 2.0, log=print if args.verbose else (lambda text: None))
    elapsed = time.perf_counter() - start
    print(f"kill -9 loop on a sweep of {figures['points']} points ({elapsed:.0f} s):")
    for key in ("kills", "resumes", "workers_seen", "orphans", "torn_lines", "recorded", "duplicates", "lost",
                "unexpected"):
        print(f"  {key:<13} {figures[key]}")
    ok = (figures["duplicates"] == 0 and figures["lost"] == 0 and figures["orphans"] == 0
          and figures["recorded"] == figures["points"])
    print("OK: every point recorded exactly once, no orphan workers" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
