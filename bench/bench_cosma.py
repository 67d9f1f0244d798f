"""COSMA (Li, Gupta, Malik, arXiv:2311.18246): non-compulsory DRAM traffic of each scratchpad allocation.

Prints, per network and scratchpad size, the compulsory bytes and the non-compulsory bytes
left by greedy (archsim today: layer by layer, every layer output stored and re-loaded;
NOT the paper's baselines), the divide-and-conquer heuristic and the ILP, the ILP's
reduction vs greedy, and the ILP solve time (HiGHS, one thread). Paper: -84% non-compulsory
accesses on average vs existing methods (heuristic: -85% on NAS graphs).

    python bench/bench_cosma.py   (about a minute: the NAS graph's joint ILP stops at its limit)
"""
from __future__ import annotations

from mappers.allocation.study import mean_reduction, study


def main() -> None:
    for schedule in (False, True):
        print("ILP over " + ("operator order, residency and eviction (30 s limit per problem)" if schedule
                             else "residency and eviction in the graph's operator order"))
        table(study(schedule=schedule, time_limit_s=30.0))
        print()


def table(rows) -> None:
    print(f"{'network':14s} {'SPM KiB':>7s} {'compuls. KiB':>12s} {'greedy KiB':>10s} {'heur. KiB':>9s} "
          f"{'ILP KiB':>8s} {'ILP vs greedy':>13s} {'heur. vs greedy':>15s} {'heur. s':>7s} {'ILP addr. KiB':>13s} {'ILP+addr KiB':>12s} {'ILP solve s':>11s}")
    for r in rows:
        nc = r.non_compulsory_bytes
        red = r.reduction("ilp")
        hred = r.reduction("heuristic")
        print(f"{r.network:14s} {r.capacity_kib:7d} {r.compulsory_bytes / 1024:12.0f} {nc['greedy'] / 1024:10.0f} "
              f"{nc['heuristic'] / 1024:9.0f} {nc['ilp'] / 1024:8.0f} "
              f"{'n/a' if red is None else f'{-100 * red:+.1f}%':>13s} "
              f"{'n/a' if hred is None else f'{-100 * hred:+.1f}%':>15s} {r.heuristic_solve_s:7.2f} "
              f"{r.ilp_address_peak_bytes / 1024:12.0f}{'*' if r.ilp_address_peak_bytes > r.capacity_kib << 10 else ' '} "
              f"{'none' if r.ilp_fitted_bytes < 0 else f'{r.ilp_fitted_bytes / 1024:.0f}':>12s} "
              f"{r.ilp_solve_s:11.3f}{'' if r.ilp_optimal else ' (time limit)'}")
    print("ILP addr. KiB: scratchpad the ILP plan needs with first-fit addresses; * = more than the "
          "scratchpad (the residency ILP does not model fragmentation); ILP+addr KiB: non-compulsory "
          "traffic of the ILP re-solved with less capacity until first-fit addresses fit")
    print(f"mean non-compulsory reduction vs archsim greedy: ILP {-100 * mean_reduction(rows, 'ilp'):+.1f}%, "
          f"heuristic {-100 * mean_reduction(rows, 'heuristic'):+.1f}% "
          "(paper: -84% ILP / -85% heuristic vs its baselines, which archsim's greedy is not)")
    fitted = [1 - r.ilp_fitted_bytes / r.non_compulsory_bytes["greedy"] for r in rows
              if r.non_compulsory_bytes["greedy"] and r.ilp_fitted_bytes >= 0]
    print(f"with first-fit addresses that fit: ILP {-100 * sum(fitted) / len(fitted):+.1f}% "
          f"({len(fitted)} of {len(rows)} rows placed)")
    by_net = {}
    for r in rows:
        by_net[r.network] = max(by_net.get(r.network, 0.0), r.ilp_solve_s)
    print("max ILP solve time per network: " + ", ".join(f"{n} {s:.3f} s" for n, s in by_net.items()))


if __name__ == "__main__":
    main()
