"""Periods of a GEMM's command stream: ONE of ``count`` identical slices (``LayerProgram.repeat``).

Template-independent: works on the stream :func:`mappers.tiling.emit_gemm` gives a GEMM
under a :class:`~mappers.tiling.TilePlan`, whatever ``split`` (a template's compute tiles of
a buffer tile). When the stream repeats a *unit* (one output tile when K spans several
tiles; else one row or column of output tiles; every unit's loads, tiles and stores the
same sizes) a period of whole units (at least ``min_steps`` buffer tiles) is cut from the
middle of the stream, just after a unit's last tile: in isolation it starts with its first
tile (its operands were prefetched by the period before) and its previous unit's store
overlaps it, as in the stream. Rows of output tiles that end in a narrower tile are built
from tiles cut once from a 3-row sample (:func:`row_period`). Every period is checked
against the closed form (:func:`checked`: DRAM bytes by operand and tiles are exactly
``1 / count`` of the whole GEMM's), else None and the caller emits the whole stream.

What periods lose is the layer's fill and drain (first loads, last store) and whatever
the template's first tile does differently (a systolic array's unhidden first preload);
callers bound it and decide (``mappers.lut``, ``mappers.systolic``).
"""
from __future__ import annotations

import dataclasses

from archsim.program import Compute, Load, Store
from mappers.emit import BufferLayout, Emitter
from mappers.lower import Gemm
from mappers.tiling import ORDERS, TilePlan, emit_gemm, traffic

#: buffer tiles (steps) per period at least; a GEMM of fewer than 4 periods' worth runs whole
PERIOD_STEPS = 1024


def units(g: Gemm, plan: TilePlan):
    """The periodic unit of ``g``'s command stream under ``plan``, or None:
    ``(outer dim, its tile count, inner dim or None, its tile count, steps per unit)``;
    units run outer-major and each one's commands repeat the previous one's (sizes,
    operands, dependencies relative to the unit) exactly."""
    nm, nk, nn = plan.counts(g)
    m_even, n_even = g.m % plan.tm == 0, g.n % plan.tn == 0
    if plan.order in ("mnk", "nmk") and nk > 1:  # A and B tiles loaded every step: a unit is one output tile
        if not (m_even and n_even):
            return None
        return ("m", nm, "n", nn, nk) if plan.order == "mnk" else ("n", nn, "m", nm, nk)
    if plan.order == "mnk" and nn > 1 and m_even:  # K in one tile: A[m] resident across n, B every step
        return ("m", nm, None, 1, nn)
    if plan.order == "nmk" and nm > 1 and n_even:  # K in one tile: B[n] resident across m, A every step
        return ("n", nn, None, 1, nm)
    if plan.order == "nkm" and (nk > 1 or nm > 1) and n_even:  # B once, psums resident or spilled per column
        return ("n", nn, None, 1, nk * nm)
    return None


def periodic_slice(g: Gemm, plan: TilePlan, split, layout: BufferLayout, min_steps: int = PERIOD_STEPS,
                   unit: str = "array"):
    """``(commands, count, steps)``: ONE of ``count`` identical periods of the command stream
    :func:`~mappers.tiling.emit_gemm` gives ``g`` under ``plan`` (``steps`` buffer tiles each,
    at least ``min_steps``), or None when the stream is too short or not periodic."""
    shape = units(g, plan)
    if shape is None:
        return row_period(g, plan, split, layout, min_steps, unit)
    outer, n_outer, inner, n_inner, unit_steps = shape
    n_units = n_outer * n_inner
    if n_units * unit_steps < 4 * min_steps:
        return None
    per = next((d for d in range(-(-min_steps // unit_steps), n_units + 1) if n_units % d == 0), n_units)
    count = n_units // per
    if count < 3:
        return None
    # emit the first per + 2 units (whole rows of the inner dim past the first row), cut out units 1 .. per
    want = per + 2
    tiles = {"m": plan.tm, "n": plan.tn}
    if inner is None or want > n_inner:
        dims = {outer: -(-want // n_inner) * tiles[outer]}
    else:
        dims = {outer: tiles[outer], inner: want * tiles[inner]}
    em = Emitter(layout)
    # the stream up to two steps past the period (the period issues the first one's loads; the
    # second one's loads keep the first one's Computes apart from the period's last: step_ends)
    emit_gemm(em, dataclasses.replace(g, **dims), plan, split, max_steps=unit_steps * (per + 1) + 2, unit=unit)
    cmds = em.commands
    computes = step_ends(cmds)
    start, end = cut(cmds, computes, unit_steps, unit_steps * (per + 1))
    out = []
    for c in cmds[start:end]:
        out.append(dataclasses.replace(c, id=c.id - start, deps=tuple(d - start for d in c.deps if d >= start)))
    return checked(g, plan, out, count, per * unit_steps)


def checked(g: Gemm, plan: TilePlan, out: list, count: int, steps: int):
    """``(out, count, steps)`` if the period carries exactly 1/count of the whole GEMM's DRAM
    bytes (closed form, by operand) and tiles (buffer tiles: Computes grouped by step), else None."""
    tr = traffic(g, plan.tm, plan.tk, plan.tn, ORDERS.index(plan.order), plan.spill)
    got = {"input": 0, "weight": 0, "rest": 0}
    blocks = 0  # buffer tiles: runs of consecutive Computes (one compute_block each)
    prev_compute = False
    for c in out:
        is_compute = isinstance(c, Compute)
        if isinstance(c, (Load, Store)):
            key = c.operand if isinstance(c, Load) and c.operand in ("input", "weight") else "rest"
            got[key] += c.nbytes
        elif is_compute and not prev_compute:
            blocks += 1
        prev_compute = is_compute
    nm, nk, nn = plan.counts(g)
    if (got["input"] * count, got["weight"] * count, got["rest"] * count, blocks * count, steps * count) != \
            (int(tr.a), int(tr.b), int(tr.out + tr.psum + tr.residual), nm * nk * nn, nm * nk * nn):
        return None
    return out, count, steps


def step_ends(cmds: list) -> list[int]:
    """Index of each buffer tile's (step's) last Compute: a step's Computes are consecutive
    (one ``compute_block``) and every step but the stream's last is preceded by a Load."""
    return [i for i, c in enumerate(cmds)
            if isinstance(c, Compute) and (i + 1 == len(cmds) or not isinstance(cmds[i + 1], Compute))]


def cut(cmds: list, computes: list, a: int, b: int) -> tuple[int, int]:
    """Command range of steps ``a .. b - 1`` (``computes``: index of each step's last Compute):
    from the first command after Compute ``a - 1``'s trailing stores (the next step's loads)
    to the same point after Compute ``b - 1``."""
    def after(i):
        j = computes[i] + 1
        while j < len(cmds) and isinstance(cmds[j], Store):
            j += 1
        return j

    return after(a - 1), after(b - 1)


def row_period(g: Gemm, plan: TilePlan, split, layout: BufferLayout, min_steps: int = PERIOD_STEPS,
               unit: str = "array"):
    """Periods of whole rows of output tiles when the inner dim ends in a narrower tile (``mnk``
    / ``nmk`` with K over several tiles). Each output tile's commands depend on its neighbours
    only (dependencies reach back into the previous tile, loads run one step into the next), so
    every kind of tile (a row's first, a full one between full ones, the last full one, the
    narrow one) is cut once from a 3-row sample stream and the row built from shifted copies."""
    nm, nk, nn = plan.counts(g)
    if plan.order not in ("mnk", "nmk") or nk < 2:
        return None
    outer, inner = ("m", "n") if plan.order == "mnk" else ("n", "m")
    tile = {"m": plan.tm, "n": plan.tn}
    n_outer, n_inner = (nm, nn) if plan.order == "mnk" else (nn, nm)
    size = {"m": g.m, "n": g.n}
    rem = size[inner] % tile[inner]
    if size[outer] % tile[outer] or not rem or n_inner < 2:
        return None
    row_steps = n_inner * nk
    rows = next((d for d in range(-(-min_steps // row_steps), n_outer + 1) if n_outer % d == 0), n_outer)
    count = n_outer // rows
    if count < 2 or n_outer * row_steps < 4 * min_steps:
        return None
    per_row = min(n_inner, 4)  # a row's first tile, (a full one between full ones, the last full one,) the narrow one
    em = Emitter(layout)
    emit_gemm(em, dataclasses.replace(g, **{outer: 3 * tile[outer], inner: (per_row - 1) * tile[inner] + rem}),
              plan, split, unit=unit)
    cmds = em.commands
    computes = step_ends(cmds)
    base = per_row * nk  # row 1 of the sample
    pieces = [cut(cmds, computes, base + j * nk, base + (j + 1) * nk) for j in range(per_row)]
    # a piece's loads include the next tile's first step: each piece stands between the same neighbours
    order = [pieces[0]] + [pieces[1]] * (n_inner - 3) + pieces[2:] if n_inner > 3 else pieces
    out: list = []
    for _ in range(rows):
        for lo, hi in order:
            shift = len(out) - lo
            for c in cmds[lo:hi]:
                deps = tuple(d + shift for d in c.deps if d + shift >= 0)
                out.append(dataclasses.replace(c, id=c.id + shift, deps=deps))
    return checked(g, plan, out, count, rows * row_steps)
