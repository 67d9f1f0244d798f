"""GEMM tiling: buffer tiles, loop orders, DRAM traffic and buffer occupancy.

A GEMM ``A[M, K] x B[K, N]`` is cut into *buffer tiles* ``tm x tk x tn``
(what one Load brings into a slot). A template then splits each buffer tile
into *compute tiles* (one array fold each). This module is template-
independent: it enumerates candidate tile sizes, and gives, in closed form and
vectorised over candidates, the DRAM bytes each loop order moves and the
buffer bytes it occupies. :func:`emit_gemm` emits the Load / Compute / Store
commands of a chosen :class:`TilePlan`; its byte counts equal the closed form
exactly (tests check it).

Loop orders (outer -> inner; a Load is skipped when the operand's tile index
is unchanged since its previous load, so that operand stays resident):

``"mnk"``
    A[m, :] stays resident across n when K fits one tile (``nk == 1``); the
    output tile is complete after the k loop and stored once.
``"nmk"``
    B[:, n] stays resident across m when ``nk == 1``.
``"nkm"``
    B[k, n] is loaded exactly once; partial sums of the whole column of
    output tiles either stay in the output buffer (``out_slots = nm``) or,
    when they do not fit, are spilled (stored in ``acc_precision``) after
    every k tile but the last and reloaded before the next (``spill``).

Slots: two per operand (double buffering), so the next tile's load overlaps
the current tile's compute; the output uses two slots, or ``nm`` in
resident-``nkm``.

Conv A tiles hold the expanded (im2col) tile in the buffer but move
``ceil(bytes * a_dram_ratio)`` bytes from DRAM (see :mod:`mappers.lower`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mappers.lower import Gemm
from workloads.precision import precision_bits

ORDERS = ("mnk", "nmk", "nkm")
_ORDER_CODE = {o: i for i, o in enumerate(ORDERS)}


@dataclass(frozen=True, slots=True)
class TilePlan:
    """One way to run a GEMM: buffer tile sizes, loop order, psum handling."""

    dataflow: str
    tm: int
    tk: int
    tn: int
    order: str = "mnk"
    spill: bool = False  # nkm only: psums stored and reloaded between k tiles

    def counts(self, g: Gemm) -> tuple[int, int, int]:
        return (-(-g.m // self.tm), -(-g.k // self.tk), -(-g.n // self.tn))

    def out_slots(self, g: Gemm) -> int:
        if self.order == "nkm" and not self.spill:
            return max(2, -(-g.m // self.tm))
        return 2

    def as_mapping(self, g: Gemm) -> dict:
        nm, nk, nn = self.counts(g)
        return {"dataflow": self.dataflow, "tile_m": self.tm, "tile_k": self.tk, "tile_n": self.tn,
                "loop_order": self.order, "psum_spill": self.spill, "tiles": (nm, nk, nn)}


# -- bytes, scalar and vectorised (identical arithmetic) ---------------------------

@dataclass(frozen=True)
class MemoryCosts:
    """What a tile search needs of an arch's memories: DRAM cycles per byte and latency,
    pJ per DRAM byte and per SRAM byte (the largest buffer's macro)."""

    inv_bw: float
    latency: int
    e_dram: float
    e_sram: float

    @classmethod
    def of(cls, arch) -> "MemoryCosts":
        bw = float(arch.dram.bytes_per_cycle)
        inv_bw = 0.0 if bw == float("inf") else 1.0 / bw
        tech = arch.tech
        try:
            e_dram = 8.0 * tech.energy("dram_bit")
        except (KeyError, AttributeError):
            e_dram = 8.0 * float(getattr(tech, "energy_pj", {}).get("dram_bit", 20.0))
        try:
            e_sram = float(tech.sram_pj_per_byte(max(b.bytes for b in arch.buffers.values())))
        except (KeyError, AttributeError, ValueError):
            e_sram = 2.5
        return cls(inv_bw, int(arch.dram.latency_cycles) if inv_bw else 0, e_dram, e_sram)


def nbytes(elements, bits):
    """Densely packed bytes (works on ints and numpy int64 arrays)."""
    return (elements * bits + 7) // 8


def a_load_bytes(g: Gemm, sm, sk):
    """DRAM bytes of loading an ``sm x sk`` A tile."""
    b = nbytes(sm * sk, precision_bits(g.a_precision))
    if g.a_dram_ratio >= 1.0:
        return b
    if isinstance(b, np.ndarray):
        return np.ceil(b * g.a_dram_ratio).astype(np.int64)
    return int(np.ceil(b * g.a_dram_ratio))


def _classes(total: int, t):
    """Tile-size classes along a dim of ``total`` cut in tiles of ``t``:
    ((count_full, t), (count_rem, rem)); count_rem is 0 or 1."""
    full = total // t
    rem = total - full * t
    return ((full, t), ((rem > 0) * 1, np.maximum(rem, 1) if isinstance(rem, np.ndarray) else max(rem, 1)))


def class_sum(g: Gemm, tm, tk, tn, fn, dims: str = "mkn"):
    """Sum of ``count * fn(sm, sk, sn)`` over every buffer tile of the GEMM
    (tiles come in at most 8 shape classes: full or remainder per dim).
    ``dims`` selects which dims to enumerate (the others are passed as None)."""
    cm = _classes(g.m, tm) if "m" in dims else ((1, None),)
    ck = _classes(g.k, tk) if "k" in dims else ((1, None),)
    cn = _classes(g.n, tn) if "n" in dims else ((1, None),)
    total = 0
    for am, sm in cm:
        for ak, sk in ck:
            for an, sn in cn:
                cnt = am * ak * an
                total = total + cnt * fn(sm, sk, sn)
    return total


@dataclass
class Traffic:
    """DRAM bytes by operand; ``psum`` counts spill stores plus reloads;
    ``residual`` the fused residual input (:attr:`Gemm.residual`)."""

    a: object
    b: object
    out: object
    psum: object
    residual: object = 0

    @property
    def total(self):
        return self.a + self.b + self.out + self.psum + self.residual


def traffic(g: Gemm, tm, tk, tn, order_code, spill):
    """Closed-form DRAM bytes of one GEMM iteration (vectorised over candidates).

    ``order_code``: index in :data:`ORDERS`; ``spill``: bool (array).
    """
    nm, nk, nn = -(-g.m // tm), -(-g.k // tk), -(-g.n // tn)
    pass_a = class_sum(g, tm, tk, tn, lambda sm, sk, sn: a_load_bytes(g, sm, sk), "mk")
    bbits = precision_bits(g.b_precision)
    pass_b = class_sum(g, tm, tk, tn, lambda sm, sk, sn: nbytes(sk * sn, bbits), "kn")
    obits, pbits = precision_bits(g.out_precision), precision_bits(g.acc_precision)
    pass_o = class_sum(g, tm, tk, tn, lambda sm, sk, sn: nbytes(sm * sn, obits), "mn")
    pass_p = class_sum(g, tm, tk, tn, lambda sm, sk, sn: nbytes(sm * sn, pbits), "mn")
    one_k = nk == 1
    # mnk: A reloaded per n unless K fits; B reloaded per m unless it all fits one tile
    a_mnk = pass_a * np.where(one_k, 1, nn)
    b_mnk = pass_b * np.where(one_k & (nn == 1), 1, nm)
    # nmk: symmetric
    a_nmk = pass_a * np.where(one_k & (nm == 1), 1, nn)
    b_nmk = pass_b * np.where(one_k, 1, nm)
    # nkm: B once; A per n (unless one m and one k tile); psums spilled 2x per extra k tile
    a_nkm = pass_a * np.where(one_k & (nm == 1), 1, nn)
    b_nkm = pass_b
    p_nkm = np.where(spill, 2 * (nk - 1) * pass_p, 0)
    code = np.asarray(order_code)
    a = np.choose(code, [a_mnk, a_nmk, a_nkm])
    b = np.choose(code, [b_mnk, b_nmk, b_nkm])
    p = np.where(code == 2, p_nkm, 0)
    return Traffic(a, b, pass_o + 0 * a, p, pass_o + 0 * a if g.residual else 0)


def occupancy(g: Gemm, tm, tk, tn, out_slots):
    """Buffer bytes used: operand -> bytes (2 slots for A and B)."""
    return {
        "input": 2 * nbytes(tm * tk, precision_bits(g.a_precision)),
        "weight": 2 * nbytes(tk * tn, precision_bits(g.b_precision)),
        "output": out_slots * nbytes(tm * tn, precision_bits(g.acc_precision))
        + (2 * nbytes(tm * tn, precision_bits(g.out_precision)) if g.residual else 0),
    }


def dim_candidates(total: int, step: int) -> list[int]:
    """Tile sizes along a dim the array folds by ``step``: powers-of-two
    multiples of ``step`` below ``total``, balanced splits, and ``total``."""
    out = {total}
    t = step
    while t < total:
        out.add(t)
        t *= 2
    for parts in (2, 3, 5, 7):
        t = -(-total // parts)
        t = -(-t // step) * step
        if t < total:
            out.add(t)
    return sorted(out)


# -- emission ----------------------------------------------------------------------

def emit_gemm(em, g: Gemm, plan: TilePlan, split, dram_base: int = 0, max_steps: int | None = None,
              unit: str = "array") -> None:
    """Emit the Loads, Computes and Stores of one iteration of ``g`` under ``plan``.

    ``split(sm, sk, sn, accumulate)`` returns the compute tiles of one buffer
    tile in execution order (one array fold each; ``accumulate`` tells whether
    the buffer tile adds onto an existing partial sum). Loads are issued one step ahead and
    stores one step behind so that, on an in-order DMA, the next tile's loads
    overlap the current tile's compute. ``max_steps``: only the first that many steps (a
    prefix of the stream, for :mod:`mappers.periods` to cut a period from). ``unit``: the
    compute unit the tiles run on, as the template's model names it in its ``units``.
    """
    M, K, N = g.m, g.k, g.n
    tm, tk, tn = plan.tm, plan.tk, plan.tn
    nm, nk, nn = plan.counts(g)
    abits, bbits = precision_bits(g.a_precision), precision_bits(g.b_precision)
    obits, pbits = precision_bits(g.out_precision), precision_bits(g.acc_precision)
    a_base, b_base, o_base, p_base = dram_base, dram_base + (1 << 40), dram_base + (2 << 40), dram_base + (3 << 40)

    if plan.order == "mnk":
        steps = ((mi, ki, ni) for mi in range(nm) for ni in range(nn) for ki in range(nk))
    elif plan.order == "nmk":
        steps = ((mi, ki, ni) for ni in range(nn) for mi in range(nm) for ki in range(nk))
    else:
        steps = ((mi, ki, ni) for ni in range(nn) for ki in range(nk) for mi in range(nm))
    resident = plan.order == "nkm" and not plan.spill
    out_slots = plan.out_slots(g)

    cur = {"input": None, "weight": None}
    slot = {"input": 1, "weight": 1}
    out_rr = [0]  # round-robin output slot counter (non-resident)
    out_slot_of: dict = {}

    def sizes(mi, ki, ni):
        return (min(tm, M - mi * tm), min(tk, K - ki * tk), min(tn, N - ni * tn))

    r_base = dram_base + (4 << 40)
    residual_at: dict = {}  # (mi, ni) -> residual slot index (after the output slots)

    def loads_of(step):
        mi, ki, ni = step
        sm, sk, sn = sizes(mi, ki, ni)
        cmds = []
        if g.residual and ki == nk - 1:  # the tile's residual input, read by its final store
            rs = out_slots + len(residual_at) % 2
            residual_at[(mi, ni)] = rs
            cmds.append(("residual", rs, nbytes(sm * sn, obits), r_base + ((mi * tm) * N + ni * tn) * obits // 8))
        if cur["input"] != (mi, ki):
            cur["input"] = (mi, ki)
            slot["input"] ^= 1
            cmds.append(("input", slot["input"], a_load_bytes(g, sm, sk), a_base + ((mi * tm) * K + ki * tk) * abits // 8))
        if cur["weight"] != (ki, ni):
            cur["weight"] = (ki, ni)
            slot["weight"] ^= 1
            cmds.append(("weight", slot["weight"], nbytes(sk * sn, bbits), b_base + ((ki * tk) * N + ni * tn) * bbits // 8))
        return cmds, slot["input"], slot["weight"]

    steps = list(steps) if max_steps is None else [s for _, s in zip(range(max_steps), steps)]
    pending: list = []  # deferred stores: (operand, slot, nbytes, addr, spill key or None)
    spilled: dict = {}  # (mi, ni) -> id of the Store that spilled that psum
    prepared = [None] * len(steps)

    def issue_loads(i):
        cmds, sa, sb = loads_of(steps[i])
        for operand, s, nb, addr in cmds:
            em.load(operand, s, nb, addr, into="output" if operand == "residual" else None)
        prepared[i] = (sa, sb)

    issue_loads(0)
    for i, (mi, ki, ni) in enumerate(steps):
        if i + 1 < len(steps):
            issue_loads(i + 1)
        sa, sb = prepared[i]
        sm, sk, sn = sizes(mi, ki, ni)
        if resident:
            os_ = mi % out_slots
        elif ki == 0 or plan.order != "nkm":
            if ki == 0:
                os_ = out_rr[0] % out_slots
                out_rr[0] += 1
                out_slot_of[(mi, ni)] = os_
            else:
                os_ = out_slot_of[(mi, ni)]
        else:  # spilled nkm: reload the partial sum into a fresh slot
            for st in pending:
                spilled[st[4]] = em.store(*st[:4], reads=st[5])
            pending = []
            os_ = out_rr[0] % out_slots
            out_rr[0] += 1
            out_slot_of[(mi, ni)] = os_
            em.load("output", os_, nbytes(sm * sn, pbits), p_base + ((mi * tm) * N + ni * tn) * pbits // 8,
                    after=(spilled.pop((mi, ni)),))
        em.compute_block(split(sm, sk, sn, ki > 0), (("input", sa), ("weight", sb)), os_, unit)
        for st in pending:
            spilled[st[4]] = em.store(*st[:4], reads=st[5])
        pending = []
        if ki == nk - 1:
            rs = residual_at.pop((mi, ni), None)
            pending.append(("output", os_, nbytes(sm * sn, obits), o_base + ((mi * tm) * N + ni * tn) * obits // 8, None,
                            () if rs is None else (("output", rs),)))
        elif plan.order == "nkm" and plan.spill:
            pending.append(("output", os_, nbytes(sm * sn, pbits), p_base + ((mi * tm) * N + ni * tn) * pbits // 8, (mi, ni),
                            ()))
    for st in pending:
        em.store(*st[:4], reads=st[5])
