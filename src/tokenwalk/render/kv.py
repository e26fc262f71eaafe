"""Rich view of a `KvReport`."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table

from tokenwalk.costs.kv import KvReport
from tokenwalk.render.fmt import count, human_bytes
from tokenwalk.render.safe import safe_markup


def render_kv(r: KvReport, console: Console) -> None:
    title = f"{safe_markup(r.model)}  ·  KV cache {r.kv_type}  ·  {count(r.ctx)} tokens"
    if r.parallel > 1:
        title += f" x {r.parallel} streams"
    kinds = Table(title=title, title_justify="left")
    for col in ("layer kind", "layers", "per token", "cells held", "at this context"):
        kinds.add_column(col, justify="left" if col == "layer kind" else "right")
    for k in r.kinds:
        if k.attention == "recurrent":
            kinds.add_row(
                "recurrent (fixed state, f32)",
                str(k.n_layers),
                "-",
                "-",
                human_bytes(k.cache_bytes),
            )
            continue
        cells = count(k.cells)
        if k.attention == "sliding":
            cells += (
                f" (window {count(k.window)}; {count(k.window_cells_naive)} if only the window)"
            )
        kinds.add_row(
            k.attention,
            str(k.n_layers),
            human_bytes(k.kv_bytes_per_token),
            cells,
            human_bytes(k.cache_bytes),
        )

    summary = Table(show_header=False, box=None)
    summary.add_column(style="bold")
    summary.add_column(justify="right")
    summary.add_column(style="dim")
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

    sweep = Table(title="Sweep", title_justify="left")
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
    console.print(Group(kinds, "", summary, "", sweep))
