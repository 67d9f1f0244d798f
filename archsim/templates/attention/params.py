"""Parameters of the attention template (the same dataclass the RTL generator takes).

A ``rows x cols`` 2D array of MAC PEs (bf16 operands, fp32 accumulation),
a 1D array of ``pe1d`` PEs beside it (one per group of array rows) whose
throughput is given per function, and where the exponentials run:
``exp_on = "array2d"`` (FuseMax: every PE evaluates ``exp`` of its own score
with ``exp_macs`` MACs: one multiply-add for the range reduction and a
degree ``exp_macs - 1`` polynomial in Horner form) or ``"array1d"`` (one
exp per 1D PE at ``ops1d_per_cycle["exp"]``). The timing contract these
parameters control is in :mod:`archsim.templates.attention.tile`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from archsim.templates.base import TemplateParams

FUNCTIONS_1D = ("max", "add", "mul", "exp", "div", "recip")
EXP_PLACES = ("array2d", "array1d")
SCALE_PLACES = ("array1d", "array2d")
#: (weights, activations) precision pairs the array runs (16-bit operands, fp32 accumulation)
PRECISION_PAIRS = (("bf16", "bf16"), ("fp16", "fp16"))


def _default_ops1d() -> dict[str, float]:
    return {"max": 1, "add": 1, "mul": 1, "exp": 1, "div": 1, "recip": 1}


@dataclass
class AttentionParams(TemplateParams):
    """Attributes
    ----------
    rows, cols : int
        2D array shape. A block of attention maps ``rows`` queries x ``cols``
        keys, one score per PE.
    pe1d : int
        PEs of the 1D array (row-wise max, sums, rescales, divides).
    ops1d_per_cycle : dict[str, float]
        Ops per cycle of one 1D PE for each of max, add, mul, exp, div, recip
        (e.g. 0.25: one exp every 4 cycles).
    exp_on : str
        ``"array2d"`` (FuseMax) or ``"array1d"``: where the softmax exps run.
    exp_macs : int
        MAC cycles per exp on the 2D array (3..8; FuseMax: 6).
    precision : str
        Operand format (``"bf16"`` or ``"fp16"``); accumulation is fp32.
    flat_scale_on : str
        Where FLAT and unfused multiply the scores by ``c = log2(e)/sqrt(d)``
        (FuseMax folds it into the exp's range-reduction MAC): ``"array1d"``
        (a pass of ``s*c`` over the scores and ``m*c`` per row on the 1D array:
        5 1D ops per score; what the RTL builds) or ``"array2d"`` (a multiplier
        at the 2D array's edge scales each score as it drains, no extra cycles;
        the 1D array then runs max, ``exp2(s' - m')``, sum and normalise: 4 ops
        per score, as the FuseMax artifact charges FLAT and unfused). Values are
        the same either way: rounding is monotone and ``c > 0``, so
        ``max(fl(s*c)) = fl(max(s)*c)``.
    latency1d : dict[str, int]
        Pipeline latency (cycles) of the 1D PEs' unit for a function (default
        0: a result is written in the cycle its op issues). An op of ``n``
        elements then takes ``ceil(n / rate) + latency`` cycles: the next op
        reads its results (the RTL's pipelined ``exp2``: ``latency1d: {exp: S}``). The RTL also
        pipelines the lanes' reciprocal, multiplier and adder (``recip``, ``mul``, ``add``); with
        ``add > 0`` FLAT's ``s*c - m*c`` pays ``mul + add``, a row sum is
        :func:`~archsim.templates.attention.tile.row_reduce_cycles` (each lane sums its own rows), and
        ``exp`` is the whole exp op's latency, its subtraction on the adder included; ``max`` (the
        lanes' pipelined compare) likewise makes FLAT's row max ``row_reduce_cycles``.
    latency2d : int
        Pipeline registers of each 2D PE's fp32 multiplier (default 0: a step's
        product is added in the cycle its operands arrive). Every step whose add
        waits for its product waits ``latency2d`` more: QK's and P.V's products
        stream (one tail of ``latency2d`` per phase), the exp's range reduction
        and each Horner step wait (``latency2d + 1`` cycles each), as the RTL's
        pipelined PE does (:mod:`archsim.templates.attention.tile`).
    latency2d_add : int
        Pipeline registers of each 2D PE's fp32 adders (the accumulate adder and the exp's
        ``x - rint(x)``; default 0: combinational). A QK step waits for the previous step's sum
        (``latency2d_add + 1`` cycles a step), each Horner step and the range reduction wait for
        their sums, and the row chains (row sum, ``P.V``) pass through one adder per column
        (``cols * latency2d_add`` cycles of skew per phase) (:mod:`archsim.templates.attention.tile`).
        FuseMax with exp on the 2D array only: FLAT tiles need 0.
    latency2d_rint : int
        Pipeline registers of each 2D PE's ``rint`` (the exp's range reduction; default 0).
    latency2d_ldexp : int
        Pipeline registers of each 2D PE's ``ldexp`` (the exp's ``2**n``; default 0).
    topk_parallelism : int
        Comparators of SpAtten's top-k engine (:mod:`archsim.templates.attention.topk`), which
        ranks token / head importance for cascade pruning (options ``token_keep``,
        ``head_keep``); 0: no engine (SpAtten: 16).
    """

    rows: int = 256
    cols: int = 256
    pe1d: int = 256
    ops1d_per_cycle: dict[str, float] = field(default_factory=_default_ops1d)
    exp_on: str = "array2d"
    exp_macs: int = 6
    precision: str = "bf16"
    flat_scale_on: str = "array1d"
    latency1d: dict[str, int] = field(default_factory=dict)
    latency2d: int = 0
    latency2d_add: int = 0
    latency2d_rint: int = 0
    latency2d_ldexp: int = 0
    topk_parallelism: int = 0

    def validate(self) -> None:
        for key in ("rows", "cols", "pe1d"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        ops = self.ops1d_per_cycle
        if not isinstance(ops, dict) or set(ops) - set(FUNCTIONS_1D):
            raise ValueError(f"ops1d_per_cycle: expected a mapping with keys among {', '.join(FUNCTIONS_1D)}, "
                             f"got {ops!r}")
        for k, v in ops.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"ops1d_per_cycle.{k}: expected a positive number, got {v!r}")
        if self.exp_on not in EXP_PLACES:
            raise ValueError(f"exp_on: expected one of {', '.join(EXP_PLACES)}, got {self.exp_on!r}")
        v = self.exp_macs
        if isinstance(v, bool) or not isinstance(v, int) or not 3 <= v <= 8:
            raise ValueError(f"exp_macs: expected an integer in 3..8, got {v!r}")
        if self.flat_scale_on not in SCALE_PLACES:
            raise ValueError(f"flat_scale_on: expected one of {', '.join(SCALE_PLACES)}, got {self.flat_scale_on!r}")
        lat = self.latency1d
        if not isinstance(lat, dict) or set(lat) - set(FUNCTIONS_1D):
            raise ValueError(f"latency1d: expected a mapping with keys among {', '.join(FUNCTIONS_1D)}, got {lat!r}")
        for k, v in lat.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"latency1d.{k}: expected a non-negative integer (cycles), got {v!r}")
        for fn, what in (("add", "row sums on a pipelined adder"), ("max", "row maxima on a pipelined compare")):
            if lat.get(fn, 0) and self.rate(fn) != self.pe1d:
                raise ValueError(f"latency1d.{fn}: {what} are modelled at one {fn} per lane per cycle "
                                 f"(ops1d_per_cycle.{fn} 1), got ops1d_per_cycle.{fn} {ops.get(fn)!r}")
        for key in ("latency2d", "latency2d_add", "latency2d_rint", "latency2d_ldexp"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{key}: expected a non-negative integer (cycles), got {v!r}")
        if self.latency2d_add and self.exp_on != "array2d":
            raise ValueError(f"latency2d_add: a pipelined 2D adder is modelled with exp_on = array2d only, "
                             f"got exp_on = {self.exp_on} and latency2d_add = {self.latency2d_add}")
        v = self.topk_parallelism
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"topk_parallelism: expected a non-negative integer, got {v!r}")
        if self.precision not in ("bf16", "fp16"):
            raise ValueError(f"precision: expected bf16 or fp16, got {self.precision!r}")

    def rate(self, fn: str) -> Fraction:
        """Ops per cycle of the whole 1D array for function ``fn`` (exact)."""
        per_pe = {**_default_ops1d(), **self.ops1d_per_cycle}[fn]
        return Fraction(per_pe).limit_denominator(1 << 16) * self.pe1d

    @property
    def macs(self) -> int:
        return self.rows * self.cols

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        """One Q block, one key block of K and V, and the fp32 partial output of a block."""
        need = self.rows * 64 * 2 + 2 * self.cols * 64 * 2 + self.rows * 64 * 4
        return {"unified": need}, f"one {self.rows}-query x {self.cols}-key block at head dim 64"

    def with_precision(self, weights: str, activations: str) -> "AttentionParams":
        if (weights, activations) not in PRECISION_PAIRS:
            pairs = ", ".join(f"{w}/{a}" for w, a in PRECISION_PAIRS)
            raise ValueError(f"precision: the attention template runs {pairs}, got {weights}/{activations}")
        return replace(self, precision=activations)
