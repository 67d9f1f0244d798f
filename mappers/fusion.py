"""Operator fusion: element-wise ops that run in the array's output path.

A GEMM or convolution's result drains out of the array through an output
unit on its way to the buffer and DRAM. When the arch spec lists an op in
``output_ops`` (:data:`archsim.spec.model.OUTPUT_OPS`), an element-wise op
of that class that directly follows the GEMM runs there, as the data drains,
instead of as a separate pass of the vector unit (load from DRAM, vector op,
store back):

==========  ==========================================================
class       graph ops
==========  ==========================================================
bias        ``add`` of one activation input and learned constants
relu        ``relu``, ``relu6``, ``clip``, ``leakyrelu``
gelu        ``gelu``
residual    ``add`` / ``sum`` of the GEMM's result and one other tensor of the
            same shape (read from DRAM beside the output tile)
requant     ``quantizelinear``, ``dequantizelinear``, ``requant``
==========  ==========================================================

:func:`plan_fusion` walks the graph once: from each conv2d / matmul it
follows the chain of single consumers while each is a fusable element-wise
op of the GEMM's output shape whose class the unit has. A residual add joins
the chain only of the GEMM that runs after its other input is produced, so
the data is in DRAM when the fused GEMM reads it. The fused ops become
layers with no commands (``mapping["fused_into"]`` names the GEMM); the
GEMM's layer carries them as its :attr:`mappers.lower.Gemm.epilogue`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from math import prod

from mappers.lower import Gemm

_CLASS_OF_FN = {
    "relu": "relu", "relu6": "relu", "clip": "relu", "leakyrelu": "relu",
    "gelu": "gelu",
    "quantizelinear": "requant", "dequantizelinear": "requant", "requant": "requant",
}
GEMM_KINDS = ("conv2d", "matmul")


@dataclass(frozen=True)
class Epilogue:
    """What a GEMM layer applies on its way out: op classes in order, whether
    one of them reads a residual tensor, the precision of the final result,
    and the graph ops it absorbs."""

    classes: tuple[str, ...]
    residual: bool
    out_precision: str
    ops: tuple[str, ...]


@dataclass
class FusionPlan:
    """``epilogues``: GEMM op name -> :class:`Epilogue`; ``fused_into``:
    absorbed element-wise op name -> the GEMM op that runs it."""

    epilogues: dict[str, Epilogue] = field(default_factory=dict)
    fused_into: dict[str, str] = field(default_factory=dict)


def op_class(op) -> str | None:
    """The output-unit class of element-wise ``op`` (None: not fusable)."""
    if op.kind != "elementwise" or op.in_shapes:
        return None
    fn = str(op.fn).lower()
    if fn in ("add", "sum"):
        if op.num_inputs == 1 and op.const_params:
            return "bias"
        if op.num_inputs == 2 and not op.const_params:
            return "residual"
        return None
    if op.num_inputs != 1 or op.const_params:
        return None
    return _CLASS_OF_FN.get(fn)


def with_epilogue(low, epilogue: Epilogue | None):
    """``low`` (:class:`mappers.lower.Lowered`) with its GEMM(s) carrying ``epilogue``
    (unchanged when None): every mapper with an output path applies a fused chain this way."""
    if epilogue is None:
        return low
    parts = tuple(dataclasses.replace(p, epilogue=epilogue.classes, residual=epilogue.residual,
                                      out_precision=epilogue.out_precision) if isinstance(p, Gemm) else p
                  for p in low.parts)
    return dataclasses.replace(low, parts=parts)


def plan_fusion(graph, unit_ops) -> FusionPlan:
    """Which element-wise ops of ``graph`` run in the output path of the GEMM
    before them, for an output unit that has the classes ``unit_ops``."""
    plan = FusionPlan()
    unit = frozenset(unit_ops or ())
    if not unit:
        return plan
    ops = graph.ops()
    order = {op.name: i for i, op in enumerate(ops)}
    nxg = graph.nx
    for op in ops:
        if op.kind not in GEMM_KINDS:
            continue
        elements = prod(op.output_shape())
        classes, names, residual, precision = [], [], False, op.act_precision
        cur = op.name
        while True:
            succ = list(nxg.successors(cur))
            if len(succ) != 1:
                break
            nxt = graph.op(succ[0])
            cls = op_class(nxt)
            if cls is None or cls not in unit or prod(nxt.output_shape()) != elements:
                break
            if len(nxg.edges[cur, nxt.name]["ports"]) != 1:  # x + x: not a residual
                break
            if cls == "residual":
                if residual:
                    break
                others = [p for p in graph.inputs_of(nxt.name) if p is not None and p.split(":")[0] != cur]
                if any(order[p.split(":")[0]] > order[op.name] for p in others):
                    break  # the other operand is produced after this GEMM runs
                if any(prod(s) != elements for s in nxt.input_shapes()):
                    break  # a broadcast operand is not a residual tile
                residual = True
            classes.append(cls)
            names.append(nxt.name)
            precision = nxt.act_precision
            cur = nxt.name
        if names:
            plan.epilogues[op.name] = Epilogue(tuple(classes), residual, precision, tuple(names))
            for n in names:
                plan.fused_into[n] = op.name
    return plan
