"""Packing a stream payload word from named fields (pure Python: cocotb drivers import it)."""
from __future__ import annotations


def pack_command(layout: list, fields: dict[str, int]) -> int:
    """The payload word: ``layout`` lists (field, bit offset, width); every field must fit its width."""
    word = 0
    for name, offset, width in layout:
        value = int(fields[name])
        if not 0 <= value < (1 << width):
            raise ValueError(f"command field {name} = {value} does not fit {width} bits")
        word |= value << offset
    return word
