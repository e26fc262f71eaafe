"""How numbers read: one format for sizes and one for durations, used by every view and note.

- Sizes are in decimal units (1 KB = 1e3 bytes, 1 GB = 1e9 bytes, as the seed article and
  vendors' bandwidths count): `size(2.048e9)` is '2.05 GB', never '2048 MB' next to it.
- Durations are in the largest sensible unit, from ns to days: '80 ms', '5.1 s', '67 s',
  '5.9 h', '4.1 d'; never '1000 ms' where '1.0 s' fits, never '356386.0 min'.
- Counts carry thousands separators: '32,768'.

A unit is chosen after rounding, so that the number shown never reaches the next unit's
threshold. This module is pure (no Rich, no I/O): the cost layer's notes use it as the views do.
"""

from __future__ import annotations

import math

__all__ = ["size", "capacity", "duration", "count", "SIZE_UNITS", "DURATION_UNITS"]

# (unit, bytes in it, where the next unit takes over: a shown value of this many or more)
SIZE_UNITS: tuple[tuple[str, float, float], ...] = (
    ("B", 1.0, 1000.0),
    ("KB", 1e3, 1000.0),
    ("MB", 1e6, 1000.0),
    ("GB", 1e9, 1000.0),
    ("TB", 1e12, 1000.0),
    ("PB", 1e15, math.inf),
)

# (unit, seconds in it, where the next unit takes over). Seconds stay up to 2 minutes and
# minutes up to 2 hours ('67 s' reads better than '1.1 min'); hours up to 2 days.
DURATION_UNITS: tuple[tuple[str, float, float], ...] = (
    ("ns", 1e-9, 1000.0),
    ("µs", 1e-6, 1000.0),
    ("ms", 1e-3, 1000.0),
    ("s", 1.0, 120.0),
    ("min", 60.0, 120.0),
    ("h", 3600.0, 48.0),
    ("d", 86400.0, math.inf),
)


def _digits(value: float, unit: str) -> int:
    """Decimals shown: sizes 2 below 10 and 1 above ('2.68 GB', '671.1 MB'), whole bytes;
    durations 1 below 10 and none above ('5.1 s', '67 s')."""
    if unit == "B":
        return 0
    if unit in ("KB", "MB", "GB", "TB", "PB"):
        return 2 if value < 10 else 1
    return 1 if value < 10 else 0


def _scaled(n: float, units: tuple[tuple[str, float, float], ...]) -> str:
    """`n` in the smallest unit whose shown (rounded) value stays below its next unit's
    threshold, with thousands separators."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale, limit in units:
        value = n / scale
        # the digits that unit would show, at the precision of the shown value
        shown = round(value, _digits(value, unit))
        if shown < limit:
            digits = _digits(shown, unit) if shown >= 10 else _digits(value, unit)
            return f"{sign}{shown:,.{digits}f} {unit}"
    raise AssertionError("the last unit has no limit")  # pragma: no cover


def size(n_bytes: float) -> str:
    """Bytes in decimal units: 20,480 -> '20.5 KB', 2.048e9 -> '2.05 GB', 999,999 -> '1.00 MB'.
    Below 1 KB whole bytes ('512 B'); non-finite values are '-'."""
    n = float(n_bytes)
    if not math.isfinite(n):
        return "-"
    if abs(n) < 1:
        return "0 B"
    return _scaled(n, SIZE_UNITS)


def capacity(n_bytes: float) -> str:
    """A memory size as `size` gives it, and the binary size a vendor would print where it is a
    round number of GiB or MiB: 17,179,869,184 -> '17.2 GB (16 GiB)'."""
    text = size(n_bytes)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        value = n_bytes / scale
        if value >= 1 and abs(value - round(value, 1)) < 1e-9:
            return f"{text} ({value:g} {unit})"
    return text


def duration(s: float) -> str:
    """Seconds in the largest sensible unit: 0.08 -> '80 ms', 0.9996 -> '1.0 s', 67 -> '67 s',
    21,383,160 -> '247 d'. Zero is '0 s'; non-finite values are '-'."""
    s = float(s)
    if not math.isfinite(s):
        return "-"
    if s == 0:
        return "0 s"
    if abs(s) < 0.05e-9:  # below what ns can show
        return "< 0.1 ns"
    return _scaled(s, DURATION_UNITS)


def count(n: float) -> str:
    """A count with thousands separators: 32768 -> '32,768'."""
    return f"{n:,.0f}"


def counted(n: int, noun: str) -> str:
    """A count and its noun, singular at one: (1, 'chunk') -> '1 chunk', (64, ...) -> '64
    chunks'."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
