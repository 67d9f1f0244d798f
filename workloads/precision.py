"""Numeric formats that tensors are described in, from the one registry
(:mod:`archsim.numerics`).

A precision is named by a string (``"int8"``, ``"bf16"``, ``"fp8_e4m3"``,
``"posit8_0"``, ``"mxfp4"`` ...). Its width and kind come from
:func:`archsim.numerics.get_format`, so one spelling and one table are used
everywhere (bytes of a tensor, a MAC's energy, a datapath's width).
"""
from __future__ import annotations

from dataclasses import dataclass

from archsim.numerics import format_names, get_format


@dataclass(frozen=True)
class Precision:
    name: str
    bits: int
    kind: str  # "int" | "uint" | "float" | "posit" | "mx"


def get_precision(name: str) -> Precision:
    """Look up a precision by name; ``ValueError`` with the valid names if unknown."""
    fmt = get_format(name)
    return Precision(name, fmt.bits, fmt.kind)


#: every registered precision by name
PRECISIONS: dict[str, Precision] = {name: get_precision(name) for name in format_names()}


def precision_bits(name: str) -> int:
    return get_precision(name).bits


def tensor_bytes(num_elements: int, precision: str) -> int:
    """Bytes of a densely packed tensor (sub-byte formats round up once per tensor;
    MX formats add one byte of shared scale per block)."""
    fmt = get_format(precision)
    bits = num_elements * fmt.bits
    if fmt.block_size > 1:
        bits += -(-num_elements // fmt.block_size) * 8
    return (bits + 7) // 8
