"""Layer-adaptive precision policies: which weight / activation format and group size each layer runs at.

A policy is YAML (a file, or the same mapping inline under the arch spec's
``options: precision_policy:``)::

    default: {weights: int8, activations: int8}        # optional; else the arch's formats
    rules:                                             # first match wins
      - {match: "*conv1*", weights: int8, activations: int8}          # name pattern (fnmatch)
      - {op: matmul, weights: int4, activations: fp8_e4m3, group_size: 128}
      - {match: "*attn*", op: attention, weights: fp8_e4m3, activations: fp8_e4m3}

A rule matches a layer when every key it gives matches: ``match`` (a shell
pattern on the layer name) and ``op`` (the op kind: conv2d, matmul, attention).
It sets any of ``weights``, ``activations``, ``group_size``; unset keys keep
the default. Errors are one line naming the file and the key.

It lives with the spec (a template's options carry it; ``mappers.precision_policy``
re-exports it) so that checking a spec never imports the compiler.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Any

from archsim.numerics import get_format

RULE_KEYS = ("match", "op", "weights", "activations", "group_size")
OP_KINDS = ("conv2d", "matmul", "attention")


@dataclass(frozen=True)
class Rule:
    match: str | None = None
    op: str | None = None
    weights: str | None = None
    activations: str | None = None
    group_size: int | None = None

    def applies(self, name: str, kind: str) -> bool:
        return ((self.match is None or fnmatch.fnmatchcase(name, self.match))
                and (self.op is None or self.op == kind))


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    default: Rule = Rule()
    source: str = "<inline>"

    def resolve(self, name: str, kind: str, weights: str, activations: str, group_size: int) -> tuple[str, str, int]:
        """(weights, activations, group_size) of a layer, from the arch's defaults overridden by the policy."""
        chosen = next((r for r in self.rules if r.applies(name, kind)), None)
        for rule in (self.default, chosen):
            if rule is None:
                continue
            weights = rule.weights or weights
            activations = rule.activations or activations
            group_size = group_size if rule.group_size is None else rule.group_size
        return weights, activations, group_size


def _bad(where: str, key: str, msg: str) -> ValueError:
    return ValueError(f"{where}: {key}: {msg}")


def _rule(raw: Any, where: str, key: str, allow_match: bool = True) -> Rule:
    if not isinstance(raw, dict):
        raise _bad(where, key, f"expected a mapping, got {type(raw).__name__}")
    allowed = RULE_KEYS if allow_match else RULE_KEYS[2:]
    for k in raw:
        if k not in allowed:
            raise _bad(where, f"{key}.{k}", f"unknown key; expected one of {', '.join(allowed)}")
    for k in ("weights", "activations"):
        if k in raw:
            try:
                get_format(str(raw[k]))
            except ValueError as err:
                raise _bad(where, f"{key}.{k}", str(err)) from None
    g = raw.get("group_size")
    if g is not None and (isinstance(g, bool) or not isinstance(g, int) or g < 0):
        raise _bad(where, f"{key}.group_size", f"expected 0 or a positive integer, got {g!r}")
    if "op" in raw and raw["op"] not in OP_KINDS:
        raise _bad(where, f"{key}.op", f"expected one of {', '.join(OP_KINDS)}, got {raw['op']!r}")
    if "match" in raw and not isinstance(raw["match"], str):
        raise _bad(where, f"{key}.match", f"expected a name pattern string, got {raw['match']!r}")
    return Rule(raw.get("match"), raw.get("op"), raw.get("weights"), raw.get("activations"), g)


def parse_policy(raw: Any, where: str = "<inline precision policy>") -> Policy:
    """A :class:`Policy` from its mapping; ``ValueError`` (one line) naming ``where`` and the key."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping with 'rules' (and optionally 'default'), "
                         f"got {type(raw).__name__}")
    for k in raw:
        if k not in ("rules", "default"):
            raise _bad(where, k, "unknown key; expected rules, default")
    rules = raw.get("rules") or []
    if not isinstance(rules, list):
        raise _bad(where, "rules", f"expected a list of rules, got {type(rules).__name__}")
    parsed = tuple(_rule(r, where, f"rules[{i}]") for i, r in enumerate(rules))
    default = _rule(raw["default"], where, "default", allow_match=False) if raw.get("default") else Rule()
    return Policy(parsed, default, where)


def load_policy(src: Any) -> Policy:
    """A policy from a YAML file path or a mapping (``ValueError``, one line, if invalid)."""
    if isinstance(src, Policy):
        return src
    if isinstance(src, (str, os.PathLike)):
        import yaml

        path = os.fspath(src)
        try:
            with open(path, encoding="utf-8") as fh:
                raw = yaml.safe_load(fh)
        except OSError as err:
            raise ValueError(f"{path}: cannot read the precision policy: {err.strerror or err}") from None
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: not valid YAML: {str(err).splitlines()[0]}") from None
        return parse_policy(raw, path)
    return parse_policy(src)
