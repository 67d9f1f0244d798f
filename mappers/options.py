"""Options of :func:`mappers.compile`, validated into one frozen dataclass."""
from __future__ import annotations

from dataclasses import dataclass, fields

from archsim.errors import MappingError
from mappers.lower import CONV_LOWERINGS

OBJECTIVES = ("cycles", "energy")
DATAFLOWS = ("ws", "os", "is", "auto")


@dataclass(frozen=True)
class MapOptions:
    """Mapper options.

    Attributes
    ----------
    conv_lowering : "im2col_padded" | "scalesim"
        How convolutions become GEMMs (see :mod:`mappers.lower`). Default:
        "scalesim" for arch specs named ``scalesim-*``, else "im2col_padded".
    objective : "cycles" | "energy"
        What the mapping search minimises (the other breaks ties).
    dataflow : "ws" | "os" | "is" | "auto" | None
        Overrides the arch's ``params.dataflow``; "auto" searches all.
    """

    conv_lowering: str = "im2col_padded"
    objective: str = "cycles"
    dataflow: str | None = None


_NAMES = tuple(f.name for f in fields(MapOptions))


def make_options(arch, options: dict) -> MapOptions:
    """Validate keyword options of :func:`mappers.compile`; fill defaults from ``arch``."""
    for key in options:
        if key not in _NAMES:
            raise MappingError(f"unknown mapper option {key!r}; expected one of {', '.join(_NAMES)}")
    conv = options.get("conv_lowering")
    if conv is None:
        conv = "scalesim" if str(getattr(arch, "name", "")).startswith("scalesim") else "im2col_padded"
    if conv not in CONV_LOWERINGS:
        raise MappingError(f"conv_lowering: expected one of {', '.join(CONV_LOWERINGS)}, got {conv!r}")
    objective = options.get("objective") or "cycles"
    if objective not in OBJECTIVES:
        raise MappingError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    dataflow = options.get("dataflow")
    if dataflow is not None:
        dataflow = str(dataflow).lower()
        if dataflow not in DATAFLOWS:
            raise MappingError(f"dataflow: expected one of {', '.join(DATAFLOWS)}, got {options['dataflow']!r}")
    return MapOptions(conv, objective, dataflow)
