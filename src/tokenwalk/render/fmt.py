"""Number formatting shared by every view: decimal units (1 GB = 1e9 bytes), as the seed does."""

from __future__ import annotations

__all__ = ["gb", "human_bytes", "params", "count", "seconds", "rate", "pct"]


def human_bytes(n: float) -> str:
    """Bytes in decimal units: 20,480 B -> '20.5 KB', 2.17e10 -> '21.7 GB'."""
    n = float(n)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:,.2f} {unit}" if v < 10 else f"{v:,.1f} {unit}"
    return f"{n:,.0f} B"


def gb(n: float, digits: int = 2) -> str:
    return f"{n / 1e9:,.{digits}f} GB"


def params(n: float) -> str:
    """Parameter counts: 35,505,251,456 -> '35.5 B', 268e6 -> '268 M'."""
    n = float(n)
    if n >= 1e12:
        return f"{n / 1e12:.2f} T"
    if n >= 1e9:
        return f"{n / 1e9:.2f} B" if n < 1e10 else f"{n / 1e9:.1f} B"
    if n >= 1e6:
        return f"{n / 1e6:.0f} M"
    return f"{n:,.0f}"


def count(n: float) -> str:
    return f"{n:,.0f}"


def seconds(s: float) -> str:
    if s >= 120:
        return f"{s / 60:.1f} min"
    if s >= 10:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.1f} s"
    return f"{s * 1000:.0f} ms"


def rate(tok_s: float) -> str:
    if tok_s >= 100:
        return f"{tok_s:,.0f} tok/s"
    return f"{tok_s:.1f} tok/s"


def pct(x: float) -> str:
    return f"{x * 100:.0f}%"
