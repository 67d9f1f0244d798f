"""COSMA through the real pipeline: the engine's DRAM bytes of the Programs archsim compiles with
each allocation (greedy, heuristic, ILP) at several input-buffer sizes (``bench/bench_cosma_pipeline.py``,
:mod:`archsim.validate.cosma`). Orchestration (it runs the simulator), so it lives above the mappers."""
from __future__ import annotations

from dataclasses import dataclass

from archsim.spec.options import ALLOCATIONS
from mappers.allocation.study import build_network

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
