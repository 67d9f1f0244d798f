"""OCP Microscaling (MX v1.0) block formats: 32 elements share one E8M0 scale.

Per block: ``X = 2**(floor(log2(amax)) - emax_elem)`` (the exponent clamped to
E8M0's -127..127; an all-zero block gets 2**-127), elements are ``x / X``
rounded to the element format (round-to-nearest-even) and clamped to its
largest normal. A block with a NaN or an infinity gets the NaN scale (code
255) and zero elements. MXINT8 elements are 8-bit two's complement with an
implicit 2**-6 (values -2 .. 1 + 63/64), ``emax_elem = 0``.

Codes: ``encode(x)`` pads the last axis to a multiple of 32 with zeros and
returns uint16 codes of shape ``(..., blocks, 33)``: the scale code first,
then the 32 element codes; ``decode`` takes that and returns ``(..., blocks * 32)``
values. ``encode_blocks`` / ``decode_blocks`` give the two parts separately.
"""
from __future__ import annotations

import numpy as np

from archsim.numerics._base import Format
from archsim.numerics._float import MiniFloat
from archsim.numerics._int import IntFormat

BLOCK = 32
SCALE_NAN = 255


class MxFormat(Format):
    def __init__(self, name: str, element: Format, emax_elem: int, element_scale_exp: int = 0):
        super().__init__(name, element.bits, "mx", True, BLOCK, "saturate",
                         f"OCP MX: {BLOCK} x {element.name} elements + one E8M0 scale")
        object.__setattr__(self, "element", element)
        object.__setattr__(self, "emax_elem", emax_elem)
        #: element value = code's integer * 2**element_scale_exp (MXINT8: -6); 0 for float elements
        object.__setattr__(self, "element_scale_exp", element_scale_exp)
        elem_max = element.max_value * 2.0 ** element_scale_exp
        object.__setattr__(self, "_elem_max", elem_max)

    def _blocks(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        pad = (-x.shape[-1]) % BLOCK
        if pad:
            x = np.concatenate([x, np.zeros(x.shape[:-1] + (pad,))], axis=-1)
        return x.reshape(x.shape[:-1] + (-1, BLOCK))

    def encode_blocks(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(element codes ``(..., blocks, 32)``, scale codes ``(..., blocks)``)."""
        b = self._blocks(x)
        bad = ~np.isfinite(b).all(axis=-1)
        amax = np.where(bad, 0.0, np.abs(np.where(np.isfinite(b), b, 0.0)).max(axis=-1))
        with np.errstate(divide="ignore"):
            e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1.0))), -127.0) - self.emax_elem
        e = np.clip(e, -127, 127)
        scale_codes = np.where(bad, SCALE_NAN, e + 127).astype(np.uint8)
        scaled = np.where(bad[..., None], 0.0, b) / np.exp2(e)[..., None]
        scaled = np.clip(scaled, -self._elem_max, self._elem_max)
        elem = self.element.encode(scaled * 2.0 ** -self.element_scale_exp)
        return elem, scale_codes

    def decode_blocks(self, codes, scales) -> np.ndarray:
        s = np.asarray(scales).astype(np.int64)
        scale = np.where(s == SCALE_NAN, np.nan, np.exp2(s - 127.0))
        v = self.element.decode(codes) * 2.0 ** self.element_scale_exp * scale[..., None]
        return v.reshape(v.shape[:-2] + (-1,))

    def encode(self, x) -> np.ndarray:
        elem, scales = self.encode_blocks(x)
        return np.concatenate([scales[..., None].astype(np.uint16), elem.astype(np.uint16)], axis=-1)

    def decode(self, codes) -> np.ndarray:
        c = np.asarray(codes)
        return self.decode_blocks(c[..., 1:], c[..., 0])

    @property
    def max_value(self) -> float:
        return self._elem_max * 2.0 ** 127

    @property
    def min_positive(self) -> float:
        return self.element.min_positive * 2.0 ** self.element_scale_exp * 2.0 ** -127


def mx_formats() -> dict[str, MxFormat]:
    e2m1 = MiniFloat("fp4_e2m1", 2, 1, "none")
    e2m3 = MiniFloat("fp6_e2m3", 2, 3, "none")
    e3m2 = MiniFloat("fp6_e3m2", 3, 2, "none")
    e4m3 = MiniFloat("fp8_e4m3", 4, 3, "fn")
    e5m2 = MiniFloat("fp8_e5m2", 5, 2, "ieee")
    return {
        "mxfp4": MxFormat("mxfp4", e2m1, 2),
        "mxfp6_e2m3": MxFormat("mxfp6_e2m3", e2m3, 2),
        "mxfp6_e3m2": MxFormat("mxfp6_e3m2", e3m2, 4),
        "mxfp8_e4m3": MxFormat("mxfp8_e4m3", e4m3, 8),
        "mxfp8_e5m2": MxFormat("mxfp8_e5m2", e5m2, 15),
        "mxint8": MxFormat("mxint8", IntFormat(8), 0, element_scale_exp=-6),
    }
