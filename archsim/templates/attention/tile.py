"""Tiles of the attention template and their timing contract (closed form).

Notation: ``R x C`` 2D array, ``d`` head dim, ``q <= R`` query rows of a
tile, ``L`` keys, ``nb = ceil(L / C)`` key blocks (a partial block takes a
full block's time: fixed counters), ``E = exp_macs``,
``c1(n, f) = ceil(n / (pe1d * ops1d_per_cycle[f])) + latency1d[f]`` the 1D array's
cycles for ``n > 0`` ops of function ``f`` (issue, then the pipelined unit's latency; 0 for
``n = 0``), ``skew = R + C - 2`` the wavefront fill and
drain of the 2D array, and ``S = latency2d`` the 2D PEs' multiplier latency (0 by default: below).

With a pipelined 1D adder (``A = latency1d.add > 0``) two terms change (both 0 by default): FLAT's
``s*c - m*c`` adds the product's sum, ``c1(qL,mul) + A``; and a row sum of ``q`` rows of ``n``
elements (in order, from +0: FLAT's ``l``, the fusemax row sum with exp on the 1D array) is not a
chain through the lanes in one cycle but :func:`row_reduce_cycles`: each lane sums its own rows, up to
``A`` interleaved. The exp op's subtraction runs on that adder: ``latency1d.exp`` is the whole op's.
Likewise a pipelined compare (``latency1d.max > 0``): FLAT's row max of ``q`` rows of ``L`` scores is
:func:`row_reduce_cycles` with that latency, not ``c1(qL, max)``.

Mapping of a block onto the 2D array: PE(i, j) owns the score of query i and
key j (output stationary): ``QK`` streams Q rows from the left and K columns
from the top, one head-dim step per cycle (``d`` cycles); the row max and the
row sum are compare / add chains along the rows (1 cycle each); with
``exp_on = "array2d"`` each PE evaluates ``exp2`` of its own scaled score in
``E`` MAC cycles (FuseMax); ``AV`` keeps the probabilities stationary, streams
V down the columns and reduces along the rows, one head-dim column per cycle
(``d`` cycles).

With ``S = latency2d > 0`` a PE's product reaches its adder ``S`` cycles after its operands:
QK's and P.V's products stream (each phase ``S`` cycles longer), the exp's range reduction and
each of its ``E - 1`` Horner steps wait for their product (``S + 1`` cycles each): ``QK + row
max = d + S + 1``, ``exp + row sum + AV = E (S + 1) + 1 + d + S``, FLAT's ``qk`` / ``av`` and the
``AV`` phase with exp on the 1D array ``S`` longer. The table below is ``S = 0``.

With ``A = latency2d_add``, ``Rn = latency2d_rint`` and ``Lx = latency2d_ldexp`` (pipelined adders,
``rint`` and ``ldexp`` in the PEs; FuseMax with exp on the 2D array only) QK interleaves ``L = A + 1``
partial sums on the adder, then adds them in a pairwise tree on it (``qk_sum_cycles(d, A) =
max(d, L) + K L + 2**K``, ``K = ceil(log2 L)``; the summation order is
:func:`~archsim.templates.attention.values.dot_rows`), the range reduction is the product, the add, ``rint``
and the subtraction ``x - n`` (``S + 2A + Rn + 1`` cycles), a Horner step the product and the add
(``S + A + 1``), ``2**n`` waits ``Lx`` cycles, and the row chains pass one adder per column
(``C A`` cycles of skew after the last ``P.V`` column); with ``A > 0`` the row max chain is
registered too (the selected score, then one register per column: ``C + 1`` cycles), and Q and K
enter QK as a real wavefront (PE ``(i, j)`` ``i + j`` cycles late: skew registers at the array's
edges, one register per hop), so row ``i``'s max is ready ``i`` cycles after row 0's (``R - 1``
more) and the tile's end has no wave left to drain (``skew_cycles`` 0)::

    qk_max     = qk_sum_cycles(d, A) + S + 1 + (R + C if A > 0)
    exp_sum_av = (S + 2A + Rn + 1) + (E - 1)(S + A + 1) + Lx + 1 + d + S + C A

(``A = Rn = Lx = 0``: the formulas above.)

FuseMax (``mapping = "fusemax"``, one pass, online softmax)
------------------------------------------------------------
Software-pipelined in *slots*; in slot ``s`` each unit runs the phases active
in that slot back to back and the slot lasts as long as the slower unit (the
units synchronise at slot boundaries, so every value a phase reads was
produced in an earlier slot). ``lag = 2`` with exp on the 2D array, 3 with
exp on the 1D array:

=========  =====  ===============================================  ==================
unit       block  phase                                            cycles
=========  =====  ===============================================  ==================
array2d    s      QK + row max                                     ``d + 1``
array2d    s-2    exp (2D) + row sum + AV      (exp on 2D)         ``E + 1 + d``
array1d    s-1    running max, ``m*c``, ``alpha = exp2(...)``      ``c1(q,max)+c1(q,mul)+c1(q,exp)``
array1d    s-2    exp + row sum of the block   (exp on 1D)         ``c1(qC,exp)+c1(qC,add)``
array2d    s-3    AV                           (exp on 1D)         ``d``
array1d    s-lag-1  ``l = l*alpha + rowsum``, ``O = O*alpha + PV``   ``c1(q,mul)+c1(q,add)+c1(qd,mul)+c1(qd,add)``
=========  =====  ===============================================  ==================

A phase for block ``b`` runs only for ``0 <= b < nb``; the pass has
``nb + lag + 1`` slots. A tile with ``passes = n`` runs ``n`` query tiles of
``q`` rows against the same keys as one continuous stream of ``n * nb``
blocks (each pass with its own running state), so the pipeline fills and
drains once: ``n * nb + lag + 1`` slots. A pass may be cut into chunks of keys that carry the
running state (``first`` / ``last`` mark its ends). After the last slot of a
tile with ``drain=True`` the wave drains (``skew``); the mapper clears
``drain`` on every 2D tile but the last of an iteration, since the next
tile's wave enters right behind::

    cycles = sum over slots of max(2D phases, 1D phases) + drain * skew

The companion tile ``phase="rescale"`` on unit ``array1d`` takes the 1D
array's busy cycles of the same pass, plus, when ``last``, the final divide by
the sum, ``fin = c1(q,recip) + c1(qd,mul)`` (it overlaps the next pass on
the 2D array): ``sum over slots of 1D phases + last * fin``.

FLAT and unfused (``mapping = "flat"``): two passes, row granular
-----------------------------------------------------------------
Phases ``qk`` (2D: ``drain*skew + nb*d``), ``softmax`` (1D: row max, ``S*c - m*c``,
exp, row sum, reciprocal, normalize:
``c1(qL,max) + c1(q,mul) + c1(qL,mul) + c1(qL,exp) + c1(qL,add) + c1(q,recip) + c1(qL,mul)``
(with ``A > 0``: ``+ A`` after ``s*c - m*c``, ``row_reduce_cycles(q, L, add)`` for ``c1(qL,add)``; with
``latency1d.max > 0``: ``row_reduce_cycles(q, L, max)`` for ``c1(qL,max)``);
with ``flat_scale_on = "array2d"`` the scores leave the 2D array already scaled by
``c`` and the two ``mul`` terms of the scale go:
``c1(qL,max) + c1(qL,exp) + c1(qL,add) + c1(q,recip) + c1(qL,mul)``, 4 ops per score)
and ``av`` (2D: ``drain*skew + nb*d``); ``phase = "all"`` is the three in sequence.
The exps of FLAT run on the 1D array whatever ``exp_on`` says (FLAT's design).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

MAPPINGS = ("fusemax", "flat")
PHASES = {"fusemax": ("all", "rescale"), "flat": ("all", "qk", "softmax", "av")}


@dataclass(frozen=True, slots=True)
class AttentionTile:
    """One query block of ``q_rows`` queries against ``kv_len`` keys of head dim ``head_dim``."""

    mapping: str
    q_rows: int
    kv_len: int
    head_dim: int
    phase: str = "all"
    first: bool = True
    last: bool = True
    drain: bool = True
    passes: int = 1

    @property
    def unit(self) -> str:
        return "array1d" if self.phase in ("rescale", "softmax") else "array2d"

    def check(self, params) -> None:
        if self.mapping not in MAPPINGS:
            raise ValueError(f"mapping: expected one of {', '.join(MAPPINGS)}, got {self.mapping!r}")
        if self.phase not in PHASES[self.mapping]:
            raise ValueError(f"phase: expected one of {', '.join(PHASES[self.mapping])} for {self.mapping}, "
                             f"got {self.phase!r}")
        for key in ("q_rows", "kv_len", "head_dim"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.q_rows > params.rows:
            raise ValueError(f"q_rows: expected at most {params.rows} (array rows), got {self.q_rows}")
        if self.mapping == "flat" and params.latency2d_add:
            raise ValueError(f"mapping: flat tiles are modelled with an unpipelined 2D adder only "
                             f"(latency2d_add = 0), got latency2d_add = {params.latency2d_add}")
        if self.mapping == "flat" and not (self.first and self.last and self.passes == 1):
            raise ValueError("first/last/passes: a flat tile covers one query tile and a whole row of keys")
        if isinstance(self.passes, bool) or not isinstance(self.passes, int) or self.passes < 1:
            raise ValueError(f"passes: expected a positive integer, got {self.passes!r}")


def c1(params, n: int, fn: str) -> int:
    """Cycles of the 1D array for ``n`` ops of function ``fn``: issue at the function's rate, then
    the unit's pipeline latency (``latency1d``; the next op reads the results)."""
    rate = params.rate(fn)
    return ceil(n / rate) + params.latency1d.get(fn, 0) if n else 0


def row_reduce_cycles(params, rows: int, n: int, fn: str) -> int:
    """Cycles of the 1D array for ``rows`` row reductions of ``n`` elements each, in order: sums from +0
    (``fn = "add"``) or maxima (``"max"``).

    One-cycle unit (``latency1d[fn]`` 0): a row is a chain through the lanes, ``c1(rows * n, fn)``.
    Pipelined (``A = latency1d[fn] > 0``): lane ``l`` reduces rows ``l, l + P, ...`` (``k = ceil(rows / P)`` on lane 0),
    up to ``A`` of them interleaved, one element per cycle, a row's next element ``A`` cycles after
    its last: ``G = ceil(k / A)`` groups, each ``n A`` cycles, the last one's ``g = k - (G - 1) A``
    rows done ``(n - 1) A + g + A`` cycles after it starts: ``G n A + g`` in all."""
    a = params.latency1d.get(fn, 0)
    if not a or not rows * n:
        return c1(params, rows * n, fn)
    k = ceil(rows / params.pe1d)
    groups = ceil(k / a)
    return groups * n * a + k - (groups - 1) * a


def qk_sum_cycles(d: int, add_stages: int) -> int:
    """Cycles from a QK phase's first add to its scores in the PEs' rings (products arriving one a
    cycle). One-cycle adder: ``d``. An ``A``-stage adder keeps ``L = A + 1`` partial sums in flight (its
    stages and the register it reads back; :func:`archsim.templates.attention.values.interleaved_partials`):
    ``max(d, L)`` steps, then a pairwise tree of ``K = ceil(log2 L)`` levels on the same adder, level
    ``k``'s first result ``2**(k-1) + L`` cycles after level ``k - 1``'s; one cycle more to the ring:
    ``max(d, L) + K L + 2**K``."""
    if not add_stages:
        return d
    L = add_stages + 1
    levels = (L - 1).bit_length()
    return max(d, L) + levels * L + 2 ** levels


def fusemax_phases(tile: AttentionTile, params) -> tuple[int, list[tuple[str, str, int, int]]]:
    """``(lag, [(unit, phase, cycles, block offset)])``: phase runs in slot ``s`` on block ``s - offset``."""
    q, d, C, E, S = tile.q_rows, tile.head_dim, params.cols, params.exp_macs, params.latency2d
    A, Rn, Lx = params.latency2d_add, params.latency2d_rint, params.latency2d_ldexp
    stat = c1(params, q, "max") + c1(params, q, "mul") + c1(params, q, "exp")
    update = c1(params, q, "mul") + c1(params, q, "add") + c1(params, q * d, "mul") + c1(params, q * d, "add")
    if params.exp_on == "array2d":
        lag = 2
        esa = (S + 2 * A + Rn + 1) + (E - 1) * (S + A + 1) + Lx + 1 + d + S + C * A
        qkm = qk_sum_cycles(d, A) + S + 1 + (params.rows + C if A else 0)
        phases = [("array2d", "qk_max", qkm, 0), ("array2d", "exp_sum_av", esa, 2),
                  ("array1d", "stat", stat, 1), ("array1d", "update", update, 3)]
    else:
        lag = 3
        phases = [("array2d", "qk_max", d + S + 1, 0), ("array2d", "av", d + S, 3),
                  ("array1d", "stat", stat, 1), ("array1d", "exp_sum", c1(params, q * C, "exp")
                                                 + row_reduce_cycles(params, q, C, "add"), 2),
                  ("array1d", "update", update, 4)]
    return lag, phases


def fusemax_final_cycles(tile: AttentionTile, params) -> int:
    return c1(params, tile.q_rows, "recip") + c1(params, tile.q_rows * tile.head_dim, "mul")


def skew_cycles(params) -> int:
    """The wavefront's drain counted once at a tile's end (``drain``): ``R + C - 2``. With pipelined 2D
    adders (``latency2d_add > 0``) 0: Q and K enter as a real wavefront in every QK phase, which
    drains there (``qk_max``'s ``R - 1`` more cycles; its ``C - 1`` ride on the registered row max chain)."""
    return 0 if params.latency2d_add else params.rows + params.cols - 2


def fusemax_slot_segments(nb: int, lag: int, phases) -> list[tuple[int, int, int]]:
    """``[(count, cycles of 2D, cycles of 1D)]``: slots grouped by the set of active phases (closed form)."""
    nslots = nb + lag + 1
    cuts = sorted({0, nslots} | {min(nslots, max(0, o)) for *_, o in phases}
                  | {min(nslots, max(0, o + nb)) for *_, o in phases})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        if b <= a:
            continue
        t2 = sum(c for u, _p, c, o in phases if u == "array2d" and o <= a < o + nb)
        t1 = sum(c for u, _p, c, o in phases if u == "array1d" and o <= a < o + nb)
        out.append((b - a, t2, t1))
    return out


def tile_cycles(tile: AttentionTile, params) -> int:
    """Closed-form cycles of one tile (see the module docstring)."""
    tile.check(params)
    L, d = tile.kv_len, tile.head_dim
    nb = -(-L // params.cols)
    if tile.mapping == "fusemax":
        lag, phases = fusemax_phases(tile, params)
        segs = fusemax_slot_segments(tile.passes * nb, lag, phases)
        tail = tile.passes * fusemax_final_cycles(tile, params) if tile.last else 0
        if tile.phase == "rescale":
            return sum(n * t1 for n, _t2, t1 in segs) + tail
        return sum(n * max(t2, t1) for n, t2, t1 in segs) + (skew_cycles(params) if tile.drain else 0)
    qk = av = (skew_cycles(params) if tile.drain else 0) + nb * d + params.latency2d
    sm = flat_softmax_cycles(tile, params)
    return {"qk": qk, "av": av, "softmax": sm, "all": qk + sm + av}[tile.phase]


def flat_softmax_ops(tile: AttentionTile, params) -> list[tuple[int, str]]:
    """The 1D ops of FLAT's softmax in order, ``[(count, function)]``: with
    ``flat_scale_on = "array1d"`` max, ``m*c``, ``s*c - m*c``, exp, sum, reciprocal,
    normalise; with ``"array2d"`` the scores arrive scaled, so ``m*c`` and the ``s*c``
    pass go (the exp op subtracts the row max in its range reduction)."""
    q, L = tile.q_rows, tile.kv_len
    scale = [(q, "mul"), (q * L, "mul")] if params.flat_scale_on == "array1d" else []
    return [(q * L, "max"), *scale, (q * L, "exp"), (q * L, "add"), (q, "recip"), (q * L, "mul")]


def flat_softmax_cycles(tile: AttentionTile, params) -> int:
    """The ops' ``c1`` terms; the row max and the row sum :func:`row_reduce_cycles` (``c1`` with a
    one-cycle compare / adder), and with a pipelined adder (``A``) ``s*c - m*c``'s ``+ A`` (the product
    then its sum)."""
    cycles = sum(c1(params, n, fn) for n, fn in flat_softmax_ops(tile, params) if fn not in ("add", "max"))
    cycles += sum(row_reduce_cycles(params, tile.q_rows, tile.kv_len, fn) for fn in ("max", "add"))
    if params.flat_scale_on == "array1d":
        cycles += params.latency1d.get("add", 0)
    return cycles


def tile_work(tile: AttentionTile, params) -> dict[str, int]:
    """Useful work of a tile: ``macs`` (QK + AV), ``exp2d_macs``, ``ops1d`` (1D ops)."""
    q, L, d, C = tile.q_rows, tile.kv_len, tile.head_dim, params.cols
    if tile.mapping == "fusemax":
        nb = -(-L // C)
        n = tile.passes
        fin = (q + q * d) if tile.last else 0
        exp2d = params.exp_on == "array2d"
        ops1d = n * (nb * (3 * q + 2 * q + 2 * q * d) + fin + (0 if exp2d else 2 * q * L))
        if tile.phase == "rescale":
            return {"macs": 0, "exp2d_macs": 0, "ops1d": ops1d}
        return {"macs": n * 2 * q * L * d, "exp2d_macs": (n * params.exp_macs * q * L if exp2d else 0), "ops1d": 0}
    sm_ops = sum(n for n, _fn in flat_softmax_ops(tile, params))
    return {"qk": {"macs": q * L * d, "exp2d_macs": 0, "ops1d": 0},
            "av": {"macs": q * L * d, "exp2d_macs": 0, "ops1d": 0},
            "softmax": {"macs": 0, "exp2d_macs": 0, "ops1d": sm_ops},
            "all": {"macs": 2 * q * L * d, "exp2d_macs": 0, "ops1d": sm_ops}}[tile.phase]
