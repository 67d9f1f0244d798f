"""The SIMD PE's two published comparisons, set up best against best.

- **XR-NPE style** (:func:`xrnpe_rows`): the reconfigurable PE (every format, lanes by
  precision) against the largest single fixed-precision PE and against a
  multi-format PE without lane reconfiguration (the 16-bit formats at one lane:
  every narrower format runs on it widened, exactly), in synthesized area and in
  peak lane products per cycle per area at each operand width. Never against
  the *sum* of fixed PEs, which nobody builds.
- **MixPE** (:func:`mixpe_vs_dequant`): MixPE's order (integer / shift-add MAC per
  weight group, the scale applied once per group) against the dequantize-then-fp16
  baseline **at equal PE-array area** (the baseline gets as many PEs as fit in the
  MixPE array's area; buffers, DRAM and clock equal), on an LLM.

Areas are the synthesized PEs of :mod:`archsim.templates.simd.area`.
"""
from __future__ import annotations

from dataclasses import dataclass

from archsim.templates.simd.area import SYNTH_CELLS, pe_cells
from archsim.templates.simd.params import SUPPORTED_FORMATS, SimdParams

#: ECP5 figures of one PE at pipeline_cycles 10 (LUT4, TRELLIS_FF, MULT18X18D, Fmax MHz), docs/simd_rtl.md
#: (yosys 0.70 synth_ecp5 + nextpnr-ecp5 0.11.1, LFE5U-85F, measured 2026-11-24)
ECP5_PC10: dict[str, tuple[int, int, int, float]] = {
    "reconfigurable": (8633, 1010, 12, 18.99),
    "int2": (3151, 444, 12, 17.94), "int4": (3018, 420, 8, 18.71), "int8": (2829, 408, 6, 17.97),
    "int16": (3024, 420, 5, 18.24), "fp4_e2m1": (5587, 409, 8, 18.39), "fp8_e4m3": (4075, 273, 6, 17.69),
    "fp8_e5m2": (4024, 277, 6, 19.30), "fp16": (3082, 234, 5, 19.25), "bf16": (3205, 234, 5, 18.40),
    "posit8_0": (4331, 277, 6, 18.12), "posit16_1": (3581, 238, 5, 18.77),
}

#: the multi-format PE without lane reconfiguration: one 16-bit lane decoding every 16-bit format
MULTI_FORMAT_16 = ("int16", "fp16", "bf16", "posit16_1")
#: its ECP5 figures at pipeline_cycles 10 (LUT4, TRELLIS_FF, MULT18X18D), synth_ecp5 without place and route,
#: measured 2026-11-27 (python bench/bench_simd_synth.py --no-fixed --no-pnr --pipeline-cycles 10
#: --formats int16 fp16 bf16 posit16_1; docs/simd_rtl.md, "Area model")
MULTI_FORMAT_ECP5 = (4698, 547, 5)
#: operand widths of the formats (bits)
WIDTHS = (2, 4, 8, 16)


@dataclass(frozen=True)
class PeRow:
    label: str
    formats: tuple[str, ...]
    cells: float
    how: str
    lanes_by_bits: dict[int, int]  # operand width -> lane products per cycle
    ecp5: tuple[int, int, int]  # LUT4, FF, DSP (synth_ecp5)

    def per_kcell(self, bits: int) -> float:
        return 1000.0 * self.lanes_by_bits.get(bits, 0) / self.cells


def _row(label: str, formats, lanes_by_bits: dict[int, int], ecp5) -> PeRow:
    params = SimdParams(pes=1, formats=list(formats), weight_format=formats[0], activation_format=formats[0])
    cells, how = pe_cells(params)
    return PeRow(label, tuple(formats), cells, how, lanes_by_bits, tuple(ecp5[:3]))


def xrnpe_rows() -> dict[str, PeRow]:
    """The reconfigurable PE, the largest fixed PE (by synthesized cells) and the 16-bit multi-format PE."""
    fixed = {f: SYNTH_CELLS[("array", False, frozenset({f}))][0] for f in SUPPORTED_FORMATS}
    largest = max(fixed, key=fixed.get)
    return {
        "reconfigurable": _row("reconfigurable (11 formats, 1x16 .. 8x2 lanes)", list(SUPPORTED_FORMATS),
                               {b: 16 // b for b in WIDTHS}, ECP5_PC10["reconfigurable"]),
        "largest_fixed": _row(f"largest fixed PE ({largest}, {16 // _bits(largest)} lanes)", [largest],
                              {b: (16 // b if b == _bits(largest) else 0) for b in WIDTHS}, ECP5_PC10[largest]),
        "multi_format": _row("multi-format PE (16-bit formats, 1 lane; narrower formats widened)",
                             list(MULTI_FORMAT_16), {b: 1 for b in WIDTHS}, MULTI_FORMAT_ECP5),
    }


def _bits(fmt: str) -> int:
    from archsim.numerics import bits_of

    return bits_of(fmt)


@dataclass(frozen=True)
class MixpeResult:
    weights: str
    activations: str
    workload: str
    mixpe_pes: int
    dequant_pes: int
    mixpe_pe_cells: float
    dequant_pe_cells: float
    mixpe_cycles: int
    dequant_cycles: int
    mixpe_energy_pj: float
    dequant_energy_pj: float

    @property
    def speedup(self) -> float:
        """Dequant baseline cycles over MixPE cycles (> 1: MixPE faster)."""
        return self.dequant_cycles / self.mixpe_cycles

    @property
    def energy_reduction(self) -> float:
        """Dequant baseline energy over MixPE energy (> 1: MixPE uses less)."""
        return self.dequant_energy_pj / self.mixpe_energy_pj


def mixpe_designs(arch: str, weights: str, activations: str, group_size: int,
                  multiplier: str = "shift_add") -> tuple[dict, dict, int, int]:
    """(MixPE overrides, equal-area dequant baseline overrides, MixPE PEs, baseline PEs)."""
    from archsim.spec import load_arch

    formats = [weights] if weights == activations else [weights, activations]
    common = {"formats": formats, "weight_format": weights, "activation_format": activations,
              "group_size": group_size}
    mixpe = {**common, "multiplier": multiplier, "dequant": False}
    base = {**common, "multiplier": "array", "dequant": True}
    pes = load_arch(arch).params.pes
    mixpe_cells, _ = pe_cells(load_arch(arch, overrides=mixpe).params)
    base_cells, _ = pe_cells(load_arch(arch, overrides=base).params)
    base_pes = max(1, int(pes * mixpe_cells / base_cells))  # as many as fit in the MixPE array's area
    return mixpe, {**base, "pes": base_pes}, pes, base_pes


def mixpe_vs_dequant(arch: str = "simd-1024", weights: str = "int4", activations: str = "int8",
                     group_size: int = 128, workload: str = "llama3_8b", phase: str = "prefill",
                     seq_len: int = 512, multiplier: str = "shift_add") -> MixpeResult:
    """MixPE's order (on ``multiplier``: MixPE's shift-add, or an array multiplier) vs the
    dequantize-then-fp16 baseline at equal PE-array area on one LLM phase."""
    from archsim.simulation import simulate
    from archsim.spec import load_arch

    mixpe, base, pes, base_pes = mixpe_designs(arch, weights, activations, group_size, multiplier)
    kw = {"phase": phase, "trace_layers": 0}
    kw.update({"seq_len": seq_len} if phase == "prefill" else {"kv_len": seq_len})
    ours = simulate(workload, arch, weights=weights, activations=activations, overrides=mixpe, **kw)
    theirs = simulate(workload, arch, weights=weights, activations=activations, overrides=base, **kw)
    return MixpeResult(
        weights, activations, f"{workload} {phase} {seq_len}", pes, base_pes,
        pe_cells(load_arch(arch, overrides=mixpe).params)[0], pe_cells(load_arch(arch, overrides=base).params)[0],
        ours.total_cycles, theirs.total_cycles, ours.energy_pj, theirs.energy_pj)
