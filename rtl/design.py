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
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from amaranth.lib import wiring

from archsim.cache import cache_root
from archsim.errors import ArchsimError


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


@dataclass
class TileModels:
    """What archsim's models say about one tile: values and cycles of the fast and detailed models;
    ``fast_cycles`` None for a tile whose cycles the fast model only estimates (they depend on the
    data: ``TemplateModel.detailed_cycles_range``), so the RTL is held to the detailed model's."""

    fast_values: Any
    fast_cycles: int | None
    detailed_values: Any
    detailed_cycles: int


#: :meth:`RtlDesign.rtl_tile_values` of a tile whose outputs the next tile accumulated onto in place
IN_PLACE = object()


def _value(v) -> str:
    """An output value in a mismatch message: integers plainly, floats by their shortest round-trip
    digits in their own precision (exact: two float32 values that differ print differently)."""
    import numpy as np

    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v) if isinstance(v, np.floating) else repr(v)


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
    #: the co-simulation driver of the template's default configuration moves tiles only through the
    #: host signature (rtl/lib/host.py), so ``archsim rtl cosim --verilog`` can drive a user's RTL of
    #: this template (a configuration without the host top says why in :meth:`host_interface_problem`)
    host_interface: ClassVar[bool] = False

    def __init__(self, params: Any, options: Any = None):
        self.params = params
        self.options = options

    def host_interface_problem(self) -> str:
        """Why a user's RTL of this configuration cannot be co-simulated through the host signature
        alone ("" when it can): the template has no host-only driver, or this configuration's top is
        not the host engine (a design whose other tops keep their own ports overrides this)."""
        if not self.host_interface:
            return (f"the {self.template} RTL's tile commands are not driven through the host interface yet; "
                    f"templates that are: {', '.join(host_interface_templates())}")
        return ""

    @staticmethod
    def target_options(params: Any, target: str) -> dict[str, Any]:
        """RTL options that suit a synthesis ``target`` (e.g. an FPGA family), the design's
        own choice (``archsim rtl synth --target``). Default: none."""
        return {}

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

    # ---- co-simulation verdict: one loop for every template, per-template hooks below ----
    #: whether the design has a hardware tile-cycle counter (the driver's ``cycles``: the shared host
    #: reads ``tile_cycles`` after ``done``) that must equal the cycles measured on the ports
    #: (``port_cycles``, when the host sees them)
    has_cycle_counter: ClassVar[bool] = True

    def check(self, items, result, sim: str = "icarus") -> CosimReport:
        """Compare what the RTL did (``result`` of the cocotb driver) with archsim's models, per tile:
        the fast and detailed models agree on values (else a model bug is reported); the RTL's values
        equal theirs bit for bit (:meth:`comparable`), the first difference located by :meth:`locate`;
        the RTL's cycles (:meth:`rtl_cycles`) equal both models' (:class:`TileCheck`); the hardware
        counter, when the design has one, equals the measured cycles; no error flag (:meth:`tile_flag`)."""
        report = CosimReport(design=self.template, sim=sim, tiles=[], error=result.get("error", ""))
        if result.get("error_flag"):
            report.error = "the design raised its error flag (unsupported command)"
        got = self.rtl_tiles(result)
        for idx, ((tile, ops), models) in enumerate(zip(items, self.model_results(items))):
            label = self.label(tile)
            if idx >= len(got):
                report.tiles.append(TileCheck(idx, label, None, models.fast_cycles, models.detailed_cycles, False,
                                              "no result from the RTL"))
                continue
            report.tiles.append(self._check_tile(idx, label, tile, ops, got[idx], models))
        return report

    def _check_tile(self, idx: int, label: str, tile, ops, g: dict, models: TileModels) -> TileCheck:
        import numpy as np

        rtl_cycles = self.rtl_cycles(g)
        extra = self.tile_extra(tile, ops, g)
        problems: list[str] = []
        try:
            vals = self.rtl_tile_values(tile, g)
        except ValueError as err:
            vals = None
            problems.append(str(err))
        if vals is IN_PLACE:  # checked through the tile that accumulated onto it
            return TileCheck(idx, label + " (in place)", rtl_cycles, models.fast_cycles, models.detailed_cycles,
                             True, "", extra)
        want = self.comparable(tile, models.fast_values)
        if not np.array_equal(self.comparable(tile, models.detailed_values), want):
            problems = ["fast and detailed models disagree on values (model bug)"]
        elif vals is not None:
            have = self.comparable(tile, vals, rtl=True)
            if have.shape != want.shape:
                problems.append(f"output shape {have.shape}, expected {want.shape}")
            else:
                diff = np.argwhere(have != want)
                if len(diff):
                    at = tuple(int(v) for v in diff[0])
                    msg = (f"{self.value_name(at)} = {_value(vals[at])}, expected {_value(models.fast_values[at])} "
                           f"(archsim models)")
                    located = self.locate(tile, ops, at, extra)
                    problems.append(msg + (f"; {located}" if located else "")
                                    + f"; {len(diff)} of {want.size} values differ")
                else:
                    extra.update(self.value_extra(tile, ops, vals))
        flag = self.tile_flag(g, extra)
        if flag:
            problems.append(flag)
        counter, ports = self.counter_cycles(g), self.port_cycles(g)
        if self.has_cycle_counter and ports is not None and counter != ports:
            problems.append(f"tile_cycles counter says {counter}, ports say {ports}")
        return TileCheck(idx, label, rtl_cycles, models.fast_cycles, models.detailed_cycles, not problems,
                         "; ".join(problems), extra)

    # hooks (defaults suit a design driven by the shared host, :func:`rtl.cosim.direct_host.host_for`,
    # whose driver reports ``tiles`` of ``cycles`` (the hardware counter) / ``port_cycles`` / values)
    def rtl_tiles(self, result: dict) -> list[dict]:
        """The driver's per-tile records."""
        return result.get("tiles", [])

    def model_results(self, items):
        """:class:`TileModels` of every tile, in order (default: :meth:`tile_models` per tile)."""
        for tile, ops in items:
            yield self.tile_models(tile, ops)

    def tile_models(self, tile, ops) -> TileModels:  # pragma: no cover - abstract
        raise NotImplementedError

    def rtl_tile_values(self, tile, g: dict):
        """The RTL's output values of a tile (an array indexed like the models'), :data:`IN_PLACE`, or
        ``ValueError`` (reported as the mismatch)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def comparable(self, tile, values, rtl: bool = False):
        """Integers compared exactly: the values themselves, or fp32 bit patterns (-0 != +0)."""
        import numpy as np

        v = np.asarray(values)
        if v.dtype == np.float32:
            return v.view(np.uint32).astype(np.int64)
        return v.astype(np.int64)

    def rtl_cycles(self, g: dict) -> int | None:
        """The RTL's cycles of a tile, compared with the models' (default: the hardware counter)."""
        return g.get("cycles")

    def counter_cycles(self, g: dict) -> int | None:
        """The hardware cycle counter's reading for a tile (a design with ``has_cycle_counter``)."""
        return g.get("cycles")

    def port_cycles(self, g: dict) -> int | None:
        """The tile's cycles as measured on the ports, checked against the counter; None when the host
        cannot see the ports (behind a bus wrapper), and then the counter stands alone."""
        return g.get("port_cycles")

    def value_name(self, at: tuple[int, ...]) -> str:
        return "out[" + ",".join(str(v) for v in at) + "]"

    def locate(self, tile, ops, at: tuple[int, ...], extra: dict) -> str:
        """Where in the hardware the first differing value came from ("" if the design cannot say);
        may add details (a model trace) to ``extra``."""
        return ""

    def tile_extra(self, tile, ops, g: dict) -> dict:
        """Extra fields of the tile's record."""
        if not self.has_cycle_counter:
            return {}
        return {"hw_cycles": self.counter_cycles(g), "port_cycles": self.port_cycles(g)}

    def value_extra(self, tile, ops, vals) -> dict:
        """Extra fields computed from values that match the models (default none)."""
        return {}

    def tile_flag(self, g: dict, extra: dict) -> str:
        """A problem the design flagged itself for this tile ("" if none)."""
        return ""

    def source_files(self) -> list[str]:
        """Python files whose change must invalidate cached Verilog: every loaded module of the ``rtl``
        package, of ``archsim.numerics`` and of this template's ``archsim.templates`` package, once the
        design's own modules are imported, plus every file of the design's own rtl/<template>/ package and
        of rtl/lib/ whether loaded yet or not (elaboration imports some lazily, inside functions, after the
        key is taken: rtl.simd.broadcast, rtl.pim.host_engine). A superset, never a hand list;
        tests/test_rtl_verilog_cache.py elaborates each template in a fresh process to check it."""
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
        packages = {"lib"} | {m.split(".")[1] for m in (type(self).__module__, self.component_class().__module__)
                              if m.startswith("rtl.") and m.count(".") >= 2}
        for package in sorted(packages):
            files.update(str(p.resolve()) for p in (root / "rtl" / package).rglob("*.py"))
        return sorted(files)

    def component_class(self) -> type:
        """The class of :meth:`component` (its source file keys the Verilog cache)."""
        return type(self)

    def verilog(self) -> str:
        """The top module's Verilog (cached on disk by configuration and source hash)."""
        cached = getattr(self, "_verilog", None)
        if cached is not None:
            return cached
        path = self.verilog_cache_path()
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

    def verilog_cache_path(self) -> Path:
        """Where :meth:`verilog` caches the text: keyed on the configuration, the top name, amaranth's
        version and the bytes of every :meth:`source_files` file."""
        import amaranth

        h = hashlib.sha256()
        h.update(json.dumps(self.config_dict(), sort_keys=True).encode())
        h.update(self.toplevel.encode())
        h.update(amaranth.__version__.encode() if hasattr(amaranth, "__version__") else b"")
        for f in sorted(set(self.source_files())):
            h.update(Path(f).read_bytes())
        return cache_root() / "verilog" / f"{self.toplevel}-{h.hexdigest()[:20]}.v"

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
    def cosim_items(self, source: str = "random", **kwargs: Any) -> list:
        """``(tile, operands)`` items of a named source (``random``, ``program``, real layers)
        for ``archsim rtl cosim``. Every design must override it (the entry-completeness
        test checks it); the default refuses with the reason."""
        raise ArchsimError(f"{type(self).__name__} ({self.template or '?'} RTL) has no cosim_items: "
                           f"`archsim rtl cosim` cannot draw tiles for it (override RtlDesign.cosim_items)")

    def make_job(self, items: list[tuple[Any, dict]]) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError


class UnitDesign(RtlDesign):
    """A unit of a template with its own standalone RTL, outside the template's top module (SpAtten's
    top-k engine beside the attention array), named in ``Template(unit_rtl=...)``. The level harness
    (``tests/test_template_levels.py``) co-simulates the tiles of the conformance hook it accepts, on
    the hook's ``base_arch`` with :attr:`conformance_arch`, through :func:`rtl.api.run_design_cosim`."""

    #: the unit's name, as its tiles' ``unit`` (``archsim rtl ... --unit NAME``)
    unit: ClassVar[str] = ""
    #: overrides of the conformance hook's ``base_arch`` under which the unit exists
    conformance_arch: ClassVar[dict[str, Any]] = {}

    def accepts(self, tile, ops) -> bool:  # pragma: no cover - abstract
        """Whether this RTL runs ``tile`` (its unit, within the design's sizes)."""
        raise NotImplementedError


def host_interface_templates() -> list[str]:
    """Templates whose RTL implements the host signature (named in one-line refusals)."""
    from archsim.templates import get_template, template_names

    return [n for n in template_names() if (cls := get_template(n).rtl_cls) is not None and cls.host_interface]
