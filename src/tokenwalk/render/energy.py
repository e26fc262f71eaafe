"""The energy and price lines under a timing answer (`tokenwalk.costs.energy.EnergyCost`):
one line of energy, one of the power behind it, one of money when a price was given."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from tokenwalk.render.safe import visible

if TYPE_CHECKING:
    from tokenwalk.costs.energy import EnergyCost

__all__ = ["energy_view", "wh", "joules", "money"]

# report type -> (what the per-million figures count, what the energy_wh covers)
_BASIS = {
    "DecodeReport": ("per 1M tokens out", "a step"),
    "PrefillReport": ("per 1M tokens in", "this prompt"),
    "TraceReport": ("per 1M tokens in and out", "this request"),
    "SpecReport": ("per 1M tokens out with drafting", "a token"),
}


def wh(x: float) -> str:
    """Watt-hours in the largest sensible unit: 1,070 -> '1.07 kWh', 0.058 -> '58 mWh'."""
    if x >= 1000:
        return f"{x / 1000:,.3g} kWh" if x < 1e6 else f"{x / 1000:,.0f} kWh"
    if x >= 1:
        return f"{x:.3g} Wh"
    if x >= 1e-3:
        return f"{x * 1e3:.3g} mWh"
    return f"{x * 1e6:.3g} µWh"


def joules(x: float) -> str:
    """Joules: 3.8 -> '3.8 J', 1,870 -> '1.87 kJ'."""
    if x >= 1000:
        return f"{x / 1000:,.3g} kJ"
    if x >= 0.1:
        return f"{x:.3g} J"
    return f"{x * 1e3:.3g} mJ"


def money(x: float, currency: str | None) -> str:
    """A price with three significant digits below 100, whole units above; the currency
    label after it when one was given."""
    text = f"{x:,.0f}" if x >= 100 else f"{x:.3g}" if x > 0 else "0"
    return f"{text} {visible(currency)}" if currency else text


def energy_view(e: EnergyCost, report_type: str) -> Group:
    """The lines: energy (per million tokens and for the step, prompt or request), the power
    and where it comes from, and the money."""
    per, what = _BASIS.get(report_type, ("per 1M tokens", "the work"))
    if e.energy_wh is None or e.wh_per_million_tokens is None:
        lines = [Text(f"energy: {visible(e.note or e.power_from)}", style="dim")]
    else:
        bound = ", an upper bound" if e.upper_bound else ""
        lines = [
            Text(
                f"energy: {wh(e.wh_per_million_tokens)} {per}; "
                f"{joules(e.energy_j or 0.0)} for {what}{bound}"
            ),
            Text(
                f"  {e.power_w:,.0f} W = {visible(e.power_from)}"
                + (" (full board power; decode draws less)" if e.upper_bound else ""),
                style="dim",
            ),
        ]
    if e.cost is not None and e.cost_per_million_tokens is not None:
        cur = e.currency
        if e.price_per_hour is not None:
            basis = f"{money(e.price_per_hour, cur)} an hour of the machine"
        else:
            basis = f"{money(e.price_per_kwh or 0.0, cur)} per kWh"
        lines.append(
            Text(
                f"price: {money(e.cost_per_million_tokens, cur)} {per}; "
                f"{money(e.cost, cur)} for {what} at {basis}"
            )
        )
    elif e.note and e.energy_wh is not None:
        lines.append(Text(f"price: {visible(e.note)}", style="dim"))
    return Group(*lines)
