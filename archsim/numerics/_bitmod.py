"""BitMoD's 3- and 4-bit weight datatypes and its per-group mixture-of-datatype quantizer.

BitMoD (Chen et al., HPCA 2025, arXiv:2411.11745) starts from the sign-magnitude
FP3 (E2M0: 0, 1, 2, 4) and FP4 (E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6) and gives
their redundant code -- negative zero, sign bit set with magnitude 0 -- one
*special value*:

- extra resolution (ER): a value between the two largest magnitudes,
  +-3 for FP3, +-5 for FP4;
- extra asymmetry (EA): a value past the largest magnitude on one side,
  +-6 for FP3, +-8 for FP4.

``_pos``/``_neg`` says the special value's sign, so each bit width has four
types; the paper's mixture picks one of the four per group of 128 weights (a
2-bit selector beside the group's scale), the one with the least squared error.
The value sets are those of the authors' code (abdelfattah-lab/BitMoD-HPCA-25,
``bitmod_quant/quant_utils/quant_weight.py``), there written times 2 for FP4.

Codes: bit ``bits-1`` is the sign, the rest the magnitude index in the base
type's order; the code of -0 (``100`` / ``1000``) holds the special value.
Encoding rounds to the nearest value (ties to the even code, as
:class:`TableCodec` does for every table format) and saturates at both ends;
NaN encodes to 0.
"""
from __future__ import annotations

import numpy as np

from archsim.numerics._base import Format, TableCodec, code_dtype

#: magnitudes of the base types, in code order (code = sign << (bits-1) | index)
BASE_MAGNITUDES = {3: (0.0, 1.0, 2.0, 4.0), 4: (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)}
#: the special value's magnitude, per bit width and variant
SPECIAL_MAGNITUDE = {(3, "er"): 3.0, (3, "ea"): 6.0, (4, "er"): 5.0, (4, "ea"): 8.0}
#: the mixture the paper's accelerator selects from per group (its ``mixed_bitmod``)
MIXTURES = {
    3: ("fp3_er_pos", "fp3_er_neg", "fp3_ea_pos", "fp3_ea_neg"),
    4: ("fp4_er_pos", "fp4_er_neg", "fp4_ea_pos", "fp4_ea_neg"),
}
#: the group size of the paper's evaluation
GROUP_SIZE = 128


class TableFormat(Format):
    """A signed format given by the value of each code (<= 8 bits), round to nearest by table."""

    def __init__(self, name: str, bits: int, values_by_code: list[float], doc: str):
        super().__init__(name, bits, "float", True, 1, "saturate", doc)
        values = np.asarray(values_by_code, np.float64)
        if values.shape != (1 << bits,):
            raise ValueError(f"{name}: expected {1 << bits} code values, got {values.shape}")
        # one table entry per distinct value (a duplicated -0 keeps its +0 code)
        distinct, first = np.unique(values, return_index=True)
        object.__setattr__(self, "values_by_code", values)
        object.__setattr__(self, "_codec", TableCodec(distinct, first.astype(np.int64)))

    def decode(self, codes) -> np.ndarray:
        return self.values_by_code[np.asarray(codes).astype(np.int64)]

    def encode(self, x) -> np.ndarray:
        x = np.nan_to_num(np.asarray(x, np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf)
        return self._codec.nearest(x).astype(code_dtype(self.bits))

    @property
    def values(self) -> np.ndarray:
        """The distinct representable values, ascending."""
        return self._codec.values


def _values_by_code(bits: int, special: float | None) -> list[float]:
    mags = BASE_MAGNITUDES[bits]
    out = list(mags) + [-m for m in mags]
    if special is not None:
        out[len(mags)] = special  # the -0 code
    return out


def bitmod_formats() -> list[TableFormat]:
    """The base FP3 (``fp3_e2m0``) and BitMoD's eight extended types."""
    formats = [TableFormat("fp3_e2m0", 3, _values_by_code(3, None),
                           "FP3 E2M0 sign-magnitude: 0, +-1, +-2, +-4 (-0 redundant)")]
    for bits in (3, 4):
        for variant, what in (("er", "extra resolution"), ("ea", "extra asymmetry")):
            mag = SPECIAL_MAGNITUDE[(bits, variant)]
            for sign_name, sign in (("pos", 1.0), ("neg", -1.0)):
                formats.append(TableFormat(
                    f"fp{bits}_{variant}_{sign_name}", bits, _values_by_code(bits, sign * mag),
                    f"BitMoD FP{bits} with {what}: the -0 code is {sign * mag:+g}"))
    return formats


def _groups(w: np.ndarray, group_size: int) -> np.ndarray:
    w = np.asarray(w, np.float64)
    if w.ndim != 2 or group_size <= 0 or w.shape[1] % group_size:
        raise ValueError(f"group quantization needs a 2-D weight whose last dimension ({w.shape[-1] if w.ndim else 0}) "
                         f"is a multiple of group_size ({group_size}); got shape {w.shape}")
    return w.reshape(w.shape[0], w.shape[1] // group_size, group_size)


def quantize_groups(w, fmt: Format, group_size: int = GROUP_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """``w`` (rows x cols) quantized to ``fmt`` per group of ``group_size`` consecutive weights of a row.

    Symmetric absmax scaling, as the paper's code: ``scale = max|group| / qmax`` with
    ``qmax`` the largest magnitude of ``fmt`` (for ints the largest positive: -2^(b-1) unused),
    each weight rounded to ``scale * v`` for the nearest value ``v``. Returns
    (dequantized weights of ``w``'s shape, scales of shape rows x groups). An all-zero
    group gets scale 1 (every weight exactly 0)."""
    g = _groups(w, group_size)
    if not np.isfinite(g).all():
        raise ValueError("group quantization needs finite weights; got NaN or inf")
    if fmt.kind in ("int", "uint"):
        qmax = fmt.max_value  # symmetric INT: two's complement's extra negative code is left unused
    else:
        finite = fmt.decode(np.arange(1 << fmt.bits))
        qmax = float(np.abs(finite[np.isfinite(finite)]).max())
    amax = np.abs(g).max(axis=-1, keepdims=True)
    scale = np.where(amax > 0, amax / qmax, 1.0)
    deq = fmt.round_to(g / scale) * scale
    return deq.reshape(np.shape(w)), scale[..., 0]


def quantize_mixture(w, formats, group_size: int = GROUP_SIZE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group, the format of ``formats`` with the least squared error (its own absmax scale).

    Ties go to the earlier format in ``formats``. Returns (dequantized weights,
    chosen format index per group (rows x groups), scale per group)."""
    if not formats:
        raise ValueError("quantize_mixture needs at least one format")
    g = _groups(w, group_size)
    best_deq = best_err = best_idx = best_scale = None
    for i, fmt in enumerate(formats):
        deq, scale = quantize_groups(w, fmt, group_size)
        deq_g = deq.reshape(g.shape)
        err = ((deq_g - g) ** 2).sum(axis=-1)
        if best_err is None:
            best_deq, best_err, best_scale = deq_g, err, scale
            best_idx = np.zeros(err.shape, np.int64)
            continue
        better = err < best_err
        best_deq = np.where(better[..., None], deq_g, best_deq)
        best_err = np.where(better, err, best_err)
        best_scale = np.where(better, scale, best_scale)
        best_idx = np.where(better, i, best_idx)
    return best_deq.reshape(np.shape(w)), best_idx, best_scale


def sqnr_db(w, w_quantized) -> float:
    """Signal-to-quantization-noise ratio ``10 log10(sum w^2 / sum (w - q)^2)`` in dB."""
    w = np.asarray(w, np.float64)
    noise = float(((w - np.asarray(w_quantized, np.float64)) ** 2).sum())
    return float("inf") if noise == 0 else 10.0 * float(np.log10(float((w ** 2).sum()) / noise))
