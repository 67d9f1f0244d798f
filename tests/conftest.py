"""Fixtures shared by several test files."""
from __future__ import annotations

import pytest


@pytest.fixture
def run_periods(monkeypatch):
    """``run_periods(mapper_module, graph, arch, periods, small=True, **kw)``: ``archsim.simulate``
    with a mapper's periodic command streams (``mappers.periods``) switched on or off; ``small``
    lets small GEMMs run as periods too (their fill and drain are a larger share). Caches cleared."""
    import archsim
    import mappers
    from archsim.engine import core as engine_core

    def run(module, graph, arch, periods: bool, small: bool = True, **kw):
        monkeypatch.setattr(module, "PERIODS", periods)
        if small:
            monkeypatch.setattr(module, "PERIOD_STEPS", 16)
            monkeypatch.setattr(module, "PERIOD_ERROR", 0.05)
        mappers.clear_cache()
        engine_core.clear_cache()
        return archsim.simulate(graph, arch, **kw)

    return run
