"""`tokenwalk size` and `tokenwalk kv`."""

from __future__ import annotations

from typing import Annotated

from tokenwalk.cli.app import (
    CTX_MEANING,
    JsonOpt,
    KvTypeOpt,
    ModelArg,
    NoCacheOpt,
    ParallelOpt,
    QuantOpt,
    SwaFullOpt,
    UbatchOpt,
    app,
    load,
    respond,
    tokens_option,
    warn,
)
from tokenwalk.cli.output import output_options
from tokenwalk.cli.sweep import sweep


@app.command()
@sweep(["model", "quant"])
@output_options
def size(
    model: ModelArg, quant: QuantOpt = None, json: JsonOpt = False, no_cache: NoCacheOpt = False
) -> None:
    """How big a model is: parameters (total and active), file size, bits per weight, a
    breakdown by quant type and by role, and what one decoded token reads and computes."""
    from tokenwalk.costs.size import size_report

    loaded = load(model, quant, json=json, no_cache=no_cache)
    report = size_report(loaded.model).model_copy(
        update={"fetched_bytes": loaded.fetched_bytes, "requests": loaded.requests}
    )
    respond(report, json)


@app.command()
@sweep(["model", "ctx", "kv_type", "parallel", "ubatch", "quant"])
@output_options
def kv(
    model: ModelArg,
    ctx: Annotated[
        int | None,
        tokens_option(
            "--ctx",
            "-c",
            help="Context to reserve, " + CTX_MEANING + " Default: 16,384 or the model maximum.",
            show_default=False,
        ),
    ] = None,
    kv_type: KvTypeOpt = "f16",
    parallel: ParallelOpt = 1,
    ubatch: UbatchOpt = 512,
    swa_full: SwaFullOpt = False,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """How much memory the context takes: KV bytes per token by layer kind (full, sliding, MLA),
    the fixed state of recurrent layers, the total at --ctx, and a sweep of contexts."""
    from tokenwalk.costs.kv import kv_report
    from tokenwalk.costs.workload import check_workload

    check_workload(ctx=ctx, parallel=parallel, ubatch=ubatch)
    loaded = load(model, quant, json=json, no_cache=no_cache, swa_full=swa_full)
    report = kv_report(loaded.model, ctx, kv_type, parallel, ubatch)
    for w in report.warnings:
        warn(w)
    respond(report, json)
