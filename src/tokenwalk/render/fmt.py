"""Number formatting shared by every view: decimal units (1 GB = 1e9 bytes), as the seed does.

Sizes and durations have one formatter each, `tokenwalk.numbers.size` and
`tokenwalk.numbers.duration` (the cost layer's notes use them too); `human_bytes` and `seconds`
are the names the views have always used for them.
"""

from __future__ import annotations

import math

from tokenwalk.numbers import capacity, count, duration, size

__all__ = [
    "NBSP",
    "size",
    "capacity",
    "duration",
    "human_bytes",
    "free",
    "seconds",
    "params",
    "count",
    "row_count",
    "rows",
    "kernel_times",
    "rate",
    "pct",
]

NBSP = "\u00a0"  # joins a number to its unit: a line never breaks inside a quantity

human_bytes = size
"""Bytes in decimal units: 20,480 B -> '20.5 KB', 2.17e10 -> '21.7 GB' (`numbers.size`)."""

seconds = duration
"""Seconds in the largest sensible unit: '80 ms', '5.1 s', '5.9 h' (`numbers.duration`)."""


def free(n_bytes: float) -> str:
    """Memory left: '1.44 GB', or what is missing when none is: 'short by 22.3 GB' (a sign
    in front of a size reads as a typo)."""
    return size(n_bytes) if n_bytes >= 0 else f"short by {size(-n_bytes)}"


def params(n: float) -> str:
    """Parameter counts, three significant digits in every range: 35,505,251,456 -> '35.5 B',
    2.95e9 -> '2.95 B', 845e6 -> '845 M', 23e6 -> '23.0 M', 135e3 -> '135 K'."""
    n = float(n)
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale * 0.9995:
            v = n / scale
            return (
                f"{v:.2f} {unit}"
                if v < 9.995
                else f"{v:.1f} {unit}"
                if v < 99.95
                else f"{v:.0f} {unit}"
            )
    return f"{n:,.0f}"


def row_count(n: float) -> str:
    """A number of matrix rows, bare: 23.4 -> '23', 1024 -> '1,024', 0.5 -> '0.5' (a fitted
    rows_half below one row, never '0')."""
    return f"{n:.1f}" if 0 < n < 0.95 else count(n)


def rows(n: float) -> str:
    """A number of matrix rows: 1 -> '1 row', 23.4 -> '23 rows', 0.5 -> '0.5 rows'."""
    text = row_count(n)
    return f"{text} row" if text == "1" else f"{text} rows"


def kernel_times(kernel_time: float, *, matvec: bool) -> str:
    """How many times a CPU's weight products count their FLOPs (`PassWork.cpu_kernel_time`):
    '1.52 times (its matrix kernels for these weight types, against Q4_K)'."""
    kernels = "mat-vec" if matvec else "matrix"
    return f"{kernel_time:.2f} times (its {kernels} kernels for these weight types, against Q4_K)"


def rate(tok_s: float) -> str:
    """Tokens per second: '13.0 tok/s', '1,234 tok/s' (whole from 100 up, 99.96 included),
    two significant digits below 1 ('0.014 tok/s', never '0.0 tok/s')."""
    if round(tok_s, 1) >= 100:
        return f"{tok_s:,.0f} tok/s"
    if tok_s >= 0.95 or tok_s <= 0 or not math.isfinite(tok_s):
        return f"{tok_s:.1f} tok/s"
    return f"{tok_s:.{1 - math.floor(math.log10(tok_s))}f} tok/s"


def pct(x: float) -> str:
    """A share as a whole percentage: 0.356 -> '36%'."""
    return f"{x * 100:.0f}%"
