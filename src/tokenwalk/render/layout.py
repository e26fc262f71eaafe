"""Views that fit the terminal: which columns a table keeps at a width, and what it says about
the ones it leaves out. A view never drops a column silently and never cuts a name the user
types (slugs, quant names, flags): it drops whole columns, least needed first, and prints
`left_out_note` under the table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.text import Text

__all__ = [
    "drop_columns",
    "left_out_note",
    "table_width",
    "NOTE_MIN",
    "NOTE_NARROWEST",
    "marker",
    "note_lines",
    "Facts",
    "FitTable",
    "Whole",
    "title_of",
]

SEPARATOR = "  ·  "

NOTE_MIN = 36  # a notes column at least this wide is never squeezed
NOTE_NARROWEST = 24  # a narrower one always is: its notes go under their facts


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


def title_of(parts: Sequence[str], width: int, *, markup: bool = True) -> str:
    """A title of parts joined by ' · ', broken only at a separator where the whole is wider
    than `width` (the separator gives way to the line break), so that no part (a machine's
    name) is split across lines where it fits one. `markup`: the parts are Rich markup,
    measured as printed."""
    from rich.text import Text

    def cells(x: str) -> int:
        return Text.from_markup(x).cell_len if markup else Text(x).cell_len

    lines: list[str] = []
    for part in parts:
        if lines and cells(lines[-1] + SEPARATOR + part) <= width:
            lines[-1] += SEPARATOR + part
        else:
            lines.append(part)
    return "\n".join(lines)


class Whole:
    """Lines a user copies (a llama.cpp command line), each printed whole on one line however
    narrow the terminal: the terminal folds it, so that a copy pastes one line. Printed with
    `console.print(..., crop=False)`, since Rich crops what is wider than the console."""

    def __init__(
        self, rows: Sequence[tuple[str, str]], *, indent: int = 1, key_width: int = 0
    ) -> None:
        self.rows = list(rows)
        self.indent = indent
        self.key_width = key_width  # the labels of the table above, to line up with

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable:
        from rich.segment import Segment

        from tokenwalk.render.safe import safe_text

        w = max((len(k) for k, _ in self.rows), default=self.key_width)
        w = max(w, self.key_width)
        for key, value in self.rows:
            yield Segment(" " * self.indent)
            yield Segment(f"{key:<{w}}  ", console.get_style("bold"))
            yield from safe_text(value, limit=None).render(console)
            yield Segment.line()


def _text(cell: RenderableType, style: str = "") -> Text:
    """A cell as Text: a string is Rich markup (data in it is escaped by `render.safe`)."""
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.copy() if not style else Text.assemble(cell, style=style)
    return Text.from_markup(str(cell), style=style)


class Facts:
    """A view's facts, one to a row: a label, a value and a note (formula, reason, source).

    Where the terminal leaves the notes `NOTE_MIN` columns or what the longest needs, they are
    a third column; where it leaves them under `NOTE_NARROWEST`, or a column would take more
    lines than notes under their facts, each note goes on its own line under its fact,
    indented, so that it is never squeezed into a column a word wide. Used as a
    `rich.table.Table` of three columns: `add_row(label, value, note)`."""

    def __init__(
        self,
        title: str | None = None,
        *,
        value_justify: str = "right",
        label_style: str = "bold",
        note_style: str = "dim",
        pad_edge: bool = True,
    ) -> None:
        self.title = title
        self.value_justify = value_justify
        self.label_style = label_style
        self.note_style = note_style
        self.pad_edge = pad_edge
        self.rows: list[tuple[RenderableType, RenderableType, RenderableType]] = []

    def add_row(
        self, label: RenderableType, value: RenderableType = "", note: RenderableType = ""
    ) -> None:
        self.rows.append((label, value, note))

    def _table(self) -> RenderableType:
        from rich.table import Table

        t = Table(
            show_header=False,
            box=None,
            pad_edge=self.pad_edge,
            title=self.title,
            title_justify="left",
        )
        t.add_column(style=self.label_style)
        t.add_column(justify=self.value_justify)  # type: ignore[arg-type]
        t.add_column(style=self.note_style)
        for row in self.rows:
            t.add_row(*row)
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable:
        from rich.padding import Padding
        from rich.text import Text

        labels = [_text(r[0]) for r in self.rows]
        values = [_text(r[1]) for r in self.rows]
        notes = [_text(r[2]) for r in self.rows]
        label_w = max((x.cell_len for x in labels), default=0)
        value_w = max((x.cell_len for x in values), default=0)
        note_w = max((x.cell_len for x in notes), default=0)
        edge = 1 if self.pad_edge else 0
        room = options.max_width - label_w - value_w - 4 - 2 * edge
        under = max(options.max_width - 4 - edge, 1)
        lens = [x.cell_len for x in notes]
        beside = sum(max(1, -(-n // max(room, 1))) for n in lens)  # lines, notes in a column
        below = sum(1 + -(-n // under) for n in lens)  # lines, notes under their facts
        if room >= min(note_w, NOTE_MIN) or (room >= NOTE_NARROWEST and beside <= below):
            yield self._table()
            return
        if self.title:
            yield Text.from_markup(self.title, style="italic")
        pad = " " * edge
        for label, value, note in zip(labels, values, notes, strict=True):
            alone = not label.plain and not value.plain  # a note on its own
            label.stylize(self.label_style)
            if self.value_justify == "right" and value_w <= 14:  # long values read from the left
                value = Text(" " * (value_w - value.cell_len)) + value
            line = Text(pad) + label + Text(" " * (label_w - label.cell_len + 2)) + value
            if alone:
                pass
            elif line.cell_len > options.max_width:  # the value goes on a line of its own
                yield Text(pad) + label
                yield Padding(value, (0, 0, 0, 2 + edge))
            else:
                yield line
            if note.plain:
                note.stylize(self.note_style)
                yield Padding(note, (0, 0, 0, 4 + edge))


class FitTable(Table):
    """A `rich.table.Table` that keeps its borders where it fits and drops them where it does
    not: under its natural width it is drawn with box.SIMPLE_HEAD, no edge and padding
    collapsed (two columns a column instead of three, four at the edges), before any cell is
    wrapped or cut."""

    def fill(
        self,
        rows: Sequence[Mapping[str, str | Text]],
        width: int,
        drop_order: Sequence[str],
        *,
        left: Iterable[str] = (),
        wrap: Mapping[str, int] | None = None,
    ) -> list[str]:
        """Add the columns of `rows` (one mapping a row, in column order) that fit `width`
        terminal columns, then the rows: whole columns are left out in `drop_order` (least
        needed first) and the table is drawn compact when any is (`drop_columns`). `left`: the
        columns justified left (the others right); `wrap`: the columns whose heading may wrap,
        with the width it wraps to (no other column wraps). Returns the columns left out."""
        from rich.cells import cell_len

        wrap = wrap or {}

        def need(col: str) -> int:
            cells = (
                x.cell_len if not isinstance(x, str) else cell_len(x)
                for x in (r[col] for r in rows)
            )
            return max(wrap.get(col, cell_len(col)), *cells)

        kept, dropped = drop_columns({c: need(c) for c in rows[0]}, width, drop_order, edge=-2)
        if dropped:
            self.compact()
        # where the headings do not fit unwrapped in a bordered table (three columns a column,
        # one at the edge), a heading that wraps gets exactly the width counted for it: Rich
        # would otherwise shrink it below its longest word when the table is tight
        unwrapped = [max(w, cell_len(c)) for c, w in kept.items()]
        tight = table_width(unwrapped, per_column=3, edge=1) > width
        left = set(left)
        for col, w in kept.items():
            self.add_column(
                col,
                justify="left" if col in left else "right",
                no_wrap=col not in wrap,
                width=w if col in wrap and tight else None,
            )
        for r in rows:
            self.add_row(*(r[c] for c in kept))
        return dropped

    def compact(self) -> None:
        """Draw without borders or edges: 2 columns between cells, none at the ends
        (`table_width(..., edge=-2)`)."""
        from rich import box

        self.box = box.SIMPLE_HEAD
        self.show_edge = False
        self.pad_edge = False
        self.collapse_padding = True

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable:
        from rich import box

        if self.box is not None and self.box is not box.SIMPLE_HEAD:
            natural = self.__rich_measure__(console, options).maximum
            if natural > options.max_width:
                self.compact()
        yield from super().__rich_console__(console, options)
