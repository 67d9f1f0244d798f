"""Skip a co-simulation test whose Verilog simulator is not installed (shared by the RTL test files)."""
from __future__ import annotations

import pytest


def require_icarus() -> None:
    """Skip the calling test, with the harness's reason, when Icarus Verilog is missing."""
    from rtl.cosim import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)
