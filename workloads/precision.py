"""Numeric formats that tensors and hardware are described in.

A precision is named by a string (``"int8"``, ``"bf16"``, ``"fp8_e4m3"``,
...). This table gives its width and kind; everything that needs bytes or
a MAC's energy looks it up here, so one spelling is used everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Precision:
    name: str
    bits: int
    kind: str  # "int" | "uint" | "float" | "posit"


PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in [
        Precision("int4", 4, "int"),
        Precision("uint4", 4, "uint"),
        Precision("int8", 8, "int"),
        Precision("uint8", 8, "uint"),
        Precision("int16", 16, "int"),
        Precision("int32", 32, "int"),
        Precision("int64", 64, "int"),
        Precision("fp4_e2m1", 4, "float"),
        Precision("fp8_e4m3", 8, "float"),
        Precision("fp8_e5m2", 8, "float"),
        Precision("fp16", 16, "float"),
        Precision("bf16", 16, "float"),
        Precision("fp32", 32, "float"),
        Precision("posit8_0", 8, "posit"),
        Precision("posit16_1", 16, "posit"),
    ]
}


def get_precision(name: str) -> Precision:
    """Look up a precision by name; ``ValueError`` with the valid names if unknown."""
    try:
        return PRECISIONS[name]
    except KeyError:
        raise ValueError(f"unknown precision {name!r}; expected one of {', '.join(PRECISIONS)}") from None


def precision_bits(name: str) -> int:
    return get_precision(name).bits


def tensor_bytes(num_elements: int, precision: str) -> int:
    """Bytes of a densely packed tensor (sub-byte formats round up once per tensor)."""
    return (num_elements * precision_bits(precision) + 7) // 8
