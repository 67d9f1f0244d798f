"""The COSMA reproduction study: traffic of each allocation on the paper's kinds of networks.

Shared by ``bench/bench_cosma.py`` (the table) and ``archsim.validate.cosma`` (the claims).
"""
from __future__ import annotations

from dataclasses import dataclass

from mappers.allocation.addresses import assign_addresses
from mappers.allocation.plan import ALLOCATIONS, place_first_fit, place_with_ilp, plan_allocation
from mappers.allocation.problem import traffic

#: network -> how it is built (a CNN, a thin-backbone CNN, a NAS-style many-branch graph, a transformer)
NETWORKS = ("resnet50", "mobilenet-v2", "nas-4x6", "bert-base")
#: scratchpad sizes studied
CAPACITIES_KIB = (256, 512, 1024, 2048)


def build_network(name: str):
    """The graph of a study network (zoo name, or ``nas-CxB``: :func:`~mappers.allocation.synthetic.nas_cells`)."""
    if name == "mobilenet-v2":
        from mappers.allocation.synthetic import mobilenet_v2

        return mobilenet_v2()
    if name.startswith("nas-"):
        from mappers.allocation.synthetic import nas_cells

        cells, branches = (int(v) for v in name[4:].split("x"))
        return nas_cells(cells, branches, size=56)
    from workloads.zoo import build

    return build(name)


@dataclass(frozen=True)
class Row:
    """One network at one scratchpad size: non-compulsory bytes per allocation, ILP solve time."""

    network: str
    capacity_kib: int
    compulsory_bytes: int
    non_compulsory_bytes: dict[str, int]
    ilp_solve_s: float
    ilp_optimal: bool
    heuristic_solve_s: float = float("nan")
    #: scratchpad bytes the ILP plan needs once each resident run gets an address (first fit)
    ilp_address_peak_bytes: int = 0
    #: non-compulsory bytes of the ILP plan re-solved until its first-fit addresses fit (-1: none does)
    ilp_fitted_bytes: int = 0
    #: non-compulsory bytes with the address ILP's addresses (in the ILP's order; -1: none fits)
    placed_bytes: int = 0
    #: how the placed plan was found (:class:`~mappers.allocation.plan.Addresses`: method, optimal, time, note)
    placed_method: str = ""
    placed_optimal: bool = False
    placed_solve_s: float = float("nan")
    placed_note: str = ""

    def reduction(self, method: str, against: str = "greedy") -> float | None:
        """Fractional reduction of non-compulsory bytes of ``method`` vs ``against`` (None if that is 0)."""
        base = self.non_compulsory_bytes[against]
        return None if base == 0 else 1 - self.non_compulsory_bytes[method] / base


def study(networks=NETWORKS, capacities_kib=CAPACITIES_KIB, schedule: bool = False,
          time_limit_s: float = 120.0, methods=ALLOCATIONS, addresses: bool = True) -> list[Row]:
    """Rows of the ``methods``' traffic (``schedule``: the ILP also chooses the order; a method
    left out has no entry, and ``ilp_solve_s`` is NaN without the ILP; ``addresses``: the ILP's
    plan also placed by first fit + re-solve and by the address ILP, in the ILP's order)."""
    rows = []
    for name in networks:
        graph = build_network(name)
        for kib in capacities_kib:
            got = {m: plan_allocation(graph, kib << 10, m, schedule=schedule, time_limit_s=time_limit_s)
                   if m == "ilp" else plan_allocation(graph, kib << 10, m) for m in ("greedy", *methods)}
            ilp = got.get("ilp")
            placed = {}
            if ilp and addresses:
                fitted, first_fit = place_first_fit(ilp.problem, ilp.plan, time_limit_s)
                plan, by_ilp = place_with_ilp(ilp.problem, ilp.plan, time_limit_s)
                placed = dict(ilp_address_peak_bytes=assign_addresses(ilp.problem, ilp.plan)[1],
                              ilp_fitted_bytes=_bytes(ilp.problem, fitted, first_fit.fits),
                              placed_bytes=_bytes(ilp.problem, plan, by_ilp.fits), placed_method=by_ilp.method,
                              placed_optimal=by_ilp.optimal, placed_solve_s=by_ilp.solve_s, placed_note=by_ilp.note)
            rows.append(Row(name, kib, got["greedy"].traffic.compulsory_bytes,
                            {m: a.traffic.non_compulsory_bytes for m, a in got.items()},
                            ilp.solve_s if ilp else float("nan"), bool(ilp and ilp.optimal),
                            got["heuristic"].solve_s if "heuristic" in got else float("nan"), **placed))
    return rows


def _bytes(problem, plan, fits: bool) -> int:
    return traffic(problem, plan).non_compulsory_bytes if fits else -1


def mean_placed_reduction(rows: list[Row], which: str = "placed") -> float:
    """Mean over rows (with non-zero greedy traffic) of the reduction vs greedy of the ILP's plan
    with addresses: ``placed`` (the address ILP) or ``fitted`` (first fit + re-solve); a row where
    none fits counts as no reduction."""
    values = []
    for r in rows:
        base = r.non_compulsory_bytes["greedy"]
        got = r.placed_bytes if which == "placed" else r.ilp_fitted_bytes
        if base:
            values.append(0.0 if got < 0 else 1 - got / base)
    return sum(values) / len(values)


def mean_reduction(rows: list[Row], method: str) -> float:
    """Mean over rows (with non-zero greedy traffic) of ``method``'s reduction vs greedy."""
    values = [r.reduction(method) for r in rows if r.reduction(method) is not None]
    return sum(values) / len(values)


#: the real-pipeline study: networks (MobileNetV2 as the paper's MobileNet), input buffer sizes
#: (the plan may fill half: mappers.allocation.apply.PLAN_SHARE) and the arch
