"""``--wrapper axi``: a template's :class:`~rtl.design.RtlDesign` inside :class:`rtl.lib.axi.AxiHostWrapper`.

``axi_wrapped(design)`` returns an RtlDesign whose top module is ``<top>_axi``: the same engine
behind AXI4-Lite registers and AXI4-Stream data ports. Jobs, model checks and co-simulation
sources are the engine's own; the job asks the engine's driver to go through the AXI bus
functional models (:mod:`rtl.lib.axi_host`), so a co-simulation of the wrapped design checks
the wrapper and the engine together against the same models.
"""
from __future__ import annotations

import inspect
from typing import Any

from archsim.errors import SpecError
from rtl.design import Port, RtlDesign

WRAPPERS = ("none", "axi")

AXI_PORT_DOCS = {
    "clk": "clock (rising edge)",
    "rst": "synchronous reset, active high (also resets the AXI interfaces)",
    **{f"s_axil_{n}": f"AXI4-Lite slave {n.upper()} (registers: docs/rtl_host_interface.md)"
       for n in ("awaddr", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready", "bresp", "bvalid", "bready",
                 "araddr", "arvalid", "arready", "rdata", "rresp", "rvalid", "rready")},
    "s_axis_tdata": "operand writes: one beat = one buffer entry (lane 0 lowest), to WR_BUF at WR_ADDR (+1 per beat)",
    "s_axis_tvalid": "AXI4-Stream slave TVALID", "s_axis_tready": "AXI4-Stream slave TREADY",
    "s_axis_tlast": "accepted and ignored",
    "m_axis_tdata": "results: one beat per output-buffer entry of a RD_ADDR / RD_COUNT burst",
    "m_axis_tvalid": "AXI4-Stream master TVALID", "m_axis_tready": "AXI4-Stream master TREADY",
    "m_axis_tlast": "high on the last entry of a read burst",
}


class AxiWrappedDesign(RtlDesign):
    """An engine design behind the AXI wrapper (see the module docstring)."""

    def __init__(self, inner: RtlDesign):
        super().__init__(inner.params, inner.options)
        self.inner = inner
        self.template = inner.template
        self.toplevel = f"{inner.toplevel}_axi"
        self.driver = inner.driver
        self.depth_options = inner.depth_options

    def component(self):
        from rtl.lib.axi import AxiHostWrapper

        return AxiHostWrapper(self.inner.component())

    def ports(self) -> list[Port]:
        from rtl.lib.axi import axi_signature
        from rtl.lib.host import host_sizes

        return self.ports_of(axi_signature(host_sizes(engine_signature(self.inner))), AXI_PORT_DOCS)

    def source_files(self) -> list[str]:
        import rtl.lib.axi
        import rtl.lib.host

        return self.inner.source_files() + [inspect.getfile(rtl.lib.axi), inspect.getfile(rtl.lib.host), __file__]

    def sim_sources(self) -> dict[str, str]:
        return self.inner.sim_sources()

    def config_dict(self) -> dict[str, Any]:
        return {**self.inner.config_dict(), "wrapper": "axi"}

    def description(self) -> str:
        return self.inner.description() + " behind AXI4-Lite / AXI4-Stream"

    def cosim_items(self, source: str = "random", **kwargs):
        return self.inner.cosim_items(source, **kwargs)

    def make_job(self, items):
        return {**self.inner.make_job(items), "host": "axi"}

    def check(self, items, result, sim="icarus"):
        report = self.inner.check(items, result, sim=sim)
        report.design = f"{report.design} (axi)"
        return report


def engine_signature(design: RtlDesign):
    """The signature of ``design``'s top component (built only to be looked at)."""
    component = design.component()
    component._MustUse__silence = True  # not elaborated here: no "created but never used" warning
    return component.signature


def axi_wrapped(design: RtlDesign) -> AxiWrappedDesign:
    """``design`` behind the AXI wrapper; a one-line error when it lacks the host signature."""
    from rtl.lib.host import implements_host

    if not implements_host(engine_signature(design)):  # every shipped template's top does; a unit or a new one may not
        raise SpecError(f"--wrapper axi: the {design.template} RTL's top does not implement the host interface "
                        f"(rtl/lib/host.py, docs/rtl_host_interface.md)")
    return AxiWrappedDesign(design)
