"""Applying a COSMA allocation (mapper option ``allocation: ilp|heuristic``) to the Program.

:func:`compile_allocated` plans the graph (:func:`mappers.allocation.plan.allocate`) for the
*activation scratchpad*: the ``input`` buffer (per-operand buffers: inter-layer tensors live
beside the input tiles, as in Gemmini's scratchpad) or the ``unified`` one. The plan may use
:data:`PLAN_SHARE` of it; the rest always stays for the layers' tiles. Then, in the plan's
operator order (dependencies checked), each layer is mapped by the template's own mapper in the
buffer left beside the tensors resident at its step (their bytes reserved; a layer that cannot
be tiled in what is left is refused in one line; the reserved bytes reach the end of the last
resident tensor at the address the address ILP chose, :mod:`mappers.allocation.address_ilp`, or
first fit's where that ILP found none: ``address_note`` says which; a plan neither places within its
share is refused in one line), and its commands are rewritten:

- a tensor the layer reads that is resident at its step: its Loads are dropped (the array
  reads the scratchpad copy); a reload (resident at a step, not at the one before; a graph
  input's first read) is one Load of the tensor's bytes in a ``reload`` layer before the step's;
- the layer's result Stores are dropped when the result never leaves the chip (resident over
  its whole live range and not a graph output), kept otherwise (the write-back, once);
- at a streamed step (the op's tensors exceed the plan's share: the mapper tiles it through
  DRAM) the Loads of a tensor not resident stay as the tiling emits them (a streamed read);
  when only some of an operand's tensors are resident, that operand's Loads keep the share of
  bytes of the others.

Ops the rewrite cannot see into (several GEMMs in one op, e.g. attention; gathers) read and
write all their tensors in DRAM (:attr:`~mappers.allocation.problem.Problem.offchip`).
With one buffer tile per layer, the Program's DRAM bytes equal the plan's traffic exactly
(tests); tiled layers add the tiling's re-reads of their streamed operands and weights, as
the greedy mapping does.
"""
from __future__ import annotations

import dataclasses
import time

from archsim.errors import MappingError
from archsim.program import Load, LayerProgram, Program, Store
from mappers.allocation.plan import allocate, layer_by_layer_traffic
from mappers.allocation.problem import Problem, _shape_aliases, build_problem
from mappers.emit import BufferLayout
from mappers.layer import map_layer
from mappers.lower import Gather, Gemm, lower_op

#: templates whose mappers tile every GEMM and vector op through mappers.tiling / mappers.emit
SUPPORTED_TEMPLATES = ("systolic", "simd")
#: share of the activation scratchpad the plan may fill with resident tensors
PLAN_SHARE = 0.5
#: HiGHS time limit per solve (s)
TIME_LIMIT_S = 60.0
#: the buffer left to a layer is rounded down to a 1/256 of the buffer (layers share mappings)
_GRAINS = 256
#: DRAM region of a layer's results in mappers.tiling.emit_gemm / mappers.emit.emit_vector
#: (partial-sum spills are at 3 << 40, inputs below 2 << 40)
_RESULT_REGION = (2 << 40, 3 << 40)


def activation_buffer(arch) -> str:
    """The buffer the allocation places inter-layer tensors in: ``input`` or ``unified``."""
    return "unified" if BufferLayout.from_arch(arch).unified else "input"


def compile_allocated(graph, arch, opts, module, base_mapper, fusion) -> Program:
    """The Program of ``graph`` on ``arch`` under ``opts.allocation`` (see the module docstring);
    ``module`` is the template's mapper module, ``base_mapper`` its mapper for ``arch``, ``fusion``
    the plan of :func:`mappers.fusion.plan_fusion`."""
    method = opts.allocation
    if arch.template not in SUPPORTED_TEMPLATES:
        raise MappingError(f"allocation: {method!r} is applied to templates whose mapper tiles through "
                           f"mappers.tiling ({', '.join(SUPPORTED_TEMPLATES)}); template {arch.template!r} "
                           "maps layer by layer: use allocation: greedy")
    t0 = time.perf_counter()
    buf = activation_buffer(arch)
    total = int(arch.buffers[buf].bytes)
    lowering = base_mapper.conv_lowering
    ops = {op.name: op for op in graph.ops()}
    roots = [op for op in ops.values() if op.kind != "shape" and op.name not in fusion.fused_into]
    offchip = {op.name for op in roots if _opaque(lower_op(op, lowering))}
    problem = build_problem(graph, int(total * PLAN_SHARE), dict(fusion.fused_into), offchip)
    alloc = allocate(problem, method, time_limit_s=TIME_LIMIT_S, addresses="ilp")
    problem, plan = alloc.problem, alloc.plan
    check_order(problem)
    check_placed(alloc.addresses, method, buf)
    placements, peak = alloc.addresses.placements, alloc.addresses.peak_bytes
    classes = _operand_tensors(graph, problem, fusion, {op.name: lower_op(op, lowering) for op in roots})
    mappers_by_bytes: dict[int, object] = {total: base_mapper}
    fused_before = dict(fusion.fused_into)
    layers: list[LayerProgram] = []
    shape_after = _shape_positions(graph, problem, fusion)
    for op in shape_after.get(-1, ()):
        layers.append(map_layer(ops[op], arch, opts, module, base_mapper, fusion))
    reloads_total = 0
    for s, name in enumerate(problem.order):
        resident = [i for i, r in enumerate(plan) if s in r]
        # the scratchpad up to the end of the last resident tensor placed at this step
        reserved = max((p.offset_bytes + problem.tensors[p.tensor].size_bytes for p in placements
                        if p.first <= s <= p.last), default=0)
        grain = max(1, total // _GRAINS)
        left = total if not reserved else (total - reserved) // grain * grain
        if left <= 0:
            raise MappingError(f"allocation {method}: layer {name!r} has no {buf} buffer left beside "
                               f"{reserved} B of resident tensors")
        arch_s = arch if left == total else dataclasses.replace(
            arch, buffers={**arch.buffers, buf: dataclasses.replace(arch.buffers[buf], bytes=left)})
        mapper = mappers_by_bytes.get(left)
        if mapper is None:
            mapper = mappers_by_bytes[left] = module.make_mapper(arch_s, opts)
        reload = [i for i in resident if _reloaded(problem, plan, i, s)]
        if reload:
            reloads_total += len(reload)
            layers.append(_reload_layer(name, [problem.tensors[i] for i in reload], buf))
        try:
            layer = map_layer(ops[name], arch_s, opts, module, mapper, fusion)
        except MappingError as err:
            raise MappingError(f"allocation {method}: layer {name!r} cannot be tiled in the {left} B of the "
                               f"{buf} buffer left beside {reserved} B of resident tensors ({err}); use "
                               f"allocation: greedy or a larger {buf} buffer") from None
        if fusion.fused_into != fused_before:
            raise MappingError(f"allocation {method}: layer {name!r} cannot run its fused element-wise ops in "
                               f"the {left} B of the {buf} buffer left beside {reserved} B of resident tensors; "
                               "use allocation: greedy or a larger buffer")
        layers.append(_rewrite(layer, problem, plan, s, classes[s], left))
        for fused in [f for f, root in fusion.fused_into.items() if root == name]:
            layers.append(map_layer(ops[fused], arch_s, opts, module, mapper, fusion))
        for op in shape_after.get(s, ()):
            layers.append(map_layer(ops[op], arch, opts, module, base_mapper, fusion))
    greedy = layer_by_layer_traffic(problem)  # what greedy leaves does not depend on the order
    summary = {
        "method": method, "buffer": buf, "buffer_bytes": total, "plan_capacity_bytes": problem.capacity_bytes,
        "compulsory_bytes": alloc.traffic.compulsory_bytes, "weight_bytes": problem.weight_bytes,
        "non_compulsory_bytes": alloc.traffic.non_compulsory_bytes,
        "greedy_non_compulsory_bytes": greedy.non_compulsory_bytes,
        "solve_s": round(alloc.solve_s, 4), "compile_s": round(time.perf_counter() - t0, 4),
        "optimal": bool(alloc.optimal),
        "order_changed": list(problem.order) != [op.name for op in roots],
        "resident_tensors": sum(1 for r in plan if r), "reloads": reloads_total,
        "offchip_ops": sorted(offchip), "address_peak_bytes": int(peak),
        "address_method": alloc.addresses.method, "address_optimal": bool(alloc.addresses.optimal),
        "address_note": alloc.addresses.note,
        "addresses": {problem.tensors[p.tensor].name + f"@{p.first}-{p.last}": p.offset_bytes
                      for p in placements},
    }
    return Program(arch.name, str(getattr(graph, "name", "")), layers, summary)


def _opaque(low) -> bool:
    """An op the rewrite cannot see into: not exactly one GEMM or vector part."""
    return len(low.parts) != 1 or isinstance(low.parts[0], Gather)


def check_placed(addresses, method: str, buf: str) -> None:
    """Refuse a plan whose resident tensors have no addresses within the plan's share of the buffer
    (neither the address ILP nor first fit placed it): mapping the layers beside it would leave them
    less than the rest of the buffer, silently."""
    if not addresses.fits:
        raise MappingError(f"allocation {method}: the resident tensors need {addresses.peak_bytes} B of "
                           f"scratchpad addresses but the plan may use {addresses.capacity_bytes} B of the {buf} "
                           f"buffer ({addresses.note}); use allocation: greedy or a larger {buf} buffer")


def check_order(problem: Problem) -> None:
    """Refuse an order that runs an op before an op whose tensor it reads."""
    for t in problem.tensors:
        if t.producer is not None and any(r <= t.producer for r in t.readers):
            raise MappingError(f"allocation: the chosen order reads {t.name} before "
                               f"{problem.order[t.producer]} produces it")


def _reloaded(problem: Problem, plan, i: int, s: int) -> bool:
    """Whether tensor ``i`` is brought in from DRAM at step ``s`` (resident there, not before)."""
    t = problem.tensors[i]
    return s != t.producer and (s == t.first or s - 1 not in plan[i])


def _written_back(problem: Problem, plan, i: int) -> bool:
    t = problem.tensors[i]
    return t.is_output or any(s not in plan[i] for s in t.steps)


def _operand_tensors(graph, problem: Problem, fusion, lowered: dict) -> list[list[tuple[tuple[str, ...], list[int]]]]:
    """Per step: ``(Load operands, tensor indices)`` of each operand class the step's layer reads:
    the root op's activations (``input``; ``input`` and ``weight`` for ports 0 and 1 when B is
    an activation) and the fused ops' residual (``residual``)."""
    index = {t.name: i for i, t in enumerate(problem.tensors)}
    alias = _shape_aliases(graph)

    def read(name: str, ports=None) -> list[int]:
        got = []
        for port, ref in enumerate(graph.inputs_of(name)):
            if ports is not None and port not in ports:
                continue
            for key in ([("in", name, port)] if ref is None else alias(ref)):
                tname = f"{key[1]}:{key[2]}" if key[0] == "out" else f"{key[1]} input {key[2]}"
                i = index.get(tname)
                if i is not None and i not in got and problem.tensors[i].producer != problem.order.index(
                        fusion.fused_into.get(name, name)):
                    got.append(i)
        return got

    out = []
    for s, name in enumerate(problem.order):
        if s in problem.offchip:
            out.append([])
            continue
        part = lowered[name].parts[0]
        if isinstance(part, Gemm) and not part.b_is_param:  # A x B, both activations (ports 0 and 1)
            classes = [(("input",), read(name, (0,))), (("weight",), read(name, (1,)))]
        else:
            classes = [(("input",), read(name))]
        residual = [i for f, root in fusion.fused_into.items() if root == name for i in read(f)]
        if residual:
            classes.append((("residual",), residual))
        out.append(classes)
    return out


def _reload_layer(name: str, tensors, buf: str) -> LayerProgram:
    """One Load per reloaded tensor, before layer ``name`` (a layer of its own: ``repeat`` 1)."""
    cmds = [Load(k, (), "input", buf, 0, t.size_bytes, k << 32) for k, t in enumerate(tensors)]
    names = [t.name for t in tensors]
    return LayerProgram(f"{name}.reload", "reload", 0, cmds, ("reload", tuple(t.size_bytes for t in tensors)),
                        {"reloads": names})


def _share(total: int, keep: int, whole: int) -> int:
    return total * keep // whole


def _rewrite(layer: LayerProgram, problem: Problem, plan, s: int, classes, buffer_bytes: int) -> LayerProgram:
    """``layer`` with the Loads of resident tensors and the Stores of results that stay on chip dropped."""
    if not layer.commands:
        return layer
    keep_of: dict[str, tuple[int, int]] = {}  # Load operand -> (bytes still read from DRAM, all bytes)
    for operands, tensors in classes:
        whole = sum(problem.tensors[i].size_bytes for i in tensors)
        if not whole:
            continue
        off = sum(problem.tensors[i].size_bytes for i in tensors if s not in plan[i])
        for o in operands:
            keep_of[o] = (off, whole)
    outs = [i for i, t in enumerate(problem.tensors) if t.producer == s]
    whole_out = sum(problem.tensors[i].size_bytes for i in outs)
    written = sum(problem.tensors[i].size_bytes for i in outs if _written_back(problem, plan, i))
    if s in problem.offchip or (all(k == w for k, w in keep_of.values()) and written == whole_out):
        return layer
    drop: set[int] = set()
    resize: dict[int, int] = {}
    groups: dict[object, list] = {}
    for c in layer.commands:
        if type(c) is Load and c.operand in keep_of:
            groups.setdefault(c.operand, []).append(c)
        elif type(c) is Store and c.operand == "output" and _RESULT_REGION[0] <= c.dram_addr < _RESULT_REGION[1]:
            groups.setdefault("result", []).append(c)
    for key, cmds in groups.items():
        keep, whole = (written, whole_out) if key == "result" else keep_of[key]
        if keep == whole:
            continue
        if keep == 0:
            drop.update(c.id for c in cmds)
            continue
        total = sum(c.nbytes for c in cmds)
        target, done = _share(total, keep, whole), 0
        for c in cmds[:-1]:
            resize[c.id] = _share(c.nbytes, keep, whole)
            done += resize[c.id]
        resize[cmds[-1].id] = target - done
    mapping = {**layer.mapping, "allocation": {
        "buffer_bytes": buffer_bytes,
        "resident": sorted(problem.tensors[i].name for i, r in enumerate(plan) if s in r),
        "result_kept_on_chip": written < whole_out}}
    signature = layer.signature + (("allocation", tuple(sorted(keep_of.items())), written, whole_out),)
    return LayerProgram(layer.name, layer.op, layer.macs, without(layer.commands, drop, resize), signature, mapping,
                        layer.arch_key, repeat=layer.repeat, tokens=layer.tokens, weight_format=layer.weight_format,
                        activation_format=layer.activation_format, internal_bytes=layer.internal_bytes)


def without(commands: list, drop: set[int], resize: dict[int, int]) -> list:
    """``commands`` renumbered without the ``drop`` ids (a command that waited on a dropped one
    waits on what that one waited on), transfers in ``resize`` with new byte counts."""
    new_id: dict[int, int] = {}
    inherited: dict[int, tuple[int, ...]] = {}
    out = []
    for c in commands:
        deps: set[int] = set()
        for d in c.deps:
            if d in inherited:
                deps.update(inherited[d])
            else:
                deps.add(new_id[d])
        if c.id in drop:
            inherited[c.id] = tuple(deps)
            continue
        new_id[c.id] = len(out)
        changes = {"id": len(out), "deps": tuple(sorted(deps))}
        if c.id in resize:
            changes["nbytes"] = resize[c.id]
        out.append(dataclasses.replace(c, **changes))
    return out


def _shape_positions(graph, problem: Problem, fusion) -> dict[int, list[str]]:
    """Shape ops by the step after which they are emitted (the last step of the ops they read; -1: none)."""
    step = {name: s for s, name in enumerate(problem.order)}
    step.update({f: step[root] for f, root in fusion.fused_into.items()})
    out: dict[int, list[str]] = {}
    for op in graph.ops():
        if op.kind != "shape":
            continue
        feeds = [ref for ref in graph.inputs_of(op.name) if ref is not None]
        pos = max((step[(ref if ref in graph else ref.rpartition(":")[0])] for ref in feeds), default=-1)
        step[op.name] = pos
        out.setdefault(pos, []).append(op.name)
    return out


def measured_traffic(program: Program, result) -> dict:
    """The engine's DRAM bytes of an allocated ``program`` and what is left above the compulsory
    bytes (weights once, graph inputs once, graph outputs once): the measured non-compulsory bytes,
    which include the tiles' re-reads that the plan does not model. Weight bytes the Program never
    loads (the plan counts biases; the mappers do not load them) are not counted as compulsory."""
    total = int(result.dram_bytes)
    a = program.allocation
    unloaded = max(0, int(a["weight_bytes"]) - int(result.dram_bytes_by_operand.get("weight", 0)))
    compulsory = int(a["compulsory_bytes"]) - unloaded
    return {"dram_bytes": total, "measured_compulsory_bytes": compulsory,
            "measured_non_compulsory_bytes": total - compulsory}
