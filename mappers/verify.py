"""Checks of a LayerProgram against the Program contract (used by tests and
available to anyone emitting Programs by hand).

:func:`layer_violations` returns human-readable problems (empty = fine):

- ids are list indices and every dep points to an earlier command;
- read-after-write: a Compute reading a slot (and its output slot when it
  accumulates) and a Store reading a slot transitively depend on the slot's
  last writer;
- write-after-read / write-after-write: a Load into a slot, or a Compute that
  overwrites its output slot, transitively depends on every command that read
  the slot's previous contents and on its previous writer ("depends" counts
  the in-order units: a command also follows every earlier command of its unit);
- a Compute tile passes the template model's ``check_tile`` (with an arch);
- per buffer, the largest load of each slot summed over its slots fits the
  buffer's bytes (slots of a unified buffer share it).

VectorOps carry no slots; they are checked for deps only.
"""
from __future__ import annotations

from archsim.program import Compute, Load, Store, VectorOp


def layer_violations(layer, arch=None, limit: int = 20) -> list[str]:
    problems: list[str] = []
    cmds = layer.commands
    anc: list[int] = []  # bitmask of the commands guaranteed to finish before each starts
    prev_on_unit: dict = {}
    for i, c in enumerate(cmds):
        if c.id != i:
            problems.append(f"command {i}: id {c.id} != index")
        mask = 0
        p = prev_on_unit.get(c.unit)
        if p is not None:  # units run their commands in list order
            mask |= anc[p] | (1 << p)
        prev_on_unit[c.unit] = i
        for d in c.deps:
            if not 0 <= d < i:
                problems.append(f"command {i}: dep {d} is not an earlier command")
                continue
            mask |= anc[d] | (1 << d)
        anc.append(mask)
    if problems:
        return problems[:limit]

    def before(j: int, i: int) -> bool:
        """j is guaranteed to finish before i starts (deps and in-order units)."""
        return bool((anc[i] >> j) & 1)

    def buffer_of(operand: str) -> str:
        if arch is not None and "unified" in arch.buffers and operand not in arch.buffers:
            return "unified"
        return operand

    writer: dict = {}
    readers: dict = {}
    vectors: list[int] = []
    held: dict = {}

    def check_raw(i, key, what):
        w = writer.get(key)
        if w is None and any(before(v, i) for v in vectors[-4:]):
            return  # a VectorOp (no slots in the contract) produced it
        if w is None:
            problems.append(f"command {i}: {what} reads {key} which nothing wrote")
        elif not before(w, i):
            problems.append(f"command {i}: {what} reads {key} without depending on its writer {w}")

    def check_war(i, key, what):
        for r in readers.get(key, ()):
            if not before(r, i):
                problems.append(f"command {i}: {what} overwrites {key} before its reader {r} is done")
        w = writer.get(key)
        if w is not None and not before(w, i):
            problems.append(f"command {i}: {what} overwrites {key} before its writer {w} is done")

    model = arch.model() if arch is not None else None
    for i, c in enumerate(cmds):
        cls = type(c)
        if cls is Load:
            key = (c.buffer, c.slot)
            check_war(i, key, "Load")
            writer[key] = i
            readers[key] = []
            held[key] = max(held.get(key, 0), c.nbytes)
        elif cls is Store:
            key = (c.buffer, c.slot)
            check_raw(i, key, "Store")
            readers.setdefault(key, []).append(i)
        elif cls is VectorOp:
            vectors.append(i)
        elif cls is Compute:
            out_key = None
            for operand, slot in c.slots:
                key = (buffer_of(operand), slot)
                if operand == "output":
                    out_key = key
                    continue
                check_raw(i, key, "Compute")
            acc = bool(getattr(c.tile, "accumulate", False))
            if out_key is not None:
                if acc:
                    check_raw(i, out_key, "accumulating Compute")
                    for r in readers.get(out_key, ()):
                        if not before(r, i):
                            problems.append(f"command {i}: Compute overwrites {out_key} before reader {r}")
                else:
                    check_war(i, out_key, "Compute")
            for operand, slot in c.slots:
                if operand != "output":
                    readers.setdefault((buffer_of(operand), slot), []).append(i)
            if out_key is not None:
                writer[out_key] = i
                readers[out_key] = []
            if model is not None:
                try:
                    model.check_tile(c.tile)
                except ValueError as err:
                    problems.append(f"command {i}: tile {c.tile}: {err}")
        if len(problems) >= limit:
            return problems
    if arch is not None:
        use: dict = {}
        for (buf, _slot), nb in held.items():
            use[buf] = use.get(buf, 0) + nb
        for buf, nb in use.items():
            spec = arch.buffers.get(buf)
            if spec is not None and nb > spec.bytes:
                problems.append(f"buffer {buf}: slots hold {nb} bytes > capacity {spec.bytes}")
    return problems[:limit]
