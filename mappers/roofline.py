"""Lowering onto the roofline template: one kernel (Compute on unit ``"gpu"``) per op.

Bytes: every operand once (inputs, learned weights, outputs; for attention
the K and V cache it reads; for an embedding only the rows looked up). FLOPs: 2 per
MAC, plus one per element of vector ops. Precision of a kernel: the op's
weight precision for GEMMs (the GPU runs the same formats as the workload).

Operator fusion is not modelled (every op is its own kernel, as an unfused
framework runs it), so a spec declaring ``output_ops`` is a one-line
:class:`~archsim.errors.SpecError` rather than a key silently ignored.
"""
from __future__ import annotations

from typing import Callable

from archsim.errors import SpecError
from archsim.program import Compute, LayerProgram
from archsim.templates.roofline import RooflineTile
from mappers.lower import op_key
from mappers.registry import FunctionMapper
from workloads.precision import tensor_bytes


def make_mapper(arch, options) -> Callable:
    if arch.output_ops:
        raise SpecError(f"{arch.name}: output_ops: expected none for the roofline template (each op is its own "
                        f"kernel; fused epilogues are not modelled), got {', '.join(arch.output_ops)}")
    model = arch.model()

    def map_op(op) -> LayerProgram:
        ob = op.operand_bytes()
        nbytes = ob.get("input", 0) + ob.get("weight", 0) + ob.get("output", 0)
        macs = op.macs()
        flops = 2 * macs
        mapping: dict = {}
        if op.kind == "attention":
            # the K/V cache is read once; the new K/V rows are written
            kv = 2 * op.batch * op.kv_heads * op.seq_kv * op.head_dim
            nbytes = max(nbytes, tensor_bytes(kv, op.act_precision) + ob.get("output", 0))
        elif op.kind == "embedding":
            nbytes = 2 * ob.get("output", 0)  # a lookup reads only the looked-up rows
        if not macs:
            elements = max(1, ob.get("output", 0))
            flops = elements
        precision = op.weight_precision if op.kind in ("matmul", "conv2d") else op.act_precision
        tile = RooflineTile(int(flops), int(nbytes), precision)
        mapping["bound"] = model.tile_bound(tile)
        cmds = [Compute(0, (), tile, (), "gpu")] if (flops or nbytes) else []
        # the kernel's DRAM bytes (no DMA commands: reports show them as internal_bytes)
        return LayerProgram(op.name, op.kind, macs, cmds, ("roofline",) + op_key(op), mapping,
                            internal_bytes={"dram": int(nbytes)} if cmds and nbytes else {})

    return FunctionMapper(map_op)
