"""Views of `CompareReport` (`tokenwalk compare`) and `ModelsFitReport` (`models --fits`):
one table, a row per model and machine, that fits the terminal. Names a user types are never
cut; where the terminal is too narrow, the least needed columns are left out and the line
under the table says which."""

from __future__ import annotations

from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenwalk.costs.compare import CompareReport, CompareRow, ModelsFitReport
from tokenwalk.costs.energy import EnergyCost
from tokenwalk.render.energy import money, wh
from tokenwalk.render.fmt import count, human_bytes, params, rate, seconds
from tokenwalk.render.fmt import free as free_text
from tokenwalk.render.layout import drop_columns, left_out_note
from tokenwalk.render.safe import safe_markup, safe_text, visible
from tokenwalk.render.timing import error_range

__all__ = ["render_compare", "render_models_fit", "Column", "fitted_table"]

_FITS = {
    "fits with room": ("yes", "green"),
    "tight": ("tight", "yellow"),
    "does not fit": ("no", "bold red"),
    None: ("?", "dim"),
}


@dataclass
class Column:
    """A column of a fitted table: heading, cells (text or Rich `Text`), whether it may be
    left out (`drop`: lower goes first; 0 never), and right-justified for numbers."""

    heading: str
    cells: list[str | Text]
    drop: int = 0
    numeric: bool = True

    @property
    def width(self) -> int:
        return max([len(self.heading), *(len(str(c)) for c in self.cells)])


def fitted_table(title: str, columns: list[Column], width: int) -> tuple[Table, list[str]]:
    """A table of `columns` no wider than `width`: columns with the lowest `drop` are left out
    until it fits (`render.layout.drop_columns`). Returns the table and what was left out."""
    widths = {c.heading: c.width for c in columns}
    order = [c.heading for c in sorted((c for c in columns if c.drop), key=lambda c: c.drop)]
    kept, dropped = drop_columns(widths, width, order)
    t = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    shown = [c for c in columns if c.heading in kept]
    for c in shown:
        t.add_column(
            c.heading, justify="right" if c.numeric else "left", no_wrap=True, min_width=c.width
        )
    for i in range(len(columns[0].cells)):
        t.add_row(*(c.cells[i] for c in shown))
    return t, dropped


def _left_out(console: Console, dropped: list[str]) -> None:
    if dropped:
        console.print(left_out_note(dropped, console.width))


def _tok_s(x: float) -> str:
    """A rate in a tok/s column: `fmt.rate` without its unit."""
    return rate(x).removesuffix(" tok/s")


def _fits(verdict: str | None) -> Text:
    word, style = _FITS.get(verdict, ("?", "dim"))
    return Text(word, style=style)


def _free(free: int | None) -> Text:
    if free is None:
        return Text("?", style="dim")
    return Text(free_text(free), style="red" if free < 0 else "")


def _energy(e: EnergyCost) -> Text:
    return Text(wh(e.energy_wh)) if e.energy_wh is not None else Text("?", style="dim")


def _price(e: EnergyCost) -> Text:
    if e.cost is None:
        return Text("?", style="dim")
    return Text(money(e.cost, None))


def _power(x: CompareRow) -> str:
    """'radeon-860m 15 W', '618 W = rtx-5090 575 W + host 0.25 x 170 W', or what to give."""
    e = x.energy
    if e.power_w is None:
        return f"{x.machine}: {e.note or e.power_from}"
    if e.power_from == x.machine:
        return f"{x.machine} {e.power_w:,.0f} W"
    return f"{e.power_w:,.0f} W = {e.power_from}"


def _prices(r: CompareReport) -> str:
    """Which machines pay which price: 'radeon-860m, rtx-5090 at 0.3 per kWh; ...'."""
    by: dict[str, list[str]] = {}
    currency = ""
    for x in r.rows:
        e = x.energy
        currency = f" {e.currency}" if e.currency else currency
        if e.price_per_hour is not None:
            basis = f"{e.price_per_hour:g}{currency} per hour (rented)"
        elif e.price_per_kwh is not None:
            basis = f"{e.price_per_kwh:g}{currency} per kWh"
        else:
            continue
        by.setdefault(basis, [])
        if x.machine not in by[basis]:
            by[basis].append(x.machine)
    return "; ".join(f"{', '.join(ms)} at {basis}" for basis, ms in by.items())


def _note(console: Console, text: str) -> None:
    console.print(safe_text(text, style="dim", limit=None))


def render_compare(r: CompareReport, console: Console) -> None:
    models = list(dict.fromkeys(x.model for x in r.rows))
    machines = list(dict.fromkeys(x.machine for x in r.rows))
    one_model, one_machine = len(models) == 1, len(machines) == 1
    what = f"a {count(r.prompt_tokens)}-token prompt, {count(r.output_tokens)} tokens written"
    if one_model:
        title = f"{safe_markup(models[0])} ({safe_markup(r.rows[0].quant)}): {what}"
    elif one_machine:
        title = f"on {safe_markup(machines[0])}: {what}"
    else:
        title = what
    columns = []
    if not one_model or one_machine:
        columns.append(Column("model", [visible(x.model) for x in r.rows], numeric=False))
    if not one_machine or one_model:
        columns.append(Column("machine", [visible(x.machine) for x in r.rows], numeric=False))
    columns += [
        Column("fits", [_fits(x.verdict) for x in r.rows], numeric=False),
        Column("free", [_free(x.free_bytes) for x in r.rows], drop=4),
        Column("weights", [human_bytes(x.weights_bytes) for x in r.rows], drop=1),
        Column("tok/s", [_tok_s(x.tok_s) for x in r.rows]),
        Column("ceiling", [_tok_s(x.ceiling_tok_s) for x in r.rows], drop=2),
        Column("TTFT", [seconds(x.ttft_s) for x in r.rows]),
        Column("request", [seconds(x.total_s) for x in r.rows]),
        Column("energy", [_energy(x.energy) for x in r.rows], drop=3),
    ]
    priced = any(x.energy.cost is not None for x in r.rows)
    if priced:
        columns.append(Column("price", [_price(x.energy) for x in r.rows], drop=5))
    t, dropped = fitted_table(title, columns, console.width)
    console.print(t)
    _left_out(console, dropped)
    legend = [
        f"free: memory left with {count(r.ctx)} tokens of {r.kv_type} KV reserved",
        f"tok/s: decode at {count(r.ctx)} tokens",
        "ceiling: bandwidth / bytes a step reads",
        "TTFT: time to first token of the prompt",
        f"request: the prompt and {count(r.output_tokens)} tokens written",
        "energy: the request's, at the rated power of the machine (an upper bound)",
        "price: the request's",
    ]
    _note(console, "; ".join(x for x in legend if x.split(":")[0] not in dropped) + ".")
    for x in r.rows:
        if x.placement and x.placement != "-ngl all":
            who = x.machine if one_model else f"{x.model} on {x.machine}"
            # the flags a user copies: one line, folded by the terminal, never by the view
            line = f"{who}: weights {x.split}; llama.cpp {x.placement}"
            console.print(safe_text(line, style="dim", limit=None), soft_wrap=True)
    _note(console, "Power: " + "; ".join(dict.fromkeys(_power(x) for x in r.rows)) + ".")
    errors = dict.fromkeys(
        f"{x.machine} {error_range(x.decode_error)} and {error_range(x.prefill_error)}"
        for x in r.rows
        if x.decode_error is not None and x.prefill_error is not None
    )
    if errors:
        _note(
            console,
            "Typical error (median; `tokenwalk decode` and `prefill` say on what) of tok/s and "
            "TTFT: " + "; ".join(errors) + ".",
        )
    if priced:
        _note(console, "Prices: " + _prices(r) + ".")
    if any(x.fits is False for x in r.rows):
        _note(console, "`tokenwalk budget MODEL -m MACHINE` says what would make it fit.")
    for n in r.notes:
        _note(console, n)


def render_models_fit(r: ModelsFitReport, console: Console) -> None:
    fit = [x for x in r.models if x.fits]
    out = [x for x in r.models if not x.fits]
    title = (
        f"{len(fit)} of {len(r.models)} models fit {safe_markup(r.machine)} at "
        f"{safe_markup(r.quant)}"
    )
    if fit:
        columns = [
            Column("slug", [visible(x.slug) for x in fit], numeric=False),
            Column("params", [params(x.params) for x in fit], drop=2),
            Column("weights", [human_bytes(x.weights_bytes) for x in fit]),
            Column("fits", [_fits(x.verdict) for x in fit], numeric=False, drop=3),
            Column("max ctx", [count(x.max_fit_ctx) if x.max_fit_ctx else "?" for x in fit]),
            Column("tok/s", [_tok_s(x.tok_s) for x in fit]),
            Column("ceiling", [_tok_s(x.ceiling_tok_s) for x in fit], drop=1),
        ]
        if any(x.placement not in ("", "-ngl all") for x in fit):  # some weights in the host's RAM
            split = [x.split.removesuffix(" CPU/GPU") for x in fit]
            columns.insert(4, Column("CPU/GPU", split, drop=4))
        t, dropped = fitted_table(title, columns, console.width)
        console.print(t)
        _left_out(console, dropped)
    else:
        console.print(Text.from_markup(title))
    if out:
        names = ", ".join(f"{x.slug} ({human_bytes(x.weights_bytes)})" for x in out)
        _note(console, f"Do not fit, smallest first: {names}.")
    for n in r.notes:
        _note(console, n)
