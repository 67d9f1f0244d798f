"""PIM template: DRAM banks with a MAC unit beside each row buffer, plus a
small ASIC for non-linear ops (PIM-GPT, Samsung HBM-PIM, SK hynix AiM).

Public names: :class:`PimParams`, :class:`PimTile`, :class:`PimModel`,
:func:`plan_steps`, :func:`schedule` (detailed, command level),
:func:`check_stream` (independent timing checker), ``TEMPLATE``.
Design notes: ``docs/pim.md``. Cases for the shared level-agreement harness:
:mod:`archsim.templates.pim.conformance` (``TEMPLATE.conformance``).
"""
from __future__ import annotations

from archsim.templates.base import Template
from archsim.templates.pim.checker import Violation, check_stream
from archsim.templates.pim.commands import ALL_BANKS, Cmd, program, run_detailed, schedule
from archsim.templates.pim.fast import steps_cycles
from archsim.templates.pim.model import PimModel
from archsim.templates.pim.params import PimParams
from archsim.templates.pim.tile import PimTile, plan_steps

TEMPLATE = Template(
    name="pim",
    description="DRAM banks with near-bank MAC units in all-bank lockstep, plus an ASIC for non-linear ops",
    params="archsim.templates.pim.params:PimParams",
    model="archsim.templates.pim.model:PimModel",
    mapper="mappers.pim",
    rtl="rtl.pim.rtl_design:PimDesign",
    conformance="archsim.templates.pim.conformance",
    reference="archsim.templates.pim.reference:check",
    coverage="archsim.templates.pim.reference:missing_cases",
    uses_buffers=False,
)

__all__ = ["ALL_BANKS", "Cmd", "PimModel", "PimParams", "PimTile", "TEMPLATE", "Violation", "check_stream",
           "plan_steps", "program", "run_detailed", "schedule", "steps_cycles"]
