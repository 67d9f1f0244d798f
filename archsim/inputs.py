"""Safe input reading: regular files only, a size limit, YAML 1.2 scalars, short excerpts in errors.

Every file a user names (arch spec, sweep spec, workload YAML / ONNX / CSV)
is read through :func:`read_input_bytes` / :func:`read_input_text`, which

- open only regular files: a FIFO, ``/dev/zero``, a directory or a symlink
  loop is a one-line error, never a hang (the file is opened non-blocking and
  checked with ``fstat`` on the open descriptor, so a swap after the check
  does not matter);
- refuse a file above a size limit (``ARCHSIM_MAX_INPUT_BYTES`` raises it),
  and read at most that many bytes even if the file grows meanwhile.

:func:`load_yaml_text` parses YAML with YAML 1.2 core-schema scalars: ``1:30``
stays the string ``"1:30"`` (YAML 1.1 reads 90), ``yes``/``no``/``on``/``off``
stay strings, ``010`` is 10; nesting deeper than :data:`MAX_YAML_DEPTH` is an
error instead of a ``RecursionError``; duplicate keys, control characters and aliases expanding
to more than :data:`MAX_YAML_NODES` values are one-line errors.

:func:`excerpt` quotes a user's text in an error as a short printable snippet,
so a message never echoes a whole line of an arbitrary file.
"""
from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any, Callable

import yaml

from archsim.errors import ArchsimError

DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_ONNX_BYTES = 2 * 1024 * 1024 * 1024  # protobuf's own limit
MAX_YAML_DEPTH = 100
MAX_YAML_NODES = 1_000_000  # values after alias expansion; a large workload file has tens of thousands
EXCERPT_CHARS = 32


def max_input_bytes(default: int = DEFAULT_MAX_INPUT_BYTES) -> int:
    """The size limit: ``ARCHSIM_MAX_INPUT_BYTES`` if set to a positive integer, else ``default``."""
    text = os.environ.get("ARCHSIM_MAX_INPUT_BYTES", "")
    return int(text) if text.isdigit() and int(text) > 0 else default


def excerpt(text: Any, limit: int = EXCERPT_CHARS) -> str:
    """``text`` as a short quoted printable snippet: control characters escaped, cut at ``limit``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = str(text)
    cut = text[:limit]
    shown = "".join(c if c.isprintable() and c not in "\"\\" else repr(c)[1:-1] if c != '"' else '\\"' for c in cut)
    return f'"{shown}{"..." if len(text) > limit else ""}"'


def _fail(error: Callable[[str], ArchsimError], path: str, reason: str) -> ArchsimError:
    return error(f"{path}: {reason}")


def read_input_bytes(path: str | os.PathLike, *, what: str = "input", limit: int | None = None,
                     error: Callable[[str], ArchsimError] = ArchsimError) -> bytes:
    """The bytes of regular file ``path`` (at most ``limit``), or ``error("<path>: <reason>")``."""
    label = os.fspath(path)
    limit = max_input_bytes() if limit is None else limit
    try:
        fd = os.open(label, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _fail(error, label, "no such file") from None
    except IsADirectoryError:
        raise _fail(error, label, "is a folder, not a file") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _fail(error, label, "too many levels of symbolic links") from None
        raise _fail(error, label, f"cannot read: {(err.strerror or str(err)).lower()}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _fail(error, label, "is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode)
                    or stat.S_ISBLK(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "special")
            raise _fail(error, label, f"is {kind}, not a regular {what} file")
        if info.st_size > limit:
            raise _fail(error, label, f"{what} file is {info.st_size:,} bytes, above the {limit:,}-byte limit "
                        "(set ARCHSIM_MAX_INPUT_BYTES to raise it)")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except IsADirectoryError:
                raise _fail(error, label, "is a folder, not a file") from None
            except OSError as err:
                raise _fail(error, label, f"cannot read: {(err.strerror or str(err)).lower()}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _fail(error, label, f"{what} file is above the {limit:,}-byte limit "
                            "(set ARCHSIM_MAX_INPUT_BYTES to raise it)")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_input_text(path: str | os.PathLike, *, what: str = "input", limit: int | None = None,
                    error: Callable[[str], ArchsimError] = ArchsimError) -> str:
    """The UTF-8 text of regular file ``path`` (see :func:`read_input_bytes`); NUL bytes are refused."""
    data = read_input_bytes(path, what=what, limit=limit, error=error)
    label = os.fspath(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _fail(error, label, f"not UTF-8 text (bad byte at offset {err.start})") from None
    if "\x00" in text:
        raise _fail(error, label, f"not a text file (NUL byte at offset {text.index(chr(0))})")
    return text


# ----------------------------------------------------------------------------- YAML 1.2 scalars

class Yaml12Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 core-schema implicit scalars (no sexagesimal, no yes/no)."""


Yaml12Loader.yaml_implicit_resolvers = {}
_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+.0123456789")),
]
for _tag, _regex, _first in _RESOLVERS:
    Yaml12Loader.add_implicit_resolver(_tag, re.compile(_regex), list(_first))


MAX_INT_DIGITS = 100  # Python's int() refuses more than 4300 digits with a ValueError, not a YAML error


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    if len(text) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(None, None, f"integer of {len(text)} digits is too long",
                                                node.start_mark)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _construct_float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = loader.construct_scalar(node).lower()
    if len(text) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(None, None, f"number of {len(text)} characters is too long",
                                                node.start_mark)
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


def _check_unique_keys(loader: yaml.SafeLoader, node: yaml.MappingNode) -> None:
    """Refuse a mapping whose keys are not unique, as YAML 1.2 requires (PyYAML keeps the last silently)."""
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node)
        except TypeError:  # an unhashable key: PyYAML's own message follows
            continue
        if first is not key_node:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {excerpt(key)} (first on line {first.start_mark.line + 1}; "
                "YAML keys must be unique)", key_node.start_mark)


def _construct_yaml_map(loader: yaml.SafeLoader, node: yaml.MappingNode):
    data: dict = {}
    yield data
    _check_unique_keys(loader, node)
    data.update(loader.construct_mapping(node))


Yaml12Loader.add_constructor("tag:yaml.org,2002:map", _construct_yaml_map)
Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def _depth(node: yaml.Node, limit: int) -> int:
    """Nesting depth of a composed node tree, iteratively (no recursion), stopping past ``limit``."""
    stack = [(node, 1)]
    seen: set[int] = set()
    deepest = 0
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        if id(current) in seen:  # an alias: the same node object again
            continue
        seen.add(id(current))
        if isinstance(current, yaml.SequenceNode):
            stack.extend((child, level + 1) for child in current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.append((key, level + 1))
                stack.append((value, level + 1))
    return deepest


def expanded_nodes(node: yaml.Node, limit: int) -> int:
    """Nodes of the document with every alias expanded (a value used twice counts twice), stopping
    past ``limit``; a self-referring alias counts as past it.

    PyYAML builds an aliased value once and shares it, so a "billion laughs" file loads fast; but
    anything that walks or prints the value (an error message, a name) expands it and hangs."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if key in sizes:
            continue
        kids = ([c for pair in current.value for c in pair] if isinstance(current, yaml.MappingNode)
                else list(current.value) if isinstance(current, yaml.SequenceNode) else [])
        if children_done:
            active.discard(key)
            sizes[key] = min(limit + 1, 1 + sum(sizes[id(k)] for k in kids))
            continue
        if key in active:  # reached again while building itself: an alias inside its own anchor
            return limit + 1
        active.add(key)
        stack.append((current, True))
        for kid in kids:
            if id(kid) in active:
                return limit + 1
            if id(kid) not in sizes:
                stack.append((kid, False))
    return sizes[id(node)]


def flow_depth(text: str) -> int:
    """Deepest ``[``/``{`` nesting outside quotes and comments (a quick upper bound check)."""
    depth = deepest = 0
    quote = ""
    comment = False
    for ch in text:
        if comment:
            comment = ch != "\n"
        elif quote:
            if ch == quote or ch == "\n" and quote == "#":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def load_yaml_text(text: str, where: str, error: Callable[[str], ArchsimError] = ArchsimError,
                   syntax: str = "invalid YAML: {problem}") -> Any:
    """Parse ``text`` as YAML 1.2 scalars; any problem is ``error("<where>: ...")`` on one line.

    ``syntax`` formats a syntax error's text after ``<where>: line N: ``."""
    if flow_depth(text) > MAX_YAML_DEPTH:  # fail fast: pyyaml would recurse a thousand frames first
        raise error(f"{where}: YAML nested too deeply (more than {MAX_YAML_DEPTH} levels)")
    try:
        loader = Yaml12Loader(text)
    except yaml.reader.ReaderError as err:  # raised on construction: a character YAML does not allow
        line = text.count("\n", 0, err.position) + 1
        raise error(f"{where}: line {line}: control character {excerpt(chr(err.character))} is not allowed "
                    "in YAML (quote it as an escape, e.g. \"\\t\")") from None
    try:
        node = loader.get_single_node()  # pyyaml composes recursively: RecursionError is caught below
        if node is None:
            return None
        if _depth(node, MAX_YAML_DEPTH) > MAX_YAML_DEPTH:
            raise error(f"{where}: YAML nested too deeply (more than {MAX_YAML_DEPTH} levels)")
        if expanded_nodes(node, MAX_YAML_NODES) > MAX_YAML_NODES:
            raise error(f"{where}: YAML aliases expand to more than {MAX_YAML_NODES:,} values "
                        "(an alias bomb?); write the values out or use fewer aliases")
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise error(f"{where}: {line}" + syntax.format(problem=problem)) from None
    except RecursionError:
        raise error(f"{where}: YAML nested too deeply (more than {MAX_YAML_DEPTH} levels)") from None
    finally:
        loader.dispose()


__all__ = ["DEFAULT_MAX_INPUT_BYTES", "MAX_ONNX_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "Yaml12Loader", "excerpt",
           "expanded_nodes", "flow_depth",
           "load_yaml_text", "max_input_bytes", "read_input_bytes", "read_input_text"]
