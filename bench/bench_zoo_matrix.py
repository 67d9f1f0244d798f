"""Benchmark: every zoo workload on every shipped arch preset, time and peak memory.

Each case runs ``archsim.simulate`` in a forked child of a process that has
imported archsim (so imports are not counted, and no mapping or engine memo
is shared between cases): the time is the child's simulate() (workload build
+ mapping + engine), the memory its peak RSS (``ru_maxrss``, which includes
the imported libraries, ~45 MB). LLMs run prefill and decode (decode with the
zoo's default KV length). Targets per case: <= 1 s and <= 200 MB; the time
judged is the child's CPU time (on a shared machine wall time also counts
other processes; both are printed).

    python3 bench/bench_zoo_matrix.py [--arch NAME ...] [--workload NAME ...] [--csv FILE]

Prints one row per case (status ok / capacity / error), then the cases over
target and the totals.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import sys
import time

TARGET_S = 1.0
TARGET_MB = 200.0


def _child(arch: str, workload: str, phase: str | None, wfd: int) -> None:
    import archsim
    from archsim.errors import ArchsimError

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        archsim.simulate(workload, arch, **({"phase": phase} if phase else {}))
        status, note = "ok", ""
    except ArchsimError as err:
        text = str(err)
        status = "capacity" if "do not fit" in text and "PIM DRAM" in text else "error"
        note = text[:160]
    except Exception as err:  # noqa: BLE001 - a benchmark reports every failure
        status, note = "error", f"{type(err).__name__}: {err}"[:160]
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    os.write(wfd, json.dumps({"status": status, "s": dt, "cpu_s": cpu, "mb": rss_mb, "note": note}).encode())
    os.close(wfd)
    os._exit(0)


def run_case(arch: str, workload: str, phase: str | None) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(arch, workload, phase, w)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, code = os.waitpid(pid, 0)
    if not data:
        return {"status": "error", "s": float("nan"), "cpu_s": float("nan"), "mb": float("nan"),
                "note": f"child died ({code})"}
    return json.loads(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", action="append", help="only these presets (repeatable)")
    ap.add_argument("--workload", action="append", help="only these zoo workloads (repeatable)")
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    args = ap.parse_args(argv)

    import archsim  # noqa: F401 - warm imports before forking
    import mappers  # noqa: F401
    import workloads
    from archsim import fmt
    from archsim.spec.load import preset_names
    from workloads.zoo import builder_params

    archs = args.arch or preset_names()
    names = args.workload or workloads.zoo_names()
    rows = []
    t_all = time.perf_counter()
    for arch in archs:
        for w in names:
            for phase in (("prefill", "decode") if "phase" in builder_params(w) else (None,)):
                res = run_case(arch, w, phase)
                row = {"arch": arch, "workload": w, "phase": phase or "", **res}
                rows.append(row)
                print(f"{arch:<22} {w:<16} {phase or '':<8} {res['status']:<8} {res['s']:7.3f} s "
                      f"{res['cpu_s']:7.3f} s cpu {res['mb']:7.1f} MB  {res['note'][:70]}", flush=True)
    wall = time.perf_counter() - t_all

    # CPU seconds against the target: on a shared machine wall time also counts other processes
    over = [r for r in rows if r["status"] != "error" and (r["cpu_s"] > TARGET_S or r["mb"] > TARGET_MB)]
    errors = [r for r in rows if r["status"] == "error"]
    print()
    print(f"{len(rows)} cases ({len(archs)} presets x {len(names)} workloads, LLMs in both phases) in "
          f"{fmt.seconds(wall)}: {sum(r['status'] == 'ok' for r in rows)} ok, "
          f"{sum(r['status'] == 'capacity' for r in rows)} documented capacity errors, {len(errors)} errors")
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        ts = sorted(r["s"] for r in ok)
        cs = sorted(r["cpu_s"] for r in ok)
        ms = sorted(r["mb"] for r in ok)
        print(f"wall per case: median {fmt.seconds(ts[len(ts) // 2])}, max {fmt.seconds(ts[-1])}; "
              f"CPU per case: median {fmt.seconds(cs[len(cs) // 2])}, max {fmt.seconds(cs[-1])}; "
              f"peak RSS: median {ms[len(ms) // 2]:.0f} MB, max {ms[-1]:.0f} MB")
    print(f"over target (> {TARGET_S:g} CPU s or > {TARGET_MB:g} MB): {len(over)}")
    if over:
        print(fmt.table([[r["arch"], r["workload"], r["phase"], f"{r['cpu_s']:.2f} s", f"{r['s']:.2f} s",
                          f"{r['mb']:.0f} MB"] for r in sorted(over, key=lambda r: -r["cpu_s"])],
                        header=["arch", "workload", "phase", "CPU", "wall", "peak RSS"]))
    for r in errors:
        print(f"ERROR {r['arch']} x {r['workload']} {r['phase']}: {r['note']}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
