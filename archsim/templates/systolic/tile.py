"""The systolic template's tile (one fold) and its timing contract.

A :class:`SystolicTile` is the ``tile`` of a :class:`archsim.program.Compute`
command on unit ``"array"``. It computes one GEMM tile::

    out[m x n] (+)= A[m x k] . W[k x n]        (A = "input", W = "weight")

and is exactly one SCALE-Sim *fold*. Its cycles are a pure function of the
tile and :class:`~archsim.templates.systolic.params.SystolicParams`.

Mapping onto the ``R x C`` array (``R = rows``, ``C = cols``)
--------------------------------------------------------------
==========  ===================  =========================  ===========
dataflow    stationary in PEs    limits                     streamed
==========  ===================  =========================  ===========
``"ws"``    W: PE(r, c) = W[r,c] ``k <= R``, ``n <= C``     m rows of A
``"is"``    A: PE(r, c) = A[c,r] ``k <= R``, ``m <= C``     n cols of W
``"os"``    out: PE(i,j)=out[i,j] ``m <= R``, ``n <= C``    k (A and W)
==========  ===================  =========================  ===========

(IS follows SCALE-Sim v3: ``Sr = K`` on rows, ``Sc = M`` on columns, ``T = N``.)
Unused PEs (partial tiles) hold / receive zeros; a partial tile takes as many
cycles as a full one (SCALE-Sim's convention; the controller uses fixed
counters that depend only on ``R``, ``C``, the streamed length and the flags).

Definition of a tile's cycles
-----------------------------
Tile-local cycle 0 is the first cycle the array works on the tile (the first
weight/input preload shift, or the first streaming cycle when the preload is
hidden). The tile's cycle count is ``1 +`` the tile-local cycle in which the
last output value of the tile is presented on the array's output port (the
bottom edge of the array: one port per column). Tiles do not overlap in the
array: the next tile's cycle 0 is the cycle after the previous tile's last.
Accumulation (``accumulate=True``) happens at the output port (the output
buffer adds the old partial sum to the value presented), so it costs no cycle.

Let ``P = mult_pipeline_stages`` (0 or 1) and ``L`` the preload length:
``L = R`` for WS/IS unless ``preload_hidden``, else ``0``; ``L = 0`` for OS.

**WS.** Preload (if ``L = R``): in cycle ``s`` (0 <= s < R) the top of column
``c`` presents ``W'[R-1-s, c]`` and the weight shadow registers shift down one
row, so after R cycles shadow(r, c) = ``W'[r, c]`` (W' = W zero-padded to R x C).
At the start of cycle ``L`` the shadow bank becomes the active bank.
Element ``A'[i, r]`` (A zero-padded to m x R) enters PE(r, 0) at cycle
``L + i + r`` and moves one PE right per cycle (at PE(r, c) in cycle
``L + i + r + c``). PE(r, c) adds ``A * W`` to the partial sum from PE(r-1, c)
(0 at r = 0) and registers it for PE(r+1, c); with P = 1 the product is
registered first and added one cycle later. ``out[i, c]`` is presented at the
bottom of column c in cycle ``L + i + (R-1) + c + P``. Hence::

    cycles_ws = L + m + R + C - 2 + P          (serial: 2R + C + m - 2 + P)

**IS.** The same array with the roles of A and W swapped: preload shifts
``A'[c, R-1-s]`` in at the top of column c (shadow(r, c) = ``A'[c, r]``);
``W'[r, j]`` enters PE(r, 0) at cycle ``L + j + r``; ``out[c, j]`` is presented
at the bottom of column c in cycle ``L + j + (R-1) + c + P``::

    cycles_is = L + n + R + C - 2 + P          (serial: 2R + C + n - 2 + P)

**OS.** ``A'[i, t]`` enters PE(i, 0) at cycle ``i + t`` and moves right;
``W'[t, j]`` enters PE(0, j) at cycle ``t + j`` and moves down; PE(i, j)
performs MAC number t in cycle ``i + j + t`` (+P for the add with P = 1),
starting from 0 at t = 0. In the cycle of its last MAC (t = k-1) the PE
drives ``acc + A*W`` onto column j's result bus (exactly one PE of a column
finishes per cycle, so one bus per column suffices): ``out[i, j]`` is
presented in cycle ``i + j + k - 1 + P``::

    cycles_os = R + C + k - 2 + P

**Carry-save PEs** (``params.pe_style == "tpe"``, P = 0): a PE compresses
its operands' Booth partial products together with the partial sum (a sum
and a carry register) in the cycle the standard PE registers its product,
and one registered carry-propagate adder per column resolves the pair at the
array's edge in the cycle the standard PE adds. Every value is presented in
the same cycle as above, so the formulas hold unchanged. With
``pe_style == "tpe_pipelined"`` that adder has two stages (lower half and its
carry, then the upper half): every value is presented one cycle later and
every tile takes one more cycle (``D = params.drain_cycles = 1`` is added to
``P`` in each formula).

**Double-buffered preload** (``params.preload == "double_buffered"``): each PE
has an active and a shadow register for the stationary operand; the preload
always shifts into the shadow bank and the shadow is copied to the active
bank at the start of the tile's cycle ``L`` (its first streaming cycle). The
mapper sets ``preload_hidden=True`` on a WS/IS tile whose stationary operand
was shifted into the shadow bank while the previous tile on the array ran:
the models do those R shifts in the R cycles starting at the previous
tile's bank swap (its cycle ``L``). This always fits, because every WS/IS
tile lasts at least R cycles after its swap (``m + C - 2 + P >= 0``), so
**a WS/IS tile that directly follows another WS/IS tile can be hidden**.
A tile first on the array or following an OS tile cannot: in OS the
down-moving W operand uses the same vertical registers as the shadow chain
(as in the RTL). With ``preload == "serial"`` or dataflow ``"os"``,
``preload_hidden=True`` is invalid (``ValueError``).
"""
from __future__ import annotations

from dataclasses import dataclass


#: per dataflow, the tile dimensions laid along the array's rows, along its
#: columns, and streamed through it (the one map every systolic module uses)
GEOMETRY = {"ws": ("k", "n", "m"), "is": ("k", "m", "n"), "os": ("m", "n", "k")}


@dataclass(frozen=True, slots=True)
class SystolicTile:
    """One fold of a GEMM on the systolic array.

    Attributes
    ----------
    dataflow : str
        ``"ws"``, ``"os"`` or ``"is"`` (never ``"auto"``).
    m, k, n : int
        GEMM tile ``out[m x n] (+)= A[m x k] . W[k x n]``; limits per dataflow
        in the module docstring.
    accumulate : bool
        True: add into the existing output tile (operand ``"psum"``);
        False: overwrite it.
    preload_hidden : bool
        WS/IS with ``preload="double_buffered"`` only: the stationary operand
        was preloaded behind the previous tile, so this tile skips the R
        preload cycles.
    weight_bits : int
        Bits per weight as the weight buffer holds them: packed sub-byte
        codes (ternary: 2) sign-extended at the array's edge, so the tile
        reads ``ceil(k * n * weight_bits / 8)`` weight bytes; 0 = the array's
        own ``weight_precision``. Timing and values do not depend on it.
    """

    dataflow: str
    m: int
    k: int
    n: int
    accumulate: bool = False
    preload_hidden: bool = False
    weight_bits: int = 0

    def streamed(self) -> int:
        """Length of the streamed dimension (m for WS, n for IS, k for OS)."""
        return getattr(self, GEOMETRY[self.dataflow][2])

    def check(self, rows: int, cols: int, preload: str = "double_buffered") -> None:
        """Raise ``ValueError`` if this tile does not fit an ``rows x cols`` array."""
        if self.dataflow not in ("ws", "os", "is"):
            raise ValueError(f"dataflow: expected one of ws, os, is, got {self.dataflow!r}")
        for key in ("m", "k", "n"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        on_rows, on_cols, _streamed = GEOMETRY[self.dataflow]
        for key, bound in ((on_rows, rows), (on_cols, cols)):
            if getattr(self, key) > bound:
                raise ValueError(
                    f"{key}: expected at most {bound} for a {self.dataflow} tile on a "
                    f"{rows}x{cols} array, got {getattr(self, key)}"
                )
        if self.preload_hidden and (self.dataflow == "os" or preload != "double_buffered"):
            raise ValueError(
                "preload_hidden: expected False for an os tile or with preload=serial, got True"
            )
