"""DRACO's data-reuse-aware reshaping of depthwise convolutions (Jha et al., arXiv:2006.15103).

A depthwise k x k conv over C channels lowers, per channel, to an im2col GEMM
``[out_h*out_w x k*k] x [k*k x 1]``: one filter column of k*k weights, each
input pixel used by one filter. On a 64 x 64 systolic array that maps k*k of
4096 PEs (9/4096 = 0.2 % for 3 x 3) whatever the dataflow: the layer has too
little data reuse to fill the array. DRACO attacks this at the algorithm
level: it gives the depthwise stage more reuse, so that the same array does
useful work on more PEs.

This transform reshapes each depthwise conv into a grouped conv of
``group_width`` channels per group (``C / group_width`` groups): each output
channel reads ``group_width`` input channels, the per-group GEMM becomes
``[out_h*out_w x k*k*g] x [k*k*g x g]`` (g*g times the PEs mapped) and each
input pixel is reused by g filters. Shapes, strides and every other layer are
unchanged, so the network downstream is the same graph.

It is a *network* change, as in the paper (which trades computational
efficiency for PE utilization and retrains for accuracy): a depthwise layer's
MACs and weights grow by ``group_width``; every other layer's are preserved.
``group_width=1`` is the identity. Channels not divisible by ``group_width``
are refused (a silently skipped layer would misstate the gain).
"""
from __future__ import annotations

from dataclasses import replace

from archsim.errors import WorkloadError
from workloads.graph import Graph


def draco(graph: Graph, *, group_width: int = 4) -> Graph:
    """A copy of ``graph`` whose depthwise convs have ``group_width`` channels per group."""
    if isinstance(group_width, bool) or not isinstance(group_width, int) or group_width < 1:
        raise WorkloadError(f"draco: group_width: expected a positive integer, got {group_width!r}")
    out = Graph(graph.name if group_width == 1 else f"{graph.name}+draco{group_width}")
    for op in graph.ops():
        new = op
        if op.kind == "conv2d" and op.depthwise and group_width > 1:
            if op.in_channels % group_width:
                raise WorkloadError(f"draco: {op.name}: {op.in_channels} channels are not divisible by "
                                    f"group_width={group_width}; expected a group_width dividing every "
                                    "depthwise layer's channels")
            new = replace(op, groups=op.in_channels // group_width)
        out.add(new, graph.inputs_of(op.name))
    return out
