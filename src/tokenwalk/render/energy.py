"""The energy and price lines under a timing answer (`tokenwalk.costs.energy.EnergyCost`):
one line of energy, one of the power behind it, one of money when a price was given.

Per answer: decode and spec give energy per million tokens out and per token; prefill per
million tokens in and for the prompt; trace for the request."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from tokenwalk.render.safe import visible

if TYPE_CHECKING:
    from tokenwalk.costs.energy import EnergyCost

__all__ = ["energy_view", "wh", "joules", "money"]

# report type -> (what the per-million figures count, or None; what the whole covers, or None)
_BASIS: dict[str, tuple[str | None, str | None]] = {
    "DecodeReport": ("per 1M tokens out", None),
    "PrefillReport": ("per 1M tokens in", "this prompt"),
    "TraceReport": (None, "this request"),
    "SpecReport": ("per 1M tokens out", None),
    "SessionReport": (None, "this conversation"),
}


def _sig3(x: float) -> str:
    """Three significant digits, trailing zeros kept (1.00, 12.0, 345), below 1,000."""
    text = f"{x:#.3g}".rstrip(".")
    return f"{x:,.0f}" if "e" in text else text


# (unit, its size in the base unit, the smallest shown value it takes), the largest first
_WH_UNITS = (("kWh", 1e3, 1.0), ("Wh", 1.0, 1.0), ("mWh", 1e-3, 1.0), ("µWh", 1e-6, -math.inf))
_J_UNITS = (("MJ", 1e6, 1.0), ("kJ", 1e3, 1.0), ("J", 1.0, 0.1), ("mJ", 1e-3, -math.inf))


def _scaled(x: float, units: tuple[tuple[str, float, float], ...]) -> str:
    """`x` in the largest unit whose shown value (`_sig3`, after rounding) is at least that
    unit's smallest: 999.7 Wh is '1.00 kWh', never '1,000 Wh'."""
    for unit, scale, smallest in units:
        text = _sig3(x / scale)
        if float(text.replace(",", "")) >= smallest:
            return f"{text} {unit}"
    raise AssertionError("the last unit takes any value")  # pragma: no cover


def wh(x: float) -> str:
    """Watt-hours in the largest sensible unit: 1,070 -> '1.07 kWh', 0.058 -> '58.0 mWh'."""
    return _scaled(x, _WH_UNITS)


def joules(x: float) -> str:
    """Joules: 3.8 -> '3.80 J', 1,870 -> '1.87 kJ', 0.5 -> '0.500 J', 0.012 -> '12.0 mJ'."""
    return _scaled(x, _J_UNITS)


def money(x: float, currency: str | None) -> str:
    """A price to three significant digits, never in exponent form (0.000264), whole units
    from 1,000 up; the currency label after it when one was given."""
    if x >= 1000:
        text = f"{x:,.0f}"
    elif x > 0:
        text = f"{x:.{max(0, 2 - math.floor(math.log10(x)))}f}"
    else:
        text = "0"
    return f"{text} {visible(currency)}" if currency else text


def energy_view(e: EnergyCost, report_type: str) -> Group:
    """The lines: energy, the power and where it comes from, and the money."""
    per, whole = _BASIS.get(report_type, ("per 1M tokens", None))
    bound = ", an upper bound" if e.upper_bound else ""
    if e.energy_wh is None or e.wh_per_million_tokens is None or e.power_w is None:
        lines = [Text(f"energy: {visible(e.note or e.power_from)}", style="dim")]
    else:
        if per is None:
            head = f"{wh(e.energy_wh)} ({joules(e.energy_j or 0.0)}) for {whole}"
        elif whole is None:
            head = f"{wh(e.wh_per_million_tokens)} {per}, {joules(e.j_per_token or 0.0)} a token"
        else:
            head = f"{wh(e.wh_per_million_tokens)} {per}, {wh(e.energy_wh)} for {whole}"
        if e.upper_bound:
            how = f": {visible(e.power_from)}, rated power at full load"
        else:
            how = f" ({visible(e.power_from)})"
        lines = [
            Text(f"energy: {head}{bound}"),
            Text(f"  {e.power_w:,.0f} W{how}", style="dim"),
        ]
    if e.cost is not None and e.cost_per_million_tokens is not None:
        cur = e.currency
        label = f" {visible(cur)}" if cur else ""
        if e.price_per_hour is not None:
            basis = f"{e.price_per_hour:g}{label} per hour"
        else:
            basis = f"{e.price_per_kwh or 0.0:g}{label} per kWh"
        parts = []
        if per is not None:
            parts.append(f"{money(e.cost_per_million_tokens, cur)} {per}")
        if whole is not None:
            parts.append(f"{money(e.cost, cur)} for {whole}")
        lines.append(Text(f"price: {', '.join(parts)} ({basis})"))
    return Group(*lines)
