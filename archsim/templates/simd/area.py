"""Area of one SIMD PE by its format set and multiplier, from synthesis of the RTL PE.

A SIMD PE is not one fp16 MAC: it carries per-lane decoders and multipliers for
every format it is built for, the lane tree, the int64 -> fp32 conversion, the
fp32 x scale multiply and two fp32 accumulators. Its area is therefore taken
from synthesis of the RTL PE (``rtl/simd``, module ``archsim_simd_pe``):

1. **Measured**: :data:`SYNTH_CELLS` holds yosys' generic 4-LUT cell count
   (``synth -flatten -lut 4``: LUTs + flip-flops, no DSP blocks) of one PE with
   ``lane_bits`` 16 at ``pipeline_cycles`` 10, per (multiplier, dequant, format
   set), each from a run of ``bench/bench_simd_synth.py`` (:data:`SYNTH_RUNS`).
2. **Estimated**, for an array-multiplier format set not synthesized: a shared
   base (group path, control) plus each format's lanes, plus the int x float
   cross paths when the set mixes both kinds:
   ``BASE + sum_f (fixed_f - BASE) + MIXED``, ``fixed_f`` the measured one-format
   PE. ``BASE`` and ``MIXED`` are fitted so that the 11-format and int4+fp16 PEs
   are exact (:data:`FIT_SETS`); the other measured multi-format PEs check the
   estimate (:func:`estimate_residuals`). A shift-add,
   bit-serial or dequantizing PE not synthesized is the array estimate times
   that style's measured ratio to the array PE of the same formats.
3. ``lane_bits`` other than 16: the lanes' part scales with ``lane_bits / 16``
   (the base does not); said in the source.

Cells become um2 at :data:`UM2_PER_CELL`, anchored on the fixed fp16 PE priced by
its components at Horowitz ISSCC 2014's 45 nm figures (the same table as the
other templates' MACs), so SIMD areas stay comparable with theirs.
"""
from __future__ import annotations

from archsim.templates.simd.params import SUPPORTED_FORMATS, SimdParams

ALL = frozenset(SUPPORTED_FORMATS)
#: the pipeline depth every figure below was synthesized at (the presets' value)
SYNTH_PIPELINE_CYCLES = 10

#: where each measured figure comes from (yosys 0.70 generic flow, one PE, lane_bits 16, pipeline_cycles 10)
SYNTH_RUNS = {
    "2026-11-24": "docs/simd_rtl.md (python bench/bench_simd_synth.py --pipeline-cycles 10), generic cells column",
    "2026-11-27": "python bench/bench_simd_synth.py --no-fixed --no-pnr --targets generic --pipeline-cycles 10 "
                  "--formats ... [--multiplier M] [--dequant] (docs/simd_rtl.md, 'Area model')",
}

#: (multiplier, dequant, formats) -> (generic 4-LUT cells of one PE, run date in SYNTH_RUNS); the fixed fp16
#: PE re-synthesized on 2026-11-27 gave the 2026-11-24 figure exactly (5,193), so the runs can be mixed
SYNTH_CELLS: dict[tuple[str, bool, frozenset], tuple[int, str]] = {
    ("array", False, ALL): (12504, "2026-11-24"),
    ("array", False, frozenset({"int2"})): (5333, "2026-11-24"),
    ("array", False, frozenset({"int4"})): (5339, "2026-11-24"),
    ("array", False, frozenset({"int8"})): (5505, "2026-11-24"),
    ("array", False, frozenset({"int16"})): (5886, "2026-11-24"),
    ("array", False, frozenset({"fp4_e2m1"})): (7182, "2026-11-24"),
    ("array", False, frozenset({"fp8_e4m3"})): (5641, "2026-11-24"),
    ("array", False, frozenset({"fp8_e5m2"})): (5684, "2026-11-24"),
    ("array", False, frozenset({"fp16"})): (5193, "2026-11-24"),
    ("array", False, frozenset({"bf16"})): (5283, "2026-11-24"),
    ("array", False, frozenset({"posit8_0"})): (6021, "2026-11-24"),
    ("array", False, frozenset({"posit16_1"})): (5894, "2026-11-24"),
    ("shift_add", False, frozenset({"int4", "fp16"})): (7142, "2026-11-27"),
    ("array", True, frozenset({"int4", "fp16"})): (4173, "2026-11-27"),
    ("array", False, frozenset({"int4", "fp16"})): (7182, "2026-11-27"),
    ("shift_add", False, frozenset({"int4", "int8"})): (5722, "2026-11-27"),
    ("array", True, frozenset({"int4", "int8"})): (3366, "2026-11-27"),
    ("array", False, frozenset({"int4", "int8"})): (5837, "2026-11-27"),
    ("array", False, frozenset({"int16", "fp16", "bf16", "posit16_1"})): (7826, "2026-11-27"),
    ("bit_serial", False, frozenset({"int4", "int8"})): (5788, "2026-11-27"),
    ("array", False, frozenset({"int4", "fp8_e4m3"})): (7438, "2026-11-27"),
    ("shift_add", False, frozenset({"int4", "fp8_e4m3"})): (7387, "2026-11-27"),
    ("shift_add", False, ALL): (12521, "2026-11-27"),
}

#: the anchor: the fixed fp16 PE (one lane) priced by its parts at Horowitz ISSCC 2014 (45 nm)
ANCHOR_FORMATS = frozenset({"fp16"})
ANCHOR_UM2 = 1640.0 + 2 * 4184.0 + 7700.0 + 234 * 4.522
ANCHOR_SOURCE = ("fixed fp16 PE = fp16 mult 1640 + group and output fp32 adds 2 x 4184 + fp32 scale mult 7700 um2 "
                 "(Horowitz ISSCC 2014, 45 nm) + its 234 flip-flops x 4.522 um2 (NanGate FreePDK45 DFF_X1)")
UM2_PER_CELL = ANCHOR_UM2 / SYNTH_CELLS[("array", False, ANCHOR_FORMATS)][0]


def _fixed(fmt: str) -> int:
    return SYNTH_CELLS[("array", False, frozenset({fmt}))][0]


def _is_int(fmt: str) -> bool:
    return fmt.startswith("int")


def _mixed(formats) -> int:
    """1 if the set has integer and non-integer formats (int x float pairs: both paths in a lane), else 0."""
    kinds = {_is_int(f) for f in formats}
    return int(len(kinds) == 2)


#: the measured multi-format array PEs the estimate is fitted to (exactly); the others check it
FIT_SETS = (ALL, frozenset({"int4", "fp16"}))


def _fit() -> tuple[float, float]:
    """(shared base cells, extra cells of a set mixing int and float formats) such that
    ``base + sum_f (fixed_f - base) + mixed * extra`` is exact on :data:`FIT_SETS`."""
    rows, rhs = [], []
    for formats in FIT_SETS:
        fixed_sum = sum(_fixed(f) for f in formats)
        # cells = fixed_sum - (n - 1) * base + mixed * extra
        rows.append((-(len(formats) - 1), _mixed(formats)))
        rhs.append(SYNTH_CELLS[("array", False, formats)][0] - fixed_sum)
    (a, b), (c, d) = rows
    det = a * d - b * c
    base = (rhs[0] * d - b * rhs[1]) / det
    extra = (a * rhs[1] - c * rhs[0]) / det
    return base, extra


BASE_CELLS, MIXED_CELLS = _fit()


def additive_cells(formats) -> float:
    """Array-multiplier PE of these formats: shared base + each format's lanes (fixed PE - base),
    + the int x float cross-path cells if the set mixes integer and float formats."""
    formats = set(formats)
    return BASE_CELLS + sum(_fixed(f) - BASE_CELLS for f in formats) + _mixed(formats) * MIXED_CELLS


def _style_ratio(multiplier: str, dequant: bool) -> tuple[float, str] | None:
    """Measured cells of this style over the same formats' array PE (mean over the sets measured both ways)."""
    ratios, sets = [], []
    for (mult, deq, formats), (cells, _run) in SYNTH_CELLS.items():
        if (mult, deq) != (multiplier, dequant):
            continue
        array = SYNTH_CELLS.get(("array", False, formats))
        base = array[0] if array else additive_cells(formats)
        ratios.append(cells / base)
        sets.append("+".join(sorted(formats)))
    if not ratios:
        return None
    return sum(ratios) / len(ratios), ", ".join(sets)


def pe_cells(params: SimdParams) -> tuple[float, str]:
    """(generic 4-LUT cells of one PE, how the figure was obtained)."""
    formats = frozenset(params.formats)
    key = (params.multiplier, bool(params.dequant), formats)
    style = f"{params.multiplier}{' dequant' if params.dequant else ''}"
    if key in SYNTH_CELLS:
        cells, run = SYNTH_CELLS[key]
        how = f"synthesized ({style}, {len(formats)} formats; {run}: {SYNTH_RUNS[run]})"
    else:
        cells = additive_cells(formats)
        how = (f"estimated: shared base {BASE_CELLS:.0f} + per-format lanes of the synthesized fixed PEs "
               f"(+ {MIXED_CELLS:.0f} if int and float formats mix; docs/simd_rtl.md)")
        if key[:2] != ("array", False):
            ratio = _style_ratio(params.multiplier, bool(params.dequant))
            if ratio is None:
                raise ValueError(f"multiplier: no synthesized {style} SIMD PE to derive its area from "
                                 f"(bench/bench_simd_synth.py; archsim/templates/simd/area.py SYNTH_CELLS)")
            cells *= ratio[0]
            how += f" x {ratio[0]:.3f} ({style} / array, measured on {ratio[1]})"
    if params.pipeline_cycles != SYNTH_PIPELINE_CYCLES:
        how += (f"; figures at pipeline_cycles {SYNTH_PIPELINE_CYCLES} (this PE: {params.pipeline_cycles}; "
                f"the 11-format PE is 12,023 cells at 4, docs/simd_rtl.md)")
    if params.lane_bits != 16:
        cells = BASE_CELLS + (cells - BASE_CELLS) * params.lane_bits / 16
        how += f"; lanes scaled x{params.lane_bits}/16 from the 16-bit PE (extrapolated, not synthesized)"
    return cells, how


#: what the area says of a ``pe_style`` other than ``standard``: the model prices whole synthesized PEs
#: and has no term for the integer dot unit, the only part ``pe_style`` changes (docs/tpe.md)
PE_STYLE_UNPRICED = ("not priced: the area is the standard PE's (the model prices whole synthesized PEs, with no "
                     "term for the integer dot unit pe_style changes; measured: the 8-lane int8 dot unit alone is "
                     "1.40x smaller as tpe in NAND2-eq. area and 1.45x in LUT4, the whole fixed int8 PE +2.4 % LUT4 "
                     "(python bench/bench_tpe.py --only-simd, docs/tpe.md); no tpe PE of a format set is synthesized)")


def unpriced(params: SimdParams) -> dict[str, str]:
    """Parameters of the PE its area does not price: ``pe_style`` other than ``standard``."""
    return {} if params.pe_style == "standard" else {"pe_style": f"{params.pe_style}: {PE_STYLE_UNPRICED}"}


def pe_um2(params: SimdParams) -> tuple[float, str]:
    """(um2 of one PE at 45 nm, its source)."""
    cells, how = pe_cells(params)
    for name, text in unpriced(params).items():
        how += f"; {name} {text}"
    return cells * UM2_PER_CELL, (f"{how}; x {UM2_PER_CELL:.3f} um2/cell, anchored on the {ANCHOR_SOURCE}")


def estimate_residuals() -> list[tuple[str, int, float]]:
    """(format set, measured cells, estimate) of every measured multi-format array PE the estimate was not
    fitted to: how far the estimate is from synthesis."""
    out = []
    for (mult, deq, formats), (cells, _run) in sorted(SYNTH_CELLS.items(), key=lambda kv: sorted(kv[0][2])):
        if (mult, deq) == ("array", False) and len(formats) > 1 and formats not in FIT_SETS:
            out.append(("+".join(sorted(formats)), cells, additive_cells(formats)))
    return out
