"""Stable keys of design points: a SHA-256 of a canonical JSON of the configuration.

The key of a point covers everything its result depends on: the resolved arch
spec (every field except its name, description and source), the workload
(name, builder parameters and, for a file, its content's hash), the
``simulate`` options, the area mode and the model version. It does not depend
on Python's hash seed, dict order or the process that computes it.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
from functools import lru_cache
from typing import Any

#: ArchSpec fields that only label a spec and never change a result
_LABEL_FIELDS = ("name", "description", "source")


def canonical(value: Any) -> Any:
    """A JSON-ready, order-independent form of ``value`` (dataclasses, enums, tuples, dicts)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        out["__type__"] = type(value).__name__
        return out
    if isinstance(value, enum.Enum):
        return canonical(value.value)
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value.is_integer() and math.isfinite(value):
            return int(value)  # 4.0 and 4 configure the same hardware
        return repr(value) if not math.isfinite(value) else value
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return canonical(value.item())
    return repr(value)


def arch_config(arch: Any) -> dict:
    """The parts of a resolved ArchSpec that determine results."""
    data = canonical(arch)
    if isinstance(data, dict):
        for key in _LABEL_FIELDS:
            data.pop(key, None)
        tech = data.get("tech")
        if isinstance(tech, dict):
            tech.pop("sources", None)  # citations do not change numbers
    return data


def stable_hash(value: Any, length: int = 20) -> str:
    """Hex SHA-256 prefix of the canonical JSON of ``value``."""
    text = json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@lru_cache(maxsize=None)
def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_version() -> str:
    """Version of archsim's models that results are tagged with (part of every key).

    ``archsim.MODEL_VERSION`` when the engine defines one (bumped when numbers
    change), else the package version.
    """
    import archsim

    explicit = getattr(archsim, "MODEL_VERSION", None)
    if explicit:
        return str(explicit)
    version = getattr(archsim, "__version__", None)
    if version:
        return str(version)
    try:
        from importlib.metadata import version as dist_version

        return dist_version("archsim")
    except Exception:  # noqa: BLE001 - not installed: still a stable tag
        return "0+unknown"
