"""`tokenwalk models`: the model catalogue."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import BaseModel

from tokenwalk.cli.app import JsonOpt, app, emit_json, stdout_console
from tokenwalk.cli.output import output_options
from tokenwalk.units import Bytes, Count


class CatalogueRow(BaseModel):
    slug: str
    name: str
    model_type: str
    architecture: str | None
    params: Count | None
    active_params: Count | None
    n_layers: int | None
    max_ctx: int | None
    q4_k_m_bytes: Bytes | None
    source: str
    error: str | None = None


class CatalogueList(BaseModel):
    models: list[CatalogueRow]


def catalogue_rows(query: str | None = None) -> list[CatalogueRow]:
    from tokenwalk.catalog import load_models
    from tokenwalk.costs.weights import active_params
    from tokenwalk.errors import TokenwalkError
    from tokenwalk.model.resolve import model_from_config

    rows = []
    for e in load_models():
        hay = " ".join([e.slug, e.name, *getattr(e, "aliases", [])]).lower()
        if query and query.lower() not in hay:
            continue
        cfg = e.config
        model_type = str(cfg.get("model_type", "?"))
        try:
            m = model_from_config(cfg, e.slug, "Q4_K_M", source="catalogue")
            rows.append(
                CatalogueRow(
                    slug=e.slug,
                    name=e.name,
                    model_type=model_type,
                    architecture=m.spec.arch,
                    params=m.params,
                    active_params=active_params(m),
                    n_layers=m.spec.n_layer,
                    max_ctx=m.spec.n_ctx_train or None,
                    q4_k_m_bytes=m.file_bytes,
                    source=e.source,
                )
            )
        except TokenwalkError as exc:
            rows.append(
                CatalogueRow(
                    slug=e.slug,
                    name=e.name,
                    model_type=model_type,
                    architecture=None,
                    params=None,
                    active_params=None,
                    n_layers=None,
                    max_ctx=None,
                    q4_k_m_bytes=None,
                    source=e.source,
                    error=str(exc),
                )
            )
    return rows


@app.command()
@output_options
def models(
    query: Annotated[
        str | None, typer.Argument(help="Only models whose name contains this.", show_default=False)
    ] = None,
    json: JsonOpt = False,
) -> None:
    """List the model catalogue: every entry is a Hugging Face config with its source."""
    from rich import box
    from rich.table import Table

    from tokenwalk.render.fmt import count, human_bytes, params
    from tokenwalk.render.layout import drop_columns, left_out_note, table_width

    rows = catalogue_rows(query)
    if json:
        emit_json(CatalogueList(models=rows))
        return
    t = Table(
        title=f"{len(rows)} models (sizes at Q4_K_M)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    slug_w = max((len(r.slug) for r in rows), default=4)  # what users type: never cut
    t.add_column("slug", no_wrap=True, min_width=slug_w)
    console = stdout_console()
    # a narrow terminal leaves columns out, least needed first, and says so under the table
    all_widths = {
        "slug": slug_w,
        "arch": 8,
        "params": 7,
        "active": 7,
        "layers": 6,
        "max ctx": 9,
        "Q4_K_M": 8,
    }
    kept, dropped = drop_columns(all_widths, console.width, ("arch", "layers", "active"))
    widths = {c: w for c, w in kept.items() if c != "slug"}
    for col, width in widths.items():
        if col == "arch":  # the architecture gets what the terminal has left
            w = 8 + console.width - table_width(list(kept.values()))
            t.add_column(col, overflow="ellipsis", no_wrap=True, max_width=w)
        else:
            t.add_column(col, justify="right", no_wrap=True, min_width=width)
    for r in rows:
        if r.error:
            cells = {c: "-" for c in widths}
            cells["arch"] = f"[red]{r.model_type}[/red]"
            cells["Q4_K_M"] = "unsupported"
        else:
            cells = {
                "arch": r.architecture or "",
                "params": params(r.params or 0),
                "active": params(r.active_params or 0),
                "layers": str(r.n_layers),
                "max ctx": count(r.max_ctx or 0),
                "Q4_K_M": human_bytes(r.q4_k_m_bytes or 0),
            }
        t.add_row(r.slug, *(cells[c] for c in widths))
    console.print(t)
    if dropped:
        console.print(left_out_note(dropped, console.width))
