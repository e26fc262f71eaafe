"""Views that fit the terminal: which columns a table keeps at a width, and what it says about
the ones it leaves out. A view never drops a column silently and never cuts a name the user
types (slugs, quant names, flags): it drops whole columns, least needed first, and prints
`left_out_note` under the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["drop_columns", "left_out_note", "table_width", "NARROW", "marker", "note_lines"]

NARROW = 100  # below this many columns a view puts long notes under its tables


def table_width(widths: Sequence[int], *, per_column: int = 2, edge: int = 0) -> int:
    """Columns a table takes: its cells' widths plus `per_column` for each column (a Rich table
    with box.SIMPLE_HEAD, pad_edge=False and collapse_padding=True takes 2: one of padding and
    one of divider or edge) plus `edge` (box=None: per_column=1, edge=-1)."""
    return sum(widths) + per_column * len(widths) + edge


def drop_columns(
    widths: Mapping[str, int],
    width: int,
    drop_order: Sequence[str],
    *,
    per_column: int = 2,
    edge: int = 0,
) -> tuple[dict[str, int], list[str]]:
    """The columns of a table that fit `width` terminal columns, and those left out.

    `widths` maps every column (in table order) to the width its cells need; columns are
    dropped in `drop_order` (least needed first) until `table_width` of the rest fits; columns
    not in `drop_order` are always kept, even when the table is then wider than the terminal.
    Returns (kept column -> width, in table order; dropped names, in the order dropped).

    >>> drop_columns({"slug": 20, "arch": 10, "params": 7}, 36, ["arch"])
    ({'slug': 20, 'params': 7}, ['arch'])
    """
    kept = dict(widths)
    dropped: list[str] = []
    for name in drop_order:
        if table_width(list(kept.values()), per_column=per_column, edge=edge) <= width:
            break
        if name in kept:
            del kept[name]
            dropped.append(name)
    return kept, dropped


def left_out_note(
    dropped: Sequence[str], width: int, how: str = "a wider terminal or --json"
) -> str:
    """The dim line under a table that left columns out: what, at what width, and how to see
    them ("" when nothing was left out)."""
    if not dropped:
        return ""
    return f"[dim]Left out at {width} columns: {', '.join(dropped)} ({how} shows them).[/dim]"


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def marker(n: int) -> str:
    """The footnote mark of note `n` beside a cell: 1 -> '¹', 12 -> '¹²'."""
    return str(n).translate(_SUPERSCRIPT)


def note_lines(notes: Sequence[tuple[int, str]], width: int, tail: Sequence[str] = ()) -> list[str]:
    """Numbered notes packed into lines of at most `width` characters, a note kept whole on
    one line where it fits one: [(1, "6,500 tokens"), (2, "...")] -> ["¹ 6,500 tokens  ² ..."].
    A note longer than a line gets lines of its own (wrapped by the console at spaces);
    `tail` adds unnumbered items after the notes."""
    lines: list[str] = []
    line = ""
    for item in [f"{marker(n)} {text}" for n, text in notes] + list(tail):
        if line and len(line) + 2 + len(item) <= width:
            line += "  " + item
            continue
        if line:
            lines.append(line)
        line = item
    if line:
        lines.append(line)
    return lines
