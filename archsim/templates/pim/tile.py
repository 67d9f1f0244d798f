"""The PIM template's tile: one channel's share of a bank-level GEMV (or a
KV-cache write), and the plan of row bursts it expands to.

A :class:`PimTile` is the ``tile`` of a :class:`archsim.program.Compute` on
unit ``"pim.ch<i>"``. All banks of the channel work in **all-bank lockstep**
(Samsung HBM-PIM's AB-PIM mode, SK hynix AiM's ACT16/MACAB, PIM-GPT): one
all-bank ACT opens the same row in every bank, each all-bank RD-MAC reads one
column of every bank into that bank's MAC unit, one all-bank PRE closes them.
Every bank therefore holds the same *shape* of data (``rows`` weight rows of
``k`` elements; banks with fewer rows hold zeros).

Data layout (mode ``"dot"``, a GEMV ``y = W x``; bank ``b`` holds rows
``b*rows .. b*rows+rows-1`` of the channel's slice of W): **open-row, dense**
---------------------------------------------------------------------------
A weight row is padded to ``kc = ceil(k / E)`` columns (``E`` =
``column_elements``). Weight rows are processed in groups of
``acc_registers`` (one accumulator per row in flight). If all of x fits the
channel's ``input_buffer_bytes`` it is broadcast once at the start
(``bcast``) and a group is one *piece* of ``kc`` columns per row; else x is
cut into pieces of ``B = input_buffer_bytes // column_bytes`` columns, each
broadcast before its bursts (piece-outer, row-inner). The ``rg x cc`` columns
of a group's piece are stored **back to back** across DRAM rows of ``R =
row_columns`` columns (weight rows straddle DRAM rows, PIM-GPT's layout), so
every burst but the piece's last reads a full open row: ``floor(rg*cc / R)``
bursts of ``R`` RD-MACs and one of ``rg*cc mod R``. After each group the
accumulators of every bank are read out to the ASIC (``gather``: ``banks x
group_rows x acc_bytes`` bytes).

Mode ``"axpy"`` (attention ``A.V`` against a V cache stored one token per
weight row): each RD-MAC multiplies one column of V by the token's scalar
weight and accumulates lane-wise into ``kc * E`` vector accumulators, so each
bank ends with a partial output over its tokens; the gather moves
``banks x kc*E x acc_bytes`` bytes and the ASIC adds the partials.

Steps
-----
:func:`plan_steps` turns a tile into a short tuple of steps, each a run of
identical work; the fast model prices runs in closed form, the detailed model
expands them to DRAM commands:

- ``("bcast", n)``: n column writes (GBWR) into the global input buffer;
- ``("burst", m, c)``: m all-bank row bursts of c RD-MACs (ACTAB, c x MACAB, PREAB);
- ``("gather", n)``: n column reads (RDACC) of accumulators to the ASIC;
- ``("wburst", m, c)``: m single-bank write bursts (ACT, c x WR, PRE), one
  after the other (KV-cache append; banks rotate).
"""
from __future__ import annotations

from dataclasses import dataclass

MODES = ("dot", "axpy")
KINDS = ("gemv", "write")


@dataclass(frozen=True, slots=True)
class PimTile:
    """One channel's work.

    Parameters
    ----------
    kind : str
        ``"gemv"`` (all-bank MAC) or ``"write"`` (per-bank writes).
    rows : int
        gemv: weight rows per bank; write: number of write bursts.
    k : int
        gemv: elements per weight row; write: elements per write burst.
    banks : int
        Banks of the channel taking part (lockstep); at most ``banks_per_channel``.
    mode : str
        ``"dot"`` or ``"axpy"`` (see the module docstring).
    in_elements : int
        Elements broadcast into the channel's input buffer; 0 means the
        default (``k`` in dot mode, ``banks * rows`` in axpy mode).
    ref_due : int
        Cycles from the tile's start until the next REF is due (the
        mapper tracks the refresh phase across tiles; see docs/pim.md).
    """

    kind: str
    rows: int
    k: int
    banks: int
    mode: str = "dot"
    in_elements: int = 0
    ref_due: int = 1 << 62

    def input_elements(self) -> int:
        if self.in_elements:
            return self.in_elements
        return self.k if self.mode == "dot" else self.banks * self.rows


def _layout(tile: PimTile, p) -> tuple[int, int, list[int]]:
    """-> (kc, rows per DRAM row, columns of each chunk)."""
    kc = -(-tile.k // p.column_elements)
    big_r = p.row_columns
    if kc <= big_r:
        return kc, big_r // kc, [kc]
    chunks = [big_r] * (kc // big_r)
    if kc % big_r:
        chunks.append(kc % big_r)
    return kc, 1, chunks


def dot_pieces(tile: PimTile, p) -> tuple[bool, list[tuple[int, int]]]:
    """Dot-mode x pieces: ``(x fits the buffer, [(first element, columns), ...])``."""
    kc = -(-tile.k // p.column_elements)
    fits = tile.input_elements() * p.element_bytes <= p.input_buffer_bytes
    if fits:
        return True, [(0, kc)]
    b = p.input_buffer_bytes // p.column_bytes
    return False, [(c0 * p.column_elements, min(b, kc - c0)) for c0 in range(0, kc, b)]


def _columns(nbytes: int, p) -> int:
    return -(-nbytes // p.column_bytes)


def check_tile(tile: PimTile, p) -> None:
    """``ValueError`` (one line) if ``tile`` cannot run on ``p``."""
    if tile.kind not in KINDS:
        raise ValueError(f"PimTile.kind: expected one of {', '.join(KINDS)}, got {tile.kind!r}")
    if tile.mode not in MODES:
        raise ValueError(f"PimTile.mode: expected one of {', '.join(MODES)}, got {tile.mode!r}")
    if tile.rows < 0 or tile.k < 1:
        raise ValueError(f"PimTile: expected rows >= 0 and k >= 1, got rows={tile.rows}, k={tile.k}")
    if not 1 <= tile.banks <= p.banks_per_channel:
        raise ValueError(f"PimTile.banks: expected 1..{p.banks_per_channel}, got {tile.banks}")
    if tile.kind == "write":
        if tile.k > p.row_bytes // p.element_bytes:
            raise ValueError(f"PimTile: a write burst of {tile.k} elements does not fit one {p.row_bytes}-byte row")
        return
    if tile.mode == "axpy":
        kc = -(-tile.k // p.column_elements)
        if kc * p.column_elements > p.acc_registers:
            raise ValueError(f"PimTile: axpy over rows of {tile.k} elements needs {kc * p.column_elements} "
                             f"accumulators per bank, the unit has {p.acc_registers}")
        if kc > p.row_columns:
            raise ValueError(f"PimTile: axpy rows of {tile.k} elements must fit one DRAM row")
        if tile.input_elements() * p.element_bytes > p.input_buffer_bytes:
            raise ValueError(f"PimTile: axpy input of {tile.input_elements()} elements does not fit the "
                             f"{p.input_buffer_bytes}-byte input buffer")


def plan_steps(tile: PimTile, p) -> tuple[tuple, ...]:
    """The tile's steps (see the module docstring), adjacent equal runs merged."""
    check_tile(tile, p)
    steps: list[tuple] = []

    def add(step: tuple) -> None:
        if step[0] in ("burst", "wburst"):
            if step[1] == 0:
                return
            if steps and steps[-1][0] == step[0] and steps[-1][2] == step[2]:
                steps[-1] = (step[0], steps[-1][1] + step[1], step[2])
                return
        elif step[1] == 0:
            return
        steps.append(step)

    if tile.kind == "write":
        add(("wburst", tile.rows, _columns(tile.k * p.element_bytes, p)))
        return tuple(steps)
    if tile.rows == 0:
        return ()
    eb, ce = p.element_bytes, p.column_elements
    kc, per_row, chunks = _layout(tile, p)
    fits = tile.input_elements() * eb <= p.input_buffer_bytes
    if fits:
        add(("bcast", _columns(tile.input_elements() * eb, p)))
    if tile.mode == "axpy":
        add(("burst", tile.rows // per_row, per_row * kc))
        add(("burst", 1 if tile.rows % per_row else 0, (tile.rows % per_row) * kc))
        add(("gather", _columns(tile.banks * kc * ce * p.acc_bytes, p)))
        return tuple(steps)
    group = p.acc_registers
    big_r = p.row_columns
    _fits, pieces = dot_pieces(tile, p)
    for g0 in range(0, tile.rows, group):
        rg = min(group, tile.rows - g0)
        for k0, cc in pieces:
            if not fits:
                add(("bcast", _columns(min(cc * ce, tile.k - k0) * eb, p)))
            total = rg * cc
            add(("burst", total // big_r, big_r))
            add(("burst", 1 if total % big_r else 0, total % big_r))
        add(("gather", _columns(tile.banks * rg * p.acc_bytes, p)))
    return tuple(steps)


def step_counts(steps: tuple[tuple, ...]) -> dict[str, int]:
    """Command counts per channel of a plan (all-bank commands counted once)."""
    out = {"ACTAB": 0, "MACAB": 0, "PREAB": 0, "GBWR": 0, "RDACC": 0, "ACT": 0, "WR": 0, "PRE": 0}
    for s in steps:
        if s[0] == "bcast":
            out["GBWR"] += s[1]
        elif s[0] == "gather":
            out["RDACC"] += s[1]
        elif s[0] == "burst":
            out["ACTAB"] += s[1]
            out["PREAB"] += s[1]
            out["MACAB"] += s[1] * s[2]
        elif s[0] == "wburst":
            out["ACT"] += s[1]
            out["PRE"] += s[1]
            out["WR"] += s[1] * s[2]
    return out
