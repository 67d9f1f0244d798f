"""Mapper of the toy MAC: every GEMM output is one dot product (k split into
``max_k`` chunks, summed by the vector unit), repeated for every output; all
other work runs on the vector unit."""
from __future__ import annotations

from archsim.program import Compute, LayerProgram, Load, Store, VectorOp
from mappers.lower import Gemm, lower_op, op_key
from mappers.registry import FunctionMapper
from toy_template.model import DotTile


def make_mapper(arch, options):
    max_k = arch.params.max_k

    def map_op(op) -> LayerProgram:
        low = lower_op(op, options.conv_lowering or "im2col_padded")
        cmds: list = []
        repeat = low.repeat
        for part in low.parts:
            if isinstance(part, Gemm):
                k = min(part.k, max_k)
                chunks = -(-part.k // k)
                a = Load(len(cmds), (), "input", "input", 0, k)
                w = Load(len(cmds) + 1, (), "weight", "weight", 0, k)
                c = Compute(len(cmds) + 2, (a.id, w.id), DotTile(k), (("input", 0), ("weight", 0)), "mac")
                s = Store(len(cmds) + 3, (c.id,), "output", "output", 0, 4)
                cmds += [a, w, c, s]
                repeat *= part.m * part.n * chunks
            else:
                elements = int(getattr(part, "elements", 0) or getattr(part, "nbytes", 0) or 1)
                cmds.append(VectorOp(len(cmds), tuple(range(len(cmds)))[-1:], getattr(part, "op", "copy"), elements))
        return LayerProgram(op.name, op.kind, op.macs(), cmds, ("toymac",) + op_key(op), {}, repeat=repeat)

    return FunctionMapper(map_op)
