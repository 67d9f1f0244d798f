"""Make Icarus evaluate every combinational block of yosys' Verilog once at start.

yosys' ``write_verilog`` makes each module's ``always @*`` blocks also depend on one initialised
``$auto$verilog_backend...`` reg, so that a simulator runs them at time 0. Icarus in SystemVerilog
mode (cocotb's default) raises no event for a declaration initialiser, so a block whose real inputs
keep their initial values is never evaluated and its outputs stay X (issue 23: the attention lane's
``l_state[row]`` read on the level harness's first tile). The harness lists those regs in the job
(``kick``); the testbench writes 1 to every one of them, in every module instance, after reset.
"""

from __future__ import annotations

import re

_KICK_REG = re.compile(r"reg \\(\$auto\$verilog_backend\S*)\s")


def kick_names(verilog: str) -> list[str]:
    """The yosys kick regs declared in ``verilog`` (one per module)."""
    return sorted(set(_KICK_REG.findall(verilog)))


def kick(dut, names) -> None:
    """Write 1 to each named reg in every module instance, walking the whole instance tree."""
    from cocotb.handle import HierarchyArrayObject, HierarchyObject

    names = set(names)
    if not names:
        return
    todo = [dut]
    while todo:
        scope = todo.pop()
        scope._discover_all()
        for key in scope._keys():
            name = str(key).strip().lstrip("\\")
            if name in names:
                scope._get(key).value = 1
                continue
            child = scope._get(key)
            if isinstance(child, HierarchyArrayObject):
                todo.extend(child)
            elif isinstance(child, HierarchyObject):
                todo.append(child)
