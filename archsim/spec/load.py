"""Arch spec loading: YAML -> validated :class:`ArchSpec`, presets, ``--set`` overrides.

Every problem with user input is one :class:`SpecError` line naming the file,
the key and what was expected, e.g.::

    arch.yaml: params.rows: expected a positive integer, got -4

Parsing (this module) is separate from the cost models: the loader only checks
shapes and types, asks the template's ``Params.validate()`` about impossible
combinations, and checks that each buffer can hold at least one tile of the
array (``Params.min_buffer_bytes()`` when the template provides it).
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.resources
import math
import os
import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from archsim.errors import SpecError
from archsim.spec.model import OUTPUT_OPS, ArchSpec, BufferSpec, DramSpec, TechSpec, VectorUnitSpec

ARCH_PRESET_PACKAGE = "archsim.presets.arch"
TECH_PRESET_PACKAGE = "archsim.presets.tech"
DEFAULT_TECH = "generic-45nm"

SPEC_KEYS = ("name", "description", "template", "params", "options", "clock_mhz", "buffers", "dram", "vector_unit",
             "tech", "output_ops")
OPERAND_BUFFERS = ("input", "weight", "output")
_BUFFER_KEYS = ("bytes", "banks", "bytes_per_cycle")
_DRAM_KEYS = ("bytes_per_cycle", "gb_per_s", "latency_cycles", "capacity_bytes")
_VECTOR_KEYS = ("lanes", "cycles_per_op", "default_cycles")
_TECH_KEYS = ("name", "node_nm", "description", "energy_pj", "sram", "area_um2", "sram_area")

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB)?\s*$")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


class _Bad(Exception):
    """Internal: ``key`` (dotted, relative) and what was expected."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key
        self.message = message


# ----------------------------------------------------------------------------- presets


def _preset_files(package: str) -> dict[str, Any]:
    out = {}
    for entry in importlib.resources.files(package).iterdir():
        name = entry.name
        if name.endswith((".yaml", ".yml")) and entry.is_file():
            out[name.rsplit(".", 1)[0]] = entry
    return out


def preset_names() -> list[str]:
    """Names of the shipped arch presets, sorted."""
    return sorted(_preset_files(ARCH_PRESET_PACKAGE))


def tech_names() -> list[str]:
    """Names of the shipped technology tables, sorted."""
    return sorted(_preset_files(TECH_PRESET_PACKAGE))


def preset_descriptions(package: str = ARCH_PRESET_PACKAGE) -> dict[str, str]:
    """Preset name -> its one-line ``description`` (without validating the preset)."""
    out = {}
    for name, entry in sorted(_preset_files(package).items()):
        try:
            raw = yaml.safe_load(entry.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            raw = None
        desc = raw.get("description", "") if isinstance(raw, dict) else ""
        out[name] = " ".join(str(desc).split())
    return out


# ----------------------------------------------------------------------------- reading


def _read_yaml_text(text: str, where: str) -> Any:
    """YAML 1.2 scalars (``1:30`` stays a string), nesting capped: see :mod:`archsim.inputs`."""
    from archsim.inputs import load_yaml_text

    return load_yaml_text(text, where, SpecError)


def _looks_like_path(s: str) -> bool:
    return s.endswith((".yaml", ".yml")) or os.sep in s or "/" in s or os.path.exists(s)


def _read_source(name_or_path: Any, package: str, kind: str) -> tuple[Any, str, str, str]:
    """-> (raw mapping, where (for messages), source, default name)."""
    if isinstance(name_or_path, Mapping):
        return dict(name_or_path), f"<inline {kind}>", "inline", ""
    if isinstance(name_or_path, os.PathLike):
        name_or_path = os.fspath(name_or_path)
    if not isinstance(name_or_path, str) or not name_or_path:
        raise SpecError(f"expected an {kind} preset name, a YAML file path or a mapping, got {name_or_path!r}")
    presets = _preset_files(package)
    if name_or_path in presets and not os.path.exists(name_or_path):
        entry = presets[name_or_path]
        where = f"{name_or_path}.yaml"
        raw = _read_yaml_text(entry.read_text(encoding="utf-8"), where)
        return raw, where, f"preset:{name_or_path}", name_or_path
    if _looks_like_path(name_or_path):
        from archsim.inputs import read_input_text

        path = name_or_path
        text = read_input_text(path, what=kind, error=SpecError)  # regular files only, size-capped
        raw = _read_yaml_text(text, path)
        stem = os.path.basename(path).rsplit(".", 1)[0]
        return raw, path, path, stem
    raise SpecError(
        f"unknown {kind} {name_or_path!r}: not a file and not a preset; expected one of {', '.join(sorted(presets))}"
    )


# ----------------------------------------------------------------------------- scalars


def _shown(text: str) -> str:
    """User text as typed if short and printable, else a quoted excerpt."""
    from archsim.inputs import EXCERPT_CHARS, excerpt

    return text if len(text) <= EXCERPT_CHARS and text.isprintable() else excerpt(text)


def _describe(value: Any) -> str:
    """A value for an error message: short, printable (a long one is cut: it may be a line of any file)."""
    from archsim.inputs import EXCERPT_CHARS, excerpt

    text = repr(value) if isinstance(value, str) else str(value)
    if len(text) <= EXCERPT_CHARS and text.isprintable():
        return text
    return excerpt(value if isinstance(value, str) else text)


def _int(value: Any, key: str, *, minimum: int = 0, what: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = what or ("a positive integer" if minimum == 1 else f"an integer >= {minimum}")
        raise _Bad(key, f"expected {what}, got {_describe(value)}")
    return value


def _number(value: Any, key: str, *, positive: bool = True, allow_inf: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    if ok and math.isinf(value) and not allow_inf:
        ok = False
    if ok and positive and value <= 0:
        ok = False
    if not ok:
        raise _Bad(key, f"expected a {'positive ' if positive else ''}number, got {_describe(value)}")
    return float(value)


def _size(value: Any, key: str) -> int:
    """Bytes: a positive integer or a string like ``"256 KiB"``."""
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            n = float(m.group(1)) * _SIZE_UNITS[m.group(2)]
            if n >= 1 and n == int(n):
                return int(n)
    elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise _Bad(key, f"expected a positive number of bytes (e.g. 65536 or '64 KiB'), got {_describe(value)}")


def _mapping(value: Any, key: str, allowed: Iterable[str] | None = None) -> dict:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise _Bad(key, f"expected a mapping, got {_describe(value)}")
    if allowed is not None:
        allowed = tuple(allowed)
        for k in value:
            if k not in allowed:
                prefix = f"{key}." if key else ""
                raise _Bad(f"{prefix}{k}", f"unknown key; expected one of {', '.join(allowed)}")
    return dict(value)


# ----------------------------------------------------------------------------- template params


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in hint)
    if hint is type(None):
        return "null"
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(hint, "__name__", str(hint))


def coerce(value: Any, hint: Any, key: str) -> Any:
    """Check ``value`` against the type hint ``hint``; return it (tuples for tuple hints).

    Raises ``_Bad(key, "expected <type>, got <value>")``.
    """
    if hint is Any or hint is object:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        if value in args and not (isinstance(value, bool) and not any(isinstance(a, bool) for a in args)):
            return value
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                return coerce(value, arg, key)
            except _Bad:
                continue
    elif hint is type(None):
        if value is None:
            return None
    elif hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        for member in hint:
            if value == member.value or value == member.name or value is member:
                return member
    elif origin in (tuple, list) or hint in (tuple, list):
        if isinstance(value, (list, tuple)):
            if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
                if len(args) != len(value):
                    raise _Bad(key, f"expected a list of {len(args)} items, got {_describe(value)}")
                items = [coerce(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args))]
            else:
                item_hint = args[0] if args else Any
                items = [coerce(v, item_hint, f"{key}[{i}]") for i, v in enumerate(value)]
            return tuple(items) if (origin or hint) is tuple else items
    elif origin is dict or hint is dict:
        if isinstance(value, Mapping):
            kh, vh = args if args else (Any, Any)
            return {coerce(k, kh, key): coerce(v, vh, f"{key}.{k}") for k, v in value.items()}
    elif isinstance(hint, type):
        if isinstance(value, hint):
            return value
    else:
        return value  # a hint we cannot check (TypeVar, forward ref, ...)
    raise _Bad(key, f"expected {_type_name(hint)}, got {_describe(value)}")


def build_params(params_cls: type, raw: Any, key: str = "params") -> Any:
    """Generic validator: unknown key, wrong type, missing key, then ``Params.validate()``."""
    from archsim.templates.base import TemplateParams

    if not issubclass(params_cls, TemplateParams):  # its hooks are called, never probed
        raise TypeError(f"params class {params_cls.__name__} must subclass archsim.templates.base.TemplateParams")
    raw = _mapping(raw, key)
    hints = typing.get_type_hints(params_cls)
    fields = {f.name: f for f in dataclasses.fields(params_cls) if f.init}
    kwargs = {}
    for k, v in raw.items():
        if k not in fields:
            raise _Bad(f"{key}.{k}", f"unknown key; expected one of {', '.join(fields)}")
        kwargs[k] = coerce(v, hints.get(k, Any), f"{key}.{k}")
    for name, f in fields.items():
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _Bad(f"{key}.{name}", f"missing; expected {_type_name(hints.get(name, Any))}")
    try:
        params = params_cls(**kwargs)
    except (TypeError, ValueError) as err:
        raise _Bad(key, str(err).splitlines()[0]) from None
    try:
        params.validate()  # TemplateParams hook (no check by default)
    except ValueError as err:
        msg = str(err).splitlines()[0]
        sub, sep, rest = msg.partition(": ")
        if sep and sub and " " not in sub:
            raise _Bad(f"{key}.{sub}", rest) from None
        raise _Bad(key, msg) from None
    return params


# ----------------------------------------------------------------------------- sections


def _buffers(raw: Any, required: bool = True) -> dict[str, BufferSpec]:
    raw = _mapping(raw, "buffers", OPERAND_BUFFERS + ("unified",))
    if not raw and not required:
        return {}
    if "unified" in raw:
        if len(raw) > 1:
            raise _Bad("buffers", "expected either one 'unified' buffer or input, weight and output buffers, not both")
    else:
        missing = [b for b in OPERAND_BUFFERS if b not in raw]
        if missing:
            raise _Bad(f"buffers.{missing[0]}", "missing; expected input, weight and output buffers, or one 'unified'")
    out = {}
    for name, spec in raw.items():
        key = f"buffers.{name}"
        spec = _mapping(spec, key, _BUFFER_KEYS)
        if "bytes" not in spec:
            raise _Bad(f"{key}.bytes", "missing; expected a positive number of bytes")
        out[name] = BufferSpec(
            name=name,
            bytes=_size(spec["bytes"], f"{key}.bytes"),
            banks=_int(spec.get("banks", 1), f"{key}.banks", minimum=1),
            bytes_per_cycle=_int(spec.get("bytes_per_cycle", 64), f"{key}.bytes_per_cycle", minimum=1),
        )
    return out


def _dram(raw: Any, clock_mhz: float) -> DramSpec:
    raw = _mapping(raw, "dram", _DRAM_KEYS)
    if ("bytes_per_cycle" in raw) == ("gb_per_s" in raw):
        raise _Bad("dram.bytes_per_cycle", "expected exactly one of dram.bytes_per_cycle or dram.gb_per_s")
    if "gb_per_s" in raw:
        gbs = _number(raw["gb_per_s"], "dram.gb_per_s", allow_inf=True)
        bpc = gbs * 1e9 / (clock_mhz * 1e6)
    else:
        bpc = _number(raw["bytes_per_cycle"], "dram.bytes_per_cycle", allow_inf=True)
    return DramSpec(
        bytes_per_cycle=bpc,
        latency_cycles=_int(raw.get("latency_cycles", 100), "dram.latency_cycles"),
        capacity_bytes=_size(raw.get("capacity_bytes", 8 << 30), "dram.capacity_bytes"),
    )


def _vector_unit(raw: Any) -> VectorUnitSpec:
    raw = _mapping(raw, "vector_unit", _VECTOR_KEYS)
    cpo = _mapping(raw.get("cycles_per_op", {}), "vector_unit.cycles_per_op")
    cycles = {}
    for op, c in cpo.items():
        if not isinstance(op, str):
            raise _Bad("vector_unit.cycles_per_op", f"expected op names as keys, got {_describe(op)}")
        _check_vector_op_name(op)
        cycles[op] = _int(c, f"vector_unit.cycles_per_op.{op}", minimum=1)
    return VectorUnitSpec(
        lanes=_int(raw.get("lanes", 16), "vector_unit.lanes", minimum=1),
        cycles_per_op=cycles,
        default_cycles=_int(raw.get("default_cycles", 1), "vector_unit.default_cycles", minimum=1),
    )


#: vector op names the mappers emit: the zoo's and YAML's element-wise functions, the ONNX ops
#: lowered to the vector unit (lower case), the LUT template's table loads. An ONNX op run with
#: ``unknown_ops="vector"`` is ``vector:<OpType>``. Any other key is a typo that would be ignored.
KNOWN_VECTOR_OPS = (
    "add", "sub", "mul", "div", "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "erf", "exp", "sqrt", "rsqrt",
    "softmax", "layernorm", "rmsnorm", "maxpool", "avgpool", "pool", "max", "min", "reduce", "mean", "sum",
    "pow", "neg", "abs", "copy", "embedding", "transpose", "concat", "split", "reshape",
    "log", "reciprocal", "leakyrelu", "clip", "hardsigmoid", "hardswish", "where", "equal", "less", "greater", "not",
    "and", "or", "reduce_mean", "reduce_sum", "reduce_max", "reduce_min", "lut_table",
)
UNKNOWN_ONNX_OP_PREFIX = "vector:"


def _check_vector_op_name(op: str) -> None:
    import difflib

    if op in KNOWN_VECTOR_OPS or (op.startswith(UNKNOWN_ONNX_OP_PREFIX) and op[len(UNKNOWN_ONNX_OP_PREFIX):].strip()):
        return
    close = difflib.get_close_matches(op.lower(), KNOWN_VECTOR_OPS, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise _Bad(f"vector_unit.cycles_per_op.{op}",
               f"unknown vector op{hint} (known: {', '.join(KNOWN_VECTOR_OPS)}; an ONNX op run with --unknown-ops "
               f"vector is '{UNKNOWN_ONNX_OP_PREFIX}<OpType>')")


def _output_ops(raw: Any) -> tuple[str, ...]:
    """``output_ops``: a list of :data:`OUTPUT_OPS` names (or none)."""
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)):
        raise _Bad("output_ops", f"expected a list of {', '.join(OUTPUT_OPS)}, got {_describe(raw)}")
    for item in raw:
        if item not in OUTPUT_OPS:
            raise _Bad("output_ops", f"expected names from {', '.join(OUTPUT_OPS)}, got {_describe(item)}")
    return tuple(dict.fromkeys(raw))


# ----------------------------------------------------------------------------- tech tables


def _figure(value: Any, key: str, unit_key: str) -> tuple[float, str]:
    """A figure is a number or ``{value: X, source: "..."}``."""
    if isinstance(value, Mapping):
        entry = _mapping(value, key, ("value", "source", "note"))
        if "value" not in entry:
            raise _Bad(f"{key}.value", f"missing; expected a number ({unit_key})")
        src = entry.get("source", "")
        if not isinstance(src, str):
            raise _Bad(f"{key}.source", f"expected a string, got {_describe(src)}")
        return _non_negative(entry["value"], f"{key}.value", unit_key), src
    return _non_negative(value, key, unit_key), ""


def _non_negative(value: Any, key: str, unit_key: str) -> float:
    """An energy or area figure: a finite number >= 0 (a negative one would make totals meaningless)."""
    number = _number(value, key, positive=False)
    if number < 0:
        raise _Bad(key, f"expected a number >= 0 ({unit_key}), got {_describe(value)}")
    return number


def _points(raw: Any, key: str, value_key: str) -> tuple[tuple[tuple[int, float], ...], dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise _Bad(key, f"expected a non-empty list of {{bytes: N, {value_key}: X, source: '...'}}, got {_describe(raw)}")
    pts, sources = [], {}
    for i, item in enumerate(raw):
        k = f"{key}[{i}]"
        item = _mapping(item, k, ("bytes", value_key, "source", "note"))
        for req in ("bytes", value_key):
            if req not in item:
                raise _Bad(f"{k}.{req}", "missing")
        size = _size(item["bytes"], f"{k}.bytes")
        val = _number(item[value_key], f"{k}.{value_key}")
        pts.append((size, val))
        if item.get("source"):
            sources[f"{key}@{size}"] = str(item["source"])
    sizes = [p[0] for p in pts]
    if sizes != sorted(set(sizes)):
        raise _Bad(key, "expected points in strictly ascending order of bytes")
    return tuple(pts), sources


def _build_tech(raw: Any, default_name: str) -> TechSpec:
    raw = _mapping(raw, "", _TECH_KEYS)
    sources: dict[str, str] = {}
    energy = {}
    for action, v in _mapping(raw.get("energy_pj"), "energy_pj").items():
        energy[str(action)], src = _figure(v, f"energy_pj.{action}", "pJ")
        if src:
            sources[str(action)] = src
    area = {}
    for comp, v in _mapping(raw.get("area_um2"), "area_um2").items():
        area[str(comp)], src = _figure(v, f"area_um2.{comp}", "um2")
        if src:
            sources[f"area.{comp}"] = src
    if "sram" not in raw:
        raise _Bad("sram", "missing; expected a list of {bytes: N, pj_per_byte: X, source: '...'}")
    sram, s1 = _points(raw["sram"], "sram", "pj_per_byte")
    sources.update(s1)
    sram_area: tuple = ()
    if "sram_area" in raw:
        sram_area, s2 = _points(raw["sram_area"], "sram_area", "um2_per_byte")
        sources.update(s2)
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise _Bad("name", f"expected a non-empty string, got {_describe(name)}")
    return TechSpec(
        name=name,
        node_nm=_int(raw.get("node_nm", 0), "node_nm"),
        energy_pj=energy,
        sram_points=sram,
        area_um2=area,
        sources=sources,
        sram_area_points=sram_area,
        description=" ".join(str(raw.get("description", "")).split()),
    )


#: tech table files being loaded, outermost first (an ``extends`` cycle is an error, not a recursion)
_TECH_LOADING: list[tuple[str, str]] = []


@functools.lru_cache(maxsize=64)
def _load_tech_cached(name_or_path: str) -> TechSpec:
    raw, where, source, default_name = _read_source(name_or_path, TECH_PRESET_PACKAGE, "tech table")
    key = source if source.startswith("preset:") else os.path.realpath(source)
    if any(k == key for k, _ in _TECH_LOADING):
        chain = [w for _, w in _TECH_LOADING[[k for k, _ in _TECH_LOADING].index(key):]] + [where]
        raise SpecError(f"{_TECH_LOADING[-1][1]}: extends: a cycle of tech tables ({' -> '.join(chain)})")
    _TECH_LOADING.append((key, where))
    try:
        if isinstance(raw, Mapping) and "extends" in raw:
            return _extend_tech(raw, where, default_name)
        return _build_tech(raw, default_name)
    except _Bad as bad:
        raise SpecError(f"{where}: {bad.key}: {bad.message}" if bad.key else f"{where}: {bad.message}") from None
    finally:
        _TECH_LOADING.pop()


def load_tech(tech: Any = DEFAULT_TECH) -> TechSpec:
    """A technology table by shipped name, file path or inline mapping."""
    if isinstance(tech, TechSpec):
        return tech
    if isinstance(tech, Mapping):
        try:
            return _extend_tech(tech, "<inline tech table>") if "extends" in tech else _build_tech(tech, "inline")
        except _Bad as bad:
            raise SpecError(f"<inline tech table>: {bad.key}: {bad.message}") from None
    return _load_tech_cached(os.fspath(tech) if isinstance(tech, os.PathLike) else tech)


def _check_new_name(name: str, existing: Mapping, key: str) -> None:
    """A figure an extending table adds must not be a near-miss of one it would replace (a typo)."""
    import difflib

    if name in existing:
        return
    close = difflib.get_close_matches(name, list(existing), n=1, cutoff=0.85)
    if close:
        raise _Bad(f"{key}.{name}", f"not in the extended table; did you mean {close[0]!r}?")


def _extend_tech(raw: Mapping, where: str, default_name: str = "") -> TechSpec:
    """``{extends: NAME, name:, description:, energy_pj: {...}, area_um2: {...}}``: a shipped
    table (or a tech table file, which may extend another) with some figures replaced or added
    (each with its source). Inline in an arch spec or as a tech table file of its own."""
    try:
        base = _tech(raw["extends"], where)
    except _Bad as bad:
        raise _Bad("extends", bad.message) from None
    extra = _mapping(raw, "", ("extends", "name", "description", "energy_pj", "area_um2"))
    energy, area, sources = dict(base.energy_pj), dict(base.area_um2), dict(base.sources)
    for action, v in _mapping(extra.get("energy_pj"), "energy_pj").items():
        _check_new_name(str(action), base.energy_pj, "energy_pj")
        energy[str(action)], src = _figure(v, f"energy_pj.{action}", "pJ")
        sources.pop(str(action), None)
        if src:
            sources[str(action)] = src
    for comp, v in _mapping(extra.get("area_um2"), "area_um2").items():
        _check_new_name(str(comp), base.area_um2, "area_um2")
        area[str(comp)], src = _figure(v, f"area_um2.{comp}", "um2")
        sources.pop(f"area.{comp}", None)
        if src:
            sources[f"area.{comp}"] = src
    name = extra.get("name", default_name or f"{base.name}+")
    if not isinstance(name, str) or not name:
        raise _Bad("name", f"expected a non-empty string, got {_describe(name)}")
    desc = " ".join(str(extra.get("description", base.description)).split())
    return dataclasses.replace(base, name=name, energy_pj=energy, area_um2=area, sources=sources, description=desc)


def _tech(raw: Any, where: str) -> TechSpec:
    if raw is None:
        raw = DEFAULT_TECH
    if isinstance(raw, Mapping) and "extends" in raw:
        try:
            return _extend_tech(raw, where)
        except _Bad as bad:
            raise _Bad(f"tech.{bad.key}" if bad.key else "tech", bad.message) from None
    if isinstance(raw, Mapping):
        try:
            return _build_tech(raw, "inline")
        except _Bad as bad:
            raise _Bad(f"tech.{bad.key}" if bad.key else "tech", bad.message) from None
    if not isinstance(raw, str):
        raise _Bad("tech", f"expected a tech table name, a file path or a mapping, got {_describe(raw)}")
    if raw not in tech_names() and _looks_like_path(raw) and not os.path.isabs(raw) and not os.path.exists(raw):
        # a path relative to the spec file
        base = os.path.dirname(where) if os.path.exists(where) else ""
        candidate = os.path.join(base, raw)
        if os.path.exists(candidate):
            raw = candidate
    if raw not in tech_names() and not _looks_like_path(raw):
        raise _Bad("tech", f"unknown tech table {raw!r}; expected one of {', '.join(tech_names())} or a file path")
    return load_tech(raw)


# ----------------------------------------------------------------------------- overrides


def _parse_overrides(overrides: Any) -> list[tuple[str, Any, str]]:
    """-> [(key, value, text as given)]."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [(str(k), v, f"{k}={v}") for k, v in overrides.items()]
    if isinstance(overrides, str):
        overrides = [overrides]
    out = []
    for item in overrides:
        if isinstance(item, tuple) and len(item) == 2:
            out.append((str(item[0]), item[1], f"{item[0]}={item[1]}"))
            continue
        text = str(item)
        key, sep, value_text = text.partition("=")
        key = key.strip()
        if not sep or not key or not value_text.strip():
            raise SpecError(f"--set {_shown(text)}: expected KEY=VALUE (e.g. rows=16 or dram.bytes_per_cycle=16)")
        from archsim.inputs import MAX_YAML_DEPTH, Yaml12Loader, flow_depth

        if flow_depth(value_text) > MAX_YAML_DEPTH:
            raise SpecError(f"--set {_shown(text)}: value nested too deeply")
        try:
            value = yaml.load(value_text, Loader=Yaml12Loader)  # noqa: S506 - a safe loader (YAML 1.2 scalars)
        except (yaml.YAMLError, RecursionError):
            raise SpecError(f"--set {_shown(text)}: expected a YAML scalar after '='") from None
        out.append((key, value, text))
    return out


def _apply_overrides(raw: dict, overrides: Any, where: str) -> dict:
    items = _parse_overrides(overrides)
    if not items:
        return raw
    import copy

    tech = raw.get("tech")
    raw = copy.deepcopy(raw, {id(tech): tech} if isinstance(tech, TechSpec) else None)
    param_names: list[str] = []
    option_names: tuple[str, ...] = ()
    template_name = raw.get("template")
    if isinstance(template_name, str):
        try:
            from archsim.spec.options import option_names as _option_names
            from archsim.templates import get_template

            param_names = [f.name for f in dataclasses.fields(get_template(template_name).params_cls)]
            option_names = _option_names(template_name)
        except SpecError:  # an unknown template: the arch check names it with the known ones
            param_names = []
    for key, value, text in items:
        parts = key.split(".")
        if parts[0] not in SPEC_KEYS:
            if len(parts) == 1 and parts[0] in param_names:
                parts = ["params", parts[0]]
            elif len(parts) == 1 and parts[0] in option_names:
                parts = ["options", parts[0]]
            else:
                expected = f"a spec key ({', '.join(SPEC_KEYS)})"
                if param_names:
                    expected += f" or a {template_name} param ({', '.join(param_names)})"
                if option_names:
                    expected += f" or option ({', '.join(option_names)})"
                raise SpecError(f"{where}: --set {text}: unknown key {parts[0]!r}; expected {expected}")
        for path in _expand_stars(parts, raw, where, text):
            _set_path(raw, path, value, where, text)
    return raw


def _expand_stars(parts: list[str], raw: dict, where: str, text: str) -> list[list[str]]:
    """Concrete key paths of ``parts``: ``*`` stands for every key of the mapping
    there (``buffers.*.bytes`` sets every buffer). A ``buffers.<name>`` the spec
    does not have is an error naming the ones it has."""
    paths: list[tuple[list[str], Any]] = [([], raw)]
    for part in parts:
        nxt = []
        for prefix, node in paths:
            if part == "*":
                if not isinstance(node, dict) or not node:
                    raise SpecError(f"{where}: --set {text}: {'.'.join(prefix) or '*'} has no entries for '*'")
                nxt.extend((prefix + [k], v) for k, v in node.items())
            else:
                if prefix == ["buffers"] and isinstance(node, dict) and node and part not in node:
                    raise SpecError(f"{where}: --set {text}: no buffer {part!r}; this arch has "
                                    f"{', '.join(sorted(node))}")
                nxt.append((prefix + [part], node.get(part) if isinstance(node, dict) else None))
        paths = nxt
    return [prefix for prefix, _ in paths]


def _set_path(raw: dict, parts: list[str], value: Any, where: str, text: str) -> None:
    """``raw[parts[0]][parts[1]]... = value``, creating missing mappings."""
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise SpecError(f"{where}: --set {text}: {'.'.join(parts[: i + 1])} is not a mapping")
        node = child
    last = parts[-1]
    if parts[:-1] == ["dram"] and last in ("bytes_per_cycle", "gb_per_s"):
        node.pop("gb_per_s" if last == "bytes_per_cycle" else "bytes_per_cycle", None)
    node[last] = value


# ----------------------------------------------------------------------------- arch


def _options(raw: Any, template_name: str) -> dict[str, Any]:
    """The spec's ``options:`` (mapper options), checked by name and value against the
    template's options (:func:`archsim.spec.options.options_for`)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _Bad("options", f"expected a mapping of mapper options, got {_describe(raw)}")
    from archsim.errors import MappingError
    from archsim.spec.options import options_for

    try:
        options_for(template_name, dict(raw))
    except MappingError as err:
        raise _Bad("options", str(err)) from None
    return dict(raw)


def _min_buffer_bytes(params: Any) -> tuple[dict[str, int], str]:
    """Bytes each operand buffer must hold at least, and why: the template's
    ``Params.min_buffer_bytes()`` (:class:`TemplateParams`: none by default)."""
    need, why = params.min_buffer_bytes()
    return dict(need), why


def _build_arch(raw: Any, where: str, source: str, default_name: str) -> ArchSpec:
    if not isinstance(raw, Mapping):
        raise _Bad("", f"expected a mapping of {', '.join(SPEC_KEYS)}, got {_describe(raw)}")
    raw = _mapping(raw, "", SPEC_KEYS)
    name = raw.get("name", default_name) or default_name
    if not isinstance(name, str) or not name:
        raise _Bad("name", f"expected a non-empty string, got {_describe(name)}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise _Bad("description", f"expected a string, got {_describe(description)}")
    if "template" not in raw:
        raise _Bad("template", "missing; expected a template name")
    template_name = raw["template"]
    from archsim.templates import get_template, template_names

    if not isinstance(template_name, str) or template_name not in template_names():
        raise _Bad("template", f"expected one of {', '.join(template_names())}, got {_describe(template_name)}")
    try:
        template = get_template(template_name)
    except ImportError as err:
        raise _Bad("template", f"template {template_name!r} is not available ({err})") from None
    params = build_params(template.params_cls, raw.get("params"))
    options = _options(raw.get("options"), template_name)
    if "clock_mhz" not in raw:
        raise _Bad("clock_mhz", "missing; expected a positive number")
    clock = _number(raw["clock_mhz"], "clock_mhz")
    if "buffers" not in raw and template.uses_buffers:
        raise _Bad("buffers", "missing; expected input, weight and output buffers, or one 'unified'")
    buffers = _buffers(raw.get("buffers") or {}, required=template.uses_buffers)
    if "dram" not in raw:
        raise _Bad("dram", "missing; expected a mapping with bytes_per_cycle or gb_per_s")
    dram = _dram(raw["dram"], clock)
    vector = _vector_unit(raw.get("vector_unit"))
    output_ops = _output_ops(raw.get("output_ops"))
    tech = _tech(raw.get("tech"), where)

    need, why = _min_buffer_bytes(params)
    if need:
        if "unified" in buffers:
            total = sum(need.values())
            if buffers["unified"].bytes < total:
                raise _Bad(
                    "buffers.unified.bytes",
                    f"expected at least {total} bytes to hold {why} of every operand, got {buffers['unified'].bytes}",
                )
        else:
            for op, n in need.items():
                buf = buffers.get(op)
                if buf is not None and buf.bytes < n:
                    raise _Bad(f"buffers.{op}.bytes", f"expected at least {n} bytes to hold {why}, got {buf.bytes}")
    return ArchSpec(
        name=name,
        template=template_name,
        params=params,
        options=options,
        clock_mhz=clock,
        buffers=buffers,
        dram=dram,
        vector_unit=vector,
        tech=tech,
        output_ops=output_ops,
        description=" ".join(description.split()),
        source=source,
    )


def load_arch(name_or_path: Any, overrides: Any = ()) -> ArchSpec:
    """Load an arch spec by preset name, YAML path, mapping or ArchSpec, applying overrides.

    Parameters
    ----------
    name_or_path:
        A shipped preset name (``"systolic-32x32-ws"``), a YAML file path, a mapping
        with the YAML's content, or an :class:`ArchSpec` (returned as is unless
        overrides are given).
    overrides:
        ``"KEY=VALUE"`` strings or a dict. Dotted keys address the spec
        (``dram.bytes_per_cycle=16``, ``buffers.input.bytes=65536``); bare keys that
        name one of the template's params address ``params`` (``rows=16``).
        Values are parsed as YAML scalars.

    Raises
    ------
    SpecError
        One line: ``<file>: <key>: expected ..., got ...``.
    """
    if isinstance(name_or_path, ArchSpec):
        if not overrides:
            return name_or_path
        arch = name_or_path
        raw, where, source, default_name = arch.to_dict(), arch.source or arch.name, arch.source, arch.name
        raw.pop("source", None)
        raw["dram"] = dict(raw["dram"])
        if raw["dram"].get("bytes_per_cycle") == "inf":
            raw["dram"]["bytes_per_cycle"] = math.inf
        raw["tech"] = arch.tech
        raw["buffers"] = {k: {kk: vv for kk, vv in v.items() if kk != "name"} for k, v in raw["buffers"].items()}
        raw["params"] = {f.name: getattr(arch.params, f.name) for f in dataclasses.fields(arch.params)}
    else:
        raw, where, source, default_name = _read_source(name_or_path, ARCH_PRESET_PACKAGE, "arch")
    if isinstance(raw, Mapping):
        raw = _apply_overrides(dict(raw), overrides, where)
    try:
        return _build_arch_any_tech(raw, where, source, default_name)
    except _Bad as bad:
        key, message = _one_line(str(bad.key or "")), _one_line(str(bad.message))
        raise SpecError(f"{where}: {key}: {message}" if key else f"{where}: {message}") from None


def _one_line(text: str) -> str:
    """``text`` with control characters escaped (a key may be any YAML string, newlines included)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _build_arch_any_tech(raw: Any, where: str, source: str, default_name: str) -> ArchSpec:
    # a TechSpec object (from an ArchSpec re-load) passes through untouched
    if isinstance(raw, Mapping) and isinstance(raw.get("tech"), TechSpec):
        tech = raw["tech"]
        rest = dict(raw)
        rest["tech"] = None
        arch = _build_arch(rest, where, source, default_name)
        return dataclasses.replace(arch, tech=tech)
    return _build_arch(raw, where, source, default_name)
