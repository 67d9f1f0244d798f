"""User-facing errors.

Every error a user can cause (bad spec, bad workload file, impossible value)
is an :class:`ArchsimError`. The CLI prints ``str(err)`` as one line and exits
with status 2; it never shows a traceback for these. Messages name the file,
the place (key, line, node) and what was expected, e.g.::

    arch.yaml: params.rows: expected a positive integer, got -4
"""


class ArchsimError(Exception):
    """Base class of every error caused by user input."""


class SpecError(ArchsimError):
    """An arch spec, sweep spec or technology table is invalid."""


class WorkloadError(ArchsimError):
    """A workload (zoo parameters, ONNX / YAML / CSV file, graph) is invalid."""


class MappingError(ArchsimError):
    """A layer cannot be mapped onto the chosen accelerator."""


class ToolError(ArchsimError):
    """An external tool (Verilog simulator, yosys, nextpnr) is missing or failed."""
