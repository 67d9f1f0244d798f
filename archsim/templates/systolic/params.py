"""Parameters of the systolic template (the same dataclass the RTL generator takes).

An arch spec's ``params:`` section for ``template: systolic`` is read into
:class:`SystolicParams`. The timing contract these parameters control is in
:mod:`archsim.templates.systolic.tile` and ``docs/systolic_timing.md``.

Summary of the timing contract (``R = rows``, ``C = cols``,
``P = mult_pipeline_stages``; one tile = one fold, see ``SystolicTile``)::

    WS  serial or not hidden : 2R + C + m - 2 + P      (weights W[k x n] stationary, m streamed)
    WS  preload hidden       :  R + C + m - 2 + P
    IS  serial or not hidden : 2R + C + n - 2 + P      (inputs  A[m x k] stationary, n streamed)
    IS  preload hidden       :  R + C + n - 2 + P
    OS  (nothing preloaded)  :      R + C + k - 2 + P  (outputs stationary, k streamed)

With ``preload="serial"`` and ``mult_pipeline_stages=0`` these are exactly
SCALE-Sim v3's per-fold cycles (its "Total Cycles" of a layer is the sum over
folds minus one, see ``docs/systolic_timing.md``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from archsim.numerics import bits_of
from archsim.templates.base import TemplateParams

DATAFLOWS = ("ws", "os", "is")
PRELOAD_MODES = ("serial", "double_buffered")
#: PE microarchitectures: ``standard`` = complete multiplier, product register, carry-propagate
#: accumulate; ``tpe`` = Wu et al.'s OPT1 (HPCA 2025): partial products compressed together with
#: the running sum in carry-save form, the carry-propagate add deferred to the array's edge
PE_STYLES = ("standard", "tpe", "tpe_pipelined")
OPERAND_PRECISIONS = ("int8", "int16")
ACC_PRECISIONS = ("int16", "int32", "int64")
#: bits of the precisions this template's params name (from the one registry, archsim.numerics)
PRECISION_BITS = {name: bits_of(name) for name in ("int8", "int16", "int32", "int64")}


@dataclass
class SystolicParams(TemplateParams):
    """A ``rows`` x ``cols`` grid of integer MAC PEs.

    Attributes
    ----------
    rows, cols : int
        Array shape ``R x C`` (PEs). Rows carry the reduction dimension in WS
        and IS; in OS they carry output rows.
    dataflow : str
        ``"ws"`` (weight stationary), ``"os"`` (output stationary), ``"is"``
        (input stationary) or ``"auto"`` (the mapper chooses per layer; every
        tile still carries a concrete dataflow).
    input_precision, weight_precision : str
        ``"int8"`` or ``"int16"`` (signed two's complement).
    acc_precision : str
        Width of the partial sums and outputs: ``"int16"``, ``"int32"`` or
        ``"int64"``; must be at least as wide as the product
        (input + weight bits). Sums wrap modulo ``2**bits`` (two's complement),
        like the hardware.
    preload : str
        How the stationary operand (W in WS, A in IS) is loaded:
        ``"serial"`` — R shift cycles before every tile's streaming;
        ``"double_buffered"`` — a shadow register per PE is loaded while the
        previous tile runs, so a tile marked ``preload_hidden`` skips the R
        cycles. OS has nothing to preload and ignores this.
    mult_pipeline_stages : int
        0 or 1: a register on each multiplier output. 1 adds exactly one
        cycle to every tile (fixed latency); throughput is unchanged.
    pe_style : str
        ``"standard"`` (default): each PE multiplies completely, registers the
        product and adds it to the partial sum with a carry-propagate adder.
        ``"tpe"``: the bit-weight transformation of Wu et al. ("Exploring the
        Performance Improvement of Tensor Processing Engines through
        Transformation in the Bit-weight Dimension of MACs", HPCA 2025, OPT1):
        the radix-4 Booth partial products are compressed together with the
        partial sum, which stays in carry-save form (a sum and a carry
        register); one registered carry-propagate adder per column at the
        array's edge resolves a value as it leaves. That register takes the
        cycle of the product register the standard PE has, so tiles take
        exactly the cycles of ``standard`` with ``mult_pipeline_stages=0``
        (``tpe`` needs 0). Values are identical (integer sums).
        ``"tpe_pipelined"``: the same PEs with the edge adder in two stages
        (lower half, then upper half with the registered carry), so the
        deferred add is off the critical path; it costs one more cycle per
        tile (:attr:`drain_cycles`), which the models count.
    """

    rows: int = 32
    cols: int = 32
    dataflow: str = "ws"
    input_precision: str = "int8"
    weight_precision: str = "int8"
    acc_precision: str = "int32"
    preload: str = "serial"
    mult_pipeline_stages: int = 0
    pe_style: str = "standard"

    def validate(self) -> None:
        """Raise ``ValueError("key: expected ...")`` for an impossible value."""
        for key in ("rows", "cols"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.dataflow not in DATAFLOWS + ("auto",):
            raise ValueError(f"dataflow: expected one of ws, os, is, auto, got {self.dataflow!r}")
        for key in ("input_precision", "weight_precision"):
            v = getattr(self, key)
            if v not in OPERAND_PRECISIONS:
                raise ValueError(f"{key}: expected one of {', '.join(OPERAND_PRECISIONS)}, got {v!r}")
        if self.acc_precision not in ACC_PRECISIONS:
            raise ValueError(
                f"acc_precision: expected one of {', '.join(ACC_PRECISIONS)}, got {self.acc_precision!r}"
            )
        product_bits = PRECISION_BITS[self.input_precision] + PRECISION_BITS[self.weight_precision]
        if PRECISION_BITS[self.acc_precision] < product_bits:
            raise ValueError(
                f"acc_precision: expected at least {product_bits} bits for "
                f"{self.input_precision} x {self.weight_precision} products, got {self.acc_precision!r}"
            )
        if self.preload not in PRELOAD_MODES:
            raise ValueError(f"preload: expected one of serial, double_buffered, got {self.preload!r}")
        v = self.mult_pipeline_stages
        if isinstance(v, bool) or v not in (0, 1):
            raise ValueError(f"mult_pipeline_stages: expected 0 or 1, got {v!r}")
        if self.pe_style not in PE_STYLES:
            raise ValueError(f"pe_style: expected one of {', '.join(PE_STYLES)}, got {self.pe_style!r}")
        if self.pe_style != "standard" and self.mult_pipeline_stages != 0:
            raise ValueError(f"mult_pipeline_stages: expected 0 with pe_style {self.pe_style} (its PE has no "
                             "product register; the edge's carry-propagate register takes that cycle), got "
                             f"{self.mult_pipeline_stages!r}")

    @property
    def drain_cycles(self) -> int:
        """Cycles every tile spends in the edge adder's extra stage: 1 with ``tpe_pipelined``, else 0."""
        return 1 if self.pe_style == "tpe_pipelined" else 0

    @property
    def macs(self) -> int:
        """Number of MAC PEs (``rows * cols``)."""
        return self.rows * self.cols

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        """Each operand buffer holds at least one rows x cols tile of its operand."""
        tile = self.rows * self.cols
        precs = {"input": self.input_precision, "weight": self.weight_precision, "output": self.acc_precision}
        need = {op: (tile * PRECISION_BITS[p] + 7) // 8 for op, p in precs.items()}
        return need, f"one {self.rows}x{self.cols} tile"

    def with_precision(self, weights: str, activations: str) -> "SystolicParams":
        """This array built for ``weights`` x ``activations`` integer operands, with the
        narrowest accumulator that holds their products (int32, else int64)."""
        for role, fmt in (("weights", weights), ("activations", activations)):
            if fmt not in OPERAND_PRECISIONS:
                raise ValueError(f"systolic runs integer operands: --{role} one of {', '.join(OPERAND_PRECISIONS)}, "
                                 f"got {fmt!r}")
        product = PRECISION_BITS[weights] + PRECISION_BITS[activations]
        acc = min((a for a in ACC_PRECISIONS if PRECISION_BITS[a] >= product and PRECISION_BITS[a] >= 32),
                  key=lambda a: PRECISION_BITS[a])
        return replace(self, weight_precision=weights, input_precision=activations, acc_precision=acc)

    def reshapes(self, macs_per_cycle: float) -> list[dict]:
        """Every ``rows x cols`` with ``rows * cols == macs_per_cycle`` x every dataflow (``auto``
        included), as overrides; the shape closest to this one's aspect ratio with its own dataflow
        first (:func:`archsim.templates.base.reshapes`). [] for a non-integer peak."""
        macs = int(round(macs_per_cycle))
        if macs < 1 or abs(macs - macs_per_cycle) > 1e-9:
            return []
        shapes = [(r, macs // r) for r in range(1, macs + 1) if macs % r == 0]
        aspect = self.rows / self.cols
        shapes.sort(key=lambda rc: abs(math.log(rc[0] / rc[1] / aspect)))
        flows = [self.dataflow] + [d for d in DATAFLOWS + ("auto",) if d != self.dataflow]
        return [{"rows": r, "cols": c, "dataflow": d} for r, c in shapes for d in flows]
