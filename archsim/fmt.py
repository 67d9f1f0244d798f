"""Numbers and units for people: one module used by the CLI, summary.md and plots.

Every printed figure goes through here so that a run's summary, its
summary.md and its plots say the same thing the same way:

- :func:`count` (cycles, MACs, ops): ``5,845,863``;
- :func:`seconds`: ``5.85 ms``, ``412 µs``, ``1.2 s``;
- :func:`nbytes`: binary prefixes, ``79.1 MiB``, ``512 B``;
- :func:`energy_pj`: ``15.6 mJ``, ``43.3 nJ`` from picojoules;
- :func:`percent`: ``83.5 %`` from a fraction;
- :func:`number`: a plain figure (integers with separators, floats to 4
  significant digits);
- :func:`table`: an aligned text table (numbers right-aligned).

Three significant digits by default (``digits=``); a value is never shown as
``0`` when it is not zero (``1.2e-05 %`` rather than ``0.00 %``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_SI_SMALL = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"))


def _sig(x: float, digits: int) -> str:
    """``x`` with ``digits`` significant digits, no exponent for 1e-4 <= |x| < 1e6."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    text = f"{x:.{digits}g}"
    if "e" in text and 1e-4 <= abs(x) < 1e6:
        text = f"{x:.{max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))}f}"
    return text


def count(n: float) -> str:
    """An integer quantity (cycles, MACs): ``1,234,567``."""
    return f"{int(round(n)):,}"


def number(x) -> str:
    """A plain figure: integers with separators, floats to 4 significant digits."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int) or (float(x).is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    return _sig(float(x), 4)


def seconds(s: float, digits: int = 3) -> str:
    """A duration: ``1.2 s``, ``5.85 ms``, ``412 µs``, ``3 ns`` (never ks)."""
    if abs(s) >= 1:
        return f"{_sig(s, max(digits, len(str(int(abs(s))))))} s"
    return _scaled(s, "s", digits)


def energy_pj(pj: float, digits: int = 3) -> str:
    """An energy given in picojoules: ``15.6 mJ``, ``43.3 nJ``, ``2 kJ``."""
    return _scaled(pj * 1e-12, "J", digits)


def _scaled(value: float, unit: str, digits: int) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    a = abs(value)
    if a >= 1e3:
        for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if a >= scale:
                return f"{_sig(value / scale, digits)} {prefix}{unit}"
    for scale, prefix in _SI_SMALL:
        if a >= scale * 0.9995:
            return f"{_sig(value / scale, digits)} {prefix}{unit}"
    return f"{_sig(value / 1e-12, digits)} p{unit}"


def nbytes(n: float, digits: int = 3) -> str:
    """Bytes with binary prefixes: ``512 B``, ``1.5 KiB``, ``79.1 MiB``."""
    if n < 1024:
        return f"{number(n if float(n).is_integer() else round(n, 1))} B"
    i = min(int(math.log(n, 1024)), len(_BYTE_UNITS) - 1)
    value = n / 1024 ** i
    if value >= 1023.95 and i + 1 < len(_BYTE_UNITS):  # 1024.0 KiB -> 1 MiB
        i += 1
        value = n / 1024 ** i
    return f"{_sig(value, digits)} {_BYTE_UNITS[i]}"


def percent(fraction: float, digits: int = 3) -> str:
    """A fraction as a percentage: ``0.835`` -> ``83.5 %``; small ones keep their digits."""
    p = 100.0 * fraction
    if p == 0 or not math.isfinite(p):
        return f"{p:g} %"
    if abs(p) >= 1:
        return f"{p:.{max(1, digits - len(str(int(abs(p)))))}f} %" if abs(p) < 100 else f"{p:.1f} %"
    return f"{_sig(p, digits - 1)} %"


def _is_numeric(text: str) -> bool:
    t = text.strip().replace(",", "").replace("%", "").split(" ")[0]
    try:
        float(t)
    except ValueError:
        return text.strip() in ("-", "")
    return True


def table(rows: Iterable[Sequence], header: Sequence[str] | None = None, *, align: str | None = None,
          gap: int = 2, rule: bool = True) -> str:
    """An aligned text table. Cells are ``str()``-ed; a column whose cells are
    all numbers (figures with units included) is right-aligned, others left.
    ``align``: one ``"l"`` / ``"r"`` per column to choose instead; ``rule``: a
    dashed line under the header."""
    body = [[str(c) for c in row] for row in rows]
    lines = ([list(map(str, header))] if header else []) + body
    if not lines:
        return ""
    ncol = max(len(r) for r in lines)
    for r in lines:
        r.extend([""] * (ncol - len(r)))
    widths = [max(len(r[i]) for r in lines) for i in range(ncol)]
    if align is None:
        align = "".join("r" if body and all(_is_numeric(r[i]) for r in body) and any(r[i].strip() for r in body)
                        else "l" for i in range(ncol))
    out = []
    for r in lines:
        cells = [c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(r, widths, align)]
        out.append((" " * gap).join(cells).rstrip())
    if header and rule:
        out.insert(1, (" " * gap).join("-" * w for w in widths))
    return "\n".join(out)


__all__ = ["count", "energy_pj", "nbytes", "number", "percent", "seconds", "table"]
