"""Parameters of the mixed-precision SIMD PE template (the same dataclass the RTL generator takes).

An array of ``pes`` PEs, each a SIMD dot-product unit whose ``lane_bits``-wide
datapath splits into lanes by precision (16 bits: 1x16, 2x8, 4x4, 8x2 lanes),
after XR-NPE, MixPE and BitMoD. The timing and value contract is in
:mod:`archsim.templates.simd.tile`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from archsim.numerics import bits_of, get_format
from archsim.templates.base import TemplateParams
from archsim.templates.simd import bitserial

#: formats the template's datapath can be built for
SUPPORTED_FORMATS = ("int2", "int4", "int8", "int16", "fp4_e2m1", "fp8_e4m3", "fp8_e5m2", "fp16", "bf16",
                     "posit8_0", "posit16_1")
MULTIPLIERS = ("array", "shift_add", "bit_serial")
#: PE styles: SIMD lanes (the multiplier above), or BitMoD's bit-serial PE (:mod:`.bitserial`)
PE_STYLES = ("lanes", "bitmod")
#: how the RTL builds the integer dot product of a cycle's lanes (``pe_style``; names as the systolic template's):
#: complete products and an adder tree, or every lane's Booth rows in one carry-save tree (Wu et al., HPCA 2025)
DOT_STYLES = ("standard", "tpe")
#: formats the dequantize-then-MAC baseline can dequantize weights to
DEQUANT_FORMATS = ("fp16", "bf16")
#: how the RTL of the pipelined PE builds its significand multipliers (rtl.lib.fp.MULTIPLIERS)
RTL_MULTIPLIERS = ("dsp", "lut")
#: most interleaved partial sums per accumulator (the fp32 adder unit, rtl.lib.units.FpAdd, has at most 11 stages)
MAX_ACCUMULATORS = 11


def _all_formats() -> list[str]:
    return list(SUPPORTED_FORMATS)


def is_int(fmt: str) -> bool:
    """True for the two's-complement integer formats."""
    return get_format(fmt).kind == "int"


@dataclass
class SimdParams(TemplateParams):
    """Attributes
    ----------
    pes : int
        Number of PEs ``P``; output ``o = m*N + n`` of a tile runs on PE ``o % P``.
    lane_bits : int
        Datapath width of one PE in bits; lanes per cycle ``L = lane_bits // max(wb, ab)``
        (see :mod:`.tile`). At least 2 and at most 64.
    formats : list[str]
        Formats the datapath is built for (a subset of :data:`SUPPORTED_FORMATS`);
        a tile's weight and activation formats must be among them.
    multiplier : str
        ``array`` (one multiplier per lane), ``shift_add`` (MixPE: shifts and adds
        instead of multipliers; same timing as ``array``) or ``bit_serial``
        (BitMoD: one weight bit per cycle, ``wb`` cycles per lane step; integer
        weights only).
    weight_format, activation_format : str
        The pair this instance runs by default (tiles carry their own pair).
    group_size : int
        ``G``: weights share one fp32 scale per ``G`` elements along K; 0 = no group scale.
    dequant : bool
        Baseline mode: weights are dequantized (code -> value x scale -> ``dequant_format``)
        before a ``dequant_format`` x activation MAC, instead of MixPE's integer MAC per group.
    dequant_format : str
        ``fp16`` or ``bf16``.
    pipeline_cycles : int
        Fixed latency added to every tile.
    pe : str
        ``lanes`` (the SIMD lanes above) or ``bitmod``: BitMoD's bit-serial PE, BitMoD weight
        types, integer activations, bit-serial per-group dequantization (:mod:`.bitserial`).
    accumulators : int
        ``A``: interleaved fp32 partial sums of the group and output accumulators
        (1..11). 1 is one running sum per accumulator; ``A > 1`` feeds ``A`` partial
        sums round-robin by cycle and reduces them at the group / round end
        (:mod:`.interleave`), so the RTL's fp32 adders can be ``A``-stage pipelines.
        It changes the summation order (the values), not the cycles.
    lane_stages : int
        Register stages inside each lane's multiply-and-round-to-fp32 of the pipelined PE
        (``accumulators > 1``; the RTL refuses more than a lane has cut points). They lengthen the
        RTL's latency, which ``pipeline_cycles`` must cover; values and the cycle contract do not change.
    scale_stages : int
        Register stages of the pipelined PE's group-scale multiply (``accumulators > 1``): 0 (default)
        is ``min(accumulators, the multiplier's most)``; 1.. up to its most (13 with ``rtl_multiplier:
        lut``, 11 with DSP blocks) decouples it from ``accumulators`` (the RTL refuses more). Latency
        only, as ``lane_stages``: ``pipeline_cycles`` must cover it; values and the cycle contract do
        not change.
    rtl_multiplier : str
        How the RTL of the pipelined PE builds the lanes' (``array`` multiplier) and the group scale's
        significand products: ``dsp`` (DSP blocks) or ``lut`` (fabric adder trees with a cut point
        between levels: more ``lane_stages`` and scale-multiply stages, no DSP delay in a stage).
        RTL only: the models' values and cycles do not depend on it.
    pe_style : str
        How the RTL forms a cycle's integer x integer dot product (:data:`DOT_STYLES`): ``standard``
        (a complete product per lane, a tree of adders) or ``tpe`` (every lane's radix-4 Booth partial
        products compressed in one carry-save tree, one carry-propagate add: the multiplier-adder tree
        of Wu et al., HPCA 2025; needs the ``array`` multiplier and an integer x integer pair, and
        leaves float products as they are). RTL only: values and cycles do not change.
    """

    pes: int = 16
    lane_bits: int = 16
    formats: list[str] = field(default_factory=_all_formats)
    multiplier: str = "array"
    weight_format: str = "int8"
    activation_format: str = "int8"
    group_size: int = 0
    dequant: bool = False
    dequant_format: str = "fp16"
    pipeline_cycles: int = 4
    pe: str = "lanes"
    accumulators: int = 1
    lane_stages: int = 0
    rtl_multiplier: str = "dsp"
    pe_style: str = "standard"
    scale_stages: int = 0

    def validate(self) -> None:
        """Raise ``ValueError("key: expected ...")`` for an impossible value."""
        for key in ("pes", "lane_bits"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if not 2 <= self.lane_bits <= 64:
            raise ValueError(f"lane_bits: expected 2..64, got {self.lane_bits}")
        if self.pe not in PE_STYLES:
            raise ValueError(f"pe: expected one of {', '.join(PE_STYLES)}, got {self.pe!r}")
        known = SUPPORTED_FORMATS + (bitserial.WEIGHT_FORMATS if self.pe == "bitmod" else ())
        v = self.formats
        if not isinstance(v, (list, tuple)) or not v or any(f not in known for f in v):
            raise ValueError(f"formats: expected a non-empty list among {', '.join(known)}, got {v!r}")
        if self.multiplier not in MULTIPLIERS:
            raise ValueError(f"multiplier: expected one of {', '.join(MULTIPLIERS)}, got {self.multiplier!r}")
        v = self.group_size
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"group_size: expected 0 (no group scale) or a positive integer, got {v!r}")
        if not isinstance(self.dequant, bool):
            raise ValueError(f"dequant: expected true or false, got {self.dequant!r}")
        if self.dequant and self.multiplier == "bit_serial":
            raise ValueError("dequant: expected false with a bit_serial multiplier (dequantized weights are floats)")
        if self.pe == "bitmod" and (self.dequant or not self.group_size):
            raise ValueError("pe: bitmod dequantizes per group: expected dequant false and group_size > 0")
        if self.dequant_format not in DEQUANT_FORMATS:
            raise ValueError(f"dequant_format: expected one of {', '.join(DEQUANT_FORMATS)}, "
                             f"got {self.dequant_format!r}")
        v = self.pipeline_cycles
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"pipeline_cycles: expected a non-negative integer, got {v!r}")
        v = self.accumulators
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_ACCUMULATORS:
            raise ValueError(f"accumulators: expected an integer 1..{MAX_ACCUMULATORS}, got {v!r}")
        v = self.lane_stages
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"lane_stages: expected a non-negative integer, got {v!r}")
        if v and self.accumulators == 1:
            raise ValueError("lane_stages: expected 0 with accumulators 1 (only the pipelined PE, "
                             "accumulators > 1, has lane stages)")
        v = self.scale_stages
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"scale_stages: expected a non-negative integer, got {v!r}")
        if v and self.accumulators == 1:
            raise ValueError("scale_stages: expected 0 with accumulators 1 (only the pipelined PE, "
                             "accumulators > 1, has a pipelined scale multiply)")
        if self.rtl_multiplier not in RTL_MULTIPLIERS:
            raise ValueError(f"rtl_multiplier: expected one of {', '.join(RTL_MULTIPLIERS)}, "
                             f"got {self.rtl_multiplier!r}")
        if self.rtl_multiplier != "dsp" and self.accumulators == 1:
            raise ValueError("rtl_multiplier: expected dsp with accumulators 1 (only the pipelined PE, "
                             "accumulators > 1, builds fabric multipliers)")
        for key in ("weight_format", "activation_format"):
            if getattr(self, key) not in self.formats:
                raise ValueError(f"{key}: expected one of formats ({', '.join(self.formats)}), "
                                 f"got {getattr(self, key)!r}")
        why = self.pair_problem(self.weight_format, self.activation_format)
        if why:
            raise ValueError(f"weight_format: {why}")
        if self.pe_style not in DOT_STYLES:
            raise ValueError(f"pe_style: expected one of {', '.join(DOT_STYLES)}, got {self.pe_style!r}")
        if self.pe_style == "tpe":
            if self.pe != "lanes" or self.dequant or self.multiplier != "array":
                raise ValueError("pe_style: tpe recodes the integer lanes' weights into Booth rows: expected pe "
                                 "lanes, dequant false and the array multiplier")
            if not any(is_int(w) and is_int(a) for w, a in self.pairs()):
                raise ValueError("pe_style: tpe transforms the integer x integer dot product: expected an "
                                 f"integer format on both sides among formats ({', '.join(self.formats)})")

    # ------------------------------------------------------------------ precision pairs

    def lanes(self, weight_format: str, activation_format: str) -> int:
        """Lanes per PE per cycle for this pair (0 if the datapath is too narrow)."""
        ab = bits_of(activation_format)
        if self.pe == "bitmod":
            return bitserial.lanes(self, activation_format)
        if self.dequant:
            return self.lane_bits // max(bits_of(self.dequant_format), ab)
        if self.multiplier == "bit_serial":
            return self.lane_bits // ab
        return self.lane_bits // max(bits_of(weight_format), ab)

    def pair_problem(self, weight_format: str, activation_format: str) -> str:
        """Why this datapath cannot run the pair ("" if it can)."""
        for fmt in (weight_format, activation_format):
            if fmt not in self.formats:
                return f"{fmt} is not among formats ({', '.join(self.formats)})"
        if self.pe == "bitmod":
            return bitserial.pair_problem(self, weight_format, activation_format)
        if self.multiplier == "bit_serial" and not is_int(weight_format):
            return f"a bit_serial multiplier needs integer weights, got {weight_format}"
        if self.lanes(weight_format, activation_format) < 1:
            return f"{weight_format} x {activation_format} needs more than lane_bits={self.lane_bits} bits"
        return ""

    def pairs(self) -> list[tuple[str, str]]:
        """Every (weights, activations) pair this datapath runs."""
        return [(w, a) for w in self.formats for a in self.formats if not self.pair_problem(w, a)]

    def with_precision(self, weights: str, activations: str) -> "SimdParams":
        """This array running ``weights`` x ``activations``; ``ValueError`` listing the pairs it runs."""
        why = self.pair_problem(weights, activations)
        if why:
            runs = ", ".join(f"{w}/{a}" for w, a in self.pairs())
            raise ValueError(f"precision: the simd array cannot run {weights}/{activations} ({why}); "
                             f"it runs weights/activations {runs}")
        return replace(self, weight_format=weights, activation_format=activations)

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        """One cycle's operands of every PE: ``lane_bits`` of activations and weights, one fp32 output each."""
        word = -(-self.lane_bits // 8)
        return ({"input": word, "weight": word, "output": 4 * self.pes},
                f"one lane word per operand and {self.pes} fp32 outputs")
