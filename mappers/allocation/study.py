"""The COSMA reproduction study: traffic of each allocation on the paper's kinds of networks.

Shared by ``bench/bench_cosma.py`` (the table) and ``archsim.validate.cosma`` (the claims).
"""
from __future__ import annotations

from dataclasses import dataclass

from mappers.allocation.addresses import assign_addresses
from mappers.allocation.plan import ALLOCATIONS, fit_addresses, plan_allocation
from mappers.allocation.problem import traffic

#: network -> how it is built (a CNN, a thin-backbone CNN, a NAS-style many-branch graph, a transformer)
NETWORKS = ("resnet50", "mobilenet-v1", "nas-4x6", "bert-base")
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
    #: non-compulsory bytes of the ILP plan re-solved until its first-fit addresses fit
    ilp_fitted_bytes: int = 0

    def reduction(self, method: str, against: str = "greedy") -> float | None:
        """Fractional reduction of non-compulsory bytes of ``method`` vs ``against`` (None if that is 0)."""
        base = self.non_compulsory_bytes[against]
        return None if base == 0 else 1 - self.non_compulsory_bytes[method] / base


def study(networks=NETWORKS, capacities_kib=CAPACITIES_KIB, schedule: bool = False,
          time_limit_s: float = 120.0, methods=ALLOCATIONS) -> list[Row]:
    """Rows of the ``methods``' traffic (``schedule``: the ILP also chooses the order; a method
    left out has no entry, and ``ilp_solve_s`` is NaN without the ILP)."""
    rows = []
    for name in networks:
        graph = build_network(name)
        for kib in capacities_kib:
            got = {m: plan_allocation(graph, kib << 10, m, schedule=schedule, time_limit_s=time_limit_s)
                   if m == "ilp" else plan_allocation(graph, kib << 10, m) for m in ("greedy", *methods)}
            ilp = got.get("ilp")
            rows.append(Row(name, kib, got["greedy"].traffic.compulsory_bytes,
                            {m: a.traffic.non_compulsory_bytes for m, a in got.items()},
                            ilp.solve_s if ilp else float("nan"), bool(ilp and ilp.optimal),
                            got["heuristic"].solve_s if "heuristic" in got else float("nan"),
                            assign_addresses(ilp.problem, ilp.plan)[1] if ilp else 0,
                            _fitted_bytes(ilp) if ilp else 0))
    return rows


def _fitted_bytes(ilp) -> int:
    plan, peak = fit_addresses(ilp.problem, ilp.plan)
    return traffic(ilp.problem, plan).non_compulsory_bytes if peak <= ilp.problem.capacity_bytes else -1


def mean_reduction(rows: list[Row], method: str) -> float:
    """Mean over rows (with non-zero greedy traffic) of ``method``'s reduction vs greedy."""
    values = [r.reduction(method) for r in rows if r.reduction(method) is not None]
    return sum(values) / len(values)


#: the real-pipeline study: networks (MobileNetV2 as the paper's MobileNet), input buffer sizes
#: (the plan may fill half: mappers.allocation.apply.PLAN_SHARE) and the arch
PIPELINE_NETWORKS = ("resnet50", "mobilenet-v2", "nas-4x6", "bert-base")
INPUT_KIB = (512, 1024, 2048, 4096)
PIPELINE_ARCH = "systolic-32x32-ws"


@dataclass(frozen=True)
class PipelineRow:
    """One network on the arch with an ``input_kib`` input buffer: the engine's DRAM bytes of the
    Program each allocation compiles to, the plan's non-compulsory bytes, the solve times."""

    network: str
    input_kib: int
    compulsory_bytes: int
    dram_bytes: dict[str, int]
    plan_non_compulsory_bytes: dict[str, int]
    solve_s: dict[str, float]
    ilp_optimal: bool

    def measured(self, method: str) -> int:
        """Off-chip bytes above the compulsory ones (weights as loaded, graph inputs and outputs once):
        the plan's non-compulsory bytes plus the tiles' re-reads of streamed operands and weights."""
        return self.dram_bytes[method] - self.compulsory_bytes

    def reduction(self, method: str, against: str = "greedy") -> float | None:
        base = self.measured(against)
        return None if base <= 0 else 1 - self.measured(method) / base


def pipeline_study(networks=PIPELINE_NETWORKS, input_kib=INPUT_KIB, methods=ALLOCATIONS,
                   arch_name: str = PIPELINE_ARCH) -> list[PipelineRow]:
    """Compile and simulate each network with each allocation (``greedy`` always) at each size."""
    import archsim
    from archsim.spec import load_arch

    rows = []
    for name in networks:
        graph = build_network(name)
        for kib in input_kib:
            arch = load_arch(arch_name, overrides=[f"buffers.input.bytes={kib << 10}"])
            dram, plan, solve_s, compulsory, optimal = {}, {}, {}, None, False
            for m in dict.fromkeys(("greedy", *methods)):
                result = archsim.simulate(graph, arch, allocation=m)
                dram[m] = int(result.dram_bytes)
                a = result.options.get("allocation")
                if a:
                    plan[m], solve_s[m] = a["non_compulsory_bytes"], a["solve_s"]
                    plan["greedy"], compulsory = a["greedy_non_compulsory_bytes"], a["measured_compulsory_bytes"]
                    optimal = optimal or (m == "ilp" and a["optimal"])
            if compulsory is None:
                raise ValueError("pipeline_study: give at least one of the methods ilp, heuristic")
            rows.append(PipelineRow(name, kib, compulsory, dram, plan, solve_s, optimal))
    return rows


def mean_pipeline_reduction(rows: list[PipelineRow], method: str, plan: bool = False) -> float:
    """Mean over rows of ``method``'s reduction of non-compulsory bytes vs greedy: measured by the
    engine, or (``plan``) the plans' own (rows where greedy leaves none are skipped)."""
    if plan:
        values = [1 - r.plan_non_compulsory_bytes[method] / r.plan_non_compulsory_bytes["greedy"]
                  for r in rows if r.plan_non_compulsory_bytes["greedy"]]
    else:
        values = [v for v in (r.reduction(method) for r in rows) if v is not None]
    return sum(values) / len(values)
