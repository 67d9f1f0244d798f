"""RTL of the toy MAC (Amaranth) and its cocotb driver.

Ports: ``a``, ``b`` (int8), ``valid``, ``first`` (start a new dot product),
``last`` (its final pair); ``acc`` (int32) and ``done`` (high the cycle after
the last pair, when ``acc`` holds the result).

No ``from __future__ import annotations`` here: it turns the port annotations
below into strings, which ``wiring.Component`` does not read as ports
(docs/adding_a_template.md, "The Amaranth annotations pitfall").
"""

from typing import Any

from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.design import CosimReport, Port, RtlDesign, TileCheck


class ToyMac(wiring.Component):
    a: In(signed(8))
    b: In(signed(8))
    valid: In(1)
    first: In(1)
    last: In(1)
    acc: Out(signed(32))
    done: Out(1)

    def elaborate(self, platform):
        m = Module()
        product = self.a * self.b
        m.d.sync += self.done.eq(self.valid & self.last)
        with m.If(self.valid):
            with m.If(self.first):
                m.d.sync += self.acc.eq(product)
            with m.Else():
                m.d.sync += self.acc.eq(self.acc + product)
        return m


class ToyMacDesign(RtlDesign):
    template = "toymac"
    toplevel = "archsim_toymac"
    driver = "toy_template.rtl:run_job"

    def component(self):
        return ToyMac()

    def component_class(self):
        return ToyMac

    def config_dict(self) -> dict[str, Any]:
        return {"max_k": self.params.max_k}

    def ports(self) -> list[Port]:
        return [Port("a", "in", 8, "activation"), Port("b", "in", 8, "weight"), Port("valid", "in", 1, "pair valid"),
                Port("first", "in", 1, "first pair"), Port("last", "in", 1, "last pair"),
                Port("acc", "out", 32, "accumulator"), Port("done", "out", 1, "acc holds the result")]

    def cosim_items(self, source: str = "random", tiles: int = 8, seed: int = 0, **_kwargs) -> list:
        """Random dot products, as the conformance hook samples them (the toy has no other source)."""
        import numpy as np

        from archsim.errors import ArchsimError
        from toy_template.conformance import sample_tiles

        if source != "random":
            raise ArchsimError(f"toymac RTL: --source {source!r}: expected random (the toy's only source)")
        return sample_tiles(np.random.default_rng(seed), self.params, tiles)

    def make_job(self, items) -> dict[str, Any]:
        return {"driver": self.driver,
                "tiles": [[[int(x), int(y)] for x, y in zip(ops["input"], ops["weight"])] for _t, ops in items]}

    def check(self, items, result, sim: str) -> CosimReport:
        """Compare with what the models say (asked, never recomputed here)."""
        from archsim.spec import arch_from_params

        model = arch_from_params(self.params).model()
        checks = []
        for i, ((tile, ops), got) in enumerate(zip(items, result["tiles"])):
            want = int(model.tile_values(tile, ops)[0])
            _vals, det_cycles = model.detailed_tile(tile, ops)
            ok = got["acc"] == want
            checks.append(TileCheck(i, f"dot k={tile.k}", got["cycles"], model.tile_cycles(tile), det_cycles, ok,
                                    "" if ok else f"acc {got['acc']} != {want}"))
        return CosimReport("toymac", sim, checks)


async def run_job(dut, job) -> dict:
    """Feed each tile's pairs one per cycle; count cycles from the first pair until ``done``."""
    from cocotb.triggers import ReadOnly, RisingEdge

    out = []
    for pairs in job["tiles"]:
        cycles = 0
        for i, (x, y) in enumerate(pairs):
            dut.a.value, dut.b.value = x, y
            dut.valid.value, dut.first.value, dut.last.value = 1, int(i == 0), int(i == len(pairs) - 1)
            await RisingEdge(dut.clk)
            cycles += 1
        dut.valid.value = 0
        await ReadOnly()
        while not int(dut.done.value):
            await RisingEdge(dut.clk)
            await ReadOnly()
            cycles += 1
        acc = dut.acc.value.to_signed()
        await RisingEdge(dut.clk)
        out.append({"acc": acc, "cycles": cycles + 1})
    return {"tiles": out}
