"""Systolic-array template: TPU-style R x C MAC grid with WS / OS / IS dataflows.

Public names: :class:`SystolicParams`, :class:`SystolicTile` (timing contract
in its module docstring and ``docs/systolic_timing.md``).
"""
from __future__ import annotations

from archsim.templates.systolic.params import SystolicParams
from archsim.templates.systolic.tile import SystolicTile

__all__ = ["SystolicParams", "SystolicTile"]
