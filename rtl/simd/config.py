"""Configuration of the SIMD PE array RTL: precision modes, buffer depths, derived widths and the
register cuts ``pipeline_cycles`` buys (everything the hardware is generated from)."""
from __future__ import annotations

from dataclasses import dataclass, field

from rtl.lib.formats import FormatHw
from rtl.simd.accumulate import _level_nodes  # noqa: F401 - re-exported for rtl.simd.pe
from rtl.simd.accumulate import delayed as _delayed  # noqa: F401 - re-exported for rtl.simd.pe / controller

#: latency of the datapath from a step's issue to its output's write (stages 1..4), without extra cuts
DATAPATH_STAGES = 4
#: the extra register stages ``pipeline_cycles > 4`` adds, in this order (see :attr:`SimdConfig.cuts`):
#: after the lane products; after the group sum's int64 -> fp32 conversion; after the group scale
#: multiply; after the operand decode; between levels of the lane tree
CUT_ORDER = ("prod", "group_src", "group_res", "decode", "tree")
DIM_BITS = 16  # width of cmd_m / cmd_n / cmd_k / cmd_g
BUF_CODES = {"operands": 0, "scales": 1, "outputs": 2}


@dataclass(frozen=True)
class Mode:
    """One precision mode: a (weight, activation) pair and its lanes."""

    index: int
    weight: FormatHw
    activation: FormatHw
    lanes: int

    @property
    def integer(self) -> bool:
        return self.weight.is_int and self.activation.is_int


def modes(params) -> list[Mode]:
    """Every (weights, activations) pair of ``params``, in :meth:`SimdParams.pairs` order (= ``cmd_mode``)."""
    return [Mode(i, FormatHw.of(w), FormatHw.of(a), params.lanes(w, a)) for i, (w, a) in enumerate(params.pairs())]


#: ``SimdRtlOptions.multiplier`` (the CLI's ``--multiplier``): how the pipelined PE builds a ``rtl_multiplier:
#: dsp`` significand product, as an ``rtl.lib.fp`` ``mul=`` kind: inferred DSP blocks, or instantiated ECP5
#: MULT18X18D blocks whose own registers sit on the chosen cut points (``ecp5_dsp``: the ECP5 target's choice;
#: ``ecp5_dsp_sim``: their Amaranth twin, for amaranth.sim). Same cut points, latency and bits in all three.
DSP_KINDS = {"inferred": "dsp", "ecp5_dsp": "dsp_reg", "ecp5_dsp_sim": "dsp_reg_sim"}


@dataclass
class SimdRtlOptions:
    """RTL-only options: buffer depths (entries); the pipelined PE's DSP blocks (:data:`DSP_KINDS`)."""

    op_depth: int = 256
    scale_depth: int = 64
    out_depth: int = 32
    multiplier: str = "inferred"

    def __post_init__(self):
        for key in ("op_depth", "scale_depth", "out_depth"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ValueError(f"{key}: expected an integer >= 2, got {v!r}")
        if self.multiplier not in DSP_KINDS:
            raise ValueError(f"multiplier: expected one of {', '.join(DSP_KINDS)}, got {self.multiplier!r}")


@dataclass
class SimdConfig:
    """Everything the hardware is generated from (derived from ``SimdParams`` + options)."""

    pes: int
    lane_bits: int
    multiplier: str
    pipeline_cycles: int
    dequant: bool
    dequant_format: str
    modes: list[Mode]
    options: SimdRtlOptions = field(default_factory=SimdRtlOptions)
    accumulators: int = 1
    lane_stages: int = 0
    rtl_multiplier: str = "dsp"
    pe_style: str = "standard"  # the params' pe_style: the integer dot product's (rtl.simd.int_dot)
    scale_stages: int = 0

    @property
    def mul_kind(self) -> str:
        """The significand multipliers of the pipelined PE's units (``rtl.lib.fp`` ``mul=``): fabric for
        ``rtl_multiplier: lut``, else the DSP blocks of :attr:`SimdRtlOptions.multiplier`."""
        return "lut" if self.rtl_multiplier == "lut" else DSP_KINDS[self.options.multiplier]

    @staticmethod
    def from_params(params, options: SimdRtlOptions | None = None) -> "SimdConfig":
        params.validate()
        accumulators = params.accumulators
        if accumulators > 1:
            from rtl.simd.pipelined import write_latency

            ms = modes(params)
            from rtl.simd.lane_cuts import lane_cut_points

            cfg = SimdConfig(params.pes, params.lane_bits, params.multiplier, params.pipeline_cycles,
                             params.dequant, params.dequant_format, ms, options or SimdRtlOptions(), accumulators,
                             params.lane_stages, params.rtl_multiplier, params.pe_style,
                             params.scale_stages)
            if not ms:
                raise ValueError("formats: no (weights, activations) pair runs on this datapath")
            from rtl.simd.pipelined import scale_cut_points

            most = scale_cut_points(cfg)
            if params.scale_stages > most:
                raise ValueError(f"scale_stages: expected 0..{most} (the cut points of the {cfg.rtl_multiplier} "
                                 f"fp32 scale multiply), got {params.scale_stages}")
            most = lane_cut_points(cfg)
            if params.lane_stages > most:
                raise ValueError(f"lane_stages: expected 0..{most} (the cut points of this datapath's lane "
                                 f"multiply-and-round), got {params.lane_stages}")
            need = write_latency(cfg)
            if params.pipeline_cycles < need:
                raise ValueError(f"pipeline_cycles: the RTL's datapath with accumulators={accumulators} takes "
                                 f"{need} cycles (lane_stages {params.lane_stages}), got {params.pipeline_cycles}")
            return cfg
        if params.pipeline_cycles < DATAPATH_STAGES:
            raise ValueError(f"pipeline_cycles: the RTL's datapath takes {DATAPATH_STAGES} cycles, "
                             f"got {params.pipeline_cycles}")
        ms = modes(params)
        if not ms:
            raise ValueError("formats: no (weights, activations) pair runs on this datapath")
        return SimdConfig(params.pes, params.lane_bits, params.multiplier, params.pipeline_cycles,
                          params.dequant, params.dequant_format, ms, options or SimdRtlOptions(),
                          pe_style=params.pe_style)

    # ---- derived widths ----
    @property
    def max_lanes(self) -> int:
        return max(md.lanes for md in self.modes)

    @property
    def act_word_bits(self) -> int:
        return max(md.lanes * md.activation.bits for md in self.modes)

    @property
    def weight_word_bits(self) -> int:
        return max(md.lanes * md.weight.bits for md in self.modes)

    @property
    def entry_bits(self) -> int:
        """Operand buffer bits per PE: activation word, weight word (and per-lane fp32 scales if dequant)."""
        return self.act_word_bits + self.weight_word_bits + (32 * self.max_lanes if self.dequant else 0)

    @property
    def operand_layout(self):
        """The operand buffer's entry: each distinct activation row and weight column of a round once,
        broadcast to the PEs by per-PE selects (:mod:`rtl.simd.broadcast`)."""
        from rtl.simd.broadcast import BroadcastLayout

        return BroadcastLayout(self.pes, self.act_word_bits, self.entry_bits - self.act_word_bits)

    @property
    def has_int(self) -> bool:
        return not self.dequant and any(md.integer for md in self.modes)

    @property
    def float_lanes(self) -> bool:
        """Some mode multiplies a float operand (fp32 products and adder trees are built)."""
        return self.dequant or any(not md.integer for md in self.modes)

    @property
    def out_bits(self) -> int:
        return 64 if self.has_int else 32

    @property
    def data_bits(self) -> int:
        return max(self.operand_layout.entry_bits, self.pes * max(32, self.out_bits))

    @property
    def max_bit_cycles(self) -> int:
        return max(self.bit_cycles(md) for md in self.modes)

    def bit_cycles(self, md: Mode) -> int:
        return md.weight.bits if self.multiplier == "bit_serial" else 1

    @property
    def tree_levels(self) -> int:
        """Levels of the pairwise lane tree (8 lanes: 3; 1 lane: 0)."""
        return (self.max_lanes - 1).bit_length()

    @property
    def cuts(self) -> tuple[str, ...]:
        """The extra register stages that ``pipeline_cycles`` beyond :data:`DATAPATH_STAGES` buys, in the
        order they are added (:data:`CUT_ORDER`; the tree cuts nearest the middle of the tree first).
        Cycles beyond the cuts this PE has are plain latency (``tile_done`` waits).
        A pipelined PE (``accumulators > 1``, :mod:`rtl.simd.pipelined`) has none of these cuts."""
        if self.accumulators > 1:
            return ()
        inner = sorted(range(self.tree_levels - 1), key=lambda lev: (abs(lev - (self.tree_levels - 2) / 2), lev))
        order = [c for c in CUT_ORDER if c != "tree"] + [f"tree{lev}" for lev in inner]
        return tuple(order[:max(0, self.pipeline_cycles - DATAPATH_STAGES)])

    def cut_count(self, *names: str) -> int:
        """How many of the cuts named (``"tree"``: every tree cut) this build has."""
        return sum(1 for c in self.cuts if c in names or ("tree" in names and c.startswith("tree")))

    def as_dict(self) -> dict:
        return {
            "pes": self.pes, "lane_bits": self.lane_bits, "multiplier": self.multiplier,
            "pipeline_cycles": self.pipeline_cycles, "accumulators": self.accumulators,
            "lane_stages": self.lane_stages, "rtl_multiplier": self.rtl_multiplier, "pe_style": self.pe_style,
            "scale_stages": self.scale_stages,
            "dsp_blocks": self.mul_kind if self.accumulators > 1 else None, "cuts": list(self.cuts),
            "dequant": self.dequant,
            "dequant_format": self.dequant_format if self.dequant else None,
            "modes": [[md.weight.name, md.activation.name, md.lanes] for md in self.modes],
            "act_word_bits": self.act_word_bits, "weight_word_bits": self.weight_word_bits,
            "entry_bits": self.entry_bits, "operand_entry_bits": self.operand_layout.entry_bits,
            "operand_slots": self.operand_layout.slots, "out_bits": self.out_bits, "data_bits": self.data_bits,
            "op_depth": self.options.op_depth, "scale_depth": self.options.scale_depth,
            "out_depth": self.options.out_depth,
        }


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())
