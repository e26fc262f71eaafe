"""`tokenwalk models`: the model catalogue."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import BaseModel

from tokenwalk.cli.app import (
    JsonOpt,
    KvTypeOpt,
    QuantOpt,
    SwaFullOpt,
    app,
    emit_json,
    respond,
    stdout_console,
    tokens_option,
)
from tokenwalk.cli.machine_opts import system_options
from tokenwalk.cli.output import output_options
from tokenwalk.errors import InputError
from tokenwalk.system import SystemSpec
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
    file_bytes: Bytes | None  # at the list's quant
    source: str
    error: str | None = None


class CatalogueList(BaseModel):
    quant: str
    models: list[CatalogueRow]


def catalogue_rows(query: str | None = None, quant: str = "Q4_K_M") -> list[CatalogueRow]:
    """The catalogue entries whose slug, name or alias contains `query`, sized at Q4_K_M and at
    `quant`; an entry tokenwalk cannot model keeps its row, with the reason in `error`."""
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
            at = m if quant == "Q4_K_M" else model_from_config(cfg, e.slug, quant, "catalogue")
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
                    file_bytes=at.file_bytes,
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
                    file_bytes=None,
                    source=e.source,
                    error=str(exc),
                )
            )
    return rows


def _preset(quant: str | None) -> str:
    """The quant preset asked (default Q4_K_M), refused when llama.cpp has no such preset."""
    from tokenwalk.cli.app import warn
    from tokenwalk.model.quant import preset, ud_note

    name = preset(quant or "Q4_K_M").name
    note = ud_note(quant or "")
    if note:
        warn(note)
    return name


def models_fit(
    query: str | None,
    quant: str,
    system: SystemSpec,
    *,
    ctx: int | None,
    kv_type: str,
    sort: str,
    swa_full: bool = False,
):  # noqa: ANN201
    """`models --fits`: every catalogue model that can be modelled, on the machine of `system`."""
    from tokenwalk.catalog import load_models
    from tokenwalk.cli.checks import on_system
    from tokenwalk.costs.compare import FIT_SORTS, ModelsFitReport, model_fit, sort_fits
    from tokenwalk.costs.workload import check_workload
    from tokenwalk.errors import TokenwalkError
    from tokenwalk.model.resolve import model_from_config

    if sort not in FIT_SORTS:
        raise InputError(f"--sort takes {', '.join(FIT_SORTS)}, not '{sort}'")
    if ctx is not None:
        check_workload(ctx=ctx)
    sysm, offload = on_system(system)
    rows, left_out, budget = [], [], None
    for e in load_models():
        hay = " ".join([e.slug, e.name, *getattr(e, "aliases", [])]).lower()
        if query and query.lower() not in hay:
            continue
        try:
            m = model_from_config(e.config, e.slug, quant, source="catalogue")
            m = m.with_swa_full() if swa_full else m
        except TokenwalkError:
            left_out.append(e.slug)
            continue
        row, b = model_fit(e.slug, e.name, m, sysm, offload, ctx=ctx, kv_type=kv_type)
        rows.append(row)
        budget = budget or b
    if budget is None:
        raise InputError(f"no catalogue model matches '{query}' that tokenwalk can model")
    held = (
        f"the system holds {budget.system_bytes / 1e9:.1f} GB of "
        f"{budget.capacity_bytes / 1e9:.1f} GB (--system-gb)"
    )
    if budget.gpu_limit_bytes is not None:
        held += f", the GPU {budget.gpu_limit_bytes / 1e9:.1f} GB: {budget.gpu_limit_note}"
    reserved = f"{ctx:,} tokens" if ctx is not None else "16,384 tokens or the model's maximum"
    notes = [
        f"Assumed: {quant} weights (--quant), {reserved} of {kv_type.lower()} KV reserved "
        f"(--ctx), {held}; tok/s is decode at that context, max ctx the largest context that "
        "fits."
    ]
    if sysm.host is not None and sysm.host_note:
        notes.append(sysm.host_note)
    if left_out:
        notes.append(f"Not modelled: {', '.join(left_out)}.")
    return ModelsFitReport(
        swa_full=swa_full,
        machine=sysm.slug,
        machine_name=sysm.name,
        quant=quant,
        kv_type=kv_type.lower(),
        capacity_bytes=budget.capacity_bytes,
        system_bytes=budget.system_bytes,
        sort=sort,
        models=sort_fits(rows, sort),
        notes=notes,
    )


@app.command()
@system_options
@output_options(chart=False)
def models(
    query: Annotated[
        str | None, typer.Argument(help="Only models whose name contains this.", show_default=False)
    ] = None,
    quant: QuantOpt = None,
    fits: Annotated[
        str | None,
        typer.Option(
            "--fits",
            help="A machine (as --machine takes it): which models fit it, at what largest "
            "context and decode speed, as `budget` and `decode` answer for each.",
            metavar="MACHINE",
            show_default=False,
        ),
    ] = None,
    ctx: Annotated[
        int | None,
        tokens_option(
            "--ctx",
            "-c",
            help="With --fits: the context reserved for each model. Default: 16,384 or the "
            "model's maximum, as `budget`.",
            show_default=False,
        ),
    ] = None,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    sort: Annotated[
        str,
        typer.Option(
            "--sort",
            help="With --fits, the order of the models that fit, largest first: size "
            "(weights), speed (decode tok/s) or ctx (the largest context that fits).",
        ),
    ] = "size",
    json: JsonOpt = False,
    *,
    system: SystemSpec,
) -> None:
    """List the model catalogue: every entry is a Hugging Face config with its source. With
    --quant, the sizes at that preset; with --fits MACHINE, the models that fit it."""
    from rich import box
    from rich.table import Table

    from tokenwalk.render.fmt import count, human_bytes, params
    from tokenwalk.render.layout import drop_columns, left_out_note, table_width

    preset = _preset(quant)
    if fits is not None:
        if system.machine is not None:
            raise InputError("give the machine once: --fits MACHINE")
        report = models_fit(
            query,
            preset,
            system.model_copy(update={"machine": fits}),
            ctx=ctx,
            kv_type=kv_type,
            sort=sort,
            swa_full=swa_full,
        )
        respond(report, json)
        return
    if system != SystemSpec() or ctx is not None or swa_full:
        raise InputError(
            "the machine options, --ctx and --swa-full go with --fits MACHINE: "
            "`tokenwalk models --fits rtx-5090`"
        )
    rows = catalogue_rows(query, preset)
    if not rows and query:
        from tokenwalk.catalog import load_models, suggest

        hint = suggest(query, load_models(), "tokenwalk models")
        raise InputError(f"no catalogue model's name contains '{query}'; {hint}")
    if json:
        emit_json(CatalogueList(quant=preset, models=rows))
        return
    t = Table(
        title=f"{len(rows)} models (sizes at {preset})",
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
        preset: 8,
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
            cells[preset] = "unsupported"
        else:
            cells = {
                "arch": r.architecture or "",
                "params": params(r.params or 0),
                "active": params(r.active_params or 0),
                "layers": str(r.n_layers),
                "max ctx": count(r.max_ctx or 0),
                preset: human_bytes(r.file_bytes or 0),
            }
        t.add_row(r.slug, *(cells[c] for c in widths))
    console.print(t)
    if dropped:
        console.print(left_out_note(dropped, console.width))
    _explain(rows, preset, console)


def _explain(rows: list[CatalogueRow], quant: str, console: object) -> None:
    """--explain: how a size is computed, on the first model listed, at the list's preset."""
    from tokenwalk.cli.output import current

    if not current().explain:
        return
    from tokenwalk.costs.size import size_report
    from tokenwalk.model.resolve import load_model
    from tokenwalk.render.explain.size import explain_catalogue

    first = next((r for r in rows if not r.error), None)
    example = size_report(load_model(first.slug, quant).model) if first else None
    explain_catalogue(example, console)  # type: ignore[arg-type]
