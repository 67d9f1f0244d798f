"""The SIMD PE template's tile and its timing and value contract (shared with rtl/simd/).

A :class:`SimdTile` is the ``tile`` of a :class:`archsim.program.Compute` on unit
``"simd"``: an output-stationary GEMM tile ``out[M, N] (+)= A[M, K] @ W[K, N]``
with weight format ``wf`` (``wb`` bits), activation format ``af`` (``ab`` bits)
and group size ``G`` (0, or any positive integer; it need not divide K).

Operands (numpy arrays)
-----------------------
- ``"input"``: A as CODES, shape ``(M, K)``, unsigned ints as
  ``archsim.numerics.get_format(af).encode`` returns them;
- ``"weight"``: W as CODES, shape ``(K, N)`` (``get_format(wf).encode``);
- ``"scale"`` (``G > 0``): fp32 values, shape ``(ceil(K / G), N)``;
- ``"psum"`` (``accumulate``): the existing output, shape ``(M, N)``, of the
  output dtype below.

Lanes (``L``, per PE per cycle)
-------------------------------
``array`` / ``shift_add``: ``L = lane_bits // max(wb, ab)``; ``bit_serial``:
``L = lane_bits // ab`` and each lane step takes ``wb`` cycles (integer weights
only; never with ``dequant``); ``dequant`` mode: ``L = lane_bits // max(bits(dequant_format), ab)``
(``dequant_format`` is 16-bit, so this is ``lane_bits // 16``). ``L >= 1``,
else the pair is illegal (:meth:`SimdParams.pair_problem`).

Cycles (exact; fast model closed form == detailed model == RTL)
---------------------------------------------------------------
Outputs are assigned to PEs in row-major order: output ``o = m*N + n`` goes to
PE ``o % P`` in round ``o // P``. Per output::

    steps = sum over K-groups of ceil(group_len / L)    (x wb for bit_serial)

with groups ``[0, G), [G, 2G), ...`` (the last one may be shorter; ``G = 0``,
and every ``dequant`` tile, is one group of K). A round's PEs all take the same
steps; a partial last round takes a full round::

    tile_cycles = ceil(M*N / P) * steps + pipeline_cycles

Values (exact, bit for bit in all three levels)
-----------------------------------------------
Operand values are the formats' decoded values (``decode(code)``).

- **int x int, G = 0** (not dequant): the exact integer dot product (int64),
  no rounding; ``out = psum + dot`` with ``accumulate``. Output dtype int64.
- **Otherwise** the output is float32:

  * each product ``a*w`` is computed exactly and rounded once to fp32 (RNE)
    (float64 holds every product of two supported formats exactly, so the
    models compute ``float32(float64(a) * float64(w))``);
  * per cycle, the ``L`` lane products of that cycle (lane ``j`` of step ``s``
    of a group holds element ``group_start + s*L + j``) are reduced by a fixed
    pairwise tree: lanes (0,1), (2,3), ... then pairs of those, and so on (an
    odd last element passes through to the next level unchanged); every add is
    fp32 RNE; lanes beyond the group end or K contribute ``+0.0``;
  * **int x int with G > 0** (MixPE order): a group's products are summed
    exactly as integers (int64); at group end the sum is converted to fp32
    (RNE) and multiplied by the group's scale (fp32 RNE);
  * **any float operand** (or dequant): the group partial is the fp32 running
    sum ``acc_g = rne(acc_g + cycle_sum)`` starting from ``+0.0``; at group end
    (G > 0, not dequant) ``group_result = rne(acc_g * scale)``, else
    ``group_result = acc_g``;
  * the output accumulator is fp32: ``out = rne(out + group_result)`` per
    group in K order, starting from ``+0.0`` (or from ``psum`` when
    ``accumulate``);
  * **dequant** mode: each weight is first dequantized:
    ``w' = round_to(dequant_format, float32(decode(w) * scale[g, n]))`` with
    the scale product in fp32 RNE (``w' = round_to(dequant_format, decode(w))``
    when G = 0) and the tile then runs as a float ``dequant_format x af`` tile
    with one group of K (no scale at group end);
  * ``accumulators: A > 1``: the group partial and the output accumulator are
    instead ``A`` interleaved fp32 partial sums, reduced by the pairwise tree at the
    group / round end, in the order of :mod:`.interleave` (the output is then
    ``rne(init + reduced)``, ``init`` = ``psum`` or ``+0.0``); cycles unchanged;
  * NaN / inf propagate per IEEE fp32 (any NaN -> a NaN); every NaN output is
    the canonical quiet NaN ``0x7fc00000`` (what the RTL produces and what the
    models produce, so outputs compare as bit patterns).

``np.float32(a) + np.float32(b)`` is the reference adder (IEEE RNE).
"""
from __future__ import annotations

from dataclasses import dataclass

from archsim.numerics import bits_of, get_format

CANONICAL_NAN_BITS = 0x7FC00000


@dataclass(frozen=True, slots=True)
class SimdTile:
    """One output-stationary GEMM tile on the SIMD PE array.

    Attributes
    ----------
    m, k, n : int
        ``out[m x n] (+)= A[m x k] . W[k x n]``.
    weight_format, activation_format : str
        Formats of the W and A codes (``archsim.numerics`` names).
    group_size : int
        ``G``: one fp32 scale per ``G`` weights along K per column; 0 = none.
    accumulate : bool
        True: add into the existing output (operand ``"psum"``).
    """

    m: int
    k: int
    n: int
    weight_format: str = "int8"
    activation_format: str = "int8"
    group_size: int = 0
    accumulate: bool = False

    @property
    def outputs(self) -> int:
        return self.m * self.n

    def groups(self, dequant: bool = False) -> list[tuple[int, int]]:
        """``(start, length)`` of each K-group the datapath runs (one group of K when G = 0 or dequant)."""
        g = self.group_size
        if g == 0 or dequant:
            return [(0, self.k)]
        return [(s, min(g, self.k - s)) for s in range(0, self.k, g)]

    def scale_groups(self) -> int:
        """Rows of the ``"scale"`` operand: ``ceil(K / G)`` (0 when G = 0)."""
        return -(-self.k // self.group_size) if self.group_size else 0


def lanes(tile: SimdTile, params) -> int:
    """Lanes per PE per cycle for the tile's format pair on ``params``."""
    return params.lanes(tile.weight_format, tile.activation_format)


def integer_path(tile: SimdTile, params) -> bool:
    """True when both operands are integers and the MAC runs on integers (not dequant)."""
    return (not params.dequant and get_format(tile.weight_format).kind == "int"
            and get_format(tile.activation_format).kind == "int")


def exact_integer_output(tile: SimdTile, params) -> bool:
    """True when the output is the exact int64 dot product (int x int, G = 0, not dequant)."""
    return integer_path(tile, params) and tile.group_size == 0


def cycles_per_step(tile: SimdTile, params) -> int:
    """Cycles of one lane step: ``wb`` for a bit-serial multiplier, else 1."""
    if params.multiplier == "bit_serial":
        return bits_of(tile.weight_format)
    return 1


def output_steps(tile: SimdTile, params) -> int:
    """Lane steps (in cycles) one PE spends on one output."""
    lane_count = lanes(tile, params)
    steps = sum(-(-length // lane_count) for _start, length in tile.groups(params.dequant))
    return steps * cycles_per_step(tile, params)


def rounds(tile: SimdTile, params) -> int:
    """Rounds of ``P`` outputs: ``ceil(M*N / P)``."""
    return -(-tile.outputs // params.pes)


def tile_cycles(tile: SimdTile, params) -> int:
    """The closed form: ``ceil(M*N / P) * steps + pipeline_cycles``."""
    return rounds(tile, params) * output_steps(tile, params) + params.pipeline_cycles


def check_tile(tile: SimdTile, params) -> None:
    """Raise ``ValueError`` if ``tile`` cannot run on ``params``."""
    for key in ("m", "k", "n"):
        v = getattr(tile, key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{key}: expected a positive integer, got {v!r}")
    g = tile.group_size
    if isinstance(g, bool) or not isinstance(g, int) or g < 0:
        raise ValueError(f"group_size: expected 0 or a positive integer, got {g!r}")
    why = params.pair_problem(tile.weight_format, tile.activation_format)
    if why:
        raise ValueError(f"precision: {why}")


__all__ = ["CANONICAL_NAN_BITS", "SimdTile", "check_tile", "cycles_per_step", "exact_integer_output",
           "integer_path", "lanes", "output_steps", "rounds", "tile_cycles"]
