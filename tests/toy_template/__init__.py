"""A toy template that lives only in the tests: one scalar int8 MAC unit.

It proves the contract of ``docs/adding_a_template.md``: this one
:class:`~archsim.templates.base.Template` entry is all archsim needs to map a
workload onto it, simulate it, check its fast model against its detailed one
and an independent reference, and co-simulate its RTL. Nothing outside this
folder names it; :func:`register` adds it for a test, :func:`unregister`
removes it.
"""
from __future__ import annotations

from archsim import templates
from archsim.templates.base import Template

TEMPLATE = Template(
    name="toymac",
    description="one scalar int8 multiply-accumulate unit (a test's toy)",
    params="toy_template.model:ToyMacParams",
    model="toy_template.model:ToyMacModel",
    mapper="toy_template.mapper",
    rtl="toy_template.rtl:ToyMacDesign",
    conformance="toy_template.conformance",
    reference="toy_template.reference:check",
    coverage="toy_template.reference:missing_cases",
)

#: the arch spec every toy test starts from (a mapping: no preset file is shipped)
BASE_ARCH = {
    "name": "toymac-1", "template": "toymac", "params": {}, "clock_mhz": 100,
    "buffers": {"input": {"bytes": 4096}, "weight": {"bytes": 4096}, "output": {"bytes": 4096}},
    "dram": {"bytes_per_cycle": 4, "latency_cycles": 10},
    "vector_unit": {"lanes": 1},
}


def register() -> Template:
    return templates.register(TEMPLATE)


def unregister() -> None:
    templates.unregister(TEMPLATE.name)
