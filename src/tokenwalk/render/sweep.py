"""Rich view of a `SweepReport`: one table, the swept inputs first, then the headline columns
of the command, units in the headings; runs that do not fit in memory are noted under it."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from tokenwalk.costs.sweep import Cell, SweepColumn, SweepReport
from tokenwalk.render.fmt import count, params
from tokenwalk.render.layout import title_of
from tokenwalk.render.safe import safe_markup, safe_text

__all__ = ["render_sweep", "byte_unit"]

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


_BYTE_UNITS = ((1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "B"))


def byte_unit(values: list[Cell]) -> tuple[float, str]:
    """The one unit of a column of bytes: the largest in which its largest value is >= 1
    (GB for weights, KB for a KV cache per token)."""
    top = max((abs(v) for v in values if isinstance(v, int | float)), default=0)
    return next(((d, u) for d, u in _BYTE_UNITS if top >= d), _BYTE_UNITS[0])


def _heading(c: SweepColumn, unit: str = "GB") -> str:
    if c.unit == "B":
        return f"{c.label}\n{unit}"
    if c.unit in ("", "tokens"):
        return c.label
    return f"{c.label}\n{c.unit}"


def _value_cell(c: SweepColumn, value: Cell, per: float = 1e9) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return safe_markup(value)
    if c.unit == "B":
        return _number(value / per)
    if c.key in ("params", "active_params"):
        return params(value)
    if c.unit == "tokens" or isinstance(value, int):
        return count(value)
    return _number(value)


def _title(r: SweepReport, width: int) -> str:
    first: Any = r.runs[0] if r.runs else None
    what = getattr(first, "model", None) or getattr(first, "target", None)
    if what is None and getattr(first, "models", None):  # budget: the models loaded together
        what = " + ".join(m.model for m in first.models)
    if {"model", "target"} & set(r.axes):  # the models are a column of their own
        what = None
    parts = [r.command, *([safe_markup(what)] if what else []), f"{len(r.rows)} runs"]
    return title_of(parts, width)


def _width(cell: str, words: bool) -> int:
    """Columns a cell needs: its longest line, or with `words` its longest word."""
    parts = cell.split() if words else cell.splitlines()
    return max(map(len, parts or [""]))


# (framed, how wide a heading may force its column: its lines, its longest word, or at most
# that many characters, cut within words): the layouts tried, widest first
_LAYOUTS: tuple[tuple[bool, str | int], ...] = (
    (True, "lines"),
    (True, "words"),
    (False, "words"),
    (False, 5),
    (False, 1),
)


def _heading_width(heading: str, keep: str | int) -> int:
    if keep == "lines":
        return _width(heading, words=False)
    words = _width(heading, words=True)
    return words if keep == "words" else min(words, int(keep))


def _table(
    title: str, headings: list[tuple[str, str]], columns: list[list[str]], console: Console
) -> Table:
    """The table of a sweep at the first layout that fits the terminal (`_LAYOUTS`). Every
    column is as wide as its widest cell (text: its longest word), so no name the user types
    and no number is ever cut; headings wrap first, then the frame goes."""
    for framed, keep in _LAYOUTS:
        widths = [
            max(_heading_width(heading, keep), *(_width(c, words=True) for c in cells))
            for (heading, _), cells in zip(headings, columns, strict=True)
        ]
        n = len(widths)
        if sum(widths) + (3 * n + 1 if framed else 2 * (n - 1)) <= console.width:
            break
    table = Table(
        title=title,
        title_justify="left",
        box=box.HEAVY_HEAD if framed else None,
        pad_edge=framed,
        header_style="bold",
    )
    for (heading, justify), width in zip(headings, widths, strict=True):
        table.add_column(heading, justify=justify, width=width, overflow="fold")  # type: ignore[arg-type]
    for row in zip(*columns, strict=True):
        table.add_row(*row)
    table.min_width = min(len(title), console.width)  # the title on one line, where it can be
    return table


def render_sweep(r: SweepReport, console: Console) -> None:
    headings = [(name.replace("_", "-"), "left") for name in r.axes]
    units = [byte_unit([row.values.get(c.key) for row in r.rows]) for c in r.columns]
    headings += [
        (_heading(c, unit), "right") for c, (_, unit) in zip(r.columns, units, strict=True)
    ]
    columns = [[_input_cell(n, row.inputs[n]) for row in r.rows] for n in r.axes]
    columns += [
        [_value_cell(c, row.values.get(c.key), per) for row in r.rows]
        for c, (per, _) in zip(r.columns, units, strict=True)
    ]
    console.print(_table(_title(r, console.width), headings, columns, console))
    for i, (row, run) in enumerate(zip(r.rows, r.runs, strict=False), start=1):
        memory = getattr(run, "memory", None)
        if memory is not None and not memory.fits:
            where = ", ".join(f"{k} {_input_cell(k, v)}" for k, v in row.inputs.items())
            note = f"warning: row {i} ({where}): {memory.note}"
            console.print(safe_text(note, style="bold red", limit=None))
