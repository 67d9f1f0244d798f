"""Command codes and field widths of the LUT core (shared by its controller and datapath)."""

#: command codes of the weight / activation formats
WFMT = {"int1": 0, "ternary": 1, "int2": 2, "int3": 3, "int4": 4}
AFMT = {"int8": 0, "fp16": 1, "bf16": 2}
PLANES = (1, 2, 2, 3, 4)  # by WFMT code
#: bits of the command's block counts
DIM_BITS = 16


def _bits(n: int) -> int:
    """Address bits of a buffer of ``n`` entries (at least 1)."""
    return max(1, (n - 1).bit_length())
