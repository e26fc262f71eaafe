"""Rich view of a `KvReport`."""

from __future__ import annotations

from rich.console import Console, Group
from rich.text import Text

from tokenwalk.costs.kv import KvReport
from tokenwalk.render.fmt import count, human_bytes
from tokenwalk.render.layout import Facts, FitTable, marker, note_lines, title_of
from tokenwalk.render.safe import safe_markup


def render_kv(r: KvReport, console: Console) -> None:
    at = f"{count(r.ctx)} tokens" + (f" x {r.parallel} streams" if r.parallel > 1 else "")
    title = title_of([safe_markup(r.model), f"KV cache {r.kv_type}", at], console.width)
    # (kind, layers, per token, cells held, at this context, what the kind's numbers mean)
    rows: list[tuple[str, str, str, str, str, str]] = []
    for k in r.kinds:
        if k.attention == "recurrent":
            rows.append(
                (
                    "recurrent",
                    str(k.n_layers),
                    "-",
                    "-",
                    human_bytes(k.cache_bytes),
                    "fixed state, f32",
                )
            )
            continue
        why = ""
        if k.attention == "sliding":
            why = f"window {count(k.window)}; {count(k.window_cells_naive)} if only the window"
        rows.append(
            (
                k.attention,
                str(k.n_layers),
                human_bytes(k.kv_bytes_per_token),
                count(k.cells),
                human_bytes(k.cache_bytes),
                why,
            )
        )
    heads = ("layer kind", "layers", "per token", "cells held", "at this context")

    # the explanations beside their cells where the bordered table fits, else marked, under it
    def with_why(row: tuple[str, ...]) -> list[str]:
        kind, *cells, why = row
        if why and kind == "recurrent":
            kind = f"{kind} ({why})"
        elif why:
            cells[2] += f" ({why})"
        return [kind, *cells]

    widths = [max(len(h), *(len(with_why(x)[i]) for x in rows)) for i, h in enumerate(heads)]
    beside = sum(widths) + 3 * len(widths) + 1 <= console.width
    kinds = FitTable(title=title, title_justify="left")
    for col in heads:
        kinds.add_column(col, justify="left" if col == "layer kind" else "right", no_wrap=True)
    notes: list[tuple[int, str]] = []
    for row in rows:
        kind, *cells, why = row
        if beside:
            kinds.add_row(*with_why(row))
            continue
        if why:
            notes.append((len(notes) + 1, f"{kind}: {why}"))
            kind += marker(len(notes))
        kinds.add_row(kind, *cells)
    under = [Text(line, style="dim") for line in note_lines(notes, console.width - 1)]

    summary = Facts()
    summary.add_row(
        "KV per token",
        human_bytes(r.kv_bytes_per_token),
        f"{count(r.kv_bytes_per_token)} bytes; grows with the context",
    )
    if r.sliding_kv_bytes_per_token:
        summary.add_row(
            "sliding per token",
            human_bytes(r.sliding_kv_bytes_per_token),
            f"{count(r.sliding_kv_bytes_per_token)} bytes, until the window fills",
        )
    summary.add_row("KV cache", human_bytes(r.kv_bytes), f"{count(r.kv_bytes)} bytes")
    if r.state_bytes:
        summary.add_row("recurrent state", human_bytes(r.state_bytes), "independent of the context")
    summary.add_row("total", human_bytes(r.cache_bytes), "")
    if r.swa_full_layers:
        summary.add_row(
            "--swa-full",
            f"{r.swa_full_layers} layers",
            "sliding-window layers holding the full context, as full layers",
        )
    if (
        r.every_layer_kv_bytes_per_token
        and r.kv_bytes_per_token
        and r.every_layer_kv_bytes_per_token > r.kv_bytes_per_token * 1.01
    ):
        ratio = r.every_layer_kv_bytes_per_token / r.kv_bytes_per_token
        summary.add_row(
            "if every layer kept a cache",
            f"{human_bytes(r.every_layer_kv_bytes_per_token)}/token",
            f"{ratio:.1f}x more",
        )

    sweep = FitTable(title="Sweep", title_justify="left")
    for col in ("context", "KV cache", "state", "total"):
        sweep.add_column(col, justify="right")
    for row in r.sweep:
        mark = " (max)" if row.ctx == r.max_ctx else ""
        sweep.add_row(
            count(row.ctx) + mark,
            human_bytes(row.kv_bytes),
            human_bytes(row.state_bytes),
            human_bytes(row.cache_bytes),
        )
    console.print(Group(kinds, *under, "", summary, "", sweep))
