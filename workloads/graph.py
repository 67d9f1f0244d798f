"""The workload IR: a DAG of typed ops joined by tensors.

A :class:`Graph` wraps a ``networkx.DiGraph``. Each node is named after its
op and holds it in the node attribute ``"op"``; each edge is a tensor from a
producer to a consumer with attributes ``shape``, ``precision``, ``bytes`` and
``ports`` (a list of ``(output_index, input_index)`` pairs, since one producer
may feed several inputs of one consumer, as in ``x * x``).

An op input that no edge feeds is an input of the whole graph (an image, the
token ids, a KV cache).

Shapes are checked when an edge is added and again by :meth:`Graph.validate`.
A produced shape fits an expected input shape when they are equal, when they
hold the same elements with the same last dimension (a free reshape of the
leading dimensions, e.g. ``[batch, seq, d]`` into a matmul's
``[1, batch*seq, d]``), or when the produced shape broadcasts to the expected
one (a bias, or a per-channel scale).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from math import prod

import networkx as nx

from archsim.errors import WorkloadError
from workloads.ops import Op
from workloads.precision import tensor_bytes


#: ops whose NCHW input must be exactly the producer's output (a conv over a silently reshaped or
#: batch-broadcast tensor computes something else than the file says)
STRICT_INPUT_KINDS = ("conv2d", "pool")


def _unit_dims_only(produced: Sequence[int], expected: Sequence[int]) -> bool:
    """Whether two shapes differ only by size-1 dims (the same data, no element moved)."""
    return [d for d in produced if d != 1] == [d for d in expected if d != 1]


def shapes_fit(produced: Sequence[int], expected: Sequence[int]) -> bool:
    """Whether a tensor of shape ``produced`` can feed an input of shape ``expected``."""
    produced, expected = tuple(produced), tuple(expected)
    if produced == expected:
        return True
    if produced and expected and prod(produced) == prod(expected) and produced[-1] == expected[-1]:
        return True
    if len(produced) > len(expected):
        return False
    return all(p == 1 or p == e for p, e in zip(reversed(produced), reversed(expected)))


class Graph:
    """A workload: ops in a DAG. ``Graph(name)``, then ``g.add(op, inputs=[...])``."""

    def __init__(self, name: str):
        self.name = name
        self.nx = nx.DiGraph(name=name)
        self._order: dict[str, int] = {}

    # -- building --------------------------------------------------------------
    def add(self, op: Op, inputs: Iterable[str | None] | None = None) -> str:
        """Add ``op`` fed by ``inputs`` (producer names, in input-port order).

        ``"name:k"`` names output ``k`` of a multi-output op (split); ``None``
        leaves that port as a graph input. Returns the op's name.
        """
        if not isinstance(op, Op):
            raise WorkloadError(f"graph {self.name!r}: expected an op from workloads.ops, got {type(op).__name__}")
        op.check()
        if op.name in self.nx:
            raise WorkloadError(f"graph {self.name!r}: duplicate op name {op.name!r}; expected unique names")
        inputs = list(inputs or [])
        expected = op.input_shapes()
        if len(inputs) > len(expected):
            raise WorkloadError(
                f"graph {self.name!r}: {op.name} ({op.kind}) takes {len(expected)} input(s), got {len(inputs)}")
        links = []
        for port, ref in enumerate(inputs):
            if ref is None:
                continue
            producer, out_index = self._resolve(ref, op.name)
            shape = tuple(self.nx.nodes[producer]["op"].output_shapes()[out_index])
            self._check_shapes(producer, shape, op, port)  # before the node exists: a failed add adds nothing
            links.append((producer, out_index, port))
        self.nx.add_node(op.name, op=op)
        self._order[op.name] = len(self._order)
        for producer, out_index, port in links:
            self._link(producer, out_index, op.name, port)
        return op.name

    def _resolve(self, ref: str, consumer: str) -> tuple[str, int]:
        if ref in self.nx:
            return ref, 0
        base, sep, index = ref.rpartition(":")
        if sep and base in self.nx and index.isdigit():
            outputs = len(self.nx.nodes[base]["op"].output_shapes())
            if int(index) >= outputs:
                raise WorkloadError(
                    f"graph {self.name!r}: {consumer} reads output {index} of {base}, which has {outputs} output(s)")
            return base, int(index)
        raise WorkloadError(f"graph {self.name!r}: {consumer} reads {ref!r}, which is not an op added before it")

    def _link(self, producer: str, out_index: int, consumer: str, port: int) -> None:
        src = self.nx.nodes[producer]["op"]
        shape = tuple(src.output_shapes()[out_index])
        if self.nx.has_edge(producer, consumer):
            self.nx.edges[producer, consumer]["ports"].append((out_index, port))
            return
        self.nx.add_edge(producer, consumer, shape=shape, precision=src.act_precision,
                         bytes=tensor_bytes(prod(shape), src.act_precision), ports=[(out_index, port)])

    def _check_edge(self, producer: str, shape: tuple[int, ...], consumer: str, port: int) -> None:
        self._check_shapes(producer, shape, self.nx.nodes[consumer]["op"], port)

    def _check_shapes(self, producer: str, shape: tuple[int, ...], dst: Op, port: int) -> None:
        consumer = dst.name
        want = tuple(dst.input_shapes()[port])
        if not shapes_fit(shape, want):
            raise WorkloadError(
                f"graph {self.name!r}: shape mismatch {producer} -> {consumer}: {producer} produces "
                f"{list(shape)} but {consumer} ({dst.kind}) expects input {port} of {list(want)}")
        if dst.kind in STRICT_INPUT_KINDS and tuple(shape) != want and not _unit_dims_only(shape, want):
            # NCHW: no implicit reshape or batch broadcast (inserting size-1 dims, as a Conv1d lowered
            # to a conv2d over [N, C, 1, L] does, moves no data and is allowed)
            what = ("batch" if len(shape) == len(want) == 4 and shape[1:] == want[1:] else
                    "channels" if len(shape) == len(want) == 4 and shape[1] != want[1] else "shape")
            raise WorkloadError(
                f"graph {self.name!r}: {what} mismatch {producer} -> {consumer}: {producer} produces "
                f"{list(shape)} but {consumer} ({dst.kind}) expects exactly {list(want)} (NCHW)")

    # -- reading ---------------------------------------------------------------
    def __len__(self) -> int:
        return self.nx.number_of_nodes()

    def __contains__(self, name: str) -> bool:
        return name in self.nx

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops())

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self)} ops)"

    def op(self, name: str) -> Op:
        try:
            return self.nx.nodes[name]["op"]
        except KeyError:
            raise WorkloadError(f"graph {self.name!r}: no op named {name!r}") from None

    def ops(self) -> list[Op]:
        """Ops in topological order; among ready ops, the one added first comes first."""
        order = nx.lexicographical_topological_sort(self.nx, key=self._order.__getitem__)
        return [self.nx.nodes[n]["op"] for n in order]

    def inputs_of(self, name: str) -> list[str | None]:
        """Producer of each input port of ``name`` (``None``: a graph input)."""
        ports: list[str | None] = [None] * len(self.op(name).input_shapes())
        for producer in self.nx.predecessors(name):
            for out_index, port in self.nx.edges[producer, name]["ports"]:
                ports[port] = producer if out_index == 0 else f"{producer}:{out_index}"
        return ports

    def total_macs(self) -> int:
        return sum(op.macs() for op in self.ops())

    def total_params(self) -> int:
        """Parameters, counting once those ops that share a ``weight_name``."""
        total, seen = 0, set()
        for op in self.ops():
            if op.weight_name:
                if op.weight_name in seen:
                    continue
                seen.add(op.weight_name)
            total += op.params()
        return total

    def validate(self) -> None:
        """Check every op and every edge's shape; raise WorkloadError on the first fault."""
        if not nx.is_directed_acyclic_graph(self.nx):
            cycle = nx.find_cycle(self.nx)
            raise WorkloadError(f"graph {self.name!r}: cycle through {' -> '.join(u for u, _ in cycle)}")
        for name in self.nx:
            self.op(name).check()
        for producer, consumer, data in self.nx.edges(data=True):
            src = self.op(producer)
            for out_index, port in data["ports"]:
                self._check_edge(producer, tuple(src.output_shapes()[out_index]), consumer, port)
