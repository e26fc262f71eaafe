"""Rich view of a `SweepReport`: one table, the swept inputs first, then the headline columns
of the command, units in the headings; runs that do not fit in memory are noted under it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from tokenwalk.costs.sweep import Cell, SweepColumn, SweepReport
from tokenwalk.render.fmt import count, params
from tokenwalk.render.safe import safe_markup, safe_text

__all__ = ["render_sweep"]

_TOKEN_INPUTS = {"prompt", "ctx", "cached", "output", "ubatch"}


def _input_cell(name: str, value: Cell) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int) and name in _TOKEN_INPUTS:
        return count(value)
    if isinstance(value, float):
        return f"{value:g}"
    return safe_markup(value)


def _number(x: float) -> str:
    """Plain figures, three significant ones at most below 100, thousands grouped above."""
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _heading(c: SweepColumn) -> str:
    if c.unit == "B":
        return f"{c.label}\nGB"
    if c.unit in ("", "tokens"):
        return c.label
    return f"{c.label}\n{c.unit}"


def _value_cell(c: SweepColumn, value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return safe_markup(value)
    if c.unit == "B":
        return f"{value / 1e9:,.2f}"
    if c.key in ("params", "active_params"):
        return params(value)
    if c.unit == "tokens" or isinstance(value, int):
        return count(value)
    return _number(value)


def _title(r: SweepReport) -> str:
    first: Any = r.runs[0] if r.runs else None
    what = getattr(first, "model", None) or getattr(first, "target", None)
    if what is None and getattr(first, "models", None):  # budget: the models loaded together
        what = " + ".join(m.model for m in first.models)
    parts = [r.command, *([safe_markup(what)] if what else []), f"{len(r.rows)} runs"]
    return "  ·  ".join(parts)


def render_sweep(r: SweepReport, console: Console) -> None:
    title = _title(r)
    # a narrow table keeps its title on one line, as far as the terminal allows
    table = Table(title=title, title_justify="left", min_width=min(len(title), console.width))
    for name in r.axes:
        table.add_column(name.replace("_", "-"), justify="left")
    for c in r.columns:
        table.add_column(_heading(c), justify="right")
    for row in r.rows:
        table.add_row(
            *(_input_cell(n, row.inputs[n]) for n in r.axes),
            *(_value_cell(c, row.values.get(c.key)) for c in r.columns),
        )
    console.print(table)
    for i, (row, run) in enumerate(zip(r.rows, r.runs, strict=False), start=1):
        memory = getattr(run, "memory", None)
        if memory is not None and not memory.fits:
            where = ", ".join(f"{k} {_input_cell(k, v)}" for k, v in row.inputs.items())
            note = f"warning: row {i} ({where}): {memory.note}"
            console.print(safe_text(note, style="bold red", limit=None))
