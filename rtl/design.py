"""What every template's RTL provides: :class:`RtlDesign`.

One subclass per template (``rtl.systolic.rtl_design.SystolicDesign``, ...)
turns the template's ``Params`` into an Amaranth component, documents its
ports, and plugs into the shared co-simulation harness with three things: a
job encoder (commands + operands -> JSON), the name of its cocotb driver
coroutine, and a checker that compares what the RTL did with archsim's
models. Adding a template's RTL = one subclass + one line in
the template's ``Template(rtl="module:Class")`` entry.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from amaranth.lib import wiring

from archsim.cache import cache_root


def pack_lanes(values, bits: int) -> int:
    """One word of ``bits``-wide lanes, lane 0 in the low bits (two's complement per lane)."""
    mask = (1 << bits) - 1
    word = 0
    for lane, v in enumerate(values):
        word |= (int(v) & mask) << (lane * bits)
    return word


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "in" | "out"
    width: int
    doc: str


@dataclass
class TileCheck:
    """Co-simulation verdict for one tile (one command)."""

    index: int
    label: str
    rtl_cycles: int | None
    fast_cycles: int | None
    detailed_cycles: int | None
    values_ok: bool
    mismatch: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cycles_ok(self) -> bool:
        want = {c for c in (self.fast_cycles, self.detailed_cycles) if c is not None}
        return self.rtl_cycles is not None and want == {self.rtl_cycles}

    @property
    def ok(self) -> bool:
        return self.values_ok and self.cycles_ok


@dataclass
class CosimReport:
    design: str
    sim: str
    tiles: list[TileCheck]
    error: str = ""
    build_s: float = 0.0
    run_s: float = 0.0
    waves: str | None = None

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.tiles) and all(t.ok for t in self.tiles)

    def failures(self) -> list[str]:
        out = [self.error] if self.error else []
        for t in self.tiles:
            if not t.values_ok:
                out.append(f"tile {t.index} ({t.label}): {t.mismatch}")
            if not t.cycles_ok:
                out.append(
                    f"tile {t.index} ({t.label}): cycles rtl={t.rtl_cycles} fast={t.fast_cycles} "
                    f"detailed={t.detailed_cycles}"
                )
        return out

    def summary(self) -> str:
        from archsim import fmt

        rows = [[str(t.index), t.label, _s(t.rtl_cycles), _s(t.fast_cycles), _s(t.detailed_cycles),
                 "ok" if t.values_ok else "DIFF", "PASS" if t.ok else "FAIL"] for t in self.tiles]
        lines = fmt.table(rows, header=["tile", "command", "rtl", "fast", "detail", "values", "result"],
                          align="rlrrrll", rule=False).splitlines()
        passed = sum(t.ok for t in self.tiles)
        verdict = "PASS" if self.ok else "FAIL"
        lines.append(
            f"{verdict}: {passed}/{len(self.tiles)} tiles match archsim on {self.sim} "
            f"(build {self.build_s:.1f} s, run {self.run_s:.1f} s)"
        )
        for f in self.failures()[:10]:
            lines.append(f"  {f}")
        for t in self.tiles:
            if not t.values_ok and t.extra.get("model_trace"):
                lines.append(f"  model line trace of tile {t.index} around that cycle:")
                lines += [f"    {ln}" for ln in t.extra["model_trace"]]
                break
        if self.waves:
            lines.append(f"waveform: {self.waves}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "design": self.design, "sim": self.sim, "ok": self.ok, "error": self.error,
            "build_s": round(self.build_s, 3), "run_s": round(self.run_s, 3), "waves": self.waves,
            "tiles": [
                {"index": t.index, "command": t.label, "rtl_cycles": t.rtl_cycles, "fast_cycles": t.fast_cycles,
                 "detailed_cycles": t.detailed_cycles, "values_ok": t.values_ok, "cycles_ok": t.cycles_ok,
                 "mismatch": t.mismatch, **t.extra}
                for t in self.tiles
            ],
        }


def _s(v) -> str:
    return "-" if v is None else str(v)


class RtlDesign:
    """Base class of a template's RTL (see the module docstring)."""

    template: ClassVar[str] = ""
    toplevel: ClassVar[str] = ""
    #: "module:function" of the cocotb driver coroutine ``async def f(dut, job) -> dict``
    driver: ClassVar[str] = ""
    #: RTL options the CLI's ``--depth N`` sets to N (entries of the design's local buffers);
    #: empty when the design has no such buffers
    depth_options: ClassVar[tuple[str, ...]] = ()
    #: the RTL option the CLI's ``--banks N`` sets (units in lockstep); empty when it has none
    banks_option: ClassVar[str] = ""

    def __init__(self, params: Any, options: Any = None):
        self.params = params
        self.options = options

    # ---- hardware ----
    def component(self) -> wiring.Component:  # pragma: no cover - abstract
        raise NotImplementedError

    def ports(self) -> list[Port]:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def ports_of(signature: Any, docs: dict[str, str]) -> list[Port]:
        """``clk``, ``rst`` and every port of a wiring ``signature`` (a Signature or its members
        dict; nested members are named ``a__b`` as in the Verilog), documented from ``docs``."""
        from amaranth.hdl import Shape

        if isinstance(signature, dict):
            signature = wiring.Signature(signature)
        ports = [Port("clk", "in", 1, docs["clk"]), Port("rst", "in", 1, docs["rst"])]
        for path, member in signature.members.flatten():
            if member.is_port:
                name = "__".join(path)
                ports.append(Port(name, "in" if member.flow == wiring.In else "out",
                                  Shape.cast(member.shape).width, docs[name]))
        return ports

    def config_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def source_files(self) -> list[str]:
        """Python files whose change must invalidate cached Verilog: every loaded module of the ``rtl``
        package, of ``archsim.numerics`` and of this template's ``archsim.templates`` package, once the
        design's own modules are imported (what elaboration reads; a superset, never a hand list)."""
        import importlib
        import sys

        importlib.import_module(type(self).__module__)
        importlib.import_module(self.component_class().__module__)
        root = Path(__file__).resolve().parents[1]
        prefixes = ("rtl.", "archsim.numerics", f"archsim.templates.{self.template}")
        files = set()
        for mod in list(sys.modules.values()):
            f = getattr(mod, "__file__", None)
            name = getattr(mod, "__name__", "")
            if not f or not (name == "rtl" or name.startswith(prefixes)):
                continue
            p = Path(f).resolve()
            if root in p.parents:
                files.add(str(p))
        return sorted(files)

    def component_class(self) -> type:
        """The class of :meth:`component` (its source file keys the Verilog cache)."""
        return type(self)

    def verilog(self) -> str:
        """The top module's Verilog (cached on disk by configuration and source hash)."""
        cached = getattr(self, "_verilog", None)
        if cached is not None:
            return cached
        import amaranth

        h = hashlib.sha256()
        h.update(json.dumps(self.config_dict(), sort_keys=True).encode())
        h.update(self.toplevel.encode())
        h.update(amaranth.__version__.encode() if hasattr(amaranth, "__version__") else b"")
        for f in sorted(set(self.source_files())):
            h.update(Path(f).read_bytes())
        path = cache_root() / "verilog" / f"{self.toplevel}-{h.hexdigest()[:20]}.v"
        if path.exists():
            text = path.read_text()
        else:
            text = self.convert_verilog()
            header = f"// Generated by archsim rtl from {self.template} params: " + json.dumps(
                self.config_dict(), sort_keys=True) + "\n"
            text = header + text
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                tmp.write_text(text)
                tmp.replace(path)
            except OSError:
                pass
        self._verilog = text
        return text

    def convert_verilog(self) -> str:
        """The top module's Verilog text, uncached (a design that assembles its own overrides this)."""
        from amaranth.back import verilog as amaranth_verilog

        return amaranth_verilog.convert(self.component(), name=self.toplevel, emit_src=False)

    def description(self) -> str:
        """One line for the FuseSoC core."""
        return f"archsim {self.template} accelerator"

    def sim_sources(self) -> dict[str, str]:
        """Extra Verilog files (name -> text) a simulator needs, e.g. models of FPGA primitives."""
        return {}

    def manifest(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "toplevel": self.toplevel,
            "params": self.config_dict(),
            "clock": {"port": "clk", "edge": "rising"},
            "reset": {"port": "rst", "kind": "synchronous, active high"},
            "ports": [
                {"name": p.name, "direction": p.direction, "width": p.width, "doc": p.doc} for p in self.ports()
            ],
        }

    # ---- co-simulation ----
    def cosim_items(self, source: str = "random", **kwargs: Any) -> list:  # pragma: no cover - abstract
        """``(tile, operands)`` items of a named source (``random``, ``program``, real layers)."""
        raise NotImplementedError

    def make_job(self, items: list[tuple[Any, dict]]) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, items: list[tuple[Any, dict]], result: dict[str, Any], sim: str) -> CosimReport:  # pragma: no cover
        raise NotImplementedError
