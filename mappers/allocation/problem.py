"""The scratchpad allocation problem of a graph under one operator order, and its traffic.

A COSMA-style model (Li, Gupta, Malik, "Combined Scheduling, Memory Allocation and
Tensor Replacement for Minimizing Off-Chip Data Accesses of DNN Accelerators",
arXiv:2311.18246, 2023) of the activation tensors between ops:

- one op runs per step; at its step its input and output tensors must be in the
  scratchpad, unless they alone exceed it (the op is *streamed*: the mapper tiles it
  through DRAM, so its tensors may stay off chip and each read of them is a DRAM read);
- a tensor lives from its producer's step (or, for a graph input, its first reader's)
  to its last reader's; a plan says at which of those steps it is resident;
- traffic: a graph input's first read and a graph output's write are *compulsory*;
  everything else is *non-compulsory*: an intermediate tensor that is ever off chip in
  its live range is written once (tensors are immutable), and every reload (resident at a
  step, not at the one before) or streamed read of a non-resident tensor is a read.

Weights are streamed from DRAM once per op (compulsory) and not placed in the
scratchpad (a stated difference from the paper). This model has no addresses: a plan
fits when the resident bytes fit; :mod:`mappers.allocation.address_ilp` adds each
tensor's offset so that plans also fit their addresses (no fragmentation).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from archsim.errors import MappingError
from workloads.precision import tensor_bytes


@dataclass(frozen=True)
class Tensor:
    """An activation tensor: ``producer`` step (None: graph input), sorted ``reader`` steps."""

    name: str
    size_bytes: int
    producer: int | None
    readers: tuple[int, ...]

    @property
    def first(self) -> int:
        return self.producer if self.producer is not None else self.readers[0]

    @property
    def last(self) -> int:
        return self.readers[-1] if self.readers else self.first

    @property
    def steps(self) -> range:
        return range(self.first, self.last + 1)

    @property
    def is_input(self) -> bool:
        return self.producer is None

    @property
    def is_output(self) -> bool:
        return not self.readers


@dataclass(frozen=True)
class Problem:
    """Tensors of a graph under ``order`` (op names by step) for ``capacity_bytes``."""

    order: tuple[str, ...]
    tensors: tuple[Tensor, ...]
    capacity_bytes: int
    weight_bytes: int
    #: steps whose op's own tensors exceed the scratchpad (tiled through DRAM)
    streamed: frozenset[int] = field(default_factory=frozenset)
    #: steps (a subset of ``streamed``) whose op reads and writes all its tensors in DRAM
    #: (an op the allocation cannot rewire, e.g. attention's several GEMMs): none may be resident there
    offchip: frozenset[int] = field(default_factory=frozenset)

    def reordered(self, order: list[int]) -> "Problem":
        """The same problem with the ops run in ``order`` (old step indices, a topological order)."""
        if sorted(order) != list(range(len(self.order))):
            raise MappingError(f"allocation: an order must list each of the {len(self.order)} steps once")
        new = {old: s for s, old in enumerate(order)}
        tensors = tuple(Tensor(t.name, t.size_bytes, None if t.producer is None else new[t.producer],
                               tuple(sorted(new[r] for r in t.readers))) for t in self.tensors)
        for t in tensors:
            if t.producer is not None and t.readers and t.readers[0] <= t.producer:
                raise MappingError(f"allocation: the order reads {t.name} before producing it")
        return Problem(tuple(self.order[old] for old in order), tensors, self.capacity_bytes, self.weight_bytes,
                       frozenset(new[s] for s in self.streamed), frozenset(new[s] for s in self.offchip))

    def touched(self, step: int) -> list[int]:
        """Indices of the tensors op ``step`` reads or writes."""
        return [i for i, t in enumerate(self.tensors) if t.producer == step or step in t.readers]


@dataclass(frozen=True)
class Traffic:
    """Off-chip bytes of a plan."""

    compulsory_bytes: int
    non_compulsory_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.compulsory_bytes + self.non_compulsory_bytes


#: a plan: for each tensor (by index), the steps of its live range at which it is resident
Plan = tuple[frozenset[int], ...]


def build_problem(graph, capacity_bytes: int, fused_into: dict[str, str] | None = None,
                  offchip_ops=frozenset()) -> Problem:
    """The allocation problem of ``graph`` for a scratchpad of ``capacity_bytes``.

    Ops run in the graph's topological order. Ops with ``kind == "shape"`` are free views
    (they pass their input through); an op in ``fused_into`` (:func:`mappers.fusion.plan_fusion`)
    runs in the step of the GEMM it is fused into, and the tensors inside such a chain never
    leave the array's output path. The ops named in ``offchip_ops`` read and write their
    tensors in DRAM (:attr:`Problem.offchip`).
    """
    if not isinstance(capacity_bytes, int) or isinstance(capacity_bytes, bool) or capacity_bytes <= 0:
        raise MappingError(f"scratchpad capacity: expected a positive number of bytes, got {capacity_bytes!r}")
    fused_into = fused_into or {}
    ops = [op for op in graph.ops() if op.kind != "shape"]
    roots = [op for op in ops if op.name not in fused_into]
    step_of = {op.name: s for s, op in enumerate(roots)}
    step_of.update({name: step_of[root] for name, root in fused_into.items()})
    alias = _shape_aliases(graph)
    tensors: dict[tuple[str, str, int], dict] = {}  # ("out", op, k) or ("in", op, port) -> fields
    weight_bytes, seen_weights = 0, set()
    for op in ops:
        s = step_of[op.name]
        if not op.weight_name or op.weight_name not in seen_weights:
            # a table lookup reads the rows of its tokens, not the whole table
            weight_bytes += (tensor_bytes(op.tokens * op.dim, op.weight_precision) if op.kind == "embedding"
                             else op.operand_bytes()["weight"])
            seen_weights.add(op.weight_name)
        for k, shape in enumerate(op.output_shapes()):
            tensors["out", op.name, k] = {"size": tensor_bytes(prod(shape), op.act_precision), "producer": s,
                                         "readers": [], "internal": False}
        for port, ref in enumerate(graph.inputs_of(op.name)):
            keys = [("in", op.name, port)] if ref is None else alias(ref)
            for key in keys:
                if key not in tensors and key[0] == "in":  # a graph input, read by this port alone
                    owner = graph.op(key[1])
                    tensors[key] = {"size": tensor_bytes(prod(owner.input_shapes()[key[2]]), owner.act_precision),
                                    "producer": None, "readers": [], "internal": False}
                if key not in tensors:
                    raise MappingError(f"allocation: {op.name} reads {ref!r}, which no op before it produces")
                if tensors[key]["producer"] == s:  # inside a fused chain
                    tensors[key]["internal"] = True
                elif s not in tensors[key]["readers"]:
                    tensors[key]["readers"].append(s)
    out = tuple(Tensor(f"{n[1]}:{n[2]}" if n[0] == "out" else f"{n[1]} input {n[2]}", d["size"], d["producer"],
                       tuple(sorted(d["readers"])))
                for n, d in tensors.items() if not (d["internal"] and not d["readers"]))
    problem = Problem(tuple(op.name for op in roots), out, capacity_bytes, weight_bytes)
    offchip = frozenset(step_of[name] for name in offchip_ops if name in step_of)
    streamed = offchip | frozenset(s for s in range(len(roots))
                                   if sum(out[i].size_bytes for i in problem.touched(s)) > capacity_bytes)
    return Problem(problem.order, out, capacity_bytes, weight_bytes, streamed, offchip)


def _shape_aliases(graph):
    """``ref -> tensor keys`` a reference reads, through shape ops: a concat reads all its
    inputs; a split's part reads its whole input (an overestimate, stated in docs/cosma.md);
    an unfed port of a shape op is a graph input ``("in", op, port)``."""
    def resolve(ref: str) -> list[tuple[str, str, int]]:
        name, _, k = (ref, "", "0") if ref in graph else ref.rpartition(":")
        op = graph.op(name)
        if op.kind != "shape":
            return [("out", name, int(k))]
        keys: list[tuple[str, str, int]] = []
        for port, feed in enumerate(graph.inputs_of(name)):
            for key in ([("in", name, port)] if feed is None else resolve(feed)):
                if key not in keys:
                    keys.append(key)
        return keys
    return resolve


def check_plan(problem: Problem, plan: Plan) -> None:
    """Raise MappingError if ``plan`` overfills the scratchpad or leaves a needed tensor off chip."""
    for s in range(len(problem.order)):
        held = sum(t.size_bytes for t, r in zip(problem.tensors, plan) if s in r)
        if held > problem.capacity_bytes:
            raise MappingError(f"allocation plan holds {held} B at step {s} ({problem.order[s]}), "
                               f"over the {problem.capacity_bytes} B scratchpad")
        if s not in problem.streamed:
            for i in problem.touched(s):
                if s not in plan[i]:
                    raise MappingError(f"allocation plan leaves {problem.tensors[i].name} off chip at "
                                       f"step {s} ({problem.order[s]}), which needs it")
        if s in problem.offchip:
            for i in problem.touched(s):
                if s in plan[i]:
                    raise MappingError(f"allocation plan holds {problem.tensors[i].name} on chip at step {s} "
                                       f"({problem.order[s]}), whose op reads and writes it in DRAM")
    for t, r in zip(problem.tensors, plan):
        if not r <= set(t.steps):
            raise MappingError(f"allocation plan holds {t.name} outside its live range")


def traffic(problem: Problem, plan: Plan) -> Traffic:
    """Compulsory and non-compulsory DRAM bytes of ``plan`` (checked first)."""
    check_plan(problem, plan)
    compulsory, extra = problem.weight_bytes, 0
    for t, r in zip(problem.tensors, plan):
        if t.is_output:
            compulsory += t.size_bytes
            continue
        reads = 0
        for s in t.steps:
            if s in r and s != t.producer and (s == t.first or s - 1 not in r):
                reads += 1  # a (re)load
            elif s not in r and s in t.readers:
                reads += 1  # a streamed read
        if t.is_input:
            compulsory += t.size_bytes
            reads -= 1
        elif any(s not in r for s in t.steps):
            extra += t.size_bytes  # written back once
        extra += reads * t.size_bytes
    return Traffic(compulsory, extra)
